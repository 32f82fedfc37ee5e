package http

import (
	"bytes"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzShareLoginForm: whatever the body, shareLoginForm never panics; a
// body it does not take for a login form reads again whole, byte for
// byte, for the handler after it; one it takes has act login or logout.
func FuzzShareLoginForm(f *testing.F) {
	part := func(name, file, body string) string {
		d := `Content-Disposition: form-data; name="` + name + `"`
		if file != "" {
			d += `; filename="` + file + `"`
		}
		return "--B\r\n" + d + "\r\n\r\n" + body + "\r\n"
	}
	for _, s := range []string{
		part("act", "", "login") + part("cppwd", "", "pw") + part("uhash", "", "x") + "--B--\r\n",
		part("act", "", "logout") + "--B--\r\n",
		part("act", "", "bput") + part("f", "a.txt", "hello") + "--B--\r\n",
		part("f", "b.txt", "hello") + "--B--\r\n",
		part("act", "", "login") + part("cppwd", "", strings.Repeat("p", 5000)) + "--B--\r\n",
		part("act", "", "login") + part("f", "big", strings.Repeat("z", 20000)) + "--B--\r\n",
		"--B\r\n", "", "--B--\r\n",
	} {
		f.Add(s, true)
	}
	for _, s := range []string{"act=login&cppwd=x", "act=logout", "act=mkdir&name=a", "act=login&cppwd=" + strings.Repeat("q", 70000), "%zz", ""} {
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, body string, multi bool) {
		ct := "application/x-www-form-urlencoded"
		if multi {
			ct = "multipart/form-data; boundary=B"
		}
		r := httptest.NewRequest("POST", "/shr/k/", strings.NewReader(body))
		r.Header.Set("Content-Type", ct)
		q := &req{r: r}
		v, ok, err := shareLoginForm(q)
		if ok {
			if a := v.Get("act"); a != "login" && a != "logout" {
				t.Fatalf("took act %q for a login", a)
			}
			return
		}
		if err != nil {
			return // a refusal; the request ends there
		}
		rest, err := io.ReadAll(q.r.Body)
		if err != nil || !bytes.Equal(rest, []byte(body)) {
			t.Fatalf("the body after a look reads %d bytes (err %v), want the %d sent", len(rest), err, len(body))
		}
	})
}

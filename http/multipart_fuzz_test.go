package http

import (
	"net/http/httptest"
	"os"
	"strings"
	"testing"
)

// FuzzMultipartForm posts arbitrary multipart bodies (boundary "B") to a
// read-only volume and to a writable one. On the read-only one nothing is
// ever written and the answer is a refusal, a bad request or the login
// form's answer; on the writable one it is a 201 or a client error. Never a
// crash, a hang or a 5xx.
func FuzzMultipartForm(f *testing.F) {
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
		part("act", "", "mkdir") + part("name", "", "d") + "--B--\r\n",
		part("act", "", strings.Repeat("l", 70)) + "--B--\r\n",
		part("act", "", "login") + part("cppwd", "", strings.Repeat("p", 5000)) + "--B--\r\n",
		"--B\r\n", "", "--B--\r\n", part("x", "", "y"),
	} {
		f.Add(s)
	}
	ro, roDir := newTestServer(f, "r")
	rw, _ := newTestServer(f, "rwm")
	f.Fuzz(func(t *testing.T, body string) {
		for _, c := range []struct {
			srv      *Server
			readOnly bool
		}{{ro, true}, {rw, false}} {
			req := httptest.NewRequest("POST", "/", strings.NewReader(body))
			req.Header.Set("Content-Type", "multipart/form-data; boundary=B")
			w := httptest.NewRecorder()
			c.srv.ServeHTTP(w, req)
			if w.Code >= 500 {
				t.Fatalf("%d for %q: %q", w.Code, body, w.Body)
			}
			if c.readOnly {
				switch w.Code {
				case 303: // logout needs no password
				case 400, 401, 403:
				default:
					t.Fatalf("read-only volume answered %d for %q: %q", w.Code, body, w.Body)
				}
				if ents, _ := os.ReadDir(roDir); len(ents) > 1 || len(ents) == 1 && ents[0].Name() != ".hist" {
					t.Fatalf("read-only volume changed by %q: %v", body, ents)
				}
			}
		}
	})
}

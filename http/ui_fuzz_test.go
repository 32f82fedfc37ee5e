package http

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzCookieValue: whatever the password, the cookie the login form sets
// survives a browser's round trip (Set-Cookie, then Cookie) and
// credentials offers the password itself among its candidates; the
// cookie's value has only bytes a cookie may carry.
func FuzzCookieValue(f *testing.F) {
	for _, s := range []string{"pw", "p w", "a;b", `q"x`, "a,b", `back\slash`, "50%", "a+b", "ünï", "%41", "x=y", "\x7f", "\t"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, pw string) {
		if pw == "" || !utf8.ValidString(pw) {
			return
		}
		v := cookieValue(pw)
		for i := 0; i < len(v); i++ {
			if c := v[i]; c <= 0x20 || c >= 0x7f || strings.IndexByte("\";,\\", c) >= 0 {
				t.Fatalf("cookieValue(%q) = %q holds byte %q", pw, v, c)
			}
		}
		rec := httptest.NewRecorder()
		http.SetCookie(rec, &http.Cookie{Name: "cppwd", Value: v, Path: "/", HttpOnly: true})
		set := rec.Result().Cookies()
		if len(set) != 1 || set[0].Value != v {
			t.Fatalf("Set-Cookie for %q lost the value: %q", pw, rec.Header()["Set-Cookie"])
		}
		r := httptest.NewRequest("GET", "/", nil)
		r.AddCookie(set[0])
		pws, fromCookie := credentials(r, url.Values{}, true)
		if !fromCookie || !slices.Contains(pws, pw) {
			t.Fatalf("password %q: cookie %q gives candidates %q", pw, v, pws)
		}
	})
}

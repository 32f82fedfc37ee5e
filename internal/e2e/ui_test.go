package e2e

import (
	"bytes"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The browser UI's server side, over plain HTTP: its files under /.cpr/,
// the CSP of the page that loads them, and the login form's cookie.

var uiScriptRE = regexp.MustCompile(`<script type="module" src="(/\.cpr/v[0-9A-Za-z_-]+/ui\.js)" nonce="([0-9A-Za-z_-]{16,})"></script>`)

func TestUIAssetsAndCSP(t *testing.T) {
	s := start(t, "-v", t.TempDir()+":/:rw")
	resp, body := s.do(t, "GET", "/", nil, "Accept: text/html")
	wantStatus(t, resp, body, 200)
	csp := resp.Header.Get("Content-Security-Policy")
	m := uiScriptRE.FindSubmatch(body)
	if m == nil {
		t.Fatalf("the page loads no fingerprinted UI module with a nonce:\n%s", body)
	}
	// Scripts run only from the page's own tag, by its nonce, not from
	// 'self': an uploaded .js on this origin is no script source.
	for _, want := range []string{"script-src 'nonce-" + string(m[2]) + "' 'strict-dynamic';", "default-src 'none'", "base-uri 'none'", "style-src 'self'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("page CSP %q lacks %q", csp, want)
		}
	}
	if strings.Contains(csp, "unsafe-") || strings.Contains(csp, "script-src 'self'") {
		t.Errorf("page CSP allows unsafe or uploaded code: %q", csp)
	}
	resp2, body2 := s.do(t, "GET", "/", nil, "Accept: text/html")
	if m2 := uiScriptRE.FindSubmatch(body2); m2 == nil || string(m2[2]) == string(m[2]) || !strings.Contains(resp2.Header.Get("Content-Security-Policy"), string(m2[2])) {
		t.Errorf("a second page view reuses the nonce or lacks one: %q", resp2.Header.Get("Content-Security-Policy"))
	}
	if n := strings.Count(string(body), "<script"); n != 1 {
		t.Errorf("the page has %d script tags, want just the module", n)
	}
	js := string(m[1])
	resp, jsBody := s.do(t, "GET", js, nil)
	wantStatus(t, resp, jsBody, 200)
	if cc := resp.Header.Get("Cache-Control"); !strings.Contains(cc, "immutable") || !strings.Contains(cc, "max-age=31536000") {
		t.Errorf("versioned asset Cache-Control = %q, want immutable for a year", cc)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/javascript") {
		t.Errorf("ui.js Content-Type = %q", ct)
	}
	if resp.Header.Get("X-Content-Type-Options") != "nosniff" {
		t.Error("ui.js lacks nosniff")
	}
	if !strings.Contains(string(jsBody), "import") {
		t.Errorf("ui.js body is not the module: %.200s", jsBody)
	}
	// Every module it imports and the stylesheet resolve in the same version.
	base := js[:strings.LastIndexByte(js, '/')+1]
	for _, f := range []string{"up2k.js", "hashw.js", "sha512.js", "ui.css"} {
		resp, b := s.do(t, "GET", base+f, nil)
		wantStatus(t, resp, b, 200)
		if !strings.Contains(resp.Header.Get("Cache-Control"), "immutable") {
			t.Errorf("%s: Cache-Control %q", f, resp.Header.Get("Cache-Control"))
		}
	}
	resp, b := s.do(t, "GET", "/.cpr/ui.css", nil)
	wantStatus(t, resp, b, 200)
	if cc := resp.Header.Get("Cache-Control"); cc != "no-cache" {
		t.Errorf("unversioned asset Cache-Control = %q, want no-cache", cc)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/css") {
		t.Errorf("ui.css Content-Type = %q", ct)
	}
	for _, p := range []string{"/.cpr/v000000000000/ui.js", "/.cpr/nope.js", base + "../../.hist/x", "/.cpr/" + "a/b/c"} {
		resp, b := s.do(t, "GET", p, nil)
		if resp.StatusCode != 404 && resp.StatusCode != 400 {
			t.Errorf("GET %s = %d, want 404", p, resp.StatusCode)
		}
		_ = b
	}
	resp, b = s.do(t, "PUT", base+"ui.js", []byte("evil"))
	if resp.StatusCode != 405 {
		t.Errorf("PUT over a UI file = %d %s, want 405", resp.StatusCode, b)
	}
	// The UI files are public even where nothing else is.
	s2 := start(t, "-a", "u:pw", "-v", t.TempDir()+":/:r,u")
	resp, b = s2.do(t, "GET", js, nil)
	wantStatus(t, resp, b, 200)
}

func TestUILoginCookie(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "secret.txt", []byte("s"))
	const pw = "p w;%+\"x" // needs escaping in a cookie
	s := start(t, "-a", "u:"+pw, "-a", "plain:hunter", "-v", dir+":/:rw,u,plain")
	form := func(v url.Values, hdr ...string) (*http.Response, []byte) {
		return s.do(t, "POST", "/", []byte(v.Encode()), append([]string{"Content-Type: application/x-www-form-urlencoded"}, hdr...)...)
	}
	resp, body := form(url.Values{"act": {"login"}, "cppwd": {"wrong"}})
	wantStatus(t, resp, body, 401)
	if len(resp.Cookies()) != 0 {
		t.Errorf("a wrong password set cookies: %v", resp.Cookies())
	}
	resp, body = form(url.Values{"act": {"login"}, "cppwd": {pw}}, "Sec-Fetch-Site: cross-site", "Origin: https://evil.example")
	wantStatus(t, resp, body, 403)
	for _, p := range []string{pw, "hunter"} {
		resp, body = form(url.Values{"act": {"login"}, "cppwd": {p}})
		wantStatus(t, resp, body, 303)
		var ck *http.Cookie
		for _, c := range resp.Cookies() {
			if c.Name == "cppwd" {
				ck = c
			}
		}
		if ck == nil {
			t.Fatalf("login set no cppwd cookie: %v", resp.Header["Set-Cookie"])
		}
		raw := resp.Header.Get("Set-Cookie")
		if !ck.HttpOnly || ck.SameSite != http.SameSiteLaxMode || ck.Secure || ck.Path != "/" {
			t.Errorf("cookie attributes: %s (want HttpOnly, SameSite=Lax, not Secure over http, Path=/)", raw)
		}
		// The cookie alone now reads the folder.
		resp, body = s.do(t, "GET", "/secret.txt", nil, "Cookie: cppwd="+ck.Value)
		wantStatus(t, resp, body, 200)
	}
	resp, body = form(url.Values{"act": {"logout"}})
	wantStatus(t, resp, body, 303)
	if c := resp.Cookies(); len(c) != 1 || c[0].Name != "cppwd" || c[0].MaxAge >= 0 {
		t.Errorf("logout did not clear the cookie: %v", resp.Header["Set-Cookie"])
	}
	// A person's browser gets a login form instead of the Basic prompt;
	// scripts and curl keep the Basic challenge.
	resp, body = s.do(t, "GET", "/", nil, "Sec-Fetch-Mode: navigate", "Sec-Fetch-Dest: document", "Accept: text/html")
	wantStatus(t, resp, body, 401)
	if strings.Contains(resp.Header.Get("WWW-Authenticate"), "Basic") || !strings.Contains(string(body), `name="cppwd"`) {
		t.Errorf("navigation got %q and no login form:\n%s", resp.Header.Get("WWW-Authenticate"), body)
	}
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'none'") {
		t.Errorf("login page CSP %q, want no script at all", csp)
	}
	resp, body = s.do(t, "GET", "/", nil)
	wantStatus(t, resp, body, 401)
	if !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Basic") {
		t.Errorf("a script lost the Basic challenge: %q", resp.Header.Get("WWW-Authenticate"))
	}
}

// Over TLS the login cookie is Secure; over plain HTTP on the same port it
// is not (a browser would drop a Secure cookie there).
func TestUILoginCookieSecureUnderTLS(t *testing.T) {
	cdir := t.TempDir()
	certFile := filepath.Join(cdir, "cert.pem")
	pool := tlsCert(t, certFile, "", 1)
	s := start(t, "--cert", certFile, "-a", "u:pw1", "-v", t.TempDir()+":/:rw,u")
	c := tlsClient(pool, false)
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, body := tlsDo(t, c, "POST", httpsURL(s)+"/", []byte("act=login&cppwd=pw1"), "Content-Type: application/x-www-form-urlencoded")
	wantStatus(t, resp, body, 303)
	if ck := resp.Cookies(); len(ck) != 1 || !ck[0].Secure || !ck[0].HttpOnly || ck[0].SameSite != http.SameSiteLaxMode {
		t.Errorf("login over TLS: Set-Cookie %q, want Secure, HttpOnly, SameSite=Lax", resp.Header["Set-Cookie"])
	}
	resp, body = s.do(t, "POST", "/", []byte("act=login&cppwd=pw1"), "Content-Type: application/x-www-form-urlencoded")
	wantStatus(t, resp, body, 303)
	if ck := resp.Cookies(); len(ck) != 1 || ck[0].Secure {
		t.Errorf("login over http: Set-Cookie %q, want not Secure", resp.Header["Set-Cookie"])
	}
}

// TestUILoginMultipart: copyparty's own login page posts a multipart form
// (act=login, cppwd, uhash). It needs no write permission, sets the same
// cookie as the urlencoded form, and a wrong password is 401 with no cookie;
// an upload in the same shape without rights is still refused.
func TestUILoginMultipart(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "secret.txt", []byte("s"))
	s := start(t, "-a", "u:hunter2", "-v", dir+":/:r,u")
	post := func(fields ...string) (*http.Response, []byte) {
		var b bytes.Buffer
		mw := multipart.NewWriter(&b)
		for i := 0; i+1 < len(fields); i += 2 {
			if fields[i] == "f" {
				w, err := mw.CreateFormFile("f", "up.txt")
				if err != nil {
					t.Fatal(err)
				}
				io.WriteString(w, fields[i+1])
				continue
			}
			if err := mw.WriteField(fields[i], fields[i+1]); err != nil {
				t.Fatal(err)
			}
		}
		mw.Close()
		return s.do(t, "POST", "/", b.Bytes(), "Content-Type: "+mw.FormDataContentType())
	}
	resp, body := post("act", "login", "cppwd", "wrong", "uhash", "x")
	wantStatus(t, resp, body, 401)
	if len(resp.Cookies()) != 0 {
		t.Errorf("a wrong password set cookies: %v", resp.Cookies())
	}
	resp, body = post("act", "login", "cppwd", "", "uhash", "x")
	wantStatus(t, resp, body, 400)
	resp, body = post("act", "login", "cppwd", strings.Repeat("p", 5000))
	wantStatus(t, resp, body, 400)
	resp, body = post("act", "login", "cppwd", "hunter2", "uhash", "x")
	wantStatus(t, resp, body, 303)
	var ck *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == "cppwd" {
			ck = c
		}
	}
	if ck == nil || !ck.HttpOnly || ck.SameSite != http.SameSiteLaxMode {
		t.Fatalf("login set no proper cppwd cookie: %v", resp.Header["Set-Cookie"])
	}
	resp, body = s.do(t, "GET", "/secret.txt", nil, "Cookie: cppwd="+ck.Value)
	wantStatus(t, resp, body, 200)
	resp, body = post("act", "logout")
	wantStatus(t, resp, body, 303)
	if c := resp.Cookies(); len(c) != 1 || c[0].MaxAge >= 0 {
		t.Errorf("logout did not clear the cookie: %v", resp.Header["Set-Cookie"])
	}
	// The same form shape carrying an upload is still an upload, refused
	// without write permission, and writes nothing.
	resp, body = post("act", "bput", "f", "data")
	if resp.StatusCode != 401 && resp.StatusCode != 403 {
		t.Errorf("anonymous multipart upload = %d %s, want 401/403", resp.StatusCode, body)
	}
	if _, err := os.Stat(filepath.Join(dir, "up.txt")); err == nil {
		t.Error("a refused upload wrote up.txt")
	}
}

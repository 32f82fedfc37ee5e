package e2e

import (
	"bytes"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestUIShareLogin: a password share is opened with the login form as
// copyparty's page sends it (multipart act=login, cppwd, uhash) or as
// hoard's (urlencoded), on the share's own path: the share's password sets
// a cppwd cookie for that share's path only; a wrong password, or an
// account's, is 401 with no cookie; logout clears it. A form that is not a
// login gets no further without the password than before (an upload into
// a writable password share writes nothing), and a browser asking for the
// share's page gets the login form, which works.
func TestUIShareLogin(t *testing.T) {
	dir := shareSetup(t)
	s := start(t, shareArgs(dir)...)
	p := makeShare(t, s, "apw", map[string]any{"k": "locked", "vp": []string{"/proj/"}, "pw": "s3cret pw", "exp": "60", "perms": []string{"read", "write"}}, 201)
	if p != "/shr/locked/" {
		t.Fatalf("share path %q", p)
	}
	makeShare(t, s, "apw", map[string]any{"k": "open", "vp": []string{"/proj/"}, "pw": "", "exp": "60", "perms": []string{"read"}}, 201)

	multi := func(path string, fields ...string) (*http.Response, []byte) {
		var b bytes.Buffer
		mw := multipart.NewWriter(&b)
		for i := 0; i+1 < len(fields); i += 2 {
			if fields[i] == "f" {
				w, _ := mw.CreateFormFile("f", "sneaky.txt")
				io.WriteString(w, fields[i+1])
				continue
			}
			mw.WriteField(fields[i], fields[i+1])
		}
		mw.Close()
		return s.do(t, "POST", path, b.Bytes(), "Content-Type: "+mw.FormDataContentType())
	}
	form := func(path string, v url.Values) (*http.Response, []byte) {
		return s.do(t, "POST", path, []byte(v.Encode()), "Content-Type: application/x-www-form-urlencoded")
	}
	cookieOf := func(resp *http.Response) *http.Cookie {
		for _, c := range resp.Cookies() {
			if c.Name == "cppwd" {
				return c
			}
		}
		return nil
	}

	for _, kind := range []string{"multipart", "urlencoded"} {
		login := func(path, pw string) (*http.Response, []byte) {
			if kind == "multipart" {
				return multi(path, "act", "login", "cppwd", pw, "uhash", "#x")
			}
			return form(path, url.Values{"act": {"login"}, "cppwd": {pw}})
		}
		for _, bad := range []string{"wrong", "apw"} { // apw: alice's account password
			resp, body := login("/shr/locked/", bad)
			wantStatus(t, resp, body, 401)
			if c := cookieOf(resp); c != nil {
				t.Errorf("%s: password %q at the share set a cookie: %v", kind, bad, c)
			}
		}
		resp, body := login("/shr/locked/sub/", "s3cret pw")
		wantStatus(t, resp, body, 303)
		if loc := resp.Header.Get("Location"); loc != "/shr/locked/sub/" {
			t.Errorf("%s: login sends the browser to %q", kind, loc)
		}
		ck := cookieOf(resp)
		if ck == nil || !ck.HttpOnly || ck.SameSite != http.SameSiteLaxMode || ck.Path != "/shr/locked" || ck.MaxAge <= 0 {
			t.Fatalf("%s: login at the share set %v", kind, resp.Header["Set-Cookie"])
		}
		resp, body = s.do(t, "GET", "/shr/locked/sub/deep.txt", nil, "Cookie: cppwd="+ck.Value)
		wantStatus(t, resp, body, 200)
		if string(body) != "deep" {
			t.Errorf("%s: with the share's cookie: %q", kind, body)
		}
		// the share's password opens nothing else
		resp, body = s.do(t, "GET", "/proj-secret/x.txt", nil, "Cookie: cppwd="+ck.Value)
		if resp.StatusCode == 200 {
			t.Errorf("%s: the share's cookie read a file outside it: %s", kind, body)
		}
		// logout clears the share's cookie
		var out *http.Response
		if kind == "multipart" {
			out, body = multi("/shr/locked/", "act", "logout")
		} else {
			out, body = form("/shr/locked/", url.Values{"act": {"logout"}})
		}
		wantStatus(t, out, body, 303)
		if c := cookieOf(out); c == nil || c.MaxAge >= 0 || c.Path != "/shr/locked" {
			t.Errorf("%s: logout at the share: %v", kind, out.Header["Set-Cookie"])
		}
		// a share without a password has nothing to log in to
		resp, body = login("/shr/open/", "anything")
		wantStatus(t, resp, body, 400)
		if c := cookieOf(resp); c != nil {
			t.Errorf("%s: login at an open share set %v", kind, c)
		}
	}

	// An upload form without the password is refused and writes nothing;
	// with it (PW header) the share takes it.
	resp, body := multi("/shr/locked/", "act", "bput", "f", "data")
	wantStatus(t, resp, body, 401)
	resp, body = multi("/shr/locked/", "f", "data")
	wantStatus(t, resp, body, 401)
	if _, err := os.Stat(filepath.Join(dir, "proj", "sneaky.txt")); err == nil {
		t.Fatal("an upload into a password share without the password wrote a file")
	}
	resp, body = form("/shr/locked/", url.Values{"act": {"mkdir"}, "name": {"nope"}})
	wantStatus(t, resp, body, 401)
	if _, err := os.Stat(filepath.Join(dir, "proj", "nope")); err == nil {
		t.Fatal("mkdir in a password share without the password made a folder")
	}
	var up bytes.Buffer
	mw := multipart.NewWriter(&up)
	w, _ := mw.CreateFormFile("f", "ok.txt")
	io.WriteString(w, "fine")
	mw.Close()
	resp, body = s.do(t, "POST", "/shr/locked/?pw=s3cret%20pw", up.Bytes(), "Content-Type: "+mw.FormDataContentType())
	wantStatus(t, resp, body, 201)
	wantFile(t, dir, "proj/ok.txt", []byte("fine"))

	// A browser at the share: the login form, then the share's listing.
	b := newBrowser(t, 1280, 800)
	b.do(t, chromedp.Navigate(s.URL+"/shr/locked/"))
	b.waitJS(t, "the login form", `!!document.getElementById('cppwd')`, 10*time.Second)
	if txt := b.text(t); strings.Contains(txt, "a.txt") {
		t.Fatalf("the share's files show before the password:\n%s", txt)
	}
	b.do(t, chromedp.SendKeys(chromedp.ID("cppwd"), "s3cret pw"), chromedp.Submit(chromedp.ID("cppwd")))
	b.waitJS(t, "the share's listing", `document.body.innerText.includes('a.txt') && document.body.innerText.includes('sub/')`, 10*time.Second)
	if c := evalJS[string](t, b, `document.cookie`); strings.Contains(c, "cppwd") {
		t.Errorf("the page's script can read the share's password cookie: %q", c)
	}
	// logged in by the form: the share's page says so and logs out, also
	// from a folder inside the share
	b.do(t, chromedp.Navigate(s.URL+"/shr/locked/sub/"))
	b.waitJS(t, "the log-out button", `document.body.innerText.includes('logged in to this share') && [...document.querySelectorAll('.acct button')].some((x) => x.textContent === 'log out')`, 10*time.Second)
	b.shots(t, "share-logged-in")
	if evalJS[bool](t, b, `!!document.querySelector('nav.tree')`) {
		t.Error("the share's page has a folder tree (?tree is not served in a share: it stays empty)")
	}
	b.do(t, chromedp.Click(chromedp.CSS(`.acct button`)))
	b.waitJS(t, "the login form after logging out", `!!document.getElementById('cppwd')`, 10*time.Second)
	b.do(t, chromedp.Navigate(s.URL+"/shr/locked/sub/"))
	b.waitJS(t, "the login form again", `!!document.getElementById('cppwd')`, 10*time.Second)
	if txt := b.text(t); strings.Contains(txt, "deep.txt") {
		t.Errorf("after logging out the share's files still show:\n%s", txt)
	}
	b.quiet(t)

	// by ?pw= there is no cookie to clear, and an open share has no password:
	// no log-out button on either
	for _, p := range []string{"/shr/locked/?pw=s3cret%20pw", "/shr/open/"} {
		resp, body := s.do(t, "GET", p, nil, "Accept: text/html")
		wantStatus(t, resp, body, 200)
		if strings.Contains(string(body), "logged in to this share") {
			t.Errorf("%s offers to log out of the share", p)
		}
	}
}

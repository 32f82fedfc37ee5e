package e2e

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestDAVWrongPasswordSlows: a wrong password on a WebDAV method (and on
// /.cpr/metrics) is answered 401 with a Basic challenge, never as
// anonymous (even where anonymous may read), changes nothing, and counts
// toward the wrong-password slowdown of its address like any other
// route: after three, each answer waits half a second more.
func TestDAVWrongPasswordSlows(t *testing.T) {
	dir := t.TempDir()
	pub := t.TempDir()
	writeFile(t, dir, "a.txt", []byte("a"))
	writeFile(t, pub, "p.txt", []byte("p"))
	s := start(t, "-a", "u:pw", "-v", dir+"::rwmd,u:A,u", "-v", pub+":pub:r:rwmd,u", "--stats", "--xff-src", "127.0.0.0/8")
	bad := basicAuth("u:wrong")

	// Anonymous may read /pub; a wrong password may not.
	resp, body := davReq(t, s, "PROPFIND", "/pub/", "", "Depth: 1", "X-Forwarded-For: 192.0.2.1")
	wantStatus(t, resp, body, http.StatusMultiStatus)
	for i, r := range []struct{ method, path string }{{"PROPFIND", "/pub/"}, {"GET", "/pub/p.txt"}, {"PROPFIND", "/pub/p.txt"}} {
		resp, body := davReq(t, s, r.method, r.path, "", bad, "Depth: 0", fmt.Sprintf("X-Forwarded-For: 192.0.2.%d", 10+i))
		wantStatus(t, resp, body, http.StatusUnauthorized)
		if !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Basic ") || bytes.Contains(body, []byte("p.txt")) {
			t.Errorf("%s %s with a wrong password: challenge %q, body %q", r.method, r.path, resp.Header.Get("WWW-Authenticate"), body)
		}
	}

	before := snapshot(t, dir)
	pubBefore := snapshot(t, pub)
	// Every method, each from an address of its own.
	reqs := []struct {
		method, path, body string
		hdr                []string
	}{
		{"PROPFIND", "/", "", []string{"Depth: 1"}},
		{"PUT", "/new.txt", "x", []string{davUA}},
		{"MKCOL", "/col", "", nil},
		{"MOVE", "/a.txt", "", []string{"Destination: /b.txt"}},
		{"COPY", "/a.txt", "", []string{"Destination: /c.txt"}},
		{"DELETE", "/a.txt", "", nil},
		{"LOCK", "/a.txt", lockBody, []string{"Depth: 0"}},
		{"PROPPATCH", "/a.txt", `<D:propertyupdate xmlns:D="DAV:"><D:set><D:prop><Z:x xmlns:Z="urn:z">1</Z:x></D:prop></D:set></D:propertyupdate>`, nil},
		{"UNLOCK", "/a.txt", "", []string{"Lock-Token: <opaquelocktoken:x>"}},
		{"OPTIONS", "/", "", nil},
		{"GET", "/.cpr/metrics", "", nil},
	}
	for i, r := range reqs {
		resp, body := davReq(t, s, r.method, r.path, r.body, append(r.hdr, bad, fmt.Sprintf("X-Forwarded-For: 203.0.113.%d", 1+i))...)
		if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Basic ") {
			t.Errorf("%s %s with a wrong password: %d %q %s, want 401 with a Basic challenge", r.method, r.path, resp.StatusCode, resp.Header.Get("WWW-Authenticate"), body)
		}
		if bytes.Contains(body, []byte("hoard_")) {
			t.Errorf("%s %s: metrics leaked to a wrong password", r.method, r.path)
		}
	}
	// From one address: three failures are free, the fourth waits 0.5 s,
	// the fifth 1 s, whatever the method.
	slow := []int{0, 1, 2, 6, 10}
	for k, i := range slow {
		r := reqs[i]
		t0 := time.Now()
		resp, body := davReq(t, s, r.method, r.path, r.body, append(r.hdr, bad, "X-Forwarded-For: 198.51.100.7")...)
		dt := time.Since(t0)
		wantStatus(t, resp, body, http.StatusUnauthorized)
		if n := k + 1; n > 3 {
			if least := time.Duration(n-3) * 500 * time.Millisecond; dt < least-50*time.Millisecond {
				t.Errorf("wrong password %d (%s %s) answered in %v: not slowed down (want at least %v)", n, r.method, r.path, dt, least)
			}
		}
	}
	wantSameSnapshot(t, before, snapshot(t, dir))
	wantSameSnapshot(t, pubBefore, snapshot(t, pub))
	// The right password from the slowed address still works.
	resp, body = davReq(t, s, "PROPFIND", "/", "", basicAuth("u:pw"), "Depth: 0", "X-Forwarded-For: 198.51.100.7")
	wantStatus(t, resp, body, http.StatusMultiStatus)
	resp, body = s.do(t, "GET", "/.cpr/metrics", nil, basicAuth("u:pw"), "X-Forwarded-For: 198.51.100.7")
	wantStatus(t, resp, body, http.StatusOK)
}

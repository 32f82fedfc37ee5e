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

// TestDAVInShare: through a share link (/shr/<key>/...) WebDAV's own
// methods are refused, 405 naming what a share serves, whatever the
// share grants (its visitors may read and upload, as its letters say,
// but not list, lock, move, copy, delete or change properties through
// WebDAV, which would name paths outside the share); a password share
// asks for its password first; a WebDAV client's PUT into a writable
// share is an upload like any other there (never a replace); ".." and
// its encodings in a share path reach nothing outside it; and a MOVE or
// COPY from the volume never lands in /shr/.
func TestDAVInShare(t *testing.T) {
	dir := shareSetup(t)
	s := start(t, shareArgs(dir, "--xff-src", "127.0.0.0/8")...)
	for k, perms := range map[string][]string{"ro": {"read"}, "rw": {"read", "write"}, "all": {"read", "write", "move", "delete"}} {
		makeShare(t, s, "apw", map[string]any{"k": k, "vp": []string{"/proj/"}, "pw": "", "exp": "60", "perms": perms}, 201)
	}
	makeShare(t, s, "apw", map[string]any{"k": "locked", "vp": []string{"/proj/"}, "pw": "spw", "exp": "60", "perms": []string{"read", "write", "move", "delete"}}, 201)
	snap := func() map[string]string {
		m := snapshot(t, dir)
		for k := range m {
			if strings.HasPrefix(k, ".hist") {
				delete(m, k)
			}
		}
		return m
	}
	before := snap()
	ip := 0
	from := func() string { ip++; return fmt.Sprintf("X-Forwarded-For: 192.0.2.%d", ip) }
	for _, key := range []string{"ro", "rw", "all", "locked"} {
		pw := []string{}
		if key == "locked" {
			pw = []string{"PW: spw"}
			// Without the password, or with a wrong one: 401, before anything else.
			resp, body := davReq(t, s, "PROPFIND", "/shr/locked/", "", "Depth: 1", from())
			wantStatus(t, resp, body, http.StatusUnauthorized)
			resp, body = davReq(t, s, "DELETE", "/shr/locked/a.txt", "", "PW: nope", from())
			wantStatus(t, resp, body, http.StatusUnauthorized)
		}
		p := "/shr/" + key + "/"
		for _, r := range []struct {
			method, path, body string
			hdr                []string
		}{
			{"PROPFIND", p, "", []string{"Depth: 1"}},
			{"PROPFIND", p + "a.txt", "", []string{"Depth: 0"}},
			{"PROPPATCH", p + "a.txt", `<D:propertyupdate xmlns:D="DAV:"><D:set><D:prop><D:getlastmodified>Wed, 02 Jan 2019 03:04:05 GMT</D:getlastmodified></D:prop></D:set></D:propertyupdate>`, nil},
			{"MKCOL", p + "newcol", "", nil},
			{"MOVE", p + "a.txt", "", []string{"Destination: " + p + "moved.txt"}},
			{"MOVE", p + "a.txt", "", []string{"Destination: /top-moved.txt"}},
			{"COPY", p + "a.txt", "", []string{"Destination: /escaped.txt"}},
			{"COPY", p + "../proj-secret/x.txt", "", []string{"Destination: " + p + "leak.txt"}},
			{"DELETE", p + "a.txt", "", nil},
			{"DELETE", p + "sub/", "", nil},
			{"LOCK", p + "a.txt", lockBody, []string{"Depth: 0"}},
			{"UNLOCK", p + "a.txt", "", []string{"Lock-Token: <opaquelocktoken:x>"}},
		} {
			resp, body := davReq(t, s, r.method, r.path, r.body, append(append(r.hdr, pw...), from())...)
			if resp.StatusCode != http.StatusMethodNotAllowed && resp.StatusCode != http.StatusNotFound && resp.StatusCode != http.StatusBadRequest {
				t.Errorf("%s %s: %d %s, want 405 (or 400/404 for a path leaving the share)", r.method, r.path, resp.StatusCode, body)
			}
			if resp.StatusCode == http.StatusMethodNotAllowed && strings.Contains(resp.Header.Get("Allow"), r.method) {
				t.Errorf("%s %s: 405 with Allow %q", r.method, r.path, resp.Header.Get("Allow"))
			}
		}
		// Reading is what the share is for.
		resp, body := davReq(t, s, "GET", p+"a.txt", "", append(pw, from())...)
		wantStatus(t, resp, body, http.StatusOK)
		// ".." and its encodings, on every method a share serves.
		for _, esc := range []string{"../top.txt", "%2e%2e/top.txt", "sub/%2e%2e/%2e%2e/top.txt", "..%2ftop.txt", "sub%2f..%2f..%2ftop.txt", "outdir/x.txt", "link.txt"} {
			for _, m := range []string{"GET", "PUT"} {
				if m == "PUT" && esc == "link.txt" {
					continue // a new file beside the link, in the share (below)
				}
				resp, body := davReq(t, s, m, p+esc, "evil", append(pw, davUA, "X-OC-Mtime: 1000000000", from())...)
				if bytes.Contains(body, []byte("top file")) || bytes.Contains(body, []byte("SECRET")) || resp.StatusCode < 400 {
					t.Errorf("%s %s%s: %d %q: left the share", m, p, esc, resp.StatusCode, body)
				}
			}
		}
	}
	wantSameSnapshot(t, before, snap())

	// A WebDAV client's PUT into a writable share uploads beside, never
	// over, an existing file; into a read-only share it is refused.
	resp, body := davReq(t, s, "PUT", "/shr/ro/new.txt", "n", davUA, "X-OC-Mtime: 1000000000", from())
	wantStatus(t, resp, body, http.StatusForbidden)
	resp, body = davReq(t, s, "PUT", "/shr/all/a.txt", "over", davUA, "X-OC-Mtime: 1000000000", from())
	wantStatus(t, resp, body, http.StatusCreated)
	if !fileHolds(dir, "proj/a.txt", "file a") {
		t.Error("a PUT through a share replaced proj/a.txt")
	}
	// Onto a link leading out of the share: a new name beside it, in the
	// share; the link's target is untouched.
	resp, body = davReq(t, s, "PUT", "/shr/all/link.txt", "over", davUA, "X-OC-Mtime: 1000000000", from())
	wantStatus(t, resp, body, http.StatusCreated)
	if !fileHolds(dir, "proj-secret/x.txt", "SECRET") || !strings.Contains(resp.Header.Get("Location"), "/shr/all/link.txt-") {
		t.Errorf("a PUT onto a link out of the share: Location %q", resp.Header.Get("Location"))
	}
	// From the volume, a MOVE or COPY into /shr/ is refused.
	for _, m := range []string{"MOVE", "COPY"} {
		resp, body := davReq(t, s, m, "/top.txt", "", basicAuth("alice:apw"), "Destination: /shr/all/top.txt", from())
		wantStatus(t, resp, body, http.StatusForbidden)
	}
	if !fileHolds(dir, "top.txt", "top file") || pathExists(dir, "proj/top.txt") {
		t.Error("a MOVE or COPY into /shr/ changed the disk")
	}
}

package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestDAVSequentialNoWait: rclone's requests for each file it uploads
// (MKCOL of the parent folder, answered 405 once it exists; PUT with
// X-OC-Mtime and OC-Checksum; PROPFIND Depth 0 of the new file), then a
// MOVE and a DELETE of it, 200 files one after another over one
// keep-alive connection. Every request is answered on that connection
// (none is closed after a reply, no body is left unread), and the whole
// run stays far inside what a wait per request would take: 1,000
// requests answered in about 2 s on a quiet machine; a 40 ms timer
// (Nagle against a delayed ACK, a batch window, a 100-continue wait) in
// each would take 40 s, a 20 ms one 20 s.
//
// rclone sync itself runs at about 33 files/s against any server (hoard,
// copyparty, rclone serve webdav alike): its webdav backend paces every
// call at least 10 ms after the previous one (minSleep, lifted by
// --webdav-pacer-min-sleep from rclone 1.63), three calls per file.
func TestDAVSequentialNoWait(t *testing.T) {
	dir := t.TempDir()
	s := start(t, "-a", "u:pw", "-v", dir+"::rwmd,u", "-e2dsa")
	auth := basicAuth("u:pw")
	waitReady(t, s, auth)

	var dials atomic.Int64
	tr := &http.Transport{
		MaxConnsPerHost: 1,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			dials.Add(1)
			return (&net.Dialer{}).DialContext(ctx, network, addr)
		},
	}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr, Timeout: time.Minute}
	do := func(method, p, body string, want int, hdr ...string) {
		t.Helper()
		req, err := http.NewRequest(method, s.URL+p, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if body == "" {
			req.Body, req.ContentLength = nil, 0
		}
		for _, h := range append(hdr, auth, "User-Agent: rclone/v1.60.1") {
			k, v, _ := strings.Cut(h, ":")
			req.Header.Set(strings.TrimSpace(k), strings.TrimSpace(v))
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, p, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Fatalf("%s %s: %d %s, want %d", method, p, resp.StatusCode, b, want)
		}
		if resp.Close {
			t.Fatalf("%s %s: the server closed the connection after its reply", method, p)
		}
	}
	const n = 200
	const pf = `<?xml version="1.0"?><d:propfind xmlns:d="DAV:" xmlns:oc="http://owncloud.org/ns"><d:prop><d:displayname/><d:getlastmodified/><d:getcontentlength/><d:resourcetype/><d:getcontenttype/><oc:checksums/></d:prop></d:propfind>`
	do("MKCOL", "/to/", "", http.StatusCreated)
	t0 := time.Now()
	for i := range n {
		mk := http.StatusMethodNotAllowed
		if i == 0 {
			mk = http.StatusCreated
		}
		name := fmt.Sprintf("/d/f%03d.bin", i)
		do("MKCOL", "/d/", "", mk)
		do("PUT", name, strings.Repeat("x", 100+i), http.StatusCreated, "X-OC-Mtime: 1700000000", "OC-Checksum: SHA1:0000000000000000000000000000000000000000", "Content-Type: application/octet-stream")
		do("PROPFIND", name, pf, http.StatusMultiStatus, "Depth: 0")
		do("MOVE", name, "", http.StatusCreated, "Destination: "+s.URL+"/to"+name[2:], "Overwrite: T")
		do("DELETE", "/to"+name[2:], "", http.StatusNoContent)
	}
	dt := time.Since(t0)
	t.Logf("%d files, %d requests in %v (%v per request), %d connections", n, 5*n, dt, dt/(5*n), dials.Load())
	if d := dials.Load(); d != 1 {
		t.Errorf("%d connections for one client in sequence, want 1", d)
	}
	if dt > 20*time.Second {
		t.Errorf("%d sequential requests took %v: something waits in each", 5*n, dt)
	}
	if got := tree(t, dir+"/d"); len(got) != 0 {
		t.Errorf("left in /d: %q", got)
	}
}

// TestDAVProppatchOCLastmodified: rclone (vendor owncloud or nextcloud,
// from 1.6x) sets a file's time without uploading it again by a PROPPATCH
// of ownCloud's DAV:lastmodified in seconds, with the SHA-1 it knows as
// oc:checksums in the same request. The time is set (disk, PROPFIND,
// search) and the checksum kept as the client's dead property; a value
// that is not seconds is 409 and nothing of the request is applied.
func TestDAVProppatchOCLastmodified(t *testing.T) {
	dir := t.TempDir()
	auth := basicAuth("u:pw")
	s := start(t, "-a", "u:pw", "-v", dir+"::rwmd,u", "-e2dsa")
	waitReady(t, s, auth)
	resp, body := davReq(t, s, "PUT", "/p.txt", "content", auth, "X-OC-Mtime: 1500000000")
	wantStatus(t, resp, body, http.StatusCreated)
	waitAllHits(t, s, "date:2017-07-14", []string{"/p.txt"}, auth)
	const sum = "SHA1:040f06fd774092478d450774f5ba30c5da78acc8"
	rcloneBody := func(v string) string {
		return `<?xml version="1.0" encoding="utf-8" ?>
<D:propertyupdate xmlns:D="DAV:" xmlns:oc="http://owncloud.org/ns">
 <D:set>
  <D:prop>
   <lastmodified xmlns="DAV:">` + v + `</lastmodified>
   <oc:checksums>
	<oc:checksum>` + sum + `</oc:checksum>
   </oc:checksums>
  </D:prop>
 </D:set>
</D:propertyupdate>
`
	}
	// Not seconds: 409, the rest 424, nothing applied.
	resp, body = davReq(t, s, "PROPPATCH", "/p.txt", rcloneBody("yesterday"), auth)
	wantStatus(t, resp, body, http.StatusMultiStatus)
	if !strings.Contains(string(body), "409 Conflict") || !strings.Contains(string(body), "424 Failed Dependency") || strings.Contains(string(body), "200 OK") {
		t.Fatalf("PROPPATCH of a bad time: %s", body)
	}
	if fi, err := os.Stat(filepath.Join(dir, "p.txt")); err != nil || fi.ModTime().Unix() != 1500000000 {
		t.Fatalf("a refused PROPPATCH changed the time: %v %v", fi.ModTime(), err)
	}
	resp, body = davReq(t, s, "PROPPATCH", "/p.txt", rcloneBody("1577836800"), auth)
	wantStatus(t, resp, body, http.StatusMultiStatus)
	if strings.Count(string(body), "200 OK") != 2 {
		t.Fatalf("rclone's PROPPATCH: %s", body)
	}
	if fi, err := os.Stat(filepath.Join(dir, "p.txt")); err != nil || fi.ModTime().Unix() != 1577836800 {
		t.Fatalf("time after PROPPATCH: %v %v", fi.ModTime(), err)
	}
	waitAllHits(t, s, "date:2020-01-01", []string{"/p.txt"}, auth)
	pf := `<?xml version="1.0"?><d:propfind xmlns:d="DAV:" xmlns:oc="http://owncloud.org/ns"><d:prop><d:getlastmodified/><oc:checksums/></d:prop></d:propfind>`
	resp, body = davReq(t, s, "PROPFIND", "/", pf, auth, "Depth: 1")
	wantStatus(t, resp, body, http.StatusMultiStatus)
	if !strings.Contains(string(body), "Wed, 01 Jan 2020 00:00:00 GMT") || !strings.Contains(string(body), sum) {
		t.Fatalf("PROPFIND after rclone's PROPPATCH: %s", body)
	}
}

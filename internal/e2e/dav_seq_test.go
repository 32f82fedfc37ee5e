package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
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

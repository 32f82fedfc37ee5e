package e2e

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestDAVProppatchFifo: a PROPPATCH of a fifo (its mtime, a dead
// property) is the client's error, refused at once (400, or 409 in a
// 207 for a dead property), as for every other
// operation on a name that is not a file: not a 500 from the kernel's
// refusal of an extended attribute there, and nothing changed.
func TestDAVProppatchFifo(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "pipe")
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	before, _ := os.Lstat(p)
	s := start(t, "-v", dir+"::rwmd")
	for name, body := range map[string]string{
		"mtime":         `<D:propertyupdate xmlns:D="DAV:"><D:set><D:prop><D:getlastmodified>Wed, 02 Jan 2019 03:04:05 GMT</D:getlastmodified></D:prop></D:set></D:propertyupdate>`,
		"dead property": `<D:propertyupdate xmlns:D="DAV:" xmlns:Z="urn:z"><D:set><D:prop><Z:a>1</Z:a></D:prop></D:set></D:propertyupdate>`,
	} {
		resp, rb := davReq(t, s, "PROPPATCH", "/pipe", body)
		// 400, or (dead properties are answered per property) a 207
		// whose property failed with 409 and says why.
		refused := resp.StatusCode == http.StatusBadRequest ||
			resp.StatusCode == http.StatusMultiStatus && strings.Contains(string(rb), "409 Conflict") && strings.Contains(string(rb), "not a file")
		if !refused {
			t.Errorf("PROPPATCH %s of a fifo: %d %s, want it refused as not a file", name, resp.StatusCode, rb)
		}
	}
	if fi, err := os.Lstat(p); err != nil || fi.Mode()&os.ModeNamedPipe == 0 || !fi.ModTime().Equal(before.ModTime()) {
		t.Errorf("the fifo changed: %v %v", fi, err)
	}
}

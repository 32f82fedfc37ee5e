package e2e

import (
	"path/filepath"
	"testing"
)

// TestUp2kDoneHeader: the chunk post that completes a file says where it
// was published (X-Up2k-Done, the URL path the final handshake would
// name), so that hoard up needs no final handshake; a post that leaves
// chunks missing says nothing, and the file is there when the header is.
func TestUp2kDoneHeader(t *testing.T) {
	t.Parallel()
	vol := t.TempDir()
	s := start(t, "-v", vol+"::rw")
	f := newUp2kFile(randomBytes(1<<20 + 4321)) // two chunks
	rep := up2kHandshake(t, s, "/d ir/", "a b.bin", f, 1600000000, nil)
	if len(rep.Hash) != 2 {
		t.Fatalf("need %d chunks, want 2", len(rep.Hash))
	}
	resp, b := postChunks(t, s, rep.Purl, rep.Wark, f.hashes[1], f.chunk(1))
	wantStatus(t, resp, b, 200)
	if v := resp.Header.Get("X-Up2k-Done"); v != "" {
		t.Fatalf("a post leaving a chunk missing says done: %q", v)
	}
	resp, b = postChunks(t, s, rep.Purl, rep.Wark, f.hashes[0], f.chunk(0))
	wantStatus(t, resp, b, 200)
	if v := resp.Header.Get("X-Up2k-Done"); v != "/d%20ir/a%20b.bin" {
		t.Fatalf("the completing post's X-Up2k-Done is %q, want /d%%20ir/a%%20b.bin", v)
	}
	wantUploaded(t, filepath.Join(vol, "d ir/a b.bin"), f.data, 1600000000)
	// A small file in one post, under a name taken meanwhile: the header
	// names the collision name it got, as the final handshake does.
	g := newUp2kFile(randomBytes(4096))
	rep = up2kHandshake(t, s, "/", "g.bin", g, 1600000000, nil)
	resp, b = s.do(t, "PUT", "/g.bin", []byte("taken"))
	wantStatus(t, resp, b, 201)
	resp, b = postChunks(t, s, rep.Purl, rep.Wark, g.hashes[0], g.chunk(0))
	wantStatus(t, resp, b, 200)
	fin := up2kHandshake(t, s, "/", "g.bin", g, 1600000000, nil)
	if v, want := resp.Header.Get("X-Up2k-Done"), fin.Purl+fin.Name; v != want || fin.Name == "g.bin" {
		t.Fatalf("X-Up2k-Done %q, final handshake %q", v, want)
	}
}

package e2e

import (
	"os"
	"path/filepath"
	"testing"
)

// TestUp2kLastHandshakeAfterChange: the handshake that u2c.py and the
// browser send after a file's last chunk says "complete" for a file just
// uploaded (the server answers it from what the upload knew), and never
// for one that a delete or a move through the server took away meanwhile,
// nor for one replaced on disk: those are uploaded again.
func TestUp2kLastHandshakeAfterChange(t *testing.T) {
	t.Parallel()
	vol := t.TempDir()
	s := start(t, "-v", vol+"::rwmd")
	upload := func(name string) (*up2kFile, handshakeReply) {
		t.Helper()
		f := newUp2kFile(randomBytes(4096))
		rep := up2kHandshake(t, s, "/d/", name, f, 1600000000, nil)
		if len(rep.Hash) != 1 {
			t.Fatalf("%s: need %v, want the one chunk", name, rep.Hash)
		}
		resp, b := postChunks(t, s, rep.Purl, rep.Wark, f.hashes[0], f.chunk(0))
		wantStatus(t, resp, b, 200)
		return f, rep
	}

	f, _ := upload("a.bin")
	fin := up2kHandshake(t, s, "/d/", "a.bin", f, 1600000000, nil)
	if len(fin.Hash) != 0 || fin.Name != "a.bin" || fin.Purl != "/d/" {
		t.Fatalf("last handshake of a.bin: %+v, want complete at /d/a.bin", fin)
	}
	wantUploaded(t, filepath.Join(vol, "d", "a.bin"), f.data, 1600000000)

	f, _ = upload("b.bin")
	resp, b := s.do(t, "DELETE", "/d/b.bin", nil)
	wantStatus(t, resp, b, 204)
	if fin := up2kHandshake(t, s, "/d/", "b.bin", f, 1600000000, nil); len(fin.Hash) != 1 {
		t.Fatalf("last handshake of b.bin after its delete: %+v, want the chunk needed again", fin)
	}

	f, _ = upload("c.bin")
	resp, b = s.do(t, "MOVE", "/d/c.bin", nil, "Destination: /d/moved.bin")
	wantStatus(t, resp, b, 201)
	if fin := up2kHandshake(t, s, "/d/", "c.bin", f, 1600000000, nil); len(fin.Hash) == 0 && fin.Name == "c.bin" {
		t.Fatalf("last handshake of c.bin after its move: %+v, says complete at the old name", fin)
	}

	f, _ = upload("e.bin")
	if err := os.WriteFile(filepath.Join(vol, "d", "e.bin"), []byte("replaced behind the server's back"), 0o644); err != nil {
		t.Fatal(err)
	}
	if fin := up2kHandshake(t, s, "/d/", "e.bin", f, 1600000000, nil); len(fin.Hash) == 0 && fin.Name == "e.bin" {
		t.Fatalf("last handshake of e.bin after it was replaced on disk: %+v, says complete", fin)
	}
}

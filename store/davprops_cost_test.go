package store

import (
	"os"
	"path/filepath"
	"testing"
)

// The per-operation cost of WebDAV's sequential MOVE and DELETE.

// TestMoveReadsTopOnce: a file moved between folders of one volume reads
// the volume's real folder once (it was read four times: each end's
// canonical path and each physical path), and a delete once.
func TestMoveReadsTopOnce(t *testing.T) {
	s, dirs := openStore(t, "::rwmd")
	for _, d := range []string{"a", "b"} {
		if err := os.Mkdir(filepath.Join(dirs[0], d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dirs[0], "a", "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	v, _ := s.Resolve(nil)
	before := realTopReads.Load()
	if _, err := s.Move(t.Context(), Actor{}, Loc{Vol: v, Rel: "a/f"}, Loc{Vol: v, Rel: "b/f"}, DestOptions{}); err != nil {
		t.Fatal(err)
	}
	if n := realTopReads.Load() - before; n != 1 {
		t.Errorf("a move read the volume's folder %d times", n)
	}
	before = realTopReads.Load()
	if _, err := s.Delete(t.Context(), Actor{}, Loc{Vol: v, Rel: "b/f"}, DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if n := realTopReads.Load() - before; n != 1 {
		t.Errorf("a delete read the volume's folder %d times", n)
	}
	if _, err := os.Stat(filepath.Join(dirs[0], "b", "f")); !os.IsNotExist(err) {
		t.Errorf("deleted file: %v", err)
	}
}

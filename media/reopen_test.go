package media

import (
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestReopen: both ways of reopening give the same file with an offset
// of its own (reading it leaves the original's offset alone), and it
// outlives the original; by name, a file replaced under the name is
// refused.
func TestReopen(t *testing.T) {
	for _, tc := range []struct {
		name   string
		reopen func(*os.File) (*os.File, error)
	}{
		{name: "reopen", reopen: reopen},
		{name: "by name", reopen: reopenByName},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			root, err := os.OpenRoot(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer root.Close()
			if err := root.WriteFile("f", []byte("0123456789"), 0o644); err != nil {
				t.Fatal(err)
			}
			f, err := root.Open("f")
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			head := make([]byte, 3)
			if _, err := io.ReadFull(f, head); err != nil {
				t.Fatal(err)
			}
			g, err := tc.reopen(f)
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			all, err := io.ReadAll(g)
			if err != nil || string(all) != "0123456789" {
				t.Fatalf("reopened file reads %q, %v; want it all from its own start", all, err)
			}
			if off, _ := f.Seek(0, io.SeekCurrent); off != 3 {
				t.Fatalf("original's offset moved to %d", off)
			}
			f.Close()
			if n, err := g.ReadAt(head, 0); n != 3 || err != nil {
				t.Fatalf("reopened file after the original closed: %d, %v", n, err)
			}

			if tc.name != "by name" {
				return
			}
			h, err := root.Open("f")
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close()
			if err := os.Rename(filepath.Join(dir, "f"), filepath.Join(dir, "old")); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "f"), []byte("other"), 0o644); err != nil {
				t.Fatal(err)
			}
			if r, err := reopenByName(h); err == nil {
				r.Close()
				t.Fatal("a file replaced under its name was reopened")
			}
		})
	}
}

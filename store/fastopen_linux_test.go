package store

import (
	"io"
	"os"
	"path/filepath"
	"testing"
)

// The fast open takes plain paths and leaves everything with a link, a
// state-folder name, a create or a view to the full way; what Open
// answers is the same either way.
func TestFastOpenTakesOnlyPlainPaths(t *testing.T) {
	st, dirs := openStore(t, "::A")
	v, vol := st.Volumes()[0], dirs[0]
	if v.dir == nil {
		t.Skip("no descriptor for the fast open")
	}
	mkfiles(t, vol, map[string]string{"a/b/c.txt": "plain", "d/e.txt": "via link"})
	os.Symlink("d", filepath.Join(vol, "ln"))
	os.Symlink(HistName, filepath.Join(vol, "toState"))
	f, ok := v.fastOpen("a/b/c.txt", os.O_RDONLY)
	if !ok {
		if noOpenat2.Load() {
			t.Skip("this kernel has no openat2")
		}
		t.Fatal("a plain path did not take the fast open")
	}
	f.Close()
	for _, r := range []string{"ln/e.txt", "toState/secret", HistName + "/secret", "a/.HIST/x", "missing.txt", "."} {
		if f, ok := v.fastOpen(r, os.O_RDONLY); ok {
			f.Close()
			t.Errorf("%s took the fast open", r)
		}
	}
	if f, ok := v.fastOpen("a/new.txt", os.O_RDWR|os.O_CREATE); ok {
		f.Close()
		t.Error("a create took the fast open")
	}
	// Open answers as before: plain and through a link inside the volume
	// read the file; through a link into the state folder is not found.
	for r, want := range map[string]string{"a/b/c.txt": "plain", "ln/e.txt": "via link"} {
		f, _, err := v.Open(r)
		if err != nil {
			t.Fatalf("Open(%s): %v", r, err)
		}
		b, _ := io.ReadAll(f)
		f.Close()
		if string(b) != want {
			t.Errorf("Open(%s) = %q, want %q", r, b, want)
		}
	}
	if _, _, err := v.Open("toState/secret"); err == nil {
		t.Error("a link into the state folder was opened")
	}
	if _, _, err := v.Open("a/b"); err != ErrIsDir {
		t.Errorf("Open of a folder: %v, want ErrIsDir", err)
	}
}

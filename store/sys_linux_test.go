package store

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// setMtime sets both times through the descriptor, to the nanosecond,
// also on a file whose name is gone.
func TestSetMtimeByDescriptor(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	want := time.Unix(1600000000, 123456789)
	if err := setMtime(f, want); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p)
	if err != nil || !fi.ModTime().Equal(want) {
		t.Fatalf("mtime %v (%v), want %v", fi.ModTime(), err, want)
	}
	os.Remove(p)
	if err := setMtime(f, want.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if fi, err := f.Stat(); err != nil || !fi.ModTime().Equal(want.Add(time.Hour)) {
		t.Fatalf("unlinked: mtime %v (%v)", fi.ModTime(), err)
	}
}

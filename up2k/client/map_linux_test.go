package client

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"hoard/up2k"
)

// TestHashUnmappable: a file that cannot be mapped (a file system without
// mmap) is hashed by reads instead, with the same result.
func TestHashUnmappable(t *testing.T) {
	defer func(f func(int, int64, int, int, int) ([]byte, error)) { mmap = f }(mmap)
	calls := 0
	mmap = func(int, int64, int, int, int) ([]byte, error) { calls++; return nil, syscall.ENODEV }
	h := newHasher(2)
	defer h.close()
	if h.maps == nil {
		t.Skip("no SHA-512 lanes on this CPU: files are never mapped")
	}
	data := bytes.Repeat([]byte("unmappable "), 500_000) // 5.5 MB, 6 chunks
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := h.hashFile(context.Background(), f, int64(len(data)))
	_, want, _ := up2k.HashFile(context.Background(), bytes.NewReader(data), int64(len(data)), "s", 0, "", "f")
	if err != nil || strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("got %v %q, want %q", err, got, want)
	}
	if calls != 1 || len(h.maps) != 0 {
		t.Fatalf("%d mappings tried (want 1), %d left", calls, len(h.maps))
	}
}

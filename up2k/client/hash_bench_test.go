package client

import (
	"context"
	"crypto/rand"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// BenchmarkHashFile hashes a 256 MiB file (from the page cache) as
// `hoard up` does before its handshake: MB/s is the client's hashing
// speed on this machine, reads included.
func BenchmarkHashFile(b *testing.B) {
	const size = 256 << 20
	p := filepath.Join(b.TempDir(), "f")
	buf := make([]byte, size)
	rand.Read(buf)
	if err := os.WriteFile(p, buf, 0o644); err != nil {
		b.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	h := newHasher(runtime.GOMAXPROCS(0))
	defer h.close()
	b.SetBytes(size)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := h.hashFile(context.Background(), f, size); err != nil {
			b.Fatal(err)
		}
	}
}

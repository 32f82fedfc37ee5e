package client

import (
	"context"
	"runtime"
	"testing"
)

// BenchmarkHashFile hashes a 256 MiB file (from the page cache) as
// `hoard up` does before its handshake: MB/s is the client's hashing
// speed on this machine, reading the file included (from mappings where
// the lanes run).
func BenchmarkHashFile(b *testing.B) {
	const size = 256 << 20
	_, f := randomFile(b, size)
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

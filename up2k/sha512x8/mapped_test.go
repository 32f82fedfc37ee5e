//go:build linux

package sha512x8

import (
	"crypto/sha512"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestMappedFault: hashing a mapping of a file truncated under it faults
// in the lanes; a Hasher from NewMapped marks the streams then in the
// lanes as faulted and goes on hashing others correctly (with the lanes;
// the Go kernel fails every stream beside the fault).
func TestMappedFault(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	data := make([]byte, 1<<20)
	for i := range data {
		data[i] = byte(i * 7)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := syscall.Mmap(int(f.Fd()), 0, len(data), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Munmap(m)
	if err := os.Truncate(p, 4096); err != nil {
		t.Fatal(err)
	}

	h := NewMapped(2)
	defer h.Close()
	for round := range 3 {
		bad := h.New()
		bad.Write(m, nil)
		bad.Finish()
		good := h.New()
		good.Write(data, nil)
		good.Finish()
		bad.Sum()
		if !bad.Faulted() {
			t.Fatalf("round %d: a truncated mapping was hashed without a fault", round)
		}
		got := good.Sum()
		if !Available() {
			continue // without the lanes every stream beside a fault fails too
		}
		if good.Faulted() || got != sha512.Sum512(data) {
			t.Fatalf("round %d: a stream beside the fault: faulted %v, sum %x", round, good.Faulted(), got[:8])
		}
	}
}

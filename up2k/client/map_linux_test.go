package client

import (
	"bytes"
	"context"
	"errors"
	"os"
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
	got, err := h.hashFile(context.Background(), dataFile(t, data), int64(len(data)))
	if want := refHashes(data); err != nil || strings.Join(got, ",") != want {
		t.Fatalf("got %v %q, want %q", err, got, want)
	}
	if calls != 1 || len(h.maps) != 0 {
		t.Fatalf("%d mappings tried (want 1), %d left", calls, len(h.maps))
	}
}

// TestHashTruncatedMeanwhile: a file cut short and grown again while it
// is hashed from mappings (a fault in the lanes at any moment) never
// crashes the client: each hash either succeeds or says the file
// changed, every mapping is removed, and the hasher goes on to hash an
// untouched file correctly.
func TestHashTruncatedMeanwhile(t *testing.T) {
	defer func(w int64) { mapWindow = w }(mapWindow)
	mapWindow = 256 << 10
	h := newHasher(2)
	defer h.close()
	if h.maps == nil {
		t.Skip("no SHA-512 lanes on this CPU: files are never mapped")
	}
	const size = 24 << 20
	data := bytes.Repeat([]byte("0123456789abcdef"), size/16)
	f := dataFile(t, data)
	p := f.Name()
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		w, err := os.OpenFile(p, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		defer w.Close()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			w.Truncate(int64(i%7) << 20)
			w.WriteAt(data, 0)
		}
	}()
	changed, ok := 0, 0
	for range 20 {
		_, err := h.hashFile(context.Background(), f, size)
		switch {
		case err == nil:
			ok++
		case errors.Is(err, errChanged):
			changed++
		default:
			t.Fatalf("hashing a file cut meanwhile: %v", err)
		}
	}
	close(stop)
	<-done
	t.Logf("%d hashed, %d changed", ok, changed)
	if len(h.maps) != 0 {
		t.Fatalf("%d mappings left", len(h.maps))
	}
	// The hasher is fine afterwards.
	got, err := h.hashFile(context.Background(), dataFile(t, data), size)
	if err != nil || strings.Join(got, ",") != refHashes(data) {
		t.Fatalf("after the faults: %v", err)
	}
}

// refHashes is data's chunk hashes as the server computes them, joined.
func refHashes(data []byte) string {
	_, hs, _ := up2k.HashFile(context.Background(), bytes.NewReader(data), int64(len(data)), "s", 0, "", "f")
	return strings.Join(hs, ",")
}

package up2k

import (
	"bytes"
	"context"
	"crypto/rand"
	"io"
	"runtime"
	"testing"
)

// HashFile agrees with ChunkHash over ChunkSize chunks and with Wark.
func TestHashFile(t *testing.T) {
	for _, size := range []int64{1, 1 << 20, 1<<20 + 1, 300 << 20} {
		data := make([]byte, size)
		rand.Read(data[:min(size, 4096)])
		wark, chunks, err := HashFile(context.Background(), bytes.NewReader(data), size, "hunter2", 0, "", "x")
		if err != nil {
			t.Fatal(err)
		}
		cs := ChunkSize(size)
		var want []string
		for off := int64(0); off < size; off += cs {
			want = append(want, ChunkHash(data[off:min(off+cs, size)]))
		}
		if len(chunks) != len(want) {
			t.Fatalf("size %d: %d chunks, want %d", size, len(chunks), len(want))
		}
		for i := range want {
			if chunks[i] != want[i] {
				t.Fatalf("size %d chunk %d differs", size, i)
			}
		}
		if wark != Wark("hunter2", size, want) {
			t.Fatalf("size %d: wark differs", size)
		}
	}
	w, c, err := HashFile(context.Background(), bytes.NewReader(nil), 0, "hunter2", 5, "d", "e")
	if err != nil || c != nil || w != MetaWark("hunter2", 5, 0, "d", "e") {
		t.Fatalf("empty file: %q %v %v", w, c, err)
	}
	// A file shorter than announced is an error, not a wrong hash.
	if _, _, err := HashFile(context.Background(), bytes.NewReader(make([]byte, 10)), 20, "s", 0, "", "x"); err != io.ErrUnexpectedEOF {
		t.Fatalf("short file: %v", err)
	}
}

// TestHashFileSmallBuffer: hashing a small file (the indexer does it for
// every upload) allocates in proportion to the file, not a 256 KiB
// buffer each time.
func TestHashFileSmallBuffer(t *testing.T) {
	data := bytes.Repeat([]byte("x"), 4<<10)
	const runs = 50
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range runs {
		if _, _, err := HashFile(context.Background(), bytes.NewReader(data), int64(len(data)), "hunter2", 0, "", "x"); err != nil {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / runs; per > 32<<10 {
		t.Fatalf("HashFile of a 4 KiB file allocates %d bytes, want under 32 KiB", per)
	}
}

package up2k

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha512"
	"io"
	"runtime"
	"slices"
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

// FuzzIdentify: for any content, Identify from the SHA-512 of the whole
// content gives what HashFile computes by reading it, whenever the file
// is one chunk; for more chunks, an empty file or a digest that is not
// SHA-512's length, it gives nothing.
func FuzzIdentify(f *testing.F) {
	f.Add([]byte("hello"), int64(0), "hunter2")
	f.Add([]byte{0}, int64(1<<20-1), "s")
	f.Add([]byte("x"), int64(1<<20), "")
	f.Add([]byte{}, int64(0), "salt")
	f.Fuzz(func(t *testing.T, seed []byte, pad int64, salt string) {
		if pad < 0 || pad > 1<<20+10 {
			return
		}
		data := append(slices.Clone(seed), make([]byte, pad)...)
		size := int64(len(data))
		sum := sha512.Sum512(data)
		wark, chunks := Identify(salt, sum[:], size)
		if size == 0 || NumChunks(size, ChunkSize(size)) != 1 {
			if wark != "" || chunks != nil {
				t.Fatalf("size %d: Identify gave %q %q, want nothing", size, wark, chunks)
			}
			return
		}
		w2, c2, err := HashFile(context.Background(), bytes.NewReader(data), size, salt, 0, "", "f")
		if err != nil {
			t.Fatal(err)
		}
		if wark != w2 || !slices.Equal(chunks, c2) {
			t.Fatalf("size %d: Identify %q %q, HashFile %q %q", size, wark, chunks, w2, c2)
		}
		if w, c := Identify(salt, sum[:32], size); w != "" || c != nil {
			t.Fatalf("a short digest gave %q %q", w, c)
		}
	})
}

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

	"hoard/up2k/sha512x8"
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

// TestHashFileLanes: a file of several chunks is hashed through the
// SHA-512 lanes where the CPU has them (the indexer's second reading of a
// big PUT costs a quarter of the CPU), with the same chunk hashes and wark
// as crypto/sha512 one chunk at a time, for every shape of file: fewer
// than eight chunks, more than eight, a short last chunk, a last chunk
// that is not a whole number of blocks, and the 1.5 MiB chunk size.
func TestHashFileLanes(t *testing.T) {
	data := make([]byte, 300<<20+77)
	rand.Read(data)
	sizes := []int64{3 << 20, 3<<20 + 1, 5<<20 - 129, 8 << 20, 17<<20 + 12345, 257 << 20, 300<<20 + 77}
	for _, size := range sizes {
		before := laneBytes.Load()
		wark, chunks, err := HashFile(context.Background(), anywhere{bytes.NewReader(data[:size])}, size, "s", 0, "", "x")
		if err != nil {
			t.Fatal(err)
		}
		if got := laneBytes.Load() - before; sha512x8.Available() && got != size {
			t.Errorf("size %d: %d bytes went through the lanes, want all of them", size, got)
		}
		hashFileSingle = true
		w1, c1, err := HashFile(context.Background(), anywhere{bytes.NewReader(data[:size])}, size, "s", 0, "", "x")
		hashFileSingle = false
		if err != nil {
			t.Fatal(err)
		}
		if wark != w1 || !slices.Equal(chunks, c1) {
			t.Fatalf("size %d: lanes and crypto/sha512 disagree", size)
		}
		// A reader not marked RandomAccess (an object store's: every jump
		// a new ranged GET) is read in order, to the same hashes.
		seq := &inOrder{r: bytes.NewReader(data[:size])}
		w2, c2, err := HashFile(context.Background(), seq, size, "s", 0, "", "x")
		if err != nil || seq.jumps != 0 || w2 != wark || !slices.Equal(c2, chunks) {
			t.Fatalf("size %d, a reader read in order: %v, %d jumps, same hashes %v", size, err, seq.jumps, w2 == wark)
		}
	}
	// A file shorter than announced is an error, not a wrong hash, and
	// every buffer comes back (no hang).
	if _, _, err := HashFile(context.Background(), anywhere{bytes.NewReader(data[:9<<20])}, 20<<20, "s", 0, "", "x"); err != io.ErrUnexpectedEOF {
		t.Fatalf("short file: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := HashFile(ctx, anywhere{bytes.NewReader(data)}, int64(len(data)), "s", 0, "", "x"); err != context.Canceled {
		t.Fatalf("cancelled: %v", err)
	}
}

// anywhere is a reader that may be read at any offset (RandomAccess).
type anywhere struct{ io.ReaderAt }

func (anywhere) RandomAccess() {}

// inOrder counts the reads that do not go on where the last one ended.
type inOrder struct {
	r     io.ReaderAt
	next  int64
	jumps int
}

func (o *inOrder) ReadAt(p []byte, off int64) (int, error) {
	if off != o.next {
		o.jumps++
	}
	n, err := o.r.ReadAt(p, off)
	o.next = off + int64(n)
	return n, err
}

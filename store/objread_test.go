package store

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"testing"
)

// fakeObject reads data as s3's reader does: a read after a seek to
// another offset "opens a GET" (counted).
type fakeObject struct {
	data   []byte
	off    int64
	open   bool
	gets   int
	closed bool
}

func (f *fakeObject) Read(p []byte) (int, error) {
	if f.off >= int64(len(f.data)) {
		return 0, io.EOF
	}
	if !f.open {
		f.open, f.gets = true, f.gets+1
	}
	n := copy(p[:min(len(p), 1000)], f.data[f.off:]) // short reads, as a network body gives
	f.off += int64(n)
	return n, nil
}

func (f *fakeObject) Seek(off int64, whence int) (int64, error) {
	switch whence {
	case io.SeekCurrent:
		off += f.off
	case io.SeekEnd:
		off += int64(len(f.data))
	}
	if off < 0 {
		return 0, errors.New("before start")
	}
	if off != f.off {
		f.open = false
	}
	f.off = off
	return off, nil
}

func (f *fakeObject) Close() error { f.closed = true; return nil }

// ObjectReader behaves as bytes.Reader (an os.File's semantics: ReadAt
// leaves the reading position alone) under any mix of calls, and reads
// in order cost one GET.
func TestObjectReaderProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		data := make([]byte, rng.IntN(20000))
		for i := range data {
			data[i] = byte(rng.IntN(256))
		}
		o, ref := NewObjectReader(&fakeObject{data: data}), bytes.NewReader(data)
		for step := range 50 {
			size := rng.IntN(3000)
			switch rng.IntN(3) {
			case 0:
				pos, _ := ref.Seek(0, io.SeekCurrent)
				want := data[min(pos, int64(len(data))):]
				p := make([]byte, size)
				n, err := o.Read(p)
				if n > len(want) || !bytes.Equal(p[:n], want[:n]) || size > 0 && len(want) > 0 && n == 0 || size > 0 && len(want) == 0 && !errors.Is(err, io.EOF) {
					t.Fatalf("round %d step %d Read(%d) at %d: %d %v", round, step, size, pos, n, err)
				}
				ref.Seek(int64(n), io.SeekCurrent)
			case 1:
				off := int64(rng.IntN(len(data) + 10))
				a, b := make([]byte, size), make([]byte, size)
				n, err := o.ReadAt(a, off)
				m, rerr := ref.ReadAt(b, off)
				if n != m || !bytes.Equal(a[:n], b[:m]) || (err == nil) != (rerr == nil) {
					t.Fatalf("round %d step %d ReadAt(%d, %d): %d %v vs %d %v", round, step, size, off, n, err, m, rerr)
				}
			case 2:
				off, whence := int64(rng.IntN(len(data)+10)), rng.IntN(3)
				if whence != io.SeekStart {
					off -= int64(len(data) / 2)
				}
				n, err := o.Seek(off, whence)
				m, rerr := ref.Seek(off, whence)
				if n != m && err == nil || (err == nil) != (rerr == nil) {
					t.Fatalf("round %d step %d Seek(%d, %d): %d %v vs %d %v", round, step, off, whence, n, err, m, rerr)
				}
			}
		}
	}
	// Reading through at offsets in order: one GET.
	f := &fakeObject{data: bytes.Repeat([]byte("abc"), 100000)}
	o := NewObjectReader(f)
	if _, err := io.Copy(io.Discard, io.NewSectionReader(o, 0, int64(len(f.data)))); err != nil || f.gets != 1 {
		t.Fatalf("a read through at offsets: %v, %d GETs", err, f.gets)
	}
	o.Close()
	if !f.closed {
		t.Error("Close did not close the object's reader")
	}
}

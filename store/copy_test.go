package store

import (
	"bytes"
	"context"
	"crypto/sha512"
	"errors"
	"io"
	mrand "math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"testing/iotest"
)

// TestCopySmallMatchesPipe: for bodies that fit one buffer, the one-step
// copy (copySmall) and the three-stage copy (copyPipe) agree on every
// input: the count, the kind of error, the bytes written and the hash,
// whatever the body's length against the announced size, its read
// pattern and its read errors; and copySmall writes nothing on an error.
func TestCopySmallMatchesPipe(t *testing.T) {
	st, _ := openStore(t, "::rw")
	v := st.Volumes()[0]
	rng := mrand.New(mrand.NewPCG(1, 2))
	boom := errors.New("connection reset")
	for i := range 2000 {
		n := rng.IntN(ioBufSize + 1)
		if i%4 == 0 {
			n = rng.IntN(64)
		}
		data := make([]byte, n)
		for j := range data {
			data[j] = byte(rng.Uint32())
		}
		size := int64(n)
		switch rng.IntN(5) {
		case 0:
			size = max(0, size-1-int64(rng.IntN(8))) // the body is longer than announced
		case 1:
			size = min(ioBufSize, size+1+int64(rng.IntN(8))) // shorter
		}
		mode := rng.IntN(4)
		szMax := int64(0)
		if rng.IntN(6) == 0 {
			szMax = int64(rng.IntN(n + 1))
		}
		reader := func() io.Reader {
			var r io.Reader = bytes.NewReader(data)
			switch mode {
			case 1:
				r = iotest.OneByteReader(r)
			case 2:
				r = iotest.DataErrReader(iotest.HalfReader(r))
			case 3:
				r = io.MultiReader(bytes.NewReader(data[:n/2]), iotest.ErrReader(boom))
			}
			return r
		}
		f := v.Flags()
		f.SzMax, f.SzMin = szMax, 0
		v.setFlags(f)
		var wa, wb bytes.Buffer
		ha, hb := sha512.New(), sha512.New()
		na, ea := v.copySmall(context.Background(), &wa, reader(), ha, size)
		nb, eb := v.copyPipe(context.Background(), &wb, nil, reader(), hb, size)
		if (ea == nil) != (eb == nil) || ea != nil && !sameKind(ea, eb) {
			t.Fatalf("case %d (%d bytes, size %d, mode %d, max %d): copySmall = %d, %v; copyPipe = %d, %v", i, n, size, mode, szMax, na, ea, nb, eb)
		}
		if ea != nil {
			if wa.Len() != 0 {
				t.Fatalf("case %d: copySmall wrote %d bytes and failed (%v)", i, wa.Len(), ea)
			}
			continue
		}
		if na != nb || !bytes.Equal(wa.Bytes(), wb.Bytes()) || !bytes.Equal(ha.Sum(nil), hb.Sum(nil)) {
			t.Fatalf("case %d (%d bytes, size %d, mode %d): copySmall %d bytes, copyPipe %d: they differ", i, n, size, mode, na, nb)
		}
		if na != size || !bytes.Equal(wa.Bytes(), data[:size]) {
			t.Fatalf("case %d: copied %d bytes, want the %d announced", i, na, size)
		}
	}
	f := v.Flags()
	f.SzMax = 0
	v.setFlags(f)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := v.copySmall(ctx, io.Discard, bytes.NewReader([]byte("x")), nil, 1); !errors.Is(err, context.Canceled) {
		t.Fatalf("copySmall with a cancelled context = %v", err)
	}
}

func sameKind(a, b error) bool {
	var sa, sb *SizeError
	if errors.As(a, &sa) || errors.As(b, &sb) {
		return errors.As(a, &sa) && errors.As(b, &sb)
	}
	return errors.Is(a, ErrShortBody) && errors.Is(b, ErrShortBody)
}

// gateReader gives its first byte, then waits for the gate before the
// rest.
type gateReader struct {
	data    []byte
	started chan<- struct{}
	gate    <-chan struct{}
	n       int
}

func (r *gateReader) Read(p []byte) (int, error) {
	if r.n == 0 && len(p) > 0 && len(r.data) > 0 {
		p[0] = r.data[0]
		r.n = 1
		r.started <- struct{}{}
		return 1, nil
	}
	<-r.gate
	if r.n == len(r.data) {
		return 0, io.EOF
	}
	k := copy(p, r.data[r.n:])
	r.n += k
	return k, nil
}

// TestCopySmallBuffer: 32 small PUTs (4 KiB) reading at once hold small
// buffers, not 32 of the 512 KiB ones (16 MiB of heap, and of peak RSS:
// issue 19).
func TestCopySmallBuffer(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's own memory")
	}
	st, _ := openStore(t, "::rw")
	v := st.Volumes()[0]
	data := bytes.Repeat([]byte("x"), 4096)
	runtime.GC()
	runtime.GC() // empties the pools
	var before, during runtime.MemStats
	runtime.ReadMemStats(&before)
	started, gate := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var w bytes.Buffer
			r := &gateReader{data: data, started: started, gate: gate}
			if n, err := v.copyIn(context.Background(), &w, nil, r, sha512.New(), int64(len(data))); n != 4096 || err != nil || !bytes.Equal(w.Bytes(), data) {
				t.Errorf("copyIn = %d, %v", n, err)
			}
		}()
	}
	for range 32 {
		<-started
	}
	runtime.ReadMemStats(&during)
	close(gate)
	wg.Wait()
	grew := int64(during.HeapInuse) - int64(before.HeapInuse)
	t.Logf("heap in use grew %d KiB with 32 small bodies being read", grew>>10)
	if grew > 4<<20 {
		t.Fatalf("32 small bodies being read hold %d KiB of heap, want under 4 MiB", grew>>10)
	}
}

// sizeReader records the length of every Read asked of it.
type sizeReader struct {
	r    io.Reader
	most int
}

func (s *sizeReader) Read(p []byte) (int, error) {
	s.most = max(s.most, len(p))
	return s.r.Read(p)
}

// TestCopyPipeBigReads: a big body is read 1 MiB at a time once its first
// 256 KiB are in (half the reads and hand-offs of 256 KiB ones: issue 19),
// a body that turns out small, of known length or not, never asks for more
// than 256 KiB (no big buffer held by a small upload), and whatever the
// size and read pattern the bytes written and hashed are the body's.
func TestCopyPipeBigReads(t *testing.T) {
	st, _ := openStore(t, "::rw")
	v := st.Volumes()[0]
	rng := mrand.New(mrand.NewPCG(3, 4))
	data := make([]byte, 9<<20+333)
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	for _, c := range []struct {
		n     int
		known bool
		most  int
	}{
		{9<<20 + 333, true, bigBufSize},
		{9<<20 + 333, false, bigBufSize},
		{4 << 20, true, bigBufSize},
		{300 << 10, true, 256 << 10},
		{512 << 10, true, 256 << 10},
		{4096, false, 256 << 10},
		{200 << 10, false, 256 << 10},
	} {
		for mode := range 3 {
			var r io.Reader = bytes.NewReader(data[:c.n])
			switch mode {
			case 1:
				r = iotest.HalfReader(r)
			case 2:
				r = iotest.DataErrReader(r)
			}
			sr := &sizeReader{r: r}
			size := int64(-1)
			if c.known {
				size = int64(c.n)
			}
			var w bytes.Buffer
			h := sha512.New()
			n, err := v.copyPipe(context.Background(), &w, nil, sr, h, size)
			if err != nil || n != int64(c.n) {
				t.Fatalf("%d bytes (known %v, mode %d): copyPipe = %d, %v", c.n, c.known, mode, n, err)
			}
			want := sha512.Sum512(data[:c.n])
			if !bytes.Equal(w.Bytes(), data[:c.n]) || !bytes.Equal(h.Sum(nil), want[:]) {
				t.Fatalf("%d bytes (known %v, mode %d): written or hashed bytes differ", c.n, c.known, mode)
			}
			if sr.most != c.most {
				t.Errorf("%d bytes (known %v, mode %d): largest read %d KiB, want %d KiB", c.n, c.known, mode, sr.most>>10, c.most>>10)
			}
		}
	}
}

package store

import (
	"bytes"
	"context"
	"crypto/sha512"
	"errors"
	"io"
	mrand "math/rand/v2"
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

package store

import (
	"context"
	"errors"
	"fmt"
	"hash"
	"io"
	"sync"
	"sync/atomic"
)

// ioBufSize is the read size on upload paths: large reads keep syscalls and
// hash calls few (copyparty measured 256 KiB and up as best).
const ioBufSize = 512 << 10

var bufPool = sync.Pool{New: func() any { return new([ioBufSize]byte) }}

type filled struct {
	b *[ioBufSize]byte
	n int
}

// copyIn copies r to w, feeding h (when not nil) with the same bytes, and
// returns the number of bytes read. Reading runs on the caller's goroutine
// while hashing and writing run on another, so the network read of one
// buffer overlaps the hashing of the previous one. size ≥ 0 is the exact
// length expected; fewer bytes is ErrShortBody. The volume's sz= maximum is
// enforced as bytes arrive.
func (v *Volume) copyIn(ctx context.Context, w io.Writer, r io.Reader, h hash.Hash, size int64) (int64, error) {
	work := make(chan filled, 2)
	done := make(chan struct{})
	var failed atomic.Bool
	var werr error // written by the worker before done closes
	go func() {
		defer close(done)
		for c := range work {
			if !failed.Load() {
				p := c.b[:c.n]
				if h != nil {
					h.Write(p)
				}
				if _, err := w.Write(p); err != nil {
					werr = v.writeErr(err, size)
					failed.Store(true)
				}
			}
			bufPool.Put(c.b)
		}
	}()

	var total int64
	var rerr error
	for !failed.Load() {
		if err := ctx.Err(); err != nil {
			rerr = err
			break
		}
		b := bufPool.Get().(*[ioBufSize]byte)
		want := len(b)
		if size >= 0 && size-total < int64(want) {
			want = int(size - total)
		}
		n, err := io.ReadFull(r, b[:want])
		total += int64(n)
		if n > 0 {
			work <- filled{b, n}
		} else {
			bufPool.Put(b)
		}
		if max := v.Flags.SzMax; max > 0 && total > max {
			rerr = &SizeError{Size: total, Min: v.Flags.SzMin, Max: max}
			break
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			if size >= 0 && total < size {
				rerr = fmt.Errorf("%w: got %d of %d bytes", ErrShortBody, total, size)
			}
			break
		}
		if err != nil {
			rerr = fmt.Errorf("%w: after %d bytes: %w", ErrShortBody, total, err)
			break
		}
		if size >= 0 && total == size {
			break
		}
	}
	close(work)
	<-done
	if werr != nil {
		return total, werr
	}
	if rerr == nil && v.Flags.SzMax > 0 && total < v.Flags.SzMin {
		rerr = &SizeError{Size: total, Min: v.Flags.SzMin, Max: v.Flags.SzMax}
	}
	return total, rerr
}

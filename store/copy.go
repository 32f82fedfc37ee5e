package store

import (
	"context"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"sync"
	"sync/atomic"
)

// ioBufSize is the read size of a small body (copySmall) and of the first
// read of any other: large reads keep syscalls and hash calls few
// (copyparty measured 256 KiB and up as best). A big body goes on with
// bigBufSize. (perf19 had taken the pipe's reads from 512 to 256 KiB for
// the peak RSS; on a quiet machine that cost a 1 GiB PUT 0.08 CPU-seconds
// and 3 % in alternating rounds, which bigBufSize undoes.)
const ioBufSize = 256 << 10

// writebackEvery starts the kernel's writeback of a file being uploaded
// every this many bytes, so the final fsync finds little left to do and
// disk writes overlap the network.
const writebackEvery = 8 << 20

var bufPool = sync.Pool{New: func() any { return new([ioBufSize]byte) }}

// bigBufSize is the read size of a big upload once its first ioBufSize
// bytes are in. A body that turns out small never takes one, so many small
// uploads at once hold no big buffers. It was 1 MiB (a quarter of the
// reads and hand-offs; ~0.08 CPU-seconds less per GiB), but with the
// indexer's lanes re-hashing the previous upload at the same time that
// took the peak RSS of the compare run's put-large from 59 to 70 MiB
// (issue 19's limit is 64): three 1 GiB PUTs in a row, VmHWM 48–50 MiB
// with 1 MiB buffers and 24 lane pieces, 40–43 MiB with ioBufSize here and
// 8 lane pieces (up2k/hash.go), 43–45 MiB with 512 KiB.
const bigBufSize = ioBufSize

// pipeDepth is how many buffers wait for the hasher and for the writer.
// The hasher is the slow stage (one core's SHA-512) and must never wait:
// with one buffer queued it stood idle a fifth of a 1 GiB PUT whenever the
// socket or the writer paused. On the 2-core VM of the eleventh session
// (bench/ab.sh, put-large 1 GiB, alternating rounds): 1 deep 590 MB/s, 4
// deep 644 (+9 %, 9 rounds), hashing queue alone 4 deep 638, 8 deep 667
// against 4 deep's 672; the same CPU per byte, peak RSS 53 MiB either way.
// (On the earlier VM 4 deep had cost 3 %: 1038 vs 1066 MB/s.) An upload
// holds at most 2 × pipeDepth + 3 buffers of bigBufSize (one being read,
// one being hashed, one being written, the queues'); as the hasher is the
// slow stage, about pipeDepth + 2 in practice (1.5 MiB).
const pipeDepth = 4

var bigPool = sync.Pool{New: func() any { return new([bigBufSize]byte) }}

// smallBufSize is the buffer of a small body (copySmall): a 4 KiB PUT
// reads into 16 KiB, not into ioBufSize (512 KiB then). The memory of a buffer a pool
// hands out again is zeroed whole by the runtime when it is allocated
// anew, so 32 small PUTs at once held 32 resident 512 KiB buffers: 16 MiB
// of peak RSS (issue 19).
const smallBufSize = 16 << 10

var smallBufPool = sync.Pool{New: func() any { return new([smallBufSize]byte) }}

// filled is one buffer of body bytes on its way to the hasher and the
// writer; the last of them to finish returns it to the pool.
type filled struct {
	b     []byte
	small *[ioBufSize]byte  // the buffer when from bufPool
	big   *[bigBufSize]byte // the buffer when from bigPool
	refs  *atomic.Int32
}

func (c filled) release() {
	if c.refs.Add(-1) == 0 {
		c.put()
	}
}

func (c filled) put() {
	if c.big != nil {
		bigPool.Put(c.big)
	} else {
		bufPool.Put(c.small)
	}
}

// copyIn copies r to w, feeding h (when not nil) with the same bytes, and
// returns the number of bytes read. Three stages run at once: reading (on
// the caller's goroutine), hashing and writing (one goroutine each), so an
// upload uses as many cores as there are stages. When w is the file itself
// (f == w), writeback is started as the file grows. size ≥ 0 is the exact
// length expected; fewer bytes is ErrShortBody. The volume's sz= maximum is
// enforced as bytes arrive.
func (v *Volume) copyIn(ctx context.Context, w io.Writer, f *os.File, r io.Reader, h hash.Hash, size int64) (int64, error) {
	if size >= 0 && size <= ioBufSize {
		return v.copySmall(ctx, w, r, h, size)
	}
	return v.copyPipe(ctx, w, f, r, h, size)
}

// copyPipe is copyIn's three stages.
func (v *Volume) copyPipe(ctx context.Context, w io.Writer, f *os.File, r io.Reader, h hash.Hash, size int64) (int64, error) {
	var failed atomic.Bool
	var wg sync.WaitGroup
	toWrite := make(chan filled, pipeDepth)
	var toHash chan filled
	var werr error // set by the writer before wg.Done
	wg.Add(1)
	go func() {
		defer wg.Done()
		var off, synced int64
		fd := -1
		if f != nil && any(w) == any(f) {
			fd = int(f.Fd())
		}
		for c := range toWrite {
			if !failed.Load() {
				if _, err := w.Write(c.b); err != nil {
					werr = v.writeErr(err, size)
					failed.Store(true)
				}
				off += int64(len(c.b))
				if fd >= 0 && off-synced >= writebackEvery {
					StartWriteback(fd, synced, off-synced)
					synced = off
				}
			}
			c.release()
		}
	}()
	if h != nil {
		toHash = make(chan filled, pipeDepth)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range toHash {
				if !failed.Load() {
					h.Write(c.b)
				}
				c.release()
			}
		}()
	}

	var total int64
	var rerr error
	for !failed.Load() {
		if err := ctx.Err(); err != nil {
			rerr = err
			break
		}
		var c filled
		if total < ioBufSize || (size >= 0 && size-total <= ioBufSize) {
			c.small = bufPool.Get().(*[ioBufSize]byte)
			c.b = c.small[:]
		} else {
			c.big = bigPool.Get().(*[bigBufSize]byte)
			c.b = c.big[:]
		}
		if size >= 0 && size-total < int64(len(c.b)) {
			c.b = c.b[:size-total]
		}
		n, err := readFull(r, c.b)
		total += int64(n)
		if n > 0 {
			c.b, c.refs = c.b[:n], new(atomic.Int32)
			if toHash != nil {
				c.refs.Store(2)
				toHash <- c
			} else {
				c.refs.Store(1)
			}
			toWrite <- c
		} else {
			c.put()
		}
		if max := v.Flags().SzMax; max > 0 && total > max {
			rerr = &SizeError{Size: total, Min: v.Flags().SzMin, Max: max}
			break
		}
		if errors.Is(err, io.EOF) {
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
	close(toWrite)
	if toHash != nil {
		close(toHash)
	}
	wg.Wait()
	if werr != nil {
		return total, werr
	}
	if rerr == nil && v.Flags().SzMax > 0 && total < v.Flags().SzMin {
		rerr = &SizeError{Size: total, Min: v.Flags().SzMin, Max: v.Flags().SzMax}
	}
	return total, rerr
}

// copySmall is copyIn for a body of known length that fits one buffer:
// read it whole, then hash and write it on the caller's goroutine. Three
// stages would only add goroutines, channels and hand-offs to an upload
// this small. Nothing is written unless all size bytes arrived.
func (v *Volume) copySmall(ctx context.Context, w io.Writer, r io.Reader, h hash.Hash, size int64) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	var b []byte
	if size <= smallBufSize {
		sb := smallBufPool.Get().(*[smallBufSize]byte)
		defer smallBufPool.Put(sb)
		b = sb[:size]
	} else {
		lb := bufPool.Get().(*[ioBufSize]byte)
		defer bufPool.Put(lb)
		b = lb[:size]
	}
	n, err := readFull(r, b)
	total := int64(n)
	if max := v.Flags().SzMax; max > 0 && total > max {
		return total, &SizeError{Size: total, Min: v.Flags().SzMin, Max: max}
	}
	switch {
	case total < size && (err == nil || errors.Is(err, io.EOF)):
		return total, fmt.Errorf("%w: got %d of %d bytes", ErrShortBody, total, size)
	case err != nil && !errors.Is(err, io.EOF):
		return total, fmt.Errorf("%w: after %d bytes: %w", ErrShortBody, total, err)
	}
	if h != nil {
		h.Write(b[:n])
	}
	if n > 0 {
		if _, err := w.Write(b[:n]); err != nil {
			return total, v.writeErr(err, size)
		}
	}
	if v.Flags().SzMax > 0 && total < v.Flags().SzMin {
		return total, &SizeError{Size: total, Min: v.Flags().SzMin, Max: v.Flags().SzMax}
	}
	return total, nil
}

// readFull reads until b is full or r fails. Unlike io.ReadFull it reports
// the clean end of input as io.EOF even after a partial read, so that an
// io.ErrUnexpectedEOF from r itself (a chunked or multipart body cut off
// before its end) stays an error instead of passing for the end.
func readFull(r io.Reader, b []byte) (n int, err error) {
	for n < len(b) && err == nil {
		var k int
		k, err = r.Read(b[n:])
		n += k
	}
	return n, err
}

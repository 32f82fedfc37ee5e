package client

import (
	"context"
	"crypto/sha512"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"hoard/up2k"
	"hoard/up2k/sha512x8"
)

// pieceSize is how much of a chunk is read at a time; every chunk size is
// a multiple of it (they are multiples of 512 KiB), so only a file's last
// piece is ever short, as the lanes need.
const pieceSize = 256 << 10

// hasher computes chunk hashes on all cores: through the SHA-512 lanes
// when the CPU has them (several chunks, of one big file or of many small
// ones, share one core's eight lanes), else with crypto/sha512 on one
// goroutine per chunk. Its buffers come from a fixed pool, so memory is
// bounded however many files and chunks are in flight.
type hasher struct {
	lanes *sha512x8.Hasher // nil without the lanes
	bufs  chan []byte
	maps  chan struct{} // a place for each mapping of a file being hashed
	par   int           // chunks of one file hashed at once
	done  func(n int64) // called with each chunk's length once hashed (progress); may be nil
}

func newHasher(cores int) *hasher {
	cores = max(1, cores)
	h := &hasher{par: cores}
	nbuf := 8 * h.par
	if sha512x8.Available() {
		// One goroutine of lanes per core: the client hashes a big file
		// before it sends any of it, with the machine to itself, and
		// big files are hashed from mappings (hashMapped), which keep
		// every lane full. Small files are read into buffers.
		h.lanes = sha512x8.NewMapped(cores)
		h.par = 8 * cores
		nbuf = 32 * max(1, cores/2)
		h.maps = make(chan struct{}, 2*h.par)
	}
	h.bufs = make(chan []byte, nbuf)
	for range nbuf {
		h.bufs <- make([]byte, pieceSize)
	}
	return h
}

func (h *hasher) close() {
	if h.lanes != nil {
		h.lanes.Close()
	}
}

var b64 = base64.RawURLEncoding

// errChanged is a file whose size or content changed while it was read.
var errChanged = fmt.Errorf("the file changed while it was being read")

// chunk hashes n bytes of f at off.
func (h *hasher) chunk(ctx context.Context, f io.ReaderAt, off, n int64) (string, error) {
	if h.lanes == nil {
		buf := <-h.bufs
		defer func() { h.bufs <- buf }()
		d := sha512.New()
		for done := int64(0); done < n; {
			if err := ctx.Err(); err != nil {
				return "", err
			}
			k := min(int64(len(buf)), n-done)
			got, err := f.ReadAt(buf[:k], off+done)
			if int64(got) < k {
				return "", readErr(err)
			}
			d.Write(buf[:k])
			done += k
		}
		h.progress(n)
		return b64.EncodeToString(d.Sum(nil)[:33]), nil
	}
	s := h.lanes.New()
	var werr error
	for done := int64(0); done < n; {
		if werr = ctx.Err(); werr != nil {
			break
		}
		buf := <-h.bufs
		k := min(int64(len(buf)), n-done)
		got, err := f.ReadAt(buf[:k], off+done)
		if int64(got) < k {
			h.bufs <- buf
			werr = readErr(err)
			break
		}
		s.Write(buf[:k], func() { h.bufs <- buf })
		done += k
	}
	// The stream is finished even after an error, so that every buffer
	// handed to it comes back.
	s.Finish()
	sum := s.Sum()
	if werr != nil {
		return "", werr
	}
	h.progress(n)
	return b64.EncodeToString(sum[:33]), nil
}

func (h *hasher) progress(n int64) {
	if h.done != nil {
		h.done(n)
	}
}

func readErr(err error) error {
	if err == nil || err == io.EOF {
		return errChanged // shorter than its size said: it shrank
	}
	return err
}

// hashFile computes the chunk hashes of f (size bytes), hashing up to
// h.par chunks at once.
func (h *hasher) hashFile(ctx context.Context, f *os.File, size int64) ([]string, error) {
	if size == 0 {
		return []string{}, nil
	}
	cs := up2k.ChunkSize(size)
	if canMap && h.maps != nil && size >= mapMin {
		hs, err := h.hashMapped(ctx, f, size, cs)
		if !errors.Is(err, errNoMap) {
			return hs, err
		}
	}
	n := int(up2k.NumChunks(size, cs))
	out := make([]string, n)
	if n == 1 {
		k, err := h.chunk(ctx, f, 0, size)
		out[0] = k
		return out, err
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		done  int64 // bytes of chunks hashed (and reported to progress)
		next  = make(chan int)
	)
	for range min(n, h.par) {
		wg.Go(func() {
			for i := range next {
				off := int64(i) * cs
				k, err := h.chunk(ctx, f, off, min(cs, size-off))
				mu.Lock()
				if err != nil && first == nil {
					first = err
				}
				if err == nil {
					done += min(cs, size-off)
				}
				out[i] = k
				mu.Unlock()
			}
		})
	}
	for i := range n {
		mu.Lock()
		stop := first != nil
		mu.Unlock()
		if stop {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	if first != nil {
		h.progress(-done) // the file is not hashed after all
	}
	return out, first
}

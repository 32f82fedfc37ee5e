package sha512x8

import (
	"crypto/sha512"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestHasher runs many messages through one Hasher from concurrent
// goroutines, in pieces of random whole-block sizes with a random tail,
// and checks every sum and that every piece is released once.
func TestHasher(t *testing.T) {
	for _, lanes := range []bool{true, false} {
		if lanes && !haveKernel {
			continue
		}
		for _, workers := range []int{1, 4} {
			name := fmt.Sprintf("%s/workers=%d", map[bool]string{true: "avx512", false: "go"}[lanes], workers)
			t.Run(name, func(t *testing.T) {
				if !lanes && useLanes {
					useLanes = false
					defer func() { useLanes = true }()
				}
				h := newHasher(workers)
				defer h.Close()
				var wg sync.WaitGroup
				var released, given atomic.Int64
				for g := range 12 {
					wg.Go(func() {
						r := rand.New(rand.NewPCG(uint64(g), 7))
						for range 40 {
							size := r.IntN(200_000)
							if r.IntN(5) == 0 {
								size = r.IntN(300)
							}
							msg := make([]byte, size)
							for i := range msg {
								msg[i] = byte(r.Uint32())
							}
							s := h.New()
							rest := msg
							for len(rest) > 0 {
								n := min(len(rest), BlockSize*(1+r.IntN(200)))
								if n < len(rest) || r.IntN(2) == 0 {
									n = n &^ (BlockSize - 1)
								}
								if n == 0 {
									n = len(rest)
								}
								given.Add(1)
								s.Write(rest[:n], func() { released.Add(1) })
								rest = rest[n:]
							}
							s.Finish()
							if got, want := s.Sum(), sha512.Sum512(msg); got != want {
								t.Errorf("%d bytes: got %x, want %x", size, got[:8], want[:8])
							}
						}
					})
				}
				wg.Wait()
				if released.Load() != given.Load() {
					t.Errorf("released %d of %d pieces", released.Load(), given.Load())
				}
			})
		}
	}
}

// TestGenericBlock checks the Go lanes against crypto/sha512 directly.
func TestGenericBlock(t *testing.T) {
	msg := make([]byte, 1000)
	for i := range msg {
		msg[i] = byte(i * 7)
	}
	s := iv
	var pb [2 * BlockSize]byte
	whole := len(msg) &^ (BlockSize - 1)
	block(&s, msg[:whole])
	block(&s, pad(&pb, msg[whole:], uint64(len(msg))))
	if got, want := digest(&s), sha512.Sum512(msg); got != want {
		t.Fatalf("got %x, want %x", got[:8], want[:8])
	}
}

// BenchmarkHasher hashes 1 MiB messages from 8 goroutines at once, as
// concurrent chunk posts do.
func BenchmarkHasher(b *testing.B) {
	h := NewHasher()
	defer h.Close()
	const size = 1 << 20
	data := make([]byte, size)
	b.SetBytes(size)
	b.SetParallelism(4)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			s := h.New()
			for off := 0; off < size; off += 256 << 10 {
				s.Write(data[off:off+256<<10], nil)
			}
			s.Finish()
			s.Sum()
		}
	})
}

// FuzzStreams hashes three messages cut from the input at once, each
// written in pieces whose sizes come from the input too, and compares
// them with crypto/sha512.
func FuzzStreams(f *testing.F) {
	f.Add([]byte("abc"), uint16(1), uint16(0), uint8(1))
	f.Add(make([]byte, 1000), uint16(300), uint16(129), uint8(3))
	f.Add(make([]byte, 5000), uint16(4000), uint16(111), uint8(200))
	h := NewHasher()
	f.Cleanup(h.Close)
	f.Fuzz(func(t *testing.T, data []byte, cut1, cut2 uint16, piece uint8) {
		a, b := min(int(cut1), len(data)), min(int(cut2), len(data))
		if a > b {
			a, b = b, a
		}
		msgs := [][]byte{data[:a], data[a:b], data[b:]}
		step := BlockSize * (1 + int(piece)%8)
		var ss []*Stream
		for _, m := range msgs {
			s := h.New()
			for len(m) > step {
				s.Write(m[:step], nil)
				m = m[step:]
			}
			s.Write(m, nil)
			s.Finish()
			ss = append(ss, s)
		}
		for i, s := range ss {
			if got, want := s.Sum(), sha512.Sum512(msgs[i]); got != want {
				t.Fatalf("message %d (%d bytes): got %x, want %x", i, len(msgs[i]), got[:8], want[:8])
			}
		}
	})
}

// TestWriteAfterClose: a stream written after Close (a request that
// outlived a shutdown) still gets its sum.
func TestWriteAfterClose(t *testing.T) {
	h := NewHasher()
	s := h.New()
	s.Write(make([]byte, 4*BlockSize), nil)
	h.Close()
	time.Sleep(10 * time.Millisecond) // let the goroutine finish and end
	s.Write([]byte("tail"), nil)
	s.Finish()
	want := sha512.Sum512(append(make([]byte, 4*BlockSize), "tail"...))
	if got := s.Sum(); got != want {
		t.Fatalf("got %x, want %x", got[:8], want[:8])
	}
}

// TestWorkers: with more streams waiting than one goroutine has lanes
// for, a second goroutine starts (and no more than the limit), and
// every sum is right.
func TestWorkers(t *testing.T) {
	h := newHasher(3)
	defer h.Close()
	const n = 40
	msgs := make([][]byte, n)
	ss := make([]*Stream, n)
	for i := range ss {
		msgs[i] = make([]byte, 64<<10+i)
		for j := range msgs[i] {
			msgs[i][j] = byte(i + j*7)
		}
		ss[i] = h.New()
	}
	for i, s := range ss { // every stream gets data before any is finished
		s.Write(msgs[i][:32<<10], nil)
	}
	for i, s := range ss {
		s.Write(msgs[i][32<<10:], nil)
		s.Finish()
	}
	for i, s := range ss {
		if got, want := s.Sum(), sha512.Sum512(msgs[i]); got != want {
			t.Fatalf("stream %d: got %x, want %x", i, got[:8], want[:8])
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	// Goroutines end only after Close, so running counts all started.
	if h.running < 2 || h.running > 3 {
		t.Fatalf("%d goroutines started; want 2 or 3 with 40 streams and a limit of 3", h.running)
	}
	if h.busy != 0 || len(h.ready) != 0 {
		t.Fatalf("busy %d, ready %d after every sum", h.busy, len(h.ready))
	}
}

// TestWriteAll hashes rows of messages handed over with WriteAll (whole
// blocks, the last piece of each with a tail, some rows missing a
// stream), mixed with single Writes, and compares every sum with
// crypto/sha512; every piece is released once.
func TestWriteAll(t *testing.T) {
	for _, workers := range []int{1, 3} {
		h := newHasher(workers)
		r := rand.New(rand.NewPCG(uint64(workers), 9))
		const n = 8
		msgs := make([][]byte, n)
		sts := make([]*Stream, n)
		for i := range n {
			msgs[i] = make([]byte, (1+r.IntN(6))*4096+r.IntN(3000))
			for k := range msgs[i] {
				msgs[i][k] = byte(r.Uint32())
			}
			sts[i] = h.New()
		}
		var released atomic.Int64
		pieces := int64(0)
		for off := 0; ; off += 4096 {
			var ws []Write
			for i, m := range msgs {
				if off >= len(m) {
					continue
				}
				end := min(len(m), off+4096)
				if len(m)-end < BlockSize && end < len(m) {
					end = len(m) // a tail shorter than a block goes with its piece
				}
				if off >= end {
					continue
				}
				pieces++
				if r.IntN(6) == 0 {
					sts[i].Write(m[off:end], func() { released.Add(1) })
					continue
				}
				ws = append(ws, Write{S: sts[i], P: m[off:end], Release: func() { released.Add(1) }})
			}
			if pieces == 0 || (len(ws) == 0 && func() bool {
				for _, m := range msgs {
					if off < len(m) {
						return false
					}
				}
				return true
			}()) {
				break
			}
			h.WriteAll(ws)
		}
		for i := range n {
			sts[i].Finish()
			if got, want := sts[i].Sum(), sha512.Sum512(msgs[i]); got != want {
				t.Fatalf("workers=%d: message %d: sum differs", workers, i)
			}
		}
		h.Close()
		deadline := time.Now().Add(5 * time.Second)
		for released.Load() != pieces && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		if released.Load() != pieces {
			t.Fatalf("workers=%d: %d of %d pieces released", workers, released.Load(), pieces)
		}
	}
}

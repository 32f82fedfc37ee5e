package sha512x8

import (
	"math/bits"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"unsafe"
)

// Available reports whether this CPU runs the lanes. Without them a
// Hasher still works, one message at a time, and callers are better off
// with crypto/sha512.
func Available() bool { return useLanes }

// maxRun bounds one kernel call (in blocks), so that a stream with new
// data joins a free lane within tens of microseconds.
const maxRun = 256

// A Hasher runs goroutines of eight lanes each. Streams hand it data;
// whatever streams have data share the lanes, so several chunks arriving
// at once are hashed together at the lanes' speed. One goroutine takes
// all the work it has lanes for; another starts only when every lane is
// taken and streams are still waiting (so on a small machine the lanes
// stay full, and a big one still hashes on several cores).
type Hasher struct {
	mu      sync.Mutex
	ready   []*Stream // streams with data waiting, not in a lane
	busy    int       // streams in a lane or ready
	wake    chan struct{}
	max     int // most goroutines
	running int // goroutines running (each ends when closed and idle)
	free    int // free lanes of the running goroutines
	closed  bool

	// blocks hashed for streams, and lane-blocks run (eight per block
	// step, full or not): Fill
	hashed, run8 atomic.Int64

	mapped bool // NewMapped: a memory fault in the kernel fails streams
}

// Fill reports the blocks hashed for streams and the lane-blocks the
// kernel ran for them (eight per step, whatever the lanes held) since
// the Hasher was made: hashed/lanes is how full the lanes ran.
func (h *Hasher) Fill() (hashed, lanes int64) { return h.hashed.Load(), h.run8.Load() }

// piece is a run of whole blocks, released once hashed.
type piece struct {
	b       []byte
	release func()
	final   bool // the padding: the stream's sum is ready after it
}

// A Stream is one message being hashed. Its methods must not be called
// concurrently; Write and Finish never block, Sum waits for the lanes.
type Stream struct {
	h *Hasher
	// guarded by h.mu
	queue  []piece
	inLane bool
	queued bool
	state  [8]uint64

	total uint64
	tail  [BlockSize]byte
	ntail int
	fin   [2 * BlockSize]byte
	done  chan struct{}

	faulted bool // written by the lane before done is closed
}

// NewHasher returns a Hasher of up to one goroutine per two cores
// (GOMAXPROCS), at least one; they start with the first data. After
// Close they end whenever they run out of work, and data written after
// that starts one again, so no stream is ever left waiting.
func NewHasher() *Hasher { return newHasher(max(1, runtime.GOMAXPROCS(0)/2)) }

// NewMapped returns a Hasher of up to n goroutines (at least one) for
// data in memory-mapped files, for a caller that has the machine to
// itself (a client hashing files before it sends them). Reading a mapped
// page of a file truncated under the mapping faults (SIGBUS), which would
// end the program; here it fails the stream whose data faulted instead
// (Faulted reports it), and the Hasher goes on with the others.
func NewMapped(n int) *Hasher {
	h := newHasher(max(1, n))
	h.mapped = true
	return h
}

// Faulted reports whether reading the stream's data faulted (only with a
// Hasher from NewMapped), in which case Sum is meaningless. It may be
// called once Sum has returned.
func (s *Stream) Faulted() bool { return s.faulted }

func newHasher(workers int) *Hasher {
	return &Hasher{wake: make(chan struct{}, workers), max: workers}
}

// Close lets the goroutines end once they have nothing to do.
func (h *Hasher) Close() {
	h.mu.Lock()
	h.closed = true
	h.mu.Unlock()
	for range h.max {
		h.signal()
	}
}

// Busy reports how many streams have data waiting or being hashed.
func (h *Hasher) Busy() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.busy
}

// New starts a message.
func (h *Hasher) New() *Stream {
	return &Stream{h: h, state: iv, done: make(chan struct{})}
}

func (h *Hasher) signal() {
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// Write hands p to the lanes; release (if not nil) is called once p has
// been hashed and may be reused. Every Write but the last before Finish
// must be a multiple of BlockSize long.
func (s *Stream) Write(p []byte, release func()) {
	if pc, ok := s.take(p, release); ok {
		s.push(pc)
	}
}

// take accounts for p as Write does and returns the piece of whole
// blocks to hash, if any.
func (s *Stream) take(p []byte, release func()) (piece, bool) {
	if s.ntail != 0 {
		panic("sha512x8: Write after a partial block")
	}
	s.total += uint64(len(p))
	whole := len(p) &^ (BlockSize - 1)
	s.ntail = copy(s.tail[:], p[whole:])
	if whole == 0 {
		if release != nil {
			release()
		}
		return piece{}, false
	}
	return piece{b: p[:whole], release: release}, true
}

// A Write is one Stream.Write for WriteAll.
type Write struct {
	S       *Stream
	P       []byte
	Release func()
}

// WriteAll does the writes at once: the lanes take them up together
// (one after the other, a stream with new data joins a free lane only
// after the running step, and a lane that ran ahead leaves its lanes
// part empty at the end). Each stream's writes follow Write's rules.
func (h *Hasher) WriteAll(ws []Write) {
	pcs := make([]piece, len(ws))
	ok := make([]bool, len(ws))
	for i, w := range ws {
		pcs[i], ok[i] = w.S.take(w.P, w.Release)
	}
	h.mu.Lock()
	for i, w := range ws {
		if ok[i] {
			w.S.pushLocked(pcs[i])
		}
	}
	h.mu.Unlock()
	for range min(len(ws), h.max) {
		h.signal()
	}
}

// Finish ends the message; Sum then returns its hash. Nothing may be
// written after Finish.
func (s *Stream) Finish() {
	s.push(piece{b: pad(&s.fin, s.tail[:s.ntail], s.total), final: true})
}

// Sum waits for the lanes to hash everything written and returns the
// SHA-512 sum. Finish must have been called.
func (s *Stream) Sum() [64]byte {
	<-s.done
	return digest(&s.state)
}

func (s *Stream) push(pc piece) {
	h := s.h
	h.mu.Lock()
	s.pushLocked(pc)
	h.mu.Unlock()
	h.signal()
}

// pushLocked queues pc; s.h.mu is held.
func (s *Stream) pushLocked(pc piece) {
	h := s.h
	s.queue = append(s.queue, pc)
	if !s.inLane && !s.queued {
		s.queued = true
		h.ready = append(h.ready, s)
		h.busy++
		h.grow()
	}
}

// grow starts a goroutine when streams wait and no running one has a
// free lane. h.mu is held.
func (h *Hasher) grow() {
	if len(h.ready) > 0 && h.free == 0 && h.running < h.max {
		h.running++
		h.free += 8 // its lanes, free until it reports
		go h.run()
	}
}

// compressMapped runs the kernel over data that may be a mapping of a
// file truncated since it was mapped; if reading it faulted, it returns
// the address and false. The calling goroutine must have
// debug.SetPanicOnFault set.
func compressMapped(st *[8][8]uint64, ptrs *[8]*byte, strides *[8]uint64, mask uint8, n int) (addr uintptr, ok bool) {
	defer func() {
		if r := recover(); r != nil {
			f, fault := r.(interface{ Addr() uintptr })
			if !fault {
				panic(r)
			}
			addr, ok = f.Addr(), false
		}
	}()
	compress(st, ptrs, strides, mask, n)
	return 0, true
}

// faulted finds the lane whose data holds addr, where the kernel faulted,
// and how many blocks every lane had hashed by then: the lanes step
// through their blocks together and the kernel stores the state only
// after a whole block, so the blocks before the one at addr are hashed
// in every lane and that one in none. (Another lane faulting in the same
// step faults again on the next call.) bad is -1 if no lane's data holds
// addr, or without the lanes (the Go kernel hashes lane after lane).
func faulted(addr uintptr, cur *[8]piece, mask uint8) (n, bad int) {
	if !useLanes {
		return 0, -1
	}
	for l := range cur {
		if mask&(1<<l) == 0 {
			continue
		}
		p := uintptr(unsafe.Pointer(unsafe.SliceData(cur[l].b)))
		if addr >= p && addr < p+uintptr(len(cur[l].b)) {
			return int(addr-p) / BlockSize, l
		}
	}
	return 0, -1
}

// run is a goroutine of eight lanes.
func (h *Hasher) run() {
	if h.mapped {
		debug.SetPanicOnFault(true)
	}
	var (
		st      [8][8]uint64
		lanes   [8]*Stream
		cur     [8]piece
		ptrs    [8]*byte
		strides [8]uint64
		done    []func()
		free    = 8 // this goroutine's part of h.free
	)
	for {
		h.mu.Lock()
		var mask uint8
		for l := range lanes {
			s := lanes[l]
			if s != nil && s.faulted {
				cur[l].b = nil // the rest of a faulted stream is not hashed
			}
			if s != nil && len(cur[l].b) > 0 {
				mask |= 1 << l
				continue
			}
			if s != nil { // its piece is hashed
				if cur[l].release != nil {
					done = append(done, cur[l].release)
				}
				final := cur[l].final
				cur[l] = piece{}
				if len(s.queue) > 0 && !final {
					cur[l], s.queue = s.queue[0], s.queue[1:]
					mask |= 1 << l
					continue
				}
				for w := range 8 {
					s.state[w] = st[w][l]
				}
				s.inLane, lanes[l] = false, nil
				h.busy--
				if final {
					ch := s.done
					done = append(done, func() { close(ch) })
				}
			}
			if len(h.ready) > 0 {
				s = h.ready[0]
				h.ready[0] = nil
				h.ready = h.ready[1:]
				s.queued, s.inLane, lanes[l] = false, true, s
				for w := range 8 {
					st[w][l] = s.state[w]
				}
				cur[l], s.queue = s.queue[0], s.queue[1:]
				mask |= 1 << l
			}
		}
		nf := 8 - bits.OnesCount8(mask)
		h.free += nf - free
		free = nf
		h.grow() // every lane here is taken and streams still wait
		stop := mask == 0 && h.closed
		if stop {
			h.running--
			h.free -= free
		}
		wait := mask == 0 && !stop
		h.mu.Unlock()
		for _, f := range done {
			f()
		}
		clear(done)
		done = done[:0]
		if stop {
			return
		}
		if wait {
			<-h.wake
			continue
		}
		n := maxRun
		for l := range lanes {
			if mask&(1<<l) != 0 {
				n = min(n, len(cur[l].b)/BlockSize)
			}
		}
		for l := range lanes {
			if mask&(1<<l) != 0 {
				ptrs[l], strides[l] = &cur[l].b[0], BlockSize
			} else {
				ptrs[l], strides[l] = &idle[0], 0
			}
		}
		bad := -1 // a lane whose data faulted
		if !h.mapped {
			compress(&st, &ptrs, &strides, mask, n)
		} else if addr, ok := compressMapped(&st, &ptrs, &strides, mask, n); !ok {
			n, bad = faulted(addr, &cur, mask)
			if bad < 0 { // not in any lane's data: fail them all
				for l := range lanes {
					if mask&(1<<l) != 0 {
						lanes[l].faulted, cur[l].b = true, nil
					}
				}
				mask, n = 0, 0
			}
		}
		h.hashed.Add(int64(n * bits.OnesCount8(mask)))
		h.run8.Add(int64(8 * n))
		for l := range lanes {
			if mask&(1<<l) != 0 {
				cur[l].b = cur[l].b[n*BlockSize:]
			}
		}
		if bad >= 0 {
			lanes[bad].faulted, cur[bad].b = true, nil
		}
		clear(ptrs[:])
	}
}

var idle [BlockSize]byte

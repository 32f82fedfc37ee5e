package up2k

import (
	"context"
	"crypto/sha512"
	"errors"
	"hash"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"hoard/store"
	"hoard/up2k/sha512x8"
)

// bufSize is the unit in which chunk bodies are read, hashed and written.
// Large reads keep syscalls and hash calls few; with a few per request in
// flight, 64 parallel posts stay around 100 MiB of buffers.
const bufSize = 256 << 10

// ahead is how many buffers the reader may be ahead of the hasher.
const ahead = 3

// writebackEvery starts the kernel's writeback of a long run of written
// bytes this often (and at the end of every chunk).
const writebackEvery = 4 << 20

// minWriteback is the least a chunk's end starts writeback for.
const minWriteback = 1 << 20

type buf = [bufSize]byte

var bufPool = sync.Pool{New: func() any { return new(buf) }}

func getBuf() *buf  { return bufPool.Get().(*buf) }
func putBuf(b *buf) { bufPool.Put(b) }

// ChunkPost is one chunk upload: the body holds one chunk, several
// consecutive ones, or (Subc ≥ 0) a piece of one.
type ChunkPost struct {
	Vol    *store.Volume // the volume the post was made to
	Wark   string        // X-Up2k-Wark
	Hashes string        // X-Up2k-Hash
	Subc   int64         // X-Up2k-Subc; -1 when absent
	Body   io.Reader
	Length int64 // bytes in Body (Content-Length); -1 when unknown
}

// DoneHeader is the reply header of a chunk post that completed and
// published its file: the file's URL path, each element escaped. hoard's
// own client then finishes the file without the final handshake (the
// reply comes only once the file is durable, so that handshake could only
// say the same); other clients ignore it and handshake as before.
const DoneHeader = "X-Up2k-Done"

// OneShotHeader carries, on a binary POST, a whole handshake (its JSON,
// base64url without padding) for a file of one chunk, whose bytes are the
// body: the handshake and the chunk post in one request (hoard's own
// client, for small files into a destination where they are new). A
// server that takes it names it in the reply to every handshake
// (OneShotHeader: 1); clients send it only to such a server.
const OneShotHeader = "X-Up2k-Oneshot"

// OneShotMax is the largest file a one-shot POST may carry: a client
// sends the bytes before it knows whether the server needs them.
const OneShotMax = 256 << 10

// Written reports a chunk post that succeeded.
type Written struct {
	Bytes  int64
	Chunks int  // chunks confirmed (0 for a sub-chunk that is not the last)
	Done   bool // this post completed the file
	Rel    string
}

// WriteChunks stores the chunks of one post: each is streamed through
// SHA-512 into its place in the work file, compared with its hash, made
// durable (fdatasync) and recorded before WriteChunks returns. When the
// post brings the last missing chunk, the file is published before it
// returns. Chunks that arrived intact stay written even when a later one
// in the same post fails.
func (m *Manager) WriteChunks(ctx context.Context, p ChunkPost) (Written, error) {
	if !validWark(p.Wark) {
		return Written{}, invalidf("unknown wark (see serverlog for details): X-Up2k-Wark %q is not a wark", clip(p.Wark))
	}
	hl, err := ParseHashList(p.Hashes)
	if err != nil {
		return Written{}, err
	}
	if p.Vol.Remote() {
		return m.remoteChunks(ctx, p, hl) // remote.go
	}
	s, err := m.live(ctx, p.Vol, p.Wark)
	if err != nil {
		return Written{}, err
	}
	tab, err := m.table(ctx, s)
	if err != nil {
		s.mu.Lock()
		over := s.done || s.gone
		s.mu.Unlock()
		if over {
			return Written{}, invalidf("unknown wark (see serverlog for details)")
		}
		return Written{}, err
	}
	us, err := tab.resolve(hl, s.rec.Name)
	if err != nil {
		return Written{}, err
	}
	var want int64
	if p.Subc >= 0 {
		if len(us) != 1 {
			return Written{}, invalidf("subchunk protocol error; resetting chunk [%s]: only a single subchunk can be uploaded in one request; you are sending %d chunks", hl.First, len(us))
		}
		cl := tab.length(us[0])
		switch {
		case p.Length <= 0:
			return Written{}, invalidf("subchunk protocol error; resetting chunk [%s]: a subchunk needs a Content-Length above 0", hl.First)
		case p.Subc+p.Length > cl:
			return Written{}, invalidf("subchunk protocol error; resetting chunk [%s]: subchunk offset (%d) plus postsize (%d) exceeds chunksize (%d)", hl.First, p.Subc, p.Length, cl)
		}
		want = p.Length
	} else {
		for _, u := range us {
			want += tab.length(u)
		}
		switch {
		case p.Length > want:
			return Written{}, invalidf("your client is sending %d bytes which is too much (server expected %d bytes at most)", p.Length, want)
		case p.Length >= 0 && p.Length < want:
			return Written{}, invalidf("your client is sending %d bytes, but the %d chunks named in X-Up2k-Hash are %d bytes", p.Length, len(us), want)
		}
	}
	sub, err := s.claim(m, tab, us, p.Subc, hl.First)
	if err != nil {
		return Written{}, err
	}
	defer s.release(us)
	t := s.takeWork()
	if s.rec.Lazy {
		// t is nil or the folder its handshake held, with no work file in
		// it yet (publishing re-checks where that folder is).
		s.mu.Lock()
		whole := p.Subc < 0 && s.nhave == 0 && len(us) == s.nu
		s.mu.Unlock()
		t, err = s.lazyWork(t, whole)
	} else if t != nil && t.Recheck() != nil {
		// Its folder moved, or its name is something else now: open it
		// again, as any other post does, and let that answer.
		t.Close()
		t = nil
	}
	if t == nil && err == nil {
		t, err = s.vol.OpenPartial(s.rec.Dir, s.rec.Name)
	}
	if err != nil {
		if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrNotRegular) || errors.Is(err, store.ErrIsDir) {
			m.drop(context.WithoutCancel(ctx), s, "its work file is gone")
			return Written{}, invalidf("unknown wark (see serverlog for details): the upload's work file is gone; handshake again")
		}
		return Written{}, err
	}
	defer t.Close()

	x := &xfer{m: m, s: s, t: tab, f: t.File, us: us, sub: sub, subOff: max(p.Subc, 0), want: want}
	x.run(ctx, p.Body)
	if sub != nil {
		s.mu.Lock()
		if x.err == nil && x.read == want && p.Subc+want < tab.length(us[0]) {
			sub.next = p.Subc + want // a middle piece: thank, but not yet confirmed
		} else {
			delete(s.subc, us[0]) // finished, or broken: the next piece starts over
		}
		s.mu.Unlock()
	}
	w := Written{Bytes: x.read, Chunks: x.confirmed}
	if x.completing {
		rel, err := m.finish(ctx, s, t)
		if err != nil {
			return w, err
		}
		w.Done, w.Rel = true, rel
	}
	return w, x.err
}

// lazyWork gives a post to a session made without a work file
// (record.Lazy) the file to write into: an unnamed one when the post
// brings the whole file (nothing of it stays on disk unless it is
// published), else the named work file, made now under the name the
// session holds when no earlier post made it.
//
// held, when not nil, is the folder the handshake held for it.
func (s *session) lazyWork(held *store.Temp, whole bool) (*store.Temp, error) {
	if whole && held != nil {
		ok, err := held.OpenAnon() // closes held unless it makes the file
		if ok {
			if err != nil {
				return nil, err
			}
			return held, nil
		}
	} else if whole {
		if t, ok, err := s.vol.CreateAnon(s.rec.Dir); ok {
			return t, err
		}
	}
	if held != nil {
		held.Close()
	}
	t, err := s.vol.OpenPartial(s.rec.Dir, s.rec.Name)
	if !errors.Is(err, store.ErrNotFound) {
		return t, err
	}
	t, _, err = s.vol.CreatePartial(s.rec.Dir, s.rec.Name, s.rec.Size, store.PartialOptions{ClientIP: s.rec.IP, Exact: true})
	if errors.Is(err, store.ErrExists) {
		return s.vol.OpenPartial(s.rec.Dir, s.rec.Name) // made meanwhile
	}
	return t, err
}

// live returns the ready session of wark in vol.
func (m *Manager) live(ctx context.Context, vol *store.Volume, wark string) (*session, error) {
	db := m.db(vol)
	for range 8 {
		m.mu.Lock()
		if m.closed {
			m.mu.Unlock()
			return nil, ErrClosed
		}
		if m.waiting[db] {
			m.mu.Unlock()
			if err := m.unavailable(db); err != nil {
				return nil, err
			}
			continue
		}
		s := m.sessions[skey{db, wark}]
		m.mu.Unlock()
		if s == nil || db == nil {
			break
		}
		if err := wait(ctx, s.ready); err != nil {
			return nil, err
		}
		if s.err == errRetry {
			continue
		}
		if s.err != nil {
			break
		}
		return s, nil
	}
	return nil, invalidf("unknown wark (see serverlog for details)")
}

// claim marks the chunks us as being written by the caller, refusing
// chunks already stored or being written by another request. For a
// sub-chunk it returns the chunk's running state.
func (s *session) claim(m *Manager, t *table, us []int, subc int64, first string) (*subState, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gone {
		return nil, invalidf("unknown wark (see serverlog for details)")
	}
	for _, u := range us {
		if s.done || s.have[u] {
			return nil, invalidf("already got that (%s) but thanks??", t.sentOf(u))
		}
		if s.busy[u] {
			return nil, invalidf("that chunk is already being written to:\n  %s\n  %s %d/%d\n  %s", s.rec.Wark, t.sentOf(u), t.firstChunk(u), t.n, s.rec.Name)
		}
	}
	var sub *subState
	if subc >= 0 {
		u := us[0]
		sub = s.subc[u]
		if subc == 0 {
			sub = &subState{h: sha512.New()}
			if s.subc == nil {
				s.subc = map[int]*subState{}
			}
			s.subc[u] = sub
		} else if sub == nil || sub.next != subc {
			exp := int64(0)
			if sub != nil {
				exp = sub.next
			}
			delete(s.subc, u)
			return nil, invalidf("subchunk protocol error; resetting chunk [%s]: the expected resume-point was %d, not %d", first, exp, subc)
		}
	}
	for _, u := range us {
		s.busy[u] = true
	}
	s.poke = m.now()
	return sub, nil
}

func (s *session) release(us []int) {
	s.mu.Lock()
	for _, u := range us {
		s.busy[u] = false
	}
	s.mu.Unlock()
}

// xfer moves one post's body into the work file in stages that run at
// once: reading (the caller's goroutine), writing and hashing (one
// goroutine), checking sums (one goroutine) and confirming (fdatasync
// and receipts, one goroutine, in groups). Reading the next buffer
// overlaps hashing the current one, and a slow fdatasync never stalls
// hashing. Chunks of at least laneMin bytes are hashed in the Manager's
// SHA-512 lanes, which hash whatever chunks are in flight together on
// one core: the writer hands each written buffer on and moves to the
// next, and the checker waits for the sums.
type xfer struct {
	m      *Manager
	s      *session
	t      *table // the session's chunk table, as taken for this post
	f      *os.File
	us     []int
	sub    *subState
	subOff int64
	want   int64
	slots  chan struct{} // buffers this post may have in the lanes

	failed atomic.Bool

	// results, valid after run
	read       int64
	confirmed  int
	completing bool  // this post stored the last chunk; it must publish
	err        error // first failure
}

// laneMin is the least chunk hashed in the lanes: for a smaller one the
// handover costs more than the lanes save.
const laneMin = bufSize

// lanePost and laneBufs bound the buffers waiting in the lanes, per post
// (4 MiB) and in all (32 MiB), so that a post outrunning the lanes
// waits for them. Halved from 8 and 64 MiB: on a 1 GiB `hoard up`
// (8 posts) the server's peak RSS went 92-96 -> 64 MiB at 1-5 % more
// time, and under the harness's up2k-large (4 posts of 64 MiB) 90 -> 76
// MiB; a quarter (laneBufs 64) cost 7 % (bench/RESULTS.md, eighth
// session).
const (
	lanePost = 16
	laneBufs = 128
)

type piece struct {
	b    *buf
	n    int
	k    int   // index into us
	off  int64 // file offset
	end  bool  // last piece of its chunk (a sub-chunk post's end is the chunk's)
	lane bool  // its chunk is hashed in the lanes as it arrives
	grp  bool  // its chunk is hashed from the file with its group (xfer.group)
	gend bool  // with end: the last chunk of its group
}

// check is a chunk whose bytes are all written: its sum is sum, or comes
// from st, or (grp) is taken from the file once its group is written.
type check struct {
	k    int
	st   *sha512x8.Stream
	sum  []byte
	got  int64 // bytes received for it
	grp  bool
	gend bool
}

// lanes reports whether the k-th chunk of the post goes through the
// lanes as it arrives. One lane hashes a chunk at about half the speed
// of crypto/sha512, and the eight lanes cost the same whether one
// stream or eight have data: streaming pays only while many posts are
// in flight or the lanes are busy anyway. With a few posts in flight
// (a browser's four) their bodies arrive at the sender's pace and
// streamed chunks left most lanes empty, at more CPU per byte than
// crypto/sha512: a stitched post then hashes its chunks from the file
// in groups of four to eight (xfer.group, hashGroup), and any other
// chunk is hashed as it arrives, so that the reply does not wait for a
// lane.
func (x *xfer) lanes(k int) bool {
	if x.m.lanes == nil || x.sub != nil || x.t.length(x.us[k]) < laneMin {
		return false
	}
	return x.m.posts.Load() >= lanePosts || x.m.lanes.Busy() >= laneBusy
}

// groupMin and groupMax bound the chunks hashed together from the file:
// below four lanes the read-back and the lanes cost more than
// crypto/sha512 as the chunk arrives; eight fill the lanes.
const (
	groupMin = 4
	groupMax = 8
)

// group returns the chunks [k, end) of the group that chunk k begins
// when the post's chunks from k on are hashed from the file in groups
// (see lanes): the post's chunks are cut into groups of at most
// groupMax, as even as they come, and a group shorter than groupMin
// (or one with a chunk under laneMin) is not one. ok is false when
// chunk k is not the start of such a group.
func (x *xfer) group(k int) (end int, ok bool) {
	if x.m.lanes == nil || x.sub != nil {
		return 0, false
	}
	n := len(x.us)
	ng := (n + groupMax - 1) / groupMax
	// the g-th group (of ng over n chunks) starts at g*n/ng
	for g := range ng {
		lo, hi := g*n/ng, (g+1)*n/ng
		if lo != k {
			continue
		}
		if hi-lo < groupMin {
			return 0, false
		}
		for j := lo; j < hi; j++ {
			if x.t.length(x.us[j]) < laneMin {
				return 0, false
			}
		}
		return hi, true
	}
	return 0, false
}

// lanePosts (chunk posts in flight) and laneBusy (streams in the lanes)
// are the thresholds at which a post's last chunk joins the lanes.
const (
	lanePosts = 6
	laneBusy  = 3
)

func (x *xfer) run(ctx context.Context, body io.Reader) {
	pieces := make(chan piece, ahead)
	checks := make(chan check, len(x.us))
	verified := make(chan int, len(x.us))
	if x.m.lanes != nil && x.sub == nil {
		x.slots = make(chan struct{}, lanePost)
	}
	x.m.posts.Add(1)
	defer x.m.posts.Add(-1)
	var werr, verr, cerr, rerr error
	if x.inline() {
		// A small post (each chunk one buffer, all of them fitting in
		// the channels): the stages run one after the other on this
		// goroutine, with the same code. Nothing would overlap anyway,
		// and three goroutines and their hand-overs cost more than the
		// post's own work.
		rerr = x.readBody(ctx, body, pieces)
		close(pieces)
		werr = x.hashAndWrite(pieces, checks)
		close(checks)
		verr = x.verify(ctx, checks, verified)
		close(verified)
		cerr = x.confirm(context.WithoutCancel(ctx), verified)
		x.setErr(cerr, werr, verr, rerr)
		return
	}
	var wg sync.WaitGroup
	wg.Add(3)
	go func() {
		defer wg.Done()
		werr = x.hashAndWrite(pieces, checks)
		close(checks)
	}()
	go func() {
		defer wg.Done()
		verr = x.verify(ctx, checks, verified)
		close(verified)
	}()
	go func() {
		defer wg.Done()
		cerr = x.confirm(context.WithoutCancel(ctx), verified)
	}()
	rerr = x.readBody(ctx, body, pieces)
	close(pieces)
	wg.Wait()
	x.setErr(cerr, werr, verr, rerr)
}

// inline reports whether the post is small enough for its stages to run
// in turn on one goroutine: no sub-chunk state, no lanes, the whole body
// one buffer at most (so each chunk is one piece) and every piece, check
// and receipt fitting in its channel, so that no stage ever waits for a
// later one.
func (x *xfer) inline() bool {
	if x.sub != nil || x.subOff != 0 || len(x.us) > ahead {
		return false
	}
	var tot int64
	for k, u := range x.us {
		tot += x.t.length(u)
		if _, grp := x.group(k); grp || x.lanes(k) {
			return false
		}
	}
	return tot <= bufSize
}

// setErr keeps the first failure, in the order the stages report it.
func (x *xfer) setErr(cerr, werr, verr, rerr error) {
	switch {
	case cerr != nil:
		x.err = cerr
	case werr != nil:
		x.err = werr
	case verr != nil:
		x.err = verr
	case rerr != nil:
		x.err = rerr
	}
}

// getBuf takes a buffer, waiting for room in the post's share of the
// lanes and in the lanes when it is for them.
func (x *xfer) getBuf(ctx context.Context, lane bool) (*buf, error) {
	if !lane {
		return getBuf(), nil
	}
	select {
	case x.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	b, err := x.m.laneBuf(ctx)
	if err != nil {
		<-x.slots
	}
	return b, err
}

// putBuf returns a buffer taken by getBuf.
func (x *xfer) putBuf(b *buf, lane bool) {
	if !lane {
		putBuf(b)
		return
	}
	x.m.putLaneBuf(b)
	<-x.slots
}

// laneBuf takes a buffer that will wait in the lanes, once fewer than
// laneBufs do.
func (m *Manager) laneBuf(ctx context.Context) (*buf, error) {
	select {
	case m.laneBufs <- struct{}{}:
		return getBuf(), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// putLaneBuf returns a buffer taken by laneBuf.
func (m *Manager) putLaneBuf(b *buf) {
	putBuf(b)
	<-m.laneBufs
}

// readBody cuts the body into pieces for the hasher.
func (x *xfer) readBody(ctx context.Context, body io.Reader, pieces chan<- piece) error {
	gend := -1 // end of the group being read (grouped chunks), else -1
	for k, u := range x.us {
		off := x.t.start(u) + x.subOff
		rem := x.t.length(u) - x.subOff
		if x.sub != nil {
			rem = x.want
		}
		final := x.sub == nil || x.subOff+x.want == x.t.length(u)
		if k >= gend {
			gend = -1
		}
		lane := false
		if gend < 0 {
			// a group while few posts are in flight, even when the
			// lanes are busy: its eight streams fill them
			if e, ok := x.group(k); ok && x.m.posts.Load() < lanePosts {
				gend = e
			} else {
				lane = x.lanes(k)
			}
		}
		grp := gend >= 0
		for rem > 0 {
			if x.failed.Load() {
				return nil
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			b, err := x.getBuf(ctx, lane)
			if err != nil {
				return err
			}
			n, err := io.ReadFull(body, b[:min(rem, bufSize)])
			x.read += int64(n)
			if n > 0 {
				rem -= int64(n)
				pieces <- piece{b: b, n: n, k: k, off: off, end: rem == 0 && final, lane: lane, grp: grp, gend: grp && k == gend-1}
				off += int64(n)
			} else {
				x.putBuf(b, lane)
			}
			if err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				return invalidf("the body ended after %d of %d bytes (%v); chunk %s stays needed", x.read, x.want, err, x.t.sentOf(u))
			}
		}
	}
	return nil
}

// hashAndWrite writes each piece at its offset and hashes it (or hands
// it to the lanes); when a chunk is complete it passes it on to be
// checked.
func (x *xfer) hashAndWrite(pieces <-chan piece, checks chan<- check) error {
	s := x.s
	var h hash.Hash
	var st *sha512x8.Stream
	if x.sub != nil {
		h = x.sub.h
	} else {
		h = sha512.New()
	}
	var err error
	var got int64
	fd := int(x.f.Fd())
	kick, kicked := int64(-1), int64(0) // range written since writeback was last started
	for pc := range pieces {
		lane := pc.lane
		if err != nil {
			x.putBuf(pc.b, lane)
			continue
		}
		if _, werr := x.f.WriteAt(pc.b[:pc.n], pc.off); werr != nil {
			err = s.vol.WriteErr(werr, s.missing())
			x.failed.Store(true)
			x.putBuf(pc.b, lane)
			continue
		}
		if lane {
			if st == nil {
				st = x.m.lanes.New()
			}
			b := pc.b
			st.Write(b[:pc.n], func() { x.putBuf(b, true) })
		} else if pc.grp {
			x.putBuf(pc.b, false) // hashed from the file with its group
		} else {
			h.Write(pc.b[:pc.n])
			x.putBuf(pc.b, false)
		}
		got += int64(pc.n)
		if kick < 0 || pc.off != kick+kicked {
			kick, kicked = pc.off, 0
		}
		kicked += int64(pc.n)
		if kicked >= writebackEvery || (pc.end && kicked >= minWriteback) {
			// Start writing back now, so that the fdatasync that confirms
			// the chunk finds little left to do. (Not for small chunks:
			// their flush costs less than the extra call.)
			store.StartWriteback(fd, kick, kicked)
			kick, kicked = -1, 0
		}
		if !pc.end {
			continue
		}
		c := check{k: pc.k, got: got, grp: pc.grp, gend: pc.gend}
		if lane {
			st.Finish()
			c.st, st = st, nil
		} else if pc.grp {
			// its sum comes from the file (verify)
		} else {
			c.sum = h.Sum(nil)
			h.Reset()
		}
		got = 0
		checks <- c
	}
	return err
}

// verify compares each complete chunk's sum with its hash, passing
// intact chunks on; after a mismatch it passes nothing more. Grouped
// chunks are hashed here, from the file, once their group is written,
// or once the post ends short of that (the chunks that arrived whole
// are kept, as streamed ones are).
func (x *xfer) verify(ctx context.Context, checks <-chan check, verified chan<- int) error {
	ctx = context.WithoutCancel(ctx) // a client gone keeps what arrived
	var err error
	var group []check
	flush := func() {
		if len(group) > 0 && err == nil {
			err = x.hashGroup(ctx, group)
		}
		for _, c := range group {
			err = x.check(c, err, verified)
		}
		group = group[:0]
	}
	for c := range checks {
		if c.grp {
			group = append(group, c)
			if c.gend {
				flush()
			}
			continue
		}
		if c.st != nil {
			sum := c.st.Sum()
			c.sum = sum[:]
		}
		err = x.check(c, err, verified)
	}
	flush()
	return err
}

// check compares the sum of one complete chunk with its hash, passing it
// on when it matches; err is the post's failure so far (then nothing is
// passed on), and the result the failure after it.
func (x *xfer) check(c check, err error, verified chan<- int) error {
	if err != nil {
		return err
	}
	u := x.us[c.k]
	enc := b64.EncodeToString(c.sum)
	if sent := x.t.sentOf(u); !strings.HasPrefix(enc, x.t.cmp(u)) {
		x.failed.Store(true)
		x.m.badChunks.Add(1)
		return invalidf("your chunk got corrupted somehow (received %d bytes); expected vs received hash:\n%s\n%s", c.got, sent, enc[:min(max(len(sent), KeyLen), len(enc))])
	}
	verified <- c.k
	return nil
}

// hashGroup hashes the chunks of group, all written, from the work file:
// one lane each, a buffer of each read in turn and handed to the lanes
// a row at a time (so that the lanes start on all of them at once, not
// on the first while the others are read), so that the lanes run full
// whatever the pace at which the post's body arrived. It sets each
// chunk's sum; a failed read back is the post's failure.
func (x *xfer) hashGroup(ctx context.Context, group []check) error {
	x.m.grouped.Add(int64(len(group)))
	sts := make([]*sha512x8.Stream, len(group))
	for j := range group {
		sts[j] = x.m.lanes.New()
	}
	type read struct {
		j int
		b *buf
		n int
	}
	row := make([]read, 0, len(group))
	ws := make([]sha512x8.Write, 0, len(group))
	// hand over the row read so far, in one go; never wait for a buffer
	// while holding some that the lanes do not have (they give buffers
	// back)
	hand := func() {
		for _, r := range row {
			ws = append(ws, sha512x8.Write{S: sts[r.j], P: r.b[:r.n], Release: func() { x.putBuf(r.b, true) }})
		}
		x.m.lanes.WriteAll(ws)
		clear(ws)
		ws, row = ws[:0], row[:0]
	}
	var err error
	for p, more := int64(0), true; more && err == nil; p += bufSize {
		more = false
		for j, c := range group {
			u := x.us[c.k]
			n := x.t.length(u)
			if p >= n {
				continue
			}
			more = true
			b, ok := x.tryBuf()
			if !ok {
				hand()
				if b, err = x.getBuf(ctx, true); err != nil {
					break
				}
			}
			want := int(min(bufSize, n-p))
			got, rerr := x.f.ReadAt(b[:want], x.t.start(u)+p)
			if got < want {
				x.putBuf(b, true)
				if rerr == nil || errors.Is(rerr, io.EOF) {
					rerr = io.ErrUnexpectedEOF // cut short meanwhile
				}
				err = x.s.vol.WriteErr(&os.PathError{Op: "read back", Path: x.s.rec.Name + store.PartialSuffix, Err: rerr}, x.s.missing())
				break
			}
			row = append(row, read{j, b, want})
		}
		hand()
	}
	if err != nil {
		// What was handed to the lanes is hashed and its buffers given
		// back regardless; the streams are dropped unfinished.
		x.failed.Store(true)
		return err
	}
	for _, st := range sts {
		st.Finish()
	}
	for j, st := range sts {
		sum := st.Sum()
		group[j].sum = sum[:]
	}
	return nil
}

// tryBuf takes a lane buffer (as getBuf) when one is free at once.
func (x *xfer) tryBuf() (*buf, bool) {
	select {
	case x.slots <- struct{}{}:
	default:
		return nil, false
	}
	select {
	case x.m.laneBufs <- struct{}{}:
		return getBuf(), true
	default:
		<-x.slots
		return nil, false
	}
}

// confirm makes verified chunks durable and records them, in groups: one
// fdatasync and one synced receipt batch for whatever is ready.
func (x *xfer) confirm(ctx context.Context, verified <-chan int) error {
	var err error
	for k := range verified {
		batch := []int{x.us[k]}
	more:
		for {
			select {
			case k2, ok := <-verified:
				if !ok {
					break more
				}
				batch = append(batch, x.us[k2])
			default:
				break more
			}
		}
		if err != nil {
			continue // drain; nothing more is confirmed after a failure
		}
		if err = x.store(ctx, batch); err != nil {
			x.failed.Store(true)
		}
	}
	return err
}

// store copies the batch's chunks to their other offsets (identical
// chunks), makes them durable and records them. When the batch completes
// the file, the fsync and record are left to publishing.
func (x *xfer) store(ctx context.Context, batch []int) error {
	s := x.s
	for _, u := range batch {
		for _, j := range x.t.copies(u) {
			if err := copyWithin(x.f, x.t.start(u), int64(j)*s.rec.CS, x.t.length(u)); err != nil {
				return s.vol.WriteErr(err, s.missing())
			}
		}
	}
	s.mu.Lock()
	if s.nhave+len(batch) == s.nu && !s.finishing {
		x.mark(batch)
		s.mu.Unlock()
		return nil
	}
	syncDir := !s.dirSynced
	s.mu.Unlock()
	keys := make([]string, len(batch))
	for i, u := range batch {
		keys[i] = x.t.key(u)
	}
	// The receipt is committed while the data is flushed: each is a
	// device flush, and both must be done before the chunks count. A
	// crash in between can leave a receipt for bytes that did not reach
	// the disk; the restart re-hashes every recorded chunk, so such a
	// receipt is dropped then.
	var perr error
	recorded := make(chan struct{})
	go func() {
		defer close(recorded)
		perr = s.db.PutChunks(ctx, s.rec.Wark, keys)
	}()
	serr := store.Datasync(x.f)
	if serr == nil && syncDir {
		serr = s.vol.SyncDir(s.rec.Dir)
	}
	<-recorded
	if serr != nil {
		// Never retried: the chunks stay needed and the client sends
		// them again. (A receipt committed meanwhile is dropped, or
		// caught by the re-hash at the next start.)
		if perr == nil {
			s.db.DropChunks(ctx, s.rec.Wark, keys)
		}
		return s.vol.WriteErr(&os.PathError{Op: "fdatasync", Path: s.rec.Name + store.PartialSuffix, Err: serr}, s.missing())
	}
	if perr != nil {
		return perr
	}
	s.mu.Lock()
	s.receipts = true
	s.dirSynced = s.dirSynced || syncDir
	x.mark(batch)
	s.mu.Unlock()
	return nil
}

// mark records the batch as stored; s.mu must be held. The post that
// stores the last chunk becomes the one that publishes.
func (x *xfer) mark(batch []int) {
	s := x.s
	for _, u := range batch {
		s.gotLocked(x.t, u)
	}
	x.confirmed += len(batch)
	if s.nhave == s.nu && !s.finishing {
		s.finishing = true
		s.fin = make(chan struct{})
		x.completing = true
	}
}

// copyWithin copies n bytes of f from offset src to offset dst.
func copyWithin(f *os.File, src, dst, n int64) error {
	b := getBuf()
	defer putBuf(b)
	for n > 0 {
		m, err := f.ReadAt(b[:min(n, bufSize)], src)
		if m > 0 {
			if _, err := f.WriteAt(b[:m], dst); err != nil {
				return err
			}
		}
		if err != nil && !(errors.Is(err, io.EOF) && int64(m) == min(n, bufSize)) {
			return err
		}
		src, dst, n = src+int64(m), dst+int64(m), n-int64(m)
	}
	return nil
}

// finish publishes the file of a session whose chunks are all stored, in
// an order that leaves every crash point recoverable: fsync (with the
// mtime), no-clobber link under the final name (collision rename), folder
// fsync; only then is the session replaced by the file record in one
// synced change, and the work file, until then a second name of the
// published file, is removed. A crash before the record leaves the session
// with its work file linked to the published file, which the next start
// finds and closes (restart.go); a crash after it leaves a work file
// without a session, which the start-up sweep removes. t is the work file
// handle of the post that stored the last chunks (its fsync reports any
// write-back error since it was opened), or nil to open one.
func (m *Manager) finish(ctx context.Context, s *session, t *store.Temp) (string, error) {
	ctx = context.WithoutCancel(ctx)
	var err error
	if t == nil {
		if t, err = s.vol.OpenPartial(s.rec.Dir, s.rec.Name); err == nil {
			defer t.Close()
		}
	}
	now := m.now().Unix()
	var rel string
	var fi os.FileInfo
	opt := s.publishOptions()
	lf, lazy := s.db.(lazyFinisher)
	if lazy {
		// A group-committed publish writes the finishing record in its own
		// synced write (one write per small file); else it is made below.
		s.mu.Lock()
		none := !s.receipts
		s.mu.Unlock()
		opt.Finish = &store.SmallFinish{Wark: s.rec.Wark, Meta: metaFor(s.rec.Size, time.Unix(s.rec.Lmod, 0).UnixNano(), now, s.rec.User, s.rec.IP), NoReceipts: none}
	}
	if err == nil {
		rel, fi, err = t.PublishLinked(s.rec.Name, opt)
	}
	if err != nil {
		// Publishing removes the work file when it fails, so this upload
		// starts over (the client's next handshake makes a new session).
		m.log.Error("publishing an upload failed; it must start over", "volume", "/"+s.vol.VPath, "path", s.rel(), "wark", s.rec.Wark, "err", err)
		if opt.Finish != nil {
			// A group commit may have written the file's record before
			// the publish failed: no record may name a file that is not
			// this content.
			s.db.DeleteFile(ctx, s.rec.Wark, s.rel())
		}
		m.drop(ctx, s, "publishing failed")
		s.mu.Lock()
		s.finishing = false
		close(s.fin)
		s.mu.Unlock()
		return "", err
	}
	var ferr error
	if t.Finished() && fresh(opt.Finish.Meta, fi) {
		// Recorded with the group commit's entry.
	} else if lazy && t.Journaled() {
		// Group-committed: the file is durable by its journal entry, and
		// a crash that loses this record leaves the session with its
		// file published, which the restart closes (restart.go). One
		// flush fewer per small file.
		ferr = lf.FinishNoSync(ctx, s.rec.Wark, rel, metaOf(fi, now, s.rec.User, s.rec.IP))
	} else {
		ferr = s.db.Finish(ctx, s.rec.Wark, rel, metaOf(fi, now, s.rec.User, s.rec.IP))
	}
	if ferr == nil {
		if err := t.DropWork(); err != nil {
			m.log.Warn("removing a published upload's work file failed; the start after a crash sweeps it", "volume", "/"+s.vol.VPath, "path", rel, "err", err)
		}
	}
	s.mu.Lock()
	s.done, s.final, s.finalInfo.lmod = true, rel, fi.ModTime().Unix()
	s.finishing = false
	close(s.fin)
	s.mu.Unlock()
	if ferr != nil {
		// The session stays, done: handshakes find the file through it,
		// and the next start closes it (its work file is still linked).
		m.log.Error("upload published, but recording it failed", "volume", "/"+s.vol.VPath, "path", rel, "wark", s.rec.Wark, "err", ferr)
		return rel, ferr
	}
	m.remove(s)
	m.recent.confirm(s.db, s.vol, rel, s.rec.Wark, fi)
	m.finished.Add(1)
	m.log.Info("upload finished", "volume", "/"+s.vol.VPath, "path", rel, "size", s.rec.Size, "wark", s.rec.Wark, "user", s.rec.User, "ip", s.rec.IP)
	return rel, nil
}

// publishOptions are the options the session's file is published with.
func (s *session) publishOptions() store.PublishOptions {
	return store.PublishOptions{
		Replace: s.rec.Replace, Mtime: time.Unix(s.rec.Lmod, 0), Life: time.Duration(s.rec.Life) * time.Second,
		Uploader: s.rec.User, ClientIP: s.rec.IP, Wark: s.rec.Wark, Chunks: s.keys(),
	}
}

// remove takes s out of the live sessions (if it is still the one there),
// giving back its place among the unfinished uploads and its claim on
// the free space.
func (m *Manager) remove(s *session) {
	k := skey{s.db, s.rec.Wark}
	m.mu.Lock()
	if m.sessions[k] == s {
		delete(m.sessions, k)
		m.releaseNameLocked(s.vol, s.rec.Dir, s.rec.Name, s.rec.Wark)
	}
	if s.counted {
		s.counted = false
		m.givePlaceLocked(s.ipKey, s.rec.Size)
		s.space.Release()
	}
	m.mu.Unlock()
	if s.mgr != nil {
		s.closeWork()
	}
	m.forget(s)
}

// drop discards a session: forgotten, its record and work file removed.
func (m *Manager) drop(ctx context.Context, s *session, why string) {
	s.mu.Lock()
	s.gone, s.done = true, true
	s.mu.Unlock()
	m.remove(s)
	if err := s.db.DeleteSession(ctx, s.rec.Wark); err != nil {
		m.log.Error("forgetting an upload failed", "wark", s.rec.Wark, "err", err)
	}
	if t, err := s.vol.OpenPartial(s.rec.Dir, s.rec.Name); err == nil {
		t.Abort()
	}
	m.log.Info("upload dropped", "volume", "/"+s.vol.VPath, "path", s.rel(), "wark", s.rec.Wark, "why", why)
}

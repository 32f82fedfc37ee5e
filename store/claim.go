package store

import (
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Free space promised to uploads that write it later (up2k sessions make
// a sparse work file at once and fill it chunk by chunk): claims count as
// used in every check of the file system's free space (CheckSize), so
// that unfinished uploads cannot together promise more than the disk
// holds.

// fsClaims is the claimed bytes of one file system (volumes on the same
// device share it).
type fsClaims struct {
	mu sync.Mutex // makes a claim's check and its addition one step
	n  atomic.Int64
}

// Claim is free space held for one upload; its methods are safe on a nil
// Claim (nothing held).
type Claim struct {
	fs   *fsClaims
	left atomic.Int64
}

// NoRoomError is an upload announced larger than the free space it may
// have: the file system's free space less the df= reserve, and less what
// unfinished uploads were promised (Claimed).
type NoRoomError struct {
	Free, Claimed, Reserve, Need uint64
}

func (e *NoRoomError) Error() string {
	if e.Temporary() {
		return fmt.Sprintf("not enough free space right now: %s free, %s of it promised to unfinished uploads; this upload needs %s; try again later",
			HumanSize(int64(e.Free)), HumanSize(int64(e.Claimed)), HumanSize(int64(e.Need)))
	}
	keep := ""
	if e.Reserve > 0 {
		keep = fmt.Sprintf(", of which %s must stay free", HumanSize(int64(e.Reserve)))
	}
	return fmt.Sprintf("the upload (%s) is larger than the server's free space (%s%s)", HumanSize(int64(e.Need)), HumanSize(int64(e.Free)), keep)
}

// Temporary reports whether the upload would fit once unfinished uploads
// finish or are dropped (it fits the free space, but not what is left of
// it after their claims).
func (e *NoRoomError) Temporary() bool { return e.Need+e.Reserve <= e.Free }

// Class is KindUnavailable while the upload would fit once others finish,
// else KindTooLarge.
func (e *NoRoomError) Class() (Kind, string) {
	if e.Temporary() {
		return KindUnavailable, e.Error()
	}
	return KindTooLarge, e.Error()
}

// claims returns the claims of the file system holding dir.
func (s *Store) claimsFor(dir string) *fsClaims {
	var st syscall.Stat_t
	dev := uint64(0)
	if syscall.Stat(dir, &st) == nil {
		dev = uint64(st.Dev)
	}
	s.claimsMu.Lock()
	defer s.claimsMu.Unlock()
	if s.claims == nil {
		s.claims = map[uint64]*fsClaims{}
	}
	c := s.claims[dev]
	if c == nil {
		c = &fsClaims{}
		s.claims[dev] = c
	}
	return c
}

// claimed is what unfinished uploads hold of the volume's file system.
func (v *Volume) claimed() uint64 {
	if v.claims == nil {
		return 0
	}
	return uint64(max(v.claims.n.Load(), 0))
}

// roomFor checks that an upload of n bytes (n < 0: unknown; checked as
// 0) fits the volume's free space less its df= reserve and the claims of
// unfinished uploads.
func (v *Volume) roomFor(n int64) error {
	need, df, claimed := uint64(max(n, 0)), uint64(v.Flags().DF), v.claimed()
	free, err := v.freeFor(need + df + claimed)
	if err != nil {
		return nil
	}
	switch {
	case need == 0 && free < df:
		return &DiskFullError{Free: free, Need: df}
	case need+df > free:
		return &NoRoomError{Free: free, Reserve: df, Need: need}
	case need+df+claimed > free:
		return &NoRoomError{Free: free, Claimed: claimed, Reserve: df, Need: need}
	}
	return nil
}

// Room returns the volume's free space (as read at most roomFresh ago)
// and what unfinished uploads hold of it.
func (v *Volume) Room() (free, claimed uint64, err error) {
	free, err = v.freeFor(0)
	return free, v.claimed(), err
}

// freeSeen is a volume's free space as last read.
type freeSeen struct {
	at   time.Time
	free uint64
}

// freeFor returns the volume's free space for a check that needs need
// bytes of it. Every small upload checks it (two or three times for an
// up2k file); one statfs answers them all while the answer is fresh and
// far from need: roomMargin more than need cannot be written in
// roomFresh (as for the state folder, state.go). Near the limit, every
// call asks the file system.
func (v *Volume) freeFor(need uint64) (uint64, error) {
	now := time.Now()
	if c := v.seen.Load(); c != nil && now.Sub(c.at) < roomFresh && c.free >= need+roomMargin {
		return c.free, nil
	}
	free, err := v.Free()
	if err == nil {
		v.seen.Store(&freeSeen{at: now, free: free})
	}
	return free, err
}

// Claim checks an upload of n bytes as CheckSize does and, when it fits,
// holds n bytes of the free space for it until the claim is shrunk or
// released.
func (v *Volume) Claim(n int64) (*Claim, error) {
	if v.claims == nil {
		return nil, v.CheckSize(n)
	}
	v.claims.mu.Lock()
	defer v.claims.mu.Unlock()
	if err := v.CheckSize(n); err != nil {
		return nil, err
	}
	return v.Hold(n), nil
}

// Hold holds n bytes of the free space without checking (an upload that
// was promised them before a restart).
func (v *Volume) Hold(n int64) *Claim {
	if v.claims == nil || n <= 0 {
		return &Claim{}
	}
	c := &Claim{fs: v.claims}
	c.left.Store(n)
	v.claims.n.Add(n)
	return c
}

// Shrink gives back n bytes of the claim (they were written, and the
// file system's free space shows them).
func (c *Claim) Shrink(n int64) {
	if c == nil || c.fs == nil || n <= 0 {
		return
	}
	for {
		left := c.left.Load()
		m := min(n, left)
		if m <= 0 {
			return
		}
		if c.left.CompareAndSwap(left, left-m) {
			c.fs.n.Add(-m)
			return
		}
	}
}

// Release gives back all of the claim.
func (c *Claim) Release() {
	if c == nil || c.fs == nil {
		return
	}
	for {
		left := c.left.Load()
		if left <= 0 {
			return
		}
		if c.left.CompareAndSwap(left, 0) {
			c.fs.n.Add(-left)
			return
		}
	}
}

package store

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"sync"
	"time"
)

// WebDAV locks (RFC 4918 sections 6 and 7). A lock is advisory state of
// the protocol: it lives in memory and ends with the process (clients
// lock again; a lock is never needed to read), at its timeout, at UNLOCK,
// or when its resource is deleted or moved away (any route: the table
// follows the store's events). Every lock is bound to the account that
// took it: a write under someone's lock needs one of that lock's tokens
// presented by that same account; a token of another account is refused
// like no token at all (KindLocked, 423).

// MaxLockTimeout is the longest a lock lives without a refresh; a client
// asking for more (or for Infinite) gets this.
const MaxLockTimeout = time.Hour

// maxLocks caps the locks held at once (all users), so LOCK cannot grow
// memory without bound; maxUserLocks caps one account's (anonymous is one
// account), so one cannot use them all up.
const (
	maxLocks     = 10000
	maxUserLocks = 1000
)

// MaxLockOwner caps a lock's DAV:owner (as kept: a self-contained XML
// fragment). Locks live in memory; clients send a name or a URL.
const MaxLockOwner = 4096

// Lock is one WebDAV lock.
type Lock struct {
	Token    string // "opaquelocktoken:" + a random UUID
	User     string // the account that took it ("" anonymous)
	Root     string // the locked resource's URL path ("/vol/a/b")
	Infinite bool   // depth infinity: everything below Root too
	Shared   bool
	Owner    string // the client's DAV:owner content, a self-contained XML fragment (echoed back)
	Timeout  time.Duration
	Expires  time.Time
	Made     bool // the LOCK made the (empty) file at Root
	// vol is the mount point of the locked resource's volume: a lock
	// covers nothing in another volume, even one mounted below Root
	// (whose files are another account's business).
	vol string
}

// LockRequest asks for a new lock.
type LockRequest struct {
	Infinite bool
	Shared   bool
	Owner    string
	Timeout  time.Duration // 0 or more than MaxLockTimeout: MaxLockTimeout
	// Tokens are the lock tokens the request presents (If header): a
	// LOCK that makes its file adds a member to a folder that may be
	// locked (LockOrMake).
	Tokens []string
}

type davLocks struct {
	mu    sync.Mutex
	once  sync.Once // subscribes locksFollow
	byTok map[string]*Lock
}

// lockPath is the key of a location in the lock table: its URL path.
func lockPath(at Loc) string { return at.URLPath() }

// covers reports whether l applies to the resource at p (its URL path)
// in the volume mounted at vol.
func (l *Lock) covers(vol, p string) bool {
	return l.vol == vol && (l.Root == p || (l.Infinite && under(p, l.Root)))
}

// below reports whether l is on a resource strictly below the folder at p
// in the volume mounted at vol.
func (l *Lock) below(vol, p string) bool {
	return l.vol == vol && under(l.Root, p)
}

// lockVol is the key of a location's volume in the lock table.
func lockVol(at Loc) string {
	if at.Vol == nil {
		return ""
	}
	return at.Vol.VPath
}

// under reports whether p is strictly below the folder dir.
func under(p, dir string) bool {
	if dir == "/" {
		return p != "/"
	}
	return strings.HasPrefix(p, dir+"/")
}

func parentPath(p string) string {
	i := strings.LastIndexByte(p, '/')
	if i <= 0 {
		return "/"
	}
	return p[:i]
}

func newLockToken() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("opaquelocktoken:%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// lockTable starts following the store's events (once) and drops expired
// locks. It runs with d.mu held.
func (s *Store) lockTable() *davLocks {
	d := &s.dav
	d.once.Do(func() { s.Subscribe(s.locksFollow) })
	if d.byTok == nil {
		d.byTok = map[string]*Lock{}
	}
	now := s.now()
	for t, l := range d.byTok {
		if !now.Before(l.Expires) {
			delete(d.byTok, t)
		}
	}
	return d
}

// locksFollow drops the locks of a deleted or moved-away resource (and,
// for a tree, of everything below it): a lock does not move with its
// resource (RFC 4918 section 7.7).
func (s *Store) locksFollow(e Event) {
	var at Loc
	switch e.Kind {
	case Removed:
		at = Loc{e.Vol, e.Rel}
	case Moved:
		at = Loc{e.FromVol, e.From}
	default:
		return
	}
	vol, gone := lockVol(at), at.URLPath()
	d := &s.dav
	d.mu.Lock()
	defer d.mu.Unlock()
	for t, l := range d.byTok {
		if l.vol == vol && (l.Root == gone || under(l.Root, gone)) {
			delete(d.byTok, t)
		}
	}
}

func lockedErr(op, p string) *Error {
	return refuse(op, KindLocked, "%s is locked; send the lock's token (If header) as the account that took it", p)
}

// Lock takes a new lock on at for who; at need not exist (the caller then
// makes the empty resource RFC 4918 asks for). It needs the w permission.
// Refused (KindLocked): a conflicting lock, that is, an exclusive lock
// anywhere that would overlap, or any lock that would overlap a new
// exclusive one.
func (s *Store) Lock(who Actor, at Loc, r LockRequest) (Lock, error) {
	const op = "lock"
	if at.Vol == nil {
		return Lock{}, refuse(op, KindForbidden, "no volume is mounted at %s", at.URLPath())
	}
	if !at.Vol.Perms(who.User).Has(PermWrite) {
		return Lock{}, forbid(op, who, at.Vol, PermWrite, "lock files")
	}
	if !at.Vol.Perms(who.User).Has(PermRead) {
		// A lock acts on what is there (and holds off its owner): someone
		// who may not read would learn what exists and could block it.
		return Lock{}, forbid(op, who, at.Vol, PermRead, "lock files")
	}
	if _, err := cleanRel(strings.Trim(at.Rel, "/")); err != nil {
		return Lock{}, opErr(op, err)
	}
	if len(r.Owner) > MaxLockOwner {
		return Lock{}, refuse(op, KindInvalid, "the lock's owner is longer than %d bytes", MaxLockOwner)
	}
	p, vol := lockPath(at), lockVol(at)
	if r.Timeout <= 0 || r.Timeout > MaxLockTimeout {
		r.Timeout = MaxLockTimeout
	}
	d := &s.dav
	d.mu.Lock()
	defer d.mu.Unlock()
	s.lockTable()
	if len(d.byTok) >= maxLocks {
		return Lock{}, refuse(op, KindStateFull, "too many WebDAV locks are held (%d); unlock some first", maxLocks)
	}
	mine := 0
	for _, l := range d.byTok {
		if l.User == who.User {
			mine++
		}
	}
	if mine >= maxUserLocks {
		return Lock{}, refuse(op, KindRateLimited, "this account holds %d WebDAV locks already; unlock some first", mine)
	}
	for _, l := range d.byTok {
		overlap := l.covers(vol, p) || (r.Infinite && l.below(vol, p))
		if overlap && !(l.Shared && r.Shared) {
			return Lock{}, lockedErr(op, p)
		}
	}
	l := &Lock{Token: newLockToken(), User: who.User, Root: p, Infinite: r.Infinite, Shared: r.Shared, Owner: r.Owner, Timeout: r.Timeout, Expires: s.now().Add(r.Timeout), vol: vol}
	d.byTok[l.Token] = l
	return *l, nil
}

// LockOrMake is Lock as a WebDAV LOCK takes it (RFC 4918 section 7.3):
// on a URL where nothing is, the folder must exist (KindConflict) and the
// lock makes an empty file there, noted as the lock's (LockNullHeld), so
// its holder may fill it without d. made says a file was made; if making
// it fails, the lock is given up again.
func (s *Store) LockOrMake(ctx context.Context, who Actor, at Loc, r LockRequest) (l Lock, made bool, err error) {
	const op = "lock"
	if at.Vol == nil {
		return Lock{}, false, refuse(op, KindForbidden, "no volume is mounted at %s", at.URLPath())
	}
	if !at.Vol.Perms(who.User).Has(PermWrite) { // before anything is looked at
		return Lock{}, false, forbid(op, who, at.Vol, PermWrite, "lock files")
	}
	if !at.Vol.Perms(who.User).Has(PermRead) { // likewise: see Lock
		return Lock{}, false, forbid(op, who, at.Vol, PermRead, "lock files")
	}
	if _, err := at.Vol.Stat(at.Rel); errors.Is(err, ErrNotFound) {
		dir := path.Dir("/" + at.Rel)
		if fi, err := at.Vol.Stat(strings.TrimPrefix(dir, "/")); err != nil || !fi.IsDir() {
			return Lock{}, false, refuse(op, KindConflict, "the parent folder of %s does not exist", at.URLPath())
		}
		// Making the file adds a member to its folder: a lock there
		// holds it off, as it holds off a PUT.
		if err := s.CheckLocks(who, at, WriteCheck{Member: true}, r.Tokens); err != nil {
			return Lock{}, false, err
		}
	}
	l, err = s.Lock(who, at, r)
	if err != nil {
		return Lock{}, false, err
	}
	if _, err := at.Vol.Stat(at.Rel); errors.Is(err, ErrNotFound) {
		dir, name := path.Split(at.Rel)
		if _, err := at.Vol.Ingest(ctx, strings.TrimSuffix(dir, "/"), strings.NewReader(""), IngestOptions{Name: name, Size: 0, Uploader: who.User, ClientIP: who.IP}); err != nil {
			s.Unlock(who, at, l.Token)
			return Lock{}, false, err
		}
		s.LockMadeFile(l.Token)
		l.Made, made = true, true
	}
	return l, made, nil
}

// RefreshLock extends the lock with token, which must cover at and belong
// to who; timeout as in LockRequest.
func (s *Store) RefreshLock(who Actor, at Loc, token string, timeout time.Duration) (Lock, error) {
	const op = "lock"
	if at.Vol == nil {
		return Lock{}, refuse(op, KindConflict, "no lock with that token covers %s", at.URLPath())
	}
	// Only while its holder may still take it: rights taken away (a
	// reload) end the lock at its timeout.
	for _, need := range []Perm{PermWrite, PermRead} {
		if !at.Vol.Perms(who.User).Has(need) {
			return Lock{}, forbid(op, who, at.Vol, need, "lock files")
		}
	}
	if timeout <= 0 || timeout > MaxLockTimeout {
		timeout = MaxLockTimeout
	}
	p := lockPath(at)
	d := &s.dav
	d.mu.Lock()
	defer d.mu.Unlock()
	s.lockTable()
	l := d.byTok[token]
	switch {
	case l == nil || !l.covers(lockVol(at), p):
		return Lock{}, refuse(op, KindConflict, "no lock with that token covers %s", p)
	case l.User != who.User:
		return Lock{}, lockedErr(op, p)
	}
	l.Timeout, l.Expires = timeout, s.now().Add(timeout)
	return *l, nil
}

// Unlock ends the lock with token, which must cover at and belong to who.
func (s *Store) Unlock(who Actor, at Loc, token string) error {
	const op = "unlock"
	p := lockPath(at)
	d := &s.dav
	d.mu.Lock()
	defer d.mu.Unlock()
	s.lockTable()
	l := d.byTok[token]
	switch {
	case l == nil || !l.covers(lockVol(at), p):
		return refuse(op, KindConflict, "no lock with that token covers %s", p)
	case l.User != who.User:
		return lockedErr(op, p)
	}
	delete(d.byTok, token)
	return nil
}

// LockMadeFile notes that the LOCK that took token made the empty file
// it locks (RFC 4918 section 7.3), so its holder may fill it without d
// (LockNullHeld).
func (s *Store) LockMadeFile(token string) {
	d := &s.dav
	d.mu.Lock()
	defer d.mu.Unlock()
	if l := d.byTok[token]; l != nil {
		l.Made = true
	}
}

// LockNullHeld reports whether who presents (in tokens) a live lock of
// theirs on exactly at that made the file there: the one case where
// replacing a file needs no d.
func (s *Store) LockNullHeld(who Actor, at Loc, tokens []string) bool {
	p := lockPath(at)
	d := &s.dav
	d.mu.Lock()
	defer d.mu.Unlock()
	s.lockTable()
	for _, t := range tokens {
		if l := d.byTok[t]; l != nil && l.Made && l.Root == p && l.vol == lockVol(at) && l.User == who.User {
			return true
		}
	}
	return false
}

// PutCheck is the rule of a WebDAV PUT by who of the file at at, after
// its locks are checked (tokens are the ones the request presents):
// replacing a file that exists needs the d permission, except for the
// empty file a LOCK of who made there (LockNullHeld); and the file's
// folder must exist (KindConflict: WebDAV's PUT makes no parents, unlike
// copyparty's). A folder at at is the caller's to refuse first.
func (s *Store) PutCheck(who Actor, at Loc, existing fs.FileInfo, tokens []string) error {
	const op = "put"
	if at.Vol == nil {
		return refuse(op, KindForbidden, "no volume is mounted at %s", at.URLPath())
	}
	if existing != nil && !at.Vol.Perms(who.User).Has(PermDelete) {
		if existing.Size() != 0 || !s.LockNullHeld(who, at, tokens) {
			return forbid(op, who, at.Vol, PermDelete, "replace files")
		}
	}
	dir := path.Dir("/" + at.Rel)
	if fi, err := at.Vol.Stat(strings.TrimPrefix(dir, "/")); err != nil || !fi.IsDir() {
		return refuse(op, KindConflict, "the parent folder of %s does not exist", at.URLPath())
	}
	return nil
}

// LockCovers reports whether the lock with token exists and covers at
// (whoever holds it): the state-token condition of an If header.
func (s *Store) LockCovers(at Loc, token string) bool {
	d := &s.dav
	d.mu.Lock()
	defer d.mu.Unlock()
	s.lockTable()
	l := d.byTok[token]
	return l != nil && l.covers(lockVol(at), lockPath(at))
}

// LocksOn lists the locks that cover at, for DAV:lockdiscovery.
func (s *Store) LocksOn(at Loc) []Lock {
	d := &s.dav
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.byTok) == 0 {
		return nil // the common case, asked for every member of a PROPFIND
	}
	p, vol := lockPath(at), lockVol(at)
	s.lockTable()
	var out []Lock
	for _, l := range d.byTok {
		if l.covers(vol, p) {
			out = append(out, *l)
		}
	}
	return out
}

// WriteCheck is what a write through WebDAV would change.
type WriteCheck struct {
	Tree   bool // the change reaches everything below at (DELETE, MOVE of a folder)
	Member bool // the change adds or removes at itself, so it changes its folder's membership
}

// CheckLocks refuses (KindLocked) a change of at by who unless who
// presents, for every lock the change falls under, a token of that lock
// taken by who. A change falls under a lock on at or above it (depth
// infinity), under any lock below at when c.Tree, and under a lock on
// at's folder when c.Member. Of shared locks on one resource, one is
// enough.
func (s *Store) CheckLocks(who Actor, at Loc, c WriteCheck, tokens []string) error {
	p, vol := lockPath(at), lockVol(at)
	parent := parentPath(p)
	d := &s.dav
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.byTok) == 0 {
		return nil
	}
	s.lockTable()
	held := func(l *Lock) bool {
		if l.User != who.User {
			return false
		}
		for _, t := range tokens {
			if t == l.Token {
				return true
			}
		}
		return false
	}
	sharedNeed := map[string]bool{} // resource → satisfied by one of its shared locks
	for _, l := range d.byTok {
		// Only locks of at's own volume: at's folder in the URL space may
		// be another volume's (at is a volume's top), and a tree never
		// reaches into a volume mounted below it.
		hit := l.covers(vol, p) || (c.Tree && l.below(vol, p)) || (c.Member && at.Rel != "" && l.covers(vol, parent))
		if !hit {
			continue
		}
		if !l.Shared {
			if !held(l) {
				return lockedErr("write", p)
			}
			continue
		}
		sharedNeed[l.Root] = sharedNeed[l.Root] || held(l)
	}
	for root, ok := range sharedNeed {
		if !ok {
			return lockedErr("write", root)
		}
	}
	return nil
}

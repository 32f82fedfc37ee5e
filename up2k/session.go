package up2k

import (
	"container/list"
	"context"
	"encoding/json"
	"fmt"
	"hash"
	"path"
	"sync"
	"sync/atomic"
	"time"

	"hoard/store"
)

// record is what a session store keeps of an unfinished upload (as JSON).
type record struct {
	Wark    string   `json:"wark"`
	Dir     string   `json:"dir"`   // folder inside the volume, "." for its top
	Name    string   `json:"name"`  // final file name, reserved by its work file
	Asked   string   `json:"asked"` // the name the client asked for
	Size    int64    `json:"size"`
	Lmod    int64    `json:"lmod"` // unix seconds, becomes the file's mtime
	CS      int64    `json:"cs"`   // chunk size
	Hashes  []string `json:"hash"` // as the client sent them, one per chunk (stored form only)
	Created int64    `json:"t0"`   // unix nanoseconds
	Life    int64    `json:"life,omitempty"`
	Replace bool     `json:"replace,omitempty"`
	User    string   `json:"user,omitempty"`
	IP      string   `json:"ip,omitempty"`
	// Lazy: a small upload whose work file is made by its first chunk
	// post (unnamed when that post brings the whole file, so nothing is
	// on disk by name before the file is published). Its name is held
	// in memory (Manager.names), and a restart finds no work file for it
	// and keeps it, every chunk needed.
	Lazy bool `json:"lazy,omitempty"`
}

// session is one upload in progress (or, while ready is open, one being
// set up or re-verified after a restart). What it holds for good is
// small; its chunk hashes are in its table, which may be dropped and
// loaded again (table.go).
type session struct {
	vol *store.Volume
	db  SessionStore
	mgr *Manager
	rec record // immutable after the session is made; rec.Hashes is nil (the table has them)
	nu  int    // unique chunks

	tab    atomic.Pointer[table] // nil when dropped; Manager.table loads it
	loadMu sync.Mutex            // one loader of the table at a time
	lru    *list.Element         // in Manager.lru while tab is kept; guarded by Manager.lruMu

	// Set when the session is made, guarded by Manager.mu: the unfinished
	// upload counts against the caps (ipKey) and holds a claim on the
	// free space for its missing bytes.
	counted bool
	ipKey   string
	space   *store.Claim

	ready chan struct{} // closed once the session can be used
	err   error         // set before ready closes when it cannot be used

	mu        sync.Mutex // protects the fields below
	have      []bool     // per unique chunk: on disk and recorded
	nhave     int
	left      int64  // bytes of the file not stored yet
	busy      []bool // per unique chunk: a request is writing it
	subc      map[int]*subState
	dirSynced bool // the work file's folder was fsynced
	receipts  bool // chunk receipts may be stored (PutChunks, or found at a restart)
	fin       chan struct{}
	// work is the handshake's work file, open with its folder held, kept
	// for the first chunk post (which then neither opens nor walks):
	// taken by it, or closed when the session goes (Manager.heldWork
	// bounds how many are kept).
	work      *store.Temp
	finishing bool // a request is publishing the file; fin closes when it is done
	done      bool // published (final is set) or dropped (gone is set)
	gone      bool
	final     string
	finalInfo finalInfo
	poke      time.Time
}

// finalInfo is what a finished upload's handshake reports.
type finalInfo struct {
	lmod int64
}

// subState is an unfinished chunk sent in sub-chunks (X-Up2k-Subc): the
// next offset expected and the hash of the bytes so far. Memory only.
type subState struct {
	next int64
	h    hash.Hash
}

// newSession builds a session from a record with its hashes, validating
// it; the table of its hashes is returned for the caller to keep
// (Manager.keep). The session's record keeps no hashes.
func newSession(vol *store.Volume, db SessionStore, rec record) (*session, *table, error) {
	t, err := newTable(rec.Size, rec.CS, rec.Hashes)
	if err != nil {
		return nil, nil, fmt.Errorf("up2k: session %s: %w", rec.Wark, err)
	}
	rec.Hashes = nil
	s := &session{vol: vol, db: db, rec: rec, nu: t.nu, ready: make(chan struct{}), left: rec.Size}
	s.have = make([]bool, t.nu)
	s.busy = make([]bool, t.nu)
	return s, t, nil
}

// blob is the session's stored form: its record with the hashes of t.
func (s *session) blob(t *table) ([]byte, error) {
	rec := s.rec
	rec.Hashes = t.hashes()
	return json.Marshal(rec)
}

// rel is the final file's path inside the volume.
func (s *session) rel() string { return path.Join(s.rec.Dir, s.rec.Name) }

// needLocked lists the hashes still needed, as the client sent them, in
// first-occurrence order. s.mu must be held.
func (s *session) needLocked(t *table) []string {
	out := make([]string, 0, s.nu-s.nhave)
	for u, ok := range s.have {
		if !ok {
			out = append(out, t.sentOf(u))
		}
	}
	return out
}

// samePath reports whether a handshake for name in dir means this upload.
func (s *session) samePath(dir, name string) bool {
	return s.rec.Dir == dir && (s.rec.Name == name || s.rec.Asked == name)
}

// missing is how many bytes of the file are not stored yet.
func (s *session) missing() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.left
}

// gotLocked records unique chunk u as stored (s.mu held): its bytes no
// longer count as missing, nor against the free space.
func (s *session) gotLocked(t *table, u int) {
	if s.have[u] {
		return
	}
	s.have[u] = true
	s.nhave++
	n := t.bytesOf(u)
	s.left -= n
	s.space.Shrink(n)
}

// keys returns the session's chunk hashes in order, each cut to the
// 44-character key copyparty's index and clients use; nil when its table
// cannot be had.
func (s *session) keys() []string {
	t := s.tab.Load()
	if t == nil && s.mgr != nil {
		t, _ = s.mgr.table(context.Background(), s)
	}
	if t == nil {
		return nil
	}
	return t.keys()
}

// takeWork hands over the work file the handshake kept, if any.
func (s *session) takeWork() *store.Temp {
	s.mu.Lock()
	t := s.work
	s.work = nil
	s.mu.Unlock()
	if t != nil {
		s.mgr.heldWork.Add(-1)
	}
	return t
}

// closeWork closes the work file the handshake kept, if nobody took it.
func (s *session) closeWork() {
	if t := s.takeWork(); t != nil {
		t.Close()
	}
}

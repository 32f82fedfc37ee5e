package up2k

import (
	"context"
	"io/fs"
	"path"
	"strings"
	"sync"
	"time"

	"hoard/store"
)

// Uploads just finished, for the handshake that confirms them. copyparty's
// clients (u2c, the browser) end every file with a last handshake that
// must find nothing missing; for a file this server just published, that
// handshake would read the file's record from the session store (an
// iterator over the database) only to learn what the upload already knew.
// recentDone keeps that knowledge for a short while: the file at rel has
// the content wark, with this size and mtime.
//
// An entry is only ever what a record would say, and it is dropped by any
// change to its path that hoard makes (the store's events, which arrive
// before the change is answered): it is born from the Created event of
// the upload's own publish (so a change between that publish and the
// moment the upload confirms the entry is seen), confirmed once the
// upload's record is durable, and used once. The file itself is still
// looked at (its size and mtime, as a record is checked) before a
// handshake is answered from an entry, so a change made outside hoard is
// caught as the record path would catch it.
type recentDone struct {
	mu     sync.Mutex
	byPath map[recentKey]*recentEnt
	byWark map[skey]*recentEnt
	ring   [recentMax]*recentEnt // insertion order, for eviction
	next   int
	now    func() time.Time
}

// recentMax bounds the entries (hoard's own client never sends the last
// handshake, so its uploads' entries wait to be evicted); recentTTL is how
// long a confirmed entry may wait for its handshake.
const (
	recentMax = 1024
	recentTTL = time.Minute
)

type recentKey struct {
	vol *store.Volume
	rel string
}

type recentEnt struct {
	key       recentKey
	wark      string
	db        SessionStore // set when confirmed
	size      int64
	mtime     int64 // unix nanoseconds
	at        time.Time
	confirmed bool
}

func (r *recentDone) init(now func() time.Time) {
	r.byPath = map[recentKey]*recentEnt{}
	r.byWark = map[skey]*recentEnt{}
	r.now = now
}

// unlinkLocked takes e out of the maps (the ring slot stays until reused).
func (r *recentDone) unlinkLocked(e *recentEnt) {
	if r.byPath[e.key] == e {
		delete(r.byPath, e.key)
	}
	if e.confirmed {
		k := skey{e.db, e.wark}
		if r.byWark[k] == e {
			delete(r.byWark, k)
		}
	}
}

// event updates the entries for a change the store made: the publish of
// up2k content (a file event that names its wark) makes a candidate, any
// other change drops what it touches.
func (r *recentDone) event(e store.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e.Kind == store.Created && !e.Tree && e.Wark != "" {
		k := recentKey{e.Vol, e.Rel}
		if old := r.byPath[k]; old != nil {
			r.unlinkLocked(old)
		}
		ent := &recentEnt{key: k, wark: e.Wark}
		if old := r.ring[r.next]; old != nil {
			r.unlinkLocked(old)
		}
		r.ring[r.next] = ent
		r.next = (r.next + 1) % recentMax
		r.byPath[k] = ent
		return
	}
	r.dropLocked(e.Vol, e.Rel, e.Tree)
	if e.Kind == store.Moved {
		r.dropLocked(e.FromVol, e.From, e.Tree)
	}
}

// dropLocked drops the entry at rel of vol, or with tree every entry at
// or below it.
func (r *recentDone) dropLocked(vol *store.Volume, rel string, tree bool) {
	if !tree {
		if e := r.byPath[recentKey{vol, rel}]; e != nil {
			r.unlinkLocked(e)
		}
		return
	}
	for k, e := range r.byPath {
		if k.vol == vol && (rel == "" || k.rel == rel || strings.HasPrefix(k.rel, rel+"/")) {
			r.unlinkLocked(e)
		}
	}
}

// confirm marks the candidate that the publish of wark at rel made as the
// record of db that the upload has just written; nothing when a change
// came between them (the candidate is gone or names other content).
func (r *recentDone) confirm(db SessionStore, vol *store.Volume, rel, wark string, fi fs.FileInfo) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.byPath[recentKey{vol, rel}]
	if e == nil || e.wark != wark || e.confirmed {
		return
	}
	k := skey{db, wark}
	if old := r.byWark[k]; old != nil {
		r.unlinkLocked(old)
	}
	e.db, e.size, e.mtime, e.at, e.confirmed = db, fi.Size(), fi.ModTime().UnixNano(), r.now(), true
	r.byWark[k] = e
}

// take removes and returns the confirmed entry of wark in db when it is
// recent enough and mine accepts its place; an entry mine does not
// accept stays for the handshake that names it.
func (r *recentDone) take(db SessionStore, wark string, mine func(recentKey) bool) (recentKey, int64, int64, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.byWark[skey{db, wark}]
	if e == nil {
		return recentKey{}, 0, 0, false
	}
	if r.now().Sub(e.at) > recentTTL {
		r.unlinkLocked(e)
		return recentKey{}, 0, 0, false
	}
	if mine != nil && !mine(e.key) {
		return recentKey{}, 0, 0, false
	}
	r.unlinkLocked(e)
	return e.key, e.size, e.mtime, true
}

// recentHere answers a handshake for content this server published a
// moment ago without reading its record: when the file is still there as
// published and the handshake names that place, as existing would find
// it (here). ok is false when the handshake must take the usual way.
func (m *Manager) recentHere(ctx context.Context, h Handshake, db SessionStore, wark string) (Reply, bool, error) {
	k, size, mtime, ok := m.recent.take(db, wark, func(k recentKey) bool {
		return k.vol == h.Vol && namesHere(k.rel, h.Dir, h.Name)
	})
	if !ok {
		return Reply{}, false, nil
	}
	fi, err := h.Vol.Stat(k.rel)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() != size || fi.ModTime().UnixNano() != mtime {
		return Reply{}, false, nil
	}
	return m.here(ctx, h, wark, k.rel, fi)
}

// namesHere reports whether a handshake for name in dir means the file at
// rel: the same path, or the collision name an upload of it got there.
func namesHere(rel, dir, name string) bool {
	return rel == path.Join(dir, name) || (path.Dir(rel) == dir && strings.HasPrefix(path.Base(rel), name+"-"))
}

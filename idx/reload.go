package idx

import (
	"maps"
	"slices"
	"strings"

	"hoard/store"
)

// volSet is the indexed volumes: by volume, and in VPath order. It is
// never changed once published; AddVolume publishes a new one.
type volSet struct {
	by    map[*store.Volume]*volIdx
	order []*volIdx
}

// with is the set with vi added.
func (s *volSet) with(vi *volIdx) *volSet {
	n := &volSet{by: maps.Clone(s.by), order: slices.Clone(s.order)}
	n.by[vi.v] = vi
	n.order = append(n.order, vi)
	slices.SortFunc(n.order, func(a, b *volIdx) int { return strings.Compare(a.v.VPath, b.v.VPath) })
	return n
}

// vol is the index of volume v, nil when v is not indexed.
func (x *Indexer) vol(v *store.Volume) *volIdx { return x.set.Load().by[v] }

// list is the indexed volumes in VPath order (not to be changed).
func (x *Indexer) list() []*volIdx { return x.set.Load().order }

// newVolIdx is the index of v in db, or nil when v is not indexed (no
// database, no e2d).
func (x *Indexer) newVolIdx(v *store.Volume, db *DB) *volIdx {
	f := v.Flags()
	if db == nil || !f.E2D {
		return nil
	}
	vi := &volIdx{v: v, db: db, scan: f.E2DS || f.E2DSA, tags: f.E2T && x.cfg.Prober != nil, retag: f.E2TSR}
	if v.VPath != "" {
		vi.pre = lower(v.VPath) + "/"
	}
	vi.ready.Store(!vi.scan)
	return vi
}

// AddVolume indexes a volume a configuration reload mounted, before it is
// served (its changes are indexed from the moment it is): with db, when
// v has e2d, as at start: the changes a crash left noted in db are
// replayed (unless a volume indexed already shares db) and its first scan
// runs with e2ds. It reports whether v is indexed. Reloads call it one at
// a time, never after Close.
func (x *Indexer) AddVolume(v *store.Volume, db *DB) bool {
	if x.vol(v) != nil {
		return true
	}
	vi := x.newVolIdx(v, db)
	if vi == nil {
		return false
	}
	shared := slices.ContainsFunc(x.list(), func(o *volIdx) bool { return o.db == db })
	x.mu.Lock()
	started, stopped := x.started, x.stop
	x.mu.Unlock()
	if stopped {
		return false
	}
	x.set.Store(x.set.Load().with(vi))
	if !started {
		x.Start() // the first volume indexed
		return true
	}
	replayed := shared
	if !shared && db.usable() == nil {
		x.replay(db)
		replayed = true
	}
	x.wg.Add(1)
	go func() {
		defer x.wg.Done()
		select {
		case <-db.Ready(): // its state folder was full: it opens later
		case <-x.ctx.Done():
			return
		}
		if !replayed {
			x.replay(db)
		}
		db.countFiles()
		if vi.scan {
			x.scanVol(vi, true)
		}
	}()
	return true
}

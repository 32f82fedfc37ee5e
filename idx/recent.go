package idx

import (
	"cmp"
	"slices"
	"sync"
	"time"

	"hoard/store"
)

// Upload is one finished upload, as ?ups and ?ru show it.
type Upload struct {
	Vol  *store.Volume
	Rel  string
	Size int64
	At   time.Time
	User string // "" is anonymous
	IP   string
}

// RecentUploads is where ?ups and ?ru read finished uploads from, newest
// first, keeping those keep accepts, at most n. The default is an
// in-memory ring fed by the store's events (NewRecentRing); an index that
// records uploads can stand in for it (Config.Recent).
type RecentUploads interface {
	Recent(n int, keep func(*Upload) bool) []Upload
}

// RecentRing is a bounded in-memory record of the latest uploads.
type RecentRing struct {
	mu   sync.Mutex
	ring []Upload
	next int // where the next record goes
	full bool
}

// NewRecentRing returns a ring of size records, subscribed to st's events.
func NewRecentRing(st *store.Store, size int) *RecentRing {
	r := &RecentRing{ring: make([]Upload, max(size, 1))}
	st.Subscribe(r.event)
	return r
}

func (r *RecentRing) event(e store.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch e.Kind {
	case store.Created:
		if e.ClientIP == "" {
			return // made by the server itself, not an upload
		}
		r.ring[r.next] = Upload{Vol: e.Vol, Rel: e.Rel, Size: e.Size, At: e.At, User: e.Uploader, IP: e.ClientIP}
		r.next++
		if r.next == len(r.ring) {
			r.next, r.full = 0, true
		}
	case store.Removed:
		for i := range r.ring {
			if u := &r.ring[i]; u.Vol == e.Vol && e.Under(u.Rel) {
				if e.Tree {
					if _, err := u.Vol.Stat(u.Rel); err == nil {
						continue // a tree delete that stopped half-way left it
					}
				}
				u.Vol = nil // gone; skipped from now on
			}
		}
	case store.Moved:
		for i := range r.ring {
			if u := &r.ring[i]; u.Vol == e.FromVol && e.FromUnder(u.Rel) {
				u.Vol, u.Rel = e.Vol, e.Rebase(u.Rel)
			}
		}
	}
}

// Recent implements RecentUploads.
func (r *RecentRing) Recent(n int, keep func(*Upload) bool) []Upload {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Upload
	count := r.next
	if r.full {
		count = len(r.ring)
	}
	for i := 0; i < count && len(out) < n; i++ {
		u := &r.ring[(r.next-1-i+len(r.ring))%len(r.ring)]
		if u.Vol != nil && keep(u) {
			out = append(out, *u)
		}
	}
	return out
}

// indexRecent serves ?ups and ?ru from the index for indexed volumes
// (so the records survive restarts) and from the in-memory ring for the
// rest. The ring also covers the moment between an upload and its
// (asynchronous) indexing; duplicates are dropped.
type indexRecent struct {
	ix   *Indexer
	st   *store.Store
	ring RecentUploads
}

func (r *indexRecent) Recent(n int, keep func(*Upload) bool) []Upload {
	out := r.ring.Recent(n, keep)
	type seen struct {
		vol *store.Volume
		rel string
		at  int64
	}
	have := make(map[seen]bool, len(out))
	for _, u := range out {
		have[seen{u.Vol, u.Rel, u.At.Unix()}] = true
	}
	for _, v := range r.st.Volumes() {
		if !r.ix.Indexed(v) {
			continue
		}
		got := 0
		r.ix.Uploads(v, func(rec *Record) bool {
			u := Upload{Vol: v, Rel: rec.Rel, Size: rec.Size, At: time.Unix(rec.At, 0), User: rec.Uploader, IP: rec.IP}
			if have[seen{v, u.Rel, rec.At}] || !keep(&u) {
				return true
			}
			have[seen{v, u.Rel, rec.At}] = true
			out = append(out, u)
			got++
			return got < n
		})
	}
	slices.SortStableFunc(out, func(a, b Upload) int { return cmp.Compare(b.At.UnixNano(), a.At.UnixNano()) })
	return out[:min(len(out), n)]
}

// NewRecent returns where ?ups and ?ru read finished uploads: a ring of
// size records fed by st's events, and, when ix indexes, the index's
// upload records too (they survive restarts), for the volumes it indexes
// when asked (a reload may add the first).
func NewRecent(ix *Indexer, st *store.Store, size int) RecentUploads {
	var r RecentUploads = NewRecentRing(st, size)
	if ix != nil {
		r = &indexRecent{ix: ix, st: st, ring: r}
	}
	return r
}

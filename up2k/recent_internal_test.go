package up2k

import (
	"fmt"
	"io/fs"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"hoard/store"
)

type fakeInfo struct {
	fs.FileInfo
	size int64
	mt   time.Time
}

func (f fakeInfo) Size() int64        { return f.size }
func (f fakeInfo) ModTime() time.Time { return f.mt }

// TestRecentDoneProperty runs random sequences of store events, confirms
// and takes against recentDone and a plain model of what may be answered
// from memory: only a path whose last event was the publish of the very
// content being confirmed, with nothing between that publish and the
// confirm, and each entry once. The maps never outgrow recentMax.
func TestRecentDoneProperty(t *testing.T) {
	vols := []*store.Volume{{}, {}}
	dbs := []SessionStore{NewMemStore(), NewMemStore()}
	paths := []string{"a", "a/b", "a/b/c", "ab", "d/e"}
	warks := []string{"W1", "W2", "W3"}
	now := time.Unix(1700000000, 0)
	for seed := range uint64(300) {
		rnd := rand.New(rand.NewPCG(seed, 7))
		var r recentDone
		r.init(func() time.Time { return now })
		type mkey struct {
			vol int
			rel string
		}
		// model: the last Created-with-wark per path (cand), and what is
		// confirmed per (db, wark)
		cand := map[mkey]string{}
		type conf struct {
			key  mkey
			at   time.Time
			size int64
		}
		confirmed := map[string]conf{} // db index + wark
		dropPath := func(k mkey) {
			delete(cand, k)
			for w, c := range confirmed {
				if c.key == k {
					delete(confirmed, w)
				}
			}
		}
		under := func(rel, base string) bool {
			return base == "" || rel == base || strings.HasPrefix(rel, base+"/")
		}
		for step := range 200 {
			vi, p, w := rnd.IntN(2), paths[rnd.IntN(len(paths))], warks[rnd.IntN(len(warks))]
			switch op := rnd.IntN(10); {
			case op < 3: // a publish of up2k content
				r.event(store.Event{Kind: store.Created, Vol: vols[vi], Rel: p, Wark: w})
				dropPath(mkey{vi, p})
				cand[mkey{vi, p}] = w
			case op < 5: // another change to a path or a tree
				kinds := []store.EventKind{store.Created, store.Removed, store.Moved, store.Copied, store.Touched}
				e := store.Event{Kind: kinds[rnd.IntN(len(kinds))], Vol: vols[vi], Rel: p, Tree: rnd.IntN(3) == 0}
				if e.Kind == store.Created {
					e.Tree = false
				}
				if rnd.IntN(4) == 0 {
					e.Rel = ""
					e.Tree = true
				}
				if e.Kind == store.Moved {
					e.FromVol, e.From = vols[1-vi], paths[rnd.IntN(len(paths))]
				}
				r.event(e)
				for k := range cand {
					if (k.vol == vi && (k.rel == e.Rel || e.Tree && under(k.rel, e.Rel))) ||
						(e.Kind == store.Moved && vols[k.vol] == e.FromVol && (k.rel == e.From || e.Tree && under(k.rel, e.From))) {
						dropPath(k)
					}
				}
				for key, c := range confirmed {
					k := c.key
					if (k.vol == vi && (k.rel == e.Rel || e.Tree && under(k.rel, e.Rel))) ||
						(e.Kind == store.Moved && vols[k.vol] == e.FromVol && (k.rel == e.From || e.Tree && under(k.rel, e.From))) {
						delete(confirmed, key)
					}
				}
			case op < 7: // an upload confirms
				di := rnd.IntN(2)
				size := int64(step)
				r.confirm(dbs[di], vols[vi], p, w, fakeInfo{size: size, mt: now})
				if cand[mkey{vi, p}] == w {
					key := fmt.Sprint(di, w)
					for k2, c := range confirmed {
						if k2 == key || c.key == (mkey{vi, p}) {
							delete(confirmed, k2)
						}
					}
					confirmed[key] = conf{key: mkey{vi, p}, at: now, size: size}
					delete(cand, mkey{vi, p})
				}
			case op < 9: // a handshake looks
				di := rnd.IntN(2)
				reject := rnd.IntN(4) == 0 // the handshake names another place
				k, size, _, ok := r.take(dbs[di], w, func(recentKey) bool { return !reject })
				c, want := confirmed[fmt.Sprint(di, w)]
				expired := want && now.Sub(c.at) > recentTTL
				if expired || !reject {
					delete(confirmed, fmt.Sprint(di, w)) // used, or too old
				}
				want = want && !expired && !reject
				if ok != want || ok && (k.vol != vols[c.key.vol] || k.rel != c.key.rel || size != c.size) {
					t.Fatalf("seed %d step %d: take(%d, %s) = %v %v %d, model %v %+v", seed, step, di, w, k, ok, size, want, c)
				}
			default:
				now = now.Add(time.Duration(rnd.IntN(40)) * time.Second)
			}
			if len(r.byPath) > recentMax || len(r.byWark) > recentMax {
				t.Fatalf("seed %d: %d/%d entries", seed, len(r.byPath), len(r.byWark))
			}
		}
	}
}

// TestRecentDoneBounded: however many uploads are never confirmed or
// never asked about, the entries stay within recentMax.
func TestRecentDoneBounded(t *testing.T) {
	var r recentDone
	now := time.Unix(1700000000, 0)
	r.init(func() time.Time { return now })
	v := &store.Volume{}
	db := NewMemStore()
	for i := range 5 * recentMax {
		rel, w := fmt.Sprintf("f%d", i), fmt.Sprintf("W%d", i)
		r.event(store.Event{Kind: store.Created, Vol: v, Rel: rel, Wark: w})
		if i%2 == 0 {
			r.confirm(db, v, rel, w, fakeInfo{size: 1, mt: now})
		}
	}
	if len(r.byPath) > recentMax || len(r.byWark) > recentMax {
		t.Fatalf("%d/%d entries, want at most %d", len(r.byPath), len(r.byWark), recentMax)
	}
	last := fmt.Sprintf("W%d", 5*recentMax-2)
	if _, _, _, ok := r.take(db, last, nil); !ok {
		t.Fatalf("the newest confirmed entry was evicted")
	}
	if _, _, _, ok := r.take(db, "W0", nil); ok {
		t.Fatalf("the oldest entry was kept")
	}
}

package store

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// TestDAVLockProperties drives the lock table with random LOCK, UNLOCK,
// REFRESH and write checks by two accounts over a small tree, against a
// model: no two overlapping locks unless both are shared; a write passes
// exactly when every covering lock (one of each resource's shared ones)
// is presented by the account that holds it; another account's token
// never helps.
func TestDAVLockProperties(t *testing.T) {
	st, _ := openStore(t, "::rwmd")
	v := st.Volumes()[0]
	paths := []string{"", "a", "a/b", "a/b/c", "a/d", "e"}
	users := []string{"x", "y"}
	type mlock struct {
		tok, user, root string
		inf, shared     bool
	}
	var model []mlock
	covers := func(l mlock, p string) bool {
		return l.root == p || (l.inf && (l.root == "" && p != "" || strings.HasPrefix(p, l.root+"/")))
	}
	below := func(p, root string) bool { return p != root && (root == "" || strings.HasPrefix(p, root+"/")) }
	rng := rand.New(rand.NewPCG(1, 2))
	for step := range 5000 {
		p := paths[rng.IntN(len(paths))]
		u := users[rng.IntN(2)]
		at := Loc{Vol: v, Rel: p}
		who := Actor{User: u}
		switch rng.IntN(4) {
		case 0: // lock
			inf, shared := rng.IntN(2) == 0, rng.IntN(2) == 0
			conflict := false
			for _, l := range model {
				if (covers(l, p) || (inf && below(l.root, p))) && !(l.shared && shared) {
					conflict = true
				}
			}
			l, err := st.Lock(who, at, LockRequest{Infinite: inf, Shared: shared, Timeout: time.Hour})
			if conflict != (err != nil) {
				t.Fatalf("step %d: lock %q inf=%v shared=%v by %s: err %v, model conflict %v (%+v)", step, p, inf, shared, u, err, conflict, model)
			}
			if err == nil {
				if KindOf(err) != 0 || l.User != u {
					t.Fatal("lock result")
				}
				model = append(model, mlock{l.Token, u, p, inf, shared})
			} else if KindOf(err) != KindLocked {
				t.Fatalf("step %d: refusal of kind %v", step, KindOf(err))
			}
		case 1: // unlock a random token, maybe another's
			if len(model) == 0 {
				continue
			}
			i := rng.IntN(len(model))
			l := model[i]
			err := st.Unlock(who, Loc{Vol: v, Rel: l.root}, l.tok)
			if (l.user == u) != (err == nil) {
				t.Fatalf("step %d: unlock of %s's lock by %s: %v", step, l.user, u, err)
			}
			if err == nil {
				model = append(model[:i], model[i+1:]...)
			} else if KindOf(err) != KindLocked {
				t.Fatalf("step %d: unlock refused with kind %v", step, KindOf(err))
			}
		case 2: // refresh
			if len(model) == 0 {
				continue
			}
			l := model[rng.IntN(len(model))]
			_, err := st.RefreshLock(who, Loc{Vol: v, Rel: l.root}, l.tok, time.Minute)
			if (l.user == u) != (err == nil) {
				t.Fatalf("step %d: refresh of %s's lock by %s: %v", step, l.user, u, err)
			}
		case 3: // write check with a random subset of tokens (any account's)
			var toks []string
			for _, l := range model {
				if rng.IntN(2) == 0 {
					toks = append(toks, l.tok)
				}
			}
			tree := rng.IntN(2) == 0
			ok := true
			sharedOK := map[string]bool{}
			for _, l := range model {
				if !(covers(l, p) || (tree && below(l.root, p))) {
					continue
				}
				held := false
				for _, tk := range toks {
					held = held || (tk == l.tok && l.user == u)
				}
				if l.shared {
					sharedOK[l.root] = sharedOK[l.root] || held
				} else if !held {
					ok = false
				}
			}
			for _, h := range sharedOK {
				ok = ok && h
			}
			err := st.CheckLocks(who, at, WriteCheck{Tree: tree}, toks)
			if ok != (err == nil) {
				t.Fatalf("step %d: write %q tree=%v by %s with %d tokens: %v, model ok %v", step, p, tree, u, len(toks), err, ok)
			}
		}
	}
}

// TestDAVLockFollowsDelete: a lock goes with its resource when it is
// deleted or moved away (by any route).
func TestDAVLockFollowsDelete(t *testing.T) {
	st, dirs := openStore(t, "::rwmd")
	v := st.Volumes()[0]
	mkfiles(t, dirs[0], map[string]string{"d/f.txt": "f", "g.txt": "g"})
	who := Actor{User: "x"}
	l1, err := st.Lock(who, Loc{v, "d/f.txt"}, LockRequest{})
	if err != nil {
		t.Fatal(err)
	}
	l2, err := st.Lock(who, Loc{v, "g.txt"}, LockRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Delete(t.Context(), who, Loc{v, "d"}, DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Move(t.Context(), who, Loc{v, "g.txt"}, Loc{v, "h.txt"}, DestOptions{}); err != nil {
		t.Fatal(err)
	}
	if st.LockCovers(Loc{v, "d/f.txt"}, l1.Token) || st.LockCovers(Loc{v, "g.txt"}, l2.Token) {
		t.Error("a lock outlived its resource")
	}
	if err := st.CheckLocks(Actor{User: "y"}, Loc{v, "g.txt"}, WriteCheck{Member: true}, nil); err != nil {
		t.Errorf("a new file at a moved-away lock's path is still locked: %v", err)
	}
}

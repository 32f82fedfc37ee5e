package store

import (
	"errors"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
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

// TestPutCheck: WebDAV's PUT rule lives in store. Replacing a file needs
// d, except the empty file the writer's own LOCK made (its token
// presented); a new file needs its folder (no parents are made); an
// anonymous refusal names the missing permission (http asks for a login).
func TestPutCheck(t *testing.T) {
	st, dirs := openStore(t, "::rw", ":del:rwd")
	var v, vd *Volume
	for _, x := range st.Volumes() {
		if x.VPath == "" {
			v = x
		} else {
			vd = x
		}
	}
	mkfiles(t, dirs[0], map[string]string{"d/f.txt": "f"})
	mkfiles(t, dirs[1], map[string]string{"f.txt": "f"})
	who := Actor{User: "x"}
	stat := func(v *Volume, rel string) fs.FileInfo {
		fi, err := v.Stat(rel)
		if err != nil {
			t.Fatal(err)
		}
		return fi
	}
	l, err := st.Lock(who, Loc{v, "new.txt"}, LockRequest{})
	if err != nil {
		t.Fatal(err)
	}
	mkfiles(t, dirs[0], map[string]string{"new.txt": ""})
	st.LockMadeFile(l.Token)
	for _, tc := range []struct {
		name   string
		who    Actor
		at     Loc
		exists fs.FileInfo
		tokens []string
		kind   Kind
		need   Perm
	}{
		{name: "new file", who: who, at: Loc{v, "d/g.txt"}},
		{name: "new file at the top", who: who, at: Loc{v, "g.txt"}},
		{name: "replace without d", who: who, at: Loc{v, "d/f.txt"}, exists: stat(v, "d/f.txt"), kind: KindForbidden, need: PermDelete},
		{name: "replace without d, anonymous", at: Loc{v, "d/f.txt"}, exists: stat(v, "d/f.txt"), kind: KindForbidden, need: PermDelete},
		{name: "replace with d", who: who, at: Loc{vd, "f.txt"}, exists: stat(vd, "f.txt")},
		{name: "the lock's empty file, token presented", who: who, at: Loc{v, "new.txt"}, exists: stat(v, "new.txt"), tokens: []string{l.Token}},
		{name: "the lock's empty file, no token", who: who, at: Loc{v, "new.txt"}, exists: stat(v, "new.txt"), kind: KindForbidden, need: PermDelete},
		{name: "the lock's empty file, another account", who: Actor{User: "y"}, at: Loc{v, "new.txt"}, exists: stat(v, "new.txt"), tokens: []string{l.Token}, kind: KindForbidden, need: PermDelete},
		{name: "missing folder", who: who, at: Loc{v, "nope/g.txt"}, kind: KindConflict},
		{name: "a file as the folder", who: who, at: Loc{v, "d/f.txt/g.txt"}, kind: KindConflict},
		{name: "no volume", who: who, at: Loc{Rel: "x"}, kind: KindForbidden},
	} {
		err := st.PutCheck(tc.who, tc.at, tc.exists, tc.tokens)
		if KindOf(err) != tc.kind {
			t.Errorf("%s: got %v (kind %v), want kind %v", tc.name, err, KindOf(err), tc.kind)
			continue
		}
		var e *Error
		if tc.need != 0 && (!errors.As(err, &e) || e.Need != tc.need) {
			t.Errorf("%s: %v does not name the missing %v permission", tc.name, err, tc.need)
		}
	}
}

// TestCopyShallow: COPY with Depth: 0 (DestOptions.Shallow) lives in store.
// A folder becomes an empty folder; a folder already there is kept with
// its members (Overwrite, with d); a file is copied whole; the
// permissions are the store's (r at the source, d to replace).
func TestCopyShallow(t *testing.T) {
	st, dirs := openStore(t, "::rwmd", ":ro:rw")
	var v, ro *Volume
	for _, x := range st.Volumes() {
		if x.VPath == "" {
			v = x
		} else {
			ro = x
		}
	}
	mkfiles(t, dirs[0], map[string]string{"d/a.txt": "a", "d/e/b.txt": "b", "f.txt": "f", "have/keep.txt": "k"})
	mkfiles(t, dirs[1], map[string]string{"d/a.txt": "a", "have/keep.txt": "k"})
	who := Actor{User: "x"}
	ctx := t.Context()
	sh := DestOptions{Shallow: true}
	shOver := DestOptions{Shallow: true, Overwrite: true}

	res, err := st.Copy(ctx, who, Loc{v, "d"}, Loc{v, "d2"}, sh)
	if err != nil || !res.Dir || res.Replaced {
		t.Fatalf("shallow copy of a folder: %+v %v", res, err)
	}
	if ents, err := os.ReadDir(filepath.Join(dirs[0], "d2")); err != nil || len(ents) != 0 {
		t.Fatalf("shallow copy made %v (%v), want an empty folder", ents, err)
	}
	if _, err := st.Copy(ctx, who, Loc{v, "d"}, Loc{v, "have"}, sh); KindOf(err) != KindExists {
		t.Fatalf("onto a folder without Overwrite: %v, want KindExists", err)
	}
	res, err = st.Copy(ctx, who, Loc{v, "d"}, Loc{v, "have"}, shOver)
	if err != nil || !res.Replaced || !exists(filepath.Join(dirs[0], "have/keep.txt")) {
		t.Fatalf("onto a folder with Overwrite: %+v %v; its members must stay", res, err)
	}
	res, err = st.Copy(ctx, who, Loc{v, "d"}, Loc{v, "f.txt"}, shOver)
	if err != nil || !res.Replaced {
		t.Fatalf("onto a file with Overwrite: %+v %v", res, err)
	}
	if fi, err := os.Stat(filepath.Join(dirs[0], "f.txt")); err != nil || !fi.IsDir() {
		t.Fatalf("the file replaced by a shallow folder copy: %v %v", fi, err)
	}
	res, err = st.Copy(ctx, who, Loc{v, "d/a.txt"}, Loc{v, "a2.txt"}, sh)
	if err != nil || res.Dir {
		t.Fatalf("shallow copy of a file: %+v %v", res, err)
	}
	if b, err := os.ReadFile(filepath.Join(dirs[0], "a2.txt")); err != nil || string(b) != "a" {
		t.Fatalf("shallow copy of a file copies it whole: %q %v", b, err)
	}
	// ro: everyone rw (no d).
	var e *Error
	if _, err := st.Copy(ctx, who, Loc{v, "d"}, Loc{ro, "have"}, shOver); !errors.As(err, &e) || e.Kind != KindForbidden || e.Need != PermDelete {
		t.Fatalf("replacing without d: %v, want KindForbidden needing d", err)
	}
	if _, err := st.Copy(ctx, Actor{User: "y"}, Loc{v, "d"}, Loc{v, "d3"}, sh); err != nil {
		t.Fatalf("y has rwmd on /: %v", err)
	}
	st2, dirs2 := openStore(t, "::w")
	mkfiles(t, dirs2[0], map[string]string{"d/a.txt": "a"})
	w := st2.Volumes()[0]
	if _, err := st2.Copy(ctx, who, Loc{w, "d"}, Loc{w, "d2"}, sh); !errors.As(err, &e) || e.Kind != KindForbidden || e.Need != PermRead {
		t.Fatalf("without r at the source: %v, want KindForbidden needing r", err)
	}
	if _, err := st.Copy(ctx, who, Loc{Rel: "d"}, Loc{v, "d4"}, sh); KindOf(err) != KindForbidden {
		t.Fatalf("no volume at the source: %v", err)
	}
}

// TestLockOrMake: a LOCK on an unmapped URL makes the empty file its
// holder may fill without d; under a missing folder it is KindConflict
// and holds nothing; without w it is refused before anything is looked
// at, missing folder or not.
func TestLockOrMake(t *testing.T) {
	st, dirs := openStore(t, "::rw", ":ro:r", ":wo:w")
	var v, ro, wo *Volume
	for _, x := range st.Volumes() {
		switch x.VPath {
		case "":
			v = x
		case "ro":
			ro = x
		default:
			wo = x
		}
	}
	mkfiles(t, dirs[0], map[string]string{"d/have.txt": "h"})
	mkfiles(t, dirs[1], map[string]string{"d/have.txt": "h"})
	who := Actor{User: "x"}
	ctx := t.Context()
	l, made, err := st.LockOrMake(ctx, who, Loc{v, "d/new.txt"}, LockRequest{})
	if err != nil || !made || !l.Made {
		t.Fatalf("lock of an unmapped URL: %+v made=%v %v", l, made, err)
	}
	if fi, err := os.Stat(filepath.Join(dirs[0], "d/new.txt")); err != nil || fi.Size() != 0 {
		t.Fatalf("the lock's empty file: %v %v", fi, err)
	}
	if !st.LockNullHeld(who, Loc{v, "d/new.txt"}, []string{l.Token}) {
		t.Error("the lock that made the file does not hold it as lock-null")
	}
	if _, made, err := st.LockOrMake(ctx, who, Loc{v, "d/have.txt"}, LockRequest{}); err != nil || made {
		t.Errorf("lock of an existing file: made=%v %v", made, err)
	}
	if _, _, err := st.LockOrMake(ctx, who, Loc{v, "nothere/new.txt"}, LockRequest{}); KindOf(err) != KindConflict {
		t.Errorf("under a missing folder: %v, want KindConflict", err)
	}
	if len(st.LocksOn(Loc{v, "nothere/new.txt"})) != 0 {
		t.Error("a refused lock is held")
	}
	for _, p := range []string{"d/new2.txt", "nothere/new.txt"} {
		var e *Error
		if _, _, err := st.LockOrMake(ctx, who, Loc{ro, p}, LockRequest{}); !errors.As(err, &e) || e.Kind != KindForbidden || e.Need != PermWrite {
			t.Errorf("without w, %s: %v, want KindForbidden needing w", p, err)
		}
	}
	if exists(filepath.Join(dirs[1], "d/new2.txt")) {
		t.Error("a refused lock made a file")
	}
	// Without r: refused alike whatever is there (no existence oracle),
	// and nothing made.
	mkfiles(t, dirs[2], map[string]string{"d/have.txt": "h"})
	for _, p := range []string{"d/have.txt", "d/new3.txt", "nothere/new.txt"} {
		var e *Error
		if _, _, err := st.LockOrMake(ctx, who, Loc{wo, p}, LockRequest{}); !errors.As(err, &e) || e.Kind != KindForbidden || e.Need != PermRead {
			t.Errorf("without r, %s: %v, want KindForbidden needing r", p, err)
		}
	}
	if exists(filepath.Join(dirs[2], "d/new3.txt")) || len(st.LocksOn(Loc{wo, "d/have.txt"})) != 0 {
		t.Error("a lock without r made a file or holds")
	}
}

// TestLockOwnerBounded: locks live in memory, so the owner each keeps is
// capped; a bigger one is refused and no lock is taken.
func TestLockOwnerBounded(t *testing.T) {
	st, _ := openStore(t, "::rw")
	v := st.Volumes()[0]
	who := Actor{User: "x"}
	if _, err := st.Lock(who, Loc{v, "a"}, LockRequest{Owner: strings.Repeat("o", MaxLockOwner+1)}); KindOf(err) != KindInvalid {
		t.Fatalf("an owner of %d bytes: %v, want KindInvalid", MaxLockOwner+1, err)
	}
	if len(st.LocksOn(Loc{v, "a"})) != 0 {
		t.Fatal("a refused lock is held")
	}
	if _, err := st.Lock(who, Loc{v, "a"}, LockRequest{Owner: strings.Repeat("o", MaxLockOwner)}); err != nil {
		t.Fatal(err)
	}
}

// TestRefreshLockNeedsPermission: a lock is refreshed only while its
// holder may still take it (w and r): an account whose rights were taken
// away by a reload cannot keep its locks, holding off the volume's
// writers, for ever.
func TestRefreshLockNeedsPermission(t *testing.T) {
	var cfg Config
	cfg.Accounts = []Account{{"x", "pw"}}
	dir := t.TempDir()
	spec, err := ParseVolume(dir + "::rw,x")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Volumes = []VolumeSpec{spec}
	st, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	who := Actor{User: "x"}
	v := st.Volumes()[0]
	l, err := st.Lock(who, Loc{v, "a"}, LockRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.RefreshLock(who, Loc{v, "a"}, l.Token, 0); err != nil {
		t.Fatalf("refresh while allowed: %v", err)
	}
	spec, _ = ParseVolume(dir + "::r,x")
	cfg.Volumes = []VolumeSpec{spec}
	if _, err := st.Reload(cfg); err != nil {
		t.Fatal(err)
	}
	v = st.Volumes()[0]
	if _, err := st.RefreshLock(who, Loc{v, "a"}, l.Token, 0); KindOf(err) != KindForbidden {
		t.Fatalf("refresh after w was taken away: %v, want KindForbidden", err)
	}
}

// TestLockOrMakeUnderLockedFolder: a LOCK that makes its empty file adds
// a member to the folder, which a lock on the folder holds: without that
// lock's token (of its own account) it is refused and nothing is made.
func TestLockOrMakeUnderLockedFolder(t *testing.T) {
	st, dirs := openStore(t, "::rw")
	v := st.Volumes()[0]
	mkfiles(t, dirs[0], map[string]string{"d/have.txt": "h"})
	x, y := Actor{User: "x"}, Actor{User: "y"}
	l, err := st.Lock(x, Loc{v, "d"}, LockRequest{}) // Depth: 0
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.LockOrMake(t.Context(), y, Loc{v, "d/new.txt"}, LockRequest{Tokens: []string{l.Token}}); KindOf(err) != KindLocked {
		t.Fatalf("a LOCK making a file in another's locked folder: %v, want KindLocked", err)
	}
	if exists(filepath.Join(dirs[0], "d/new.txt")) || len(st.LocksOn(Loc{v, "d/new.txt"})) != 0 {
		t.Fatal("the refused LOCK made a file or holds")
	}
	// An existing member is no change of the folder.
	if _, _, err := st.LockOrMake(t.Context(), y, Loc{v, "d/have.txt"}, LockRequest{}); err != nil {
		t.Fatal(err)
	}
	if _, made, err := st.LockOrMake(t.Context(), x, Loc{v, "d/new.txt"}, LockRequest{Tokens: []string{l.Token}}); err != nil || !made {
		t.Fatalf("the folder's lock holder: made=%v %v", made, err)
	}
}

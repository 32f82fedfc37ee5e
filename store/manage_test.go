package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// evLog records the store's events.
type evLog struct {
	mu sync.Mutex
	ev []Event
}

func (l *evLog) add(e Event) {
	l.mu.Lock()
	l.ev = append(l.ev, e)
	l.mu.Unlock()
}

func (l *evLog) take() []Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.ev
	l.ev = nil
	return out
}

func (l *evLog) String() string {
	var b strings.Builder
	for _, e := range l.take() {
		fmt.Fprintf(&b, "%s tree=%v %s->%s;", e.Kind, e.Tree, e.From, e.Rel)
	}
	return b.String()
}

func watch(st *Store) *evLog {
	l := &evLog{}
	st.Subscribe(l.add)
	return l
}

// mkfiles writes files (path → content) below dir.
func mkfiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for p, c := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

func readString(t testing.TB, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func wantKind(t testing.TB, what string, err error, k Kind) {
	t.Helper()
	if got := KindOf(err); got != k {
		t.Fatalf("%s: err = %v (kind %v), want kind %v", what, err, got, k)
	}
	var oe *OpError
	if !errors.As(err, &oe) {
		t.Fatalf("%s: err %v is no *OpError", what, err)
	}
	if oe.Msg == "" || strings.Contains(oe.Msg, "/tmp/") {
		t.Fatalf("%s: client message %q is empty or names a server path", what, oe.Msg)
	}
}

var ctx = context.Background()

func TestMain(m *testing.M) {
	flag.Parse()
	if !testing.Verbose() {
		slog.SetDefault(slog.New(slog.DiscardHandler))
	}
	os.Exit(m.Run())
}

var admin = Actor{User: "", IP: "10.0.0.1"}

func TestDeleteFileAndTree(t *testing.T) {
	st, dirs := openStore(t, "::A")
	v := st.Volumes()[0]
	ev := watch(st)
	mkfiles(t, dirs[0], map[string]string{"a.txt": "a", "d/x": "x", "d/e/y": "y", "d/e/f/z": "z", "keep": "k"})
	os.Symlink("../keep", filepath.Join(dirs[0], "d", "link"))

	r, err := st.Delete(ctx, admin, Loc{v, "a.txt"}, DeleteOptions{})
	if err != nil || r.Files != 1 {
		t.Fatalf("delete file: %+v %v", r, err)
	}
	if exists(filepath.Join(dirs[0], "a.txt")) {
		t.Fatal("file still there")
	}
	if got := ev.String(); got != "removed tree=false ->a.txt;" {
		t.Fatalf("events %s", got)
	}
	r, err = st.Delete(ctx, admin, Loc{v, "d"}, DeleteOptions{})
	if err != nil || r.Files != 4 || r.Dirs != 3 {
		t.Fatalf("delete tree: %+v %v", r, err)
	}
	if exists(filepath.Join(dirs[0], "d")) {
		t.Fatal("folder still there")
	}
	if readString(t, filepath.Join(dirs[0], "keep")) != "k" {
		t.Fatal("a link in the tree was followed")
	}
	if got := ev.String(); got != "removed tree=true ->d;" {
		t.Fatalf("events %s", got)
	}
	if _, err := st.Delete(ctx, admin, Loc{v, "d"}, DeleteOptions{}); KindOf(err) != KindNotFound {
		t.Fatalf("second delete: %v", err)
	}
}

func TestDeleteRefusals(t *testing.T) {
	st, dirs := openStore(t, "::A", ":sub:A", ":ro:rw")
	var top, sub, ro *Volume
	for _, v := range st.Volumes() {
		switch v.VPath {
		case "":
			top = v
		case "sub":
			sub = v
		case "ro":
			ro = v
		}
	}
	mkfiles(t, dirs[0], map[string]string{"f": "1", "m/x": "2", "in/y": "3", ".hist/keep": "4", "z.PARTIAL": "5"})
	mkfiles(t, dirs[2], map[string]string{"f": "1"})
	// A volume whose folder lies inside another's, mounted elsewhere.
	inner := filepath.Join(dirs[0], "in", "vol")
	os.MkdirAll(inner, 0o755)
	spec, _ := ParseVolume(dirs[0] + "::A")
	spec2, _ := ParseVolume(inner + ":other:A")
	st2, err := Open(Config{Volumes: []VolumeSpec{spec, spec2}})
	if err != nil {
		t.Fatal(err)
	}
	defer st2.Close()

	for _, tc := range []struct {
		name string
		st   *Store
		loc  Loc
		who  Actor
		kind Kind
	}{
		{"volume top", st, Loc{top, ""}, admin, KindInvalid},
		{"sub volume top", st, Loc{sub, "/"}, admin, KindInvalid},
		{"state folder", st, Loc{top, ".hist"}, admin, KindForbidden},
		{"inside state folder", st, Loc{top, ".hist/keep"}, admin, KindForbidden},
		{"state folder other case", st, Loc{top, ".HIST/keep"}, admin, KindForbidden},
		{"work file", st, Loc{top, "z.PARTIAL"}, admin, KindNotFound},
		{"missing", st, Loc{top, "nope"}, admin, KindNotFound},
		{"dotdot", st, Loc{top, "m/../f"}, admin, KindInvalid},
		{"no d", st, Loc{ro, "f"}, admin, KindForbidden},
		{"no volume", st, Loc{nil, "x"}, admin, KindForbidden},
		{"folder holding another volume", st2, Loc{st2.Volumes()[1], "in"}, admin, KindConflict},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.loc.Vol == nil && tc.name != "no volume" {
				for _, v := range tc.st.Volumes() {
					if v.VPath == "" {
						tc.loc.Vol = v
					}
				}
			}
			_, err := tc.st.Delete(ctx, tc.who, tc.loc, DeleteOptions{})
			wantKind(t, tc.name, err, tc.kind)
		})
	}
	// Mounted below (by URL): / holds the mount point "sub".
	mkfiles(t, dirs[0], map[string]string{"sub/x": "shadowed"})
	_, err = st.Delete(ctx, admin, Loc{top, "sub"}, DeleteOptions{})
	wantKind(t, "folder with a mount below", err, KindConflict)
	for _, p := range []string{"f", "m/x", "in/y", ".hist/keep", "z.PARTIAL", "sub/x", "in/vol"} {
		if !exists(filepath.Join(dirs[0], p)) {
			t.Errorf("%s was deleted by a refused request", p)
		}
	}
}

func TestMoveSameVolume(t *testing.T) {
	st, dirs := openStore(t, "::A")
	v := st.Volumes()[0]
	ev := watch(st)
	d := dirs[0]
	mkfiles(t, d, map[string]string{"a.txt": "a", "dir/x": "x", "dir/sub/y": "y", "other": "o"})
	mt := time.Date(2020, 1, 2, 3, 4, 5, 6000, time.UTC)
	os.Chtimes(filepath.Join(d, "a.txt"), mt, mt)

	res, err := st.Move(ctx, admin, Loc{v, "a.txt"}, Loc{v, "b.txt"}, DestOptions{})
	if err != nil || res.Rel != "b.txt" || res.Dir || res.Replaced {
		t.Fatalf("rename: %+v %v", res, err)
	}
	if exists(filepath.Join(d, "a.txt")) || readString(t, filepath.Join(d, "b.txt")) != "a" {
		t.Fatal("not renamed")
	}
	if fi, _ := os.Stat(filepath.Join(d, "b.txt")); !fi.ModTime().Equal(mt) {
		t.Fatalf("mtime %v, want %v", fi.ModTime(), mt)
	}
	if got := ev.String(); got != "moved tree=false a.txt->b.txt;" {
		t.Fatalf("events %s", got)
	}
	// A folder, into a folder made on the way.
	res, err = st.Move(ctx, admin, Loc{v, "dir"}, Loc{v, "new/deep/dir2"}, DestOptions{Parents: true})
	if err != nil || !res.Dir {
		t.Fatalf("move folder: %+v %v", res, err)
	}
	if readString(t, filepath.Join(d, "new/deep/dir2/sub/y")) != "y" || exists(filepath.Join(d, "dir")) {
		t.Fatal("folder not moved")
	}
	if got := ev.String(); got != "moved tree=true dir->new/deep/dir2;" {
		t.Fatalf("events %s", got)
	}
	// Without Parents a missing folder is a conflict (WebDAV's 409).
	_, err = st.Move(ctx, admin, Loc{v, "b.txt"}, Loc{v, "nowhere/b.txt"}, DestOptions{})
	wantKind(t, "missing parent", err, KindConflict)
	// Taken destination.
	_, err = st.Move(ctx, admin, Loc{v, "b.txt"}, Loc{v, "other"}, DestOptions{})
	wantKind(t, "taken", err, KindExists)
	if readString(t, filepath.Join(d, "other")) != "o" {
		t.Fatal("destination clobbered")
	}
	// Overwrite replaces a file atomically.
	res, err = st.Move(ctx, admin, Loc{v, "b.txt"}, Loc{v, "other"}, DestOptions{Overwrite: true})
	if err != nil || !res.Replaced || readString(t, filepath.Join(d, "other")) != "a" {
		t.Fatalf("overwrite: %+v %v", res, err)
	}
	if got := ev.String(); got != "removed tree=false ->other;moved tree=false b.txt->other;" {
		t.Fatalf("events %s", got)
	}
	// A file replacing a folder deletes the folder first.
	res, err = st.Move(ctx, admin, Loc{v, "other"}, Loc{v, "new"}, DestOptions{Overwrite: true})
	if err != nil || !res.Replaced || readString(t, filepath.Join(d, "new")) != "a" {
		t.Fatalf("file over folder: %+v %v", res, err)
	}
	if got := ev.String(); got != "removed tree=true ->new;moved tree=false other->new;" {
		t.Fatalf("events %s", got)
	}
}

func TestMoveRefusals(t *testing.T) {
	st, dirs := openStore(t, "::A", ":sub:A", ":ns:A:c,nosub")
	vols := map[string]*Volume{}
	for _, v := range st.Volumes() {
		vols[v.VPath] = v
	}
	top := vols[""]
	d := dirs[0]
	mkfiles(t, d, map[string]string{"f": "1", "g": "2", "dir/x": "3", "dir/in/y": "4", "mnt/z": "5"})
	outside := t.TempDir()
	os.Symlink(outside, filepath.Join(d, "out"))
	os.Symlink(".hist", filepath.Join(d, "histlink"))
	os.Symlink("dir", filepath.Join(d, "dirlink"))
	for _, tc := range []struct {
		name     string
		src, dst Loc
		opt      DestOptions
		kind     Kind
	}{
		{"top folder", Loc{top, ""}, Loc{top, "x"}, DestOptions{}, KindInvalid},
		{"onto the top folder", Loc{top, "f"}, Loc{vols["sub"], ""}, DestOptions{}, KindExists},
		{"replace the top folder", Loc{top, "f"}, Loc{vols["sub"], ""}, DestOptions{Overwrite: true}, KindInvalid},
		{"itself", Loc{top, "f"}, Loc{top, "f"}, DestOptions{Overwrite: true}, KindInvalid},
		{"itself through a link", Loc{top, "dir/x"}, Loc{top, "dirlink/x"}, DestOptions{Overwrite: true}, KindInvalid},
		{"folder into itself", Loc{top, "dir"}, Loc{top, "dir/in/dir"}, DestOptions{}, KindInvalid},
		{"folder into itself through a link", Loc{top, "dir"}, Loc{top, "dirlink/in/q"}, DestOptions{}, KindInvalid},
		{"folder onto its child", Loc{top, "dir"}, Loc{top, "dir/in"}, DestOptions{Overwrite: true}, KindInvalid},
		{"folder onto its parent", Loc{top, "dir/in"}, Loc{top, "dir"}, DestOptions{Overwrite: true}, KindInvalid},
		{"file onto its folder", Loc{top, "dir/x"}, Loc{top, "dir"}, DestOptions{Overwrite: true}, KindInvalid},
		{"taken", Loc{top, "f"}, Loc{top, "g"}, DestOptions{}, KindExists},
		{"into state folder", Loc{top, "f"}, Loc{top, ".hist/f"}, DestOptions{}, KindForbidden},
		{"named state folder", Loc{top, "f"}, Loc{top, ".hist"}, DestOptions{}, KindForbidden},
		{"through a link to the state folder", Loc{top, "f"}, Loc{top, "histlink/f"}, DestOptions{}, KindConflict}, // as a missing folder: no oracle
		{"work-file name", Loc{top, "f"}, Loc{top, "f.PARTIAL"}, DestOptions{}, KindInvalid},
		{"bad name", Loc{top, "f"}, Loc{top, "a\x01b"}, DestOptions{}, KindInvalid},
		{"dotdot", Loc{top, "f"}, Loc{top, "dir/../../f"}, DestOptions{}, KindInvalid},
		{"link out of the volume", Loc{top, "f"}, Loc{top, "out/f"}, DestOptions{}, KindForbidden},
		{"link out, with parents", Loc{top, "f"}, Loc{top, "out/new/f"}, DestOptions{Parents: true}, KindForbidden},
		{"source through link out", Loc{top, "out/secret"}, Loc{top, "stolen"}, DestOptions{}, KindForbidden},
		{"nosub", Loc{top, "f"}, Loc{vols["ns"], "a/f"}, DestOptions{Parents: true}, KindForbidden},
		{"missing source", Loc{top, "nope"}, Loc{top, "x"}, DestOptions{}, KindNotFound},
		{"folder under a mount", Loc{top, "sub"}, Loc{top, "x"}, DestOptions{}, KindNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			os.WriteFile(filepath.Join(outside, "secret"), []byte("s"), 0o644)
			_, err := st.Move(ctx, admin, tc.src, tc.dst, tc.opt)
			wantKind(t, tc.name, err, tc.kind)
			_, err = st.Copy(ctx, admin, tc.src, tc.dst, tc.opt)
			if tc.name != "folder under a mount" {
				wantKind(t, tc.name+" (copy)", err, tc.kind)
			}
		})
	}
	// Nothing moved, nothing written outside.
	for _, p := range []string{"f", "g", "dir/x", "dir/in/y"} {
		if !exists(filepath.Join(d, p)) {
			t.Errorf("%s moved by a refused request", p)
		}
	}
	if des, _ := os.ReadDir(outside); len(des) != 1 {
		t.Errorf("something was written outside the volume: %v", des)
	}
	if exists(filepath.Join(d, ".hist", "f")) {
		t.Error("moved into the state folder")
	}
	// A folder with a volume mounted below it moves nowhere.
	mkfiles(t, d, map[string]string{"sub/x": "1"})
	_, err := st.Move(ctx, admin, Loc{top, "sub"}, Loc{top, "elsewhere"}, DestOptions{})
	wantKind(t, "mounts below", err, KindConflict)
}

// TestPermissionMatrix runs delete, move, copy and mkdir for one user over
// every pair of volumes with different permission sets, and checks each
// outcome on disk against the rules: delete d; move m at the source and w
// at the destination; copy r and w; mkdir w; replacing a destination only
// with overwrite and d there.
func TestPermissionMatrix(t *testing.T) {
	sets := []string{"r", "w", "m", "d", "rw", "mw", "rwm", "wd", "mwd", "rwmd"}
	var cfg Config
	cfg.Accounts = []Account{{"u", "pw"}}
	dirs := map[string]string{}
	for i, p := range sets {
		dir := t.TempDir()
		spec, err := ParseVolume(fmt.Sprintf("%s:v%d:%s,u", dir, i, p))
		if err != nil {
			t.Fatal(err)
		}
		cfg.Volumes = append(cfg.Volumes, spec)
		dirs[spec.VPath] = dir
	}
	st, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	u := Actor{User: "u", IP: "1.2.3.4"}
	n := 0
	for _, sv := range st.Volumes() {
		sp := sv.Perms("u")
		for _, dv := range st.Volumes() {
			dp := dv.Perms("u")
			for _, op := range []string{"move", "copy"} {
				for _, taken := range []bool{false, true} {
					for _, overwrite := range []bool{false, true} {
						n++
						src, dst := fmt.Sprintf("s%d", n), fmt.Sprintf("d%d", n)
						mkfiles(t, dirs[sv.VPath], map[string]string{src: "new"})
						if taken {
							mkfiles(t, dirs[dv.VPath], map[string]string{dst: "old"})
						}
						var err error
						opt := DestOptions{Overwrite: overwrite}
						need := PermMove
						if op == "move" {
							_, err = st.Move(ctx, u, Loc{sv, src}, Loc{dv, dst}, opt)
						} else {
							need = PermRead
							_, err = st.Copy(ctx, u, Loc{sv, src}, Loc{dv, dst}, opt)
						}
						want := Kind(0)
						switch {
						case !sp.Has(need) || !dp.Has(PermWrite):
							want = KindForbidden
						case taken && !overwrite:
							want = KindExists
						case taken && !dp.Has(PermDelete):
							want = KindForbidden
						}
						what := fmt.Sprintf("%s %s(%s) → %s(%s) taken=%v overwrite=%v", op, sv.VPath, sp, dv.VPath, dp, taken, overwrite)
						if want != 0 {
							wantKind(t, what, err, want)
						} else if err != nil {
							t.Fatalf("%s: %v", what, err)
						}
						b, _ := os.ReadFile(filepath.Join(dirs[dv.VPath], dst))
						gotDst := string(b)
						srcLeft := exists(filepath.Join(dirs[sv.VPath], src))
						switch {
						case want != 0 && taken && gotDst != "old":
							t.Fatalf("%s: refused, but the destination holds %q", what, gotDst)
						case want == 0 && gotDst != "new":
							t.Fatalf("%s: destination holds %q", what, gotDst)
						case want != 0 && !srcLeft, want == 0 && op == "copy" && !srcLeft, want == 0 && op == "move" && srcLeft:
							t.Fatalf("%s: source left = %v", what, srcLeft)
						}
					}
				}
			}
		}
		// Delete and mkdir in this volume.
		mkfiles(t, dirs[sv.VPath], map[string]string{"del/x": "x", "f": "f"})
		for _, rel := range []string{"f", "del"} {
			_, err := st.Delete(ctx, u, Loc{sv, rel}, DeleteOptions{})
			if sp.Has(PermDelete) != (err == nil) || exists(filepath.Join(dirs[sv.VPath], rel)) != (err != nil) {
				t.Fatalf("delete %s in %s(%s): %v", rel, sv.VPath, sp, err)
			}
			if err != nil {
				wantKind(t, "delete", err, KindForbidden)
			}
		}
		_, err := st.Mkdir(ctx, u, Loc{sv, "newdir"}, MkdirOptions{})
		if sp.Has(PermWrite) != (err == nil) || exists(filepath.Join(dirs[sv.VPath], "newdir")) != (err == nil) {
			t.Fatalf("mkdir in %s(%s): %v", sv.VPath, sp, err)
		}
	}
}

func TestMkdir(t *testing.T) {
	st, dirs := openStore(t, "::rw", ":ns:rw:c,nosub", ":ro:r")
	vols := map[string]*Volume{}
	for _, v := range st.Volumes() {
		vols[v.VPath] = v
	}
	ev := watch(st)
	rel, err := st.Mkdir(ctx, admin, Loc{vols[""], "a"}, MkdirOptions{})
	if err != nil || rel != "a" {
		t.Fatalf("mkdir: %q %v", rel, err)
	}
	if fi, err := os.Stat(filepath.Join(dirs[0], "a")); err != nil || !fi.IsDir() {
		t.Fatal("no folder")
	}
	if got := ev.String(); got != "mkdir tree=false ->a;" {
		t.Fatalf("events %s", got)
	}
	_, err = st.Mkdir(ctx, admin, Loc{vols[""], "a"}, MkdirOptions{})
	wantKind(t, "exists", err, KindExists)
	_, err = st.Mkdir(ctx, admin, Loc{vols[""], "b/c/d"}, MkdirOptions{})
	wantKind(t, "no parent", err, KindConflict)
	if _, err = st.Mkdir(ctx, admin, Loc{vols[""], "b/c/d"}, MkdirOptions{Parents: true}); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		loc  Loc
		kind Kind
	}{
		"top":         {Loc{vols[""], ""}, KindExists},
		"state":       {Loc{vols[""], ".hist"}, KindForbidden},
		"in state":    {Loc{vols[""], ".hist/x"}, KindForbidden},
		"work name":   {Loc{vols[""], "x.PARTIAL"}, KindInvalid},
		"control":     {Loc{vols[""], "x\ny"}, KindInvalid},
		"backslash":   {Loc{vols[""], `x\y`}, KindInvalid},
		"dotdot":      {Loc{vols[""], "a/../.."}, KindInvalid},
		"nosub":       {Loc{vols["ns"], "x"}, KindForbidden},
		"no w":        {Loc{vols["ro"], "x"}, KindForbidden},
		"file in way": {Loc{vols[""], "a/f/x"}, KindConflict},
	} {
		mkfiles(t, dirs[0], map[string]string{"a/f": "file"})
		_, err := st.Mkdir(ctx, admin, tc.loc, MkdirOptions{Parents: true})
		wantKind(t, name, err, tc.kind)
	}
	if des, _ := os.ReadDir(dirs[0]); len(des) != 3 { // a, b, .hist
		t.Errorf("refused mkdirs left %v", des)
	}
}

func TestCopy(t *testing.T) {
	st, dirs := openStore(t, "::A", ":two:A")
	vols := map[string]*Volume{}
	for _, v := range st.Volumes() {
		vols[v.VPath] = v
	}
	ev := watch(st)
	d := dirs[0]
	mkfiles(t, d, map[string]string{"f": "file", "t/a": "A", "t/s/b": "B", "t/up.PARTIAL": "work", "t/.dot": "dot"})
	os.Symlink("a", filepath.Join(d, "t", "link"))
	mt := time.Date(2021, 5, 6, 7, 8, 9, 123456000, time.UTC)
	os.Chtimes(filepath.Join(d, "t", "s", "b"), mt, mt)

	res, err := st.Copy(ctx, admin, Loc{vols[""], "f"}, Loc{vols[""], "f2"}, DestOptions{})
	if err != nil || res.Files != 1 || res.Bytes != 4 || readString(t, filepath.Join(d, "f2")) != "file" || readString(t, filepath.Join(d, "f")) != "file" {
		t.Fatalf("copy file: %+v %v", res, err)
	}
	if got := ev.String(); got != "copied tree=false f->f2;" {
		t.Fatalf("events %s", got)
	}
	res, err = st.Copy(ctx, admin, Loc{vols[""], "t"}, Loc{vols["two"], "t"}, DestOptions{})
	if err != nil || !res.Dir || res.Files != 4 {
		t.Fatalf("copy tree: %+v %v", res, err)
	}
	d2 := dirs[1]
	if readString(t, filepath.Join(d2, "t/s/b")) != "B" || readString(t, filepath.Join(d2, "t/.dot")) != "dot" {
		t.Fatal("tree not copied")
	}
	if fi, _ := os.Stat(filepath.Join(d2, "t/s/b")); !fi.ModTime().Equal(mt) {
		t.Fatalf("mtime not kept: %v", fi.ModTime())
	}
	if l, err := os.Readlink(filepath.Join(d2, "t/link")); err != nil || l != "a" {
		t.Fatalf("link copied as %q, %v", l, err)
	}
	if exists(filepath.Join(d2, "t/up.PARTIAL")) {
		t.Fatal("an upload's work file was copied")
	}
	if !exists(filepath.Join(d, "t/s/b")) {
		t.Fatal("copy removed the source")
	}
	if got := ev.String(); got != "copied tree=true t->t;" {
		t.Fatalf("events %s", got)
	}
	// Nothing hidden is left behind in the destination.
	if des, _ := os.ReadDir(d2); len(des) != 2 {
		t.Fatalf("destination holds %v", des)
	}
	_, err = st.Copy(ctx, admin, Loc{vols[""], "t"}, Loc{vols["two"], "t"}, DestOptions{})
	wantKind(t, "taken", err, KindExists)
	if _, err = st.Copy(ctx, admin, Loc{vols[""], "f"}, Loc{vols["two"], "t"}, DestOptions{Overwrite: true}); err != nil {
		t.Fatal(err)
	}
	if readString(t, filepath.Join(d2, "t")) != "file" {
		t.Fatal("file did not replace the folder")
	}
	_, err = st.Copy(ctx, admin, Loc{vols[""], "t"}, Loc{vols[""], "t/s/t"}, DestOptions{})
	wantKind(t, "into itself", err, KindInvalid)
}

func TestMoveAcrossVolumes(t *testing.T) {
	for _, copyPath := range []bool{false, true} {
		t.Run(fmt.Sprintf("copy=%v", copyPath), func(t *testing.T) {
			testNoRename = copyPath
			defer func() { testNoRename = false }()
			st, dirs := openStore(t, "::A", ":two:A")
			vols := map[string]*Volume{}
			for _, v := range st.Volumes() {
				vols[v.VPath] = v
			}
			ev := watch(st)
			mkfiles(t, dirs[0], map[string]string{"f": "file", "t/a": "A", "t/s/b": "B", "t/up.PARTIAL": "work"})
			os.Symlink("a", filepath.Join(dirs[0], "t", "link"))
			if _, err := st.Move(ctx, admin, Loc{vols[""], "f"}, Loc{vols["two"], "g"}, DestOptions{}); err != nil {
				t.Fatal(err)
			}
			if exists(filepath.Join(dirs[0], "f")) || readString(t, filepath.Join(dirs[1], "g")) != "file" {
				t.Fatal("file not moved")
			}
			res, err := st.Move(ctx, admin, Loc{vols[""], "t"}, Loc{vols["two"], "x/t"}, DestOptions{Parents: true})
			if err != nil || !res.Dir {
				t.Fatalf("%+v %v", res, err)
			}
			if exists(filepath.Join(dirs[0], "t")) {
				t.Fatal("source folder left")
			}
			if readString(t, filepath.Join(dirs[1], "x/t/s/b")) != "B" {
				t.Fatal("tree not moved")
			}
			if l, _ := os.Readlink(filepath.Join(dirs[1], "x/t/link")); l != "a" {
				t.Fatal("link not moved")
			}
			evs := ev.take()
			if len(evs) != 2 || evs[1].Kind != Moved || !evs[1].Tree || evs[1].FromVol != vols[""] || evs[1].Vol != vols["two"] || evs[1].From != "t" || evs[1].Rel != "x/t" {
				t.Fatalf("events %+v", evs)
			}
			if des, _ := os.ReadDir(filepath.Join(vols["two"].HistPath(), "ops")); len(des) != 0 {
				t.Fatalf("journal left: %v", des)
			}
		})
	}
}

// TestMoveAcrossFileSystems moves between a disk and a tmpfs, where no
// rename can work, when the machine has a tmpfs at /dev/shm.
func TestMoveAcrossFileSystems(t *testing.T) {
	shm, err := os.MkdirTemp("/dev/shm", "hoard-test-")
	if err != nil {
		t.Skip("no /dev/shm:", err)
	}
	defer os.RemoveAll(shm)
	disk := t.TempDir()
	a, _ := ParseVolume(disk + "::A")
	b, _ := ParseVolume(shm + ":shm:A")
	st, err := Open(Config{Volumes: []VolumeSpec{a, b}})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	vols := map[string]*Volume{}
	for _, v := range st.Volumes() {
		vols[v.VPath] = v
	}
	mkfiles(t, disk, map[string]string{"t/a": "A", "t/s/b": strings.Repeat("B", 3<<20)})
	res, err := st.Move(ctx, admin, Loc{vols[""], "t"}, Loc{vols["shm"], "t"}, DestOptions{})
	if err != nil || res.Files != 2 || res.Bytes != 3<<20+1 {
		t.Fatalf("%+v %v", res, err)
	}
	if exists(filepath.Join(disk, "t")) || readString(t, filepath.Join(shm, "t/s/b")) != strings.Repeat("B", 3<<20) {
		t.Fatal("not moved")
	}
	// And back, a single file.
	if _, err := st.Move(ctx, admin, Loc{vols["shm"], "t/a"}, Loc{vols[""], "a"}, DestOptions{}); err != nil {
		t.Fatal(err)
	}
	if readString(t, filepath.Join(disk, "a")) != "A" || exists(filepath.Join(shm, "t/a")) {
		t.Fatal("file not moved back")
	}
}

func TestSymlinksNotFollowed(t *testing.T) {
	st, dirs := openStore(t, "::A")
	v := st.Volumes()[0]
	outside := t.TempDir()
	mkfiles(t, outside, map[string]string{"secret": "s", "sub/x": "x"})
	mkfiles(t, dirs[0], map[string]string{"t/f": "f"})
	os.Symlink(outside, filepath.Join(dirs[0], "t", "out"))
	os.Symlink(filepath.Join(outside, "secret"), filepath.Join(dirs[0], "t", "sec"))
	// Copying keeps the links as links: nothing from outside is read.
	if _, err := st.Copy(ctx, admin, Loc{v, "t"}, Loc{v, "c"}, DestOptions{}); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(filepath.Join(dirs[0], "c", "sec")); err != nil || fi.Mode().IsRegular() {
		t.Fatal("the copy read through a link out of the volume")
	}
	// Deleting removes the links, not what they point at.
	if _, err := st.Delete(ctx, admin, Loc{v, "t"}, DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Delete(ctx, admin, Loc{v, "c"}, DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if readString(t, filepath.Join(outside, "secret")) != "s" || readString(t, filepath.Join(outside, "sub/x")) != "x" {
		t.Fatal("a delete reached outside the volume")
	}
}

func TestDeleteManyStopsAtFirstError(t *testing.T) {
	st, dirs := openStore(t, "::A")
	v := st.Volumes()[0]
	mkfiles(t, dirs[0], map[string]string{"a": "1", "b": "2", "c": "3"})
	r, err := st.DeleteMany(ctx, admin, []Loc{{v, "a"}, {v, "nope"}, {v, "c"}}, DeleteOptions{})
	wantKind(t, "missing", err, KindNotFound)
	if r.Files != 1 || exists(filepath.Join(dirs[0], "a")) || !exists(filepath.Join(dirs[0], "c")) {
		t.Fatalf("%+v", r)
	}
}

func TestUnpost(t *testing.T) {
	now := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	var cfg Config
	dir := t.TempDir()
	spec, _ := ParseVolume(dir + "::w:rwmd,boss")
	cfg.Volumes = []VolumeSpec{spec}
	cfg.Accounts = []Account{{"boss", "pw1"}, {"ann", "pw2"}, {"rita", "pw3"}}
	spec.Perms["ann"] = PermWrite
	spec.Perms["rita"] = PermWrite | PermRead
	cfg.Now = func() time.Time { return now }
	cfg.Unpost = 12 * time.Hour
	st, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	v := st.Volumes()[0]
	ann := Actor{User: "ann", IP: "10.0.0.5"}
	rita := Actor{User: "rita", IP: "10.0.0.7"}
	mkfiles(t, dir, map[string]string{"mine": "m", "old": "o", "theirs": "t", "dir/x": "x", "changed": "c"})
	fi := func(name string) (int64, time.Time) {
		s, _ := os.Stat(filepath.Join(dir, name))
		return s.Size(), s.ModTime()
	}
	lk := lookupMap{}
	for _, n := range []string{"mine", "old", "theirs", "changed"} {
		sz, mt := fi(n)
		lk[n] = UploadInfo{User: "ann", IP: ann.IP, At: now.Add(-time.Hour), Size: sz, Mtime: mt}
	}
	lk["old"] = UploadInfo{User: "ann", IP: ann.IP, At: now.Add(-13 * time.Hour), Size: 1}
	lk["theirs"] = UploadInfo{User: "ann", IP: "10.0.0.6", At: now, Size: 1}
	lk["changed"] = UploadInfo{User: "ann", IP: ann.IP, At: now, Size: 99}

	// Without the lookup nothing can be unposted.
	_, err = st.Delete(ctx, ann, Loc{v, "mine"}, DeleteOptions{Unpost: true})
	wantKind(t, "no lookup", err, KindForbidden)
	st.SetUploadLookup(lk)
	_, err = st.Delete(ctx, ann, Loc{v, "mine"}, DeleteOptions{})
	wantKind(t, "without unpost", err, KindForbidden)
	for name, tc := range map[string]struct {
		who Actor
		rel string
		msg string
	}{
		"too old":    {ann, "old", "too long ago"},
		"other ip":   {ann, "theirs", "not uploaded by (You)"},
		"other user": {Actor{User: "", IP: ann.IP}, "mine", "not uploaded by (You)"},
		"changed":    {ann, "changed", "changed since"},
		// ann may not read: what is not her upload gets one answer,
		// whatever is there (no existence oracle).
		"unknown file":           {ann, "dir/x", "not uploaded by (You)"},
		"folder":                 {ann, "dir", "not uploaded by (You)"},
		"missing":                {ann, "nothere", "not uploaded by (You)"},
		"unknown file to reader": {rita, "dir/x", "file not found"},
		"folder to reader":       {rita, "dir", "cannot unpost folders"},
		"missing to reader":      {rita, "nothere", "not found"},
	} {
		_, err := st.Delete(ctx, tc.who, Loc{v, tc.rel}, DeleteOptions{Unpost: true})
		if err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: %v, want %q", name, err, tc.msg)
		}
	}
	if _, err := st.Delete(ctx, ann, Loc{v, "mine"}, DeleteOptions{Unpost: true}); err != nil {
		t.Fatal(err)
	}
	if exists(filepath.Join(dir, "mine")) {
		t.Fatal("not deleted")
	}
	st.SetUnpost(0)
	lk["old"] = UploadInfo{User: "ann", IP: ann.IP, At: now, Size: 1}
	_, err = st.Delete(ctx, ann, Loc{v, "old"}, DeleteOptions{Unpost: true})
	if err == nil || !strings.Contains(err.Error(), "disabled") {
		t.Fatalf("unpost off: %v", err)
	}
	for _, n := range []string{"old", "theirs", "dir/x", "changed"} {
		if !exists(filepath.Join(dir, n)) {
			t.Errorf("%s deleted by a refused unpost", n)
		}
	}
}

type lookupMap map[string]UploadInfo

func (m lookupMap) UploadOf(v *Volume, rel string) (UploadInfo, bool, error) {
	i, ok := m[rel]
	return i, ok, nil
}

func TestLifetimeFollowsMove(t *testing.T) {
	dirs := []string{t.TempDir(), t.TempDir()}
	a, _ := ParseVolume(dirs[0] + "::A:c,lifetime=3600")
	b, _ := ParseVolume(dirs[1] + ":two:A:c,lifetime=3600")
	st, err := Open(Config{Volumes: []VolumeSpec{a, b}})
	if err != nil {
		t.Fatal(err)
	}
	vols := map[string]*Volume{}
	for _, v := range st.Volumes() {
		vols[v.VPath] = v
	}
	top, two := vols[""], vols["two"]
	for _, n := range []string{"a", "b", "c"} {
		if _, err := top.Ingest(ctx, "d", bytes.NewReader([]byte(n)), IngestOptions{Name: n, Size: 1, Life: time.Hour}); err != nil {
			t.Fatal(err)
		}
	}
	want, ok := top.Expiry("d/a")
	wantB, okB := top.Expiry("d/b")
	if !ok || !okB {
		t.Fatal("no expiry")
	}
	if _, err := st.Move(ctx, admin, Loc{top, "d"}, Loc{top, "e"}, DestOptions{}); err != nil {
		t.Fatal(err)
	}
	if got, ok := top.Expiry("e/a"); !ok || !got.Equal(want) {
		t.Fatalf("after a folder move: %v %v", got, ok)
	}
	if _, ok := top.Expiry("d/a"); ok {
		t.Fatal("old path still expires")
	}
	testNoRename = true
	_, err = st.Move(ctx, admin, Loc{top, "e/b"}, Loc{two, "b"}, DestOptions{})
	testNoRename = false
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := two.Expiry("b"); !ok || !got.Equal(wantB) {
		t.Fatalf("after a move to another volume: %v %v", got, ok)
	}
	if _, err := st.Delete(ctx, admin, Loc{top, "e/c"}, DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, ok := top.Expiry("e/c"); ok {
		t.Fatal("a deleted file still expires")
	}
	// The records on disk followed too: a restart keeps the promises.
	st.Close()
	st2, err := Open(Config{Volumes: []VolumeSpec{a, b}})
	if err != nil {
		t.Fatal(err)
	}
	defer st2.Close()
	got := map[string]bool{}
	for _, v := range st2.Volumes() {
		for _, rel := range []string{"e/a", "b", "e/c", "d/a"} {
			if _, ok := v.Expiry(rel); ok {
				got["/"+v.VPath+":"+rel] = true
			}
		}
	}
	if len(got) != 2 || !got["/:e/a"] || !got["/two:b"] {
		t.Fatalf("expiries after restart: %v", got)
	}
}

func TestSharesFollow(t *testing.T) {
	st, _ := openStore(t, "::A", ":v:A")
	vols := map[string]*Volume{}
	for _, v := range st.Volumes() {
		vols[v.VPath] = v
	}
	sh, err := OpenShares(filepath.Join(t.TempDir(), "shares.json"), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []Share{
		{Key: "folder", VPath: "v/a/b"},
		{Key: "above", VPath: "v/a"},
		{Key: "sibling", VPath: "v/ab"},
		{Key: "files", VPath: "v/c", Files: []string{"x", "y"}},
		{Key: "other", VPath: "a/b"},
	} {
		if err := sh.Add(s); err != nil {
			t.Fatal(err)
		}
	}
	sh.Follow(Event{Kind: Moved, Tree: true, FromVol: vols["v"], From: "a/b", Vol: vols["v"], Rel: "z"})
	sh.Follow(Event{Kind: Removed, Vol: vols["v"], Rel: "c/x"})
	keys := func() []string {
		var out []string
		for _, s := range sh.List() {
			out = append(out, s.Key+":"+strings.Join(s.Files, ","))
		}
		slices.Sort(out)
		return out
	}
	if got := fmt.Sprint(keys()); got != "[above: files:y other: sibling:]" {
		t.Fatalf("after moving v/a/b and deleting v/c/x: %s", got)
	}
	sh.Follow(Event{Kind: Removed, Tree: true, Vol: vols["v"], Rel: "a"})
	sh.Follow(Event{Kind: Moved, FromVol: vols["v"], From: "c/y", Vol: vols[""], Rel: "y"})
	if got := fmt.Sprint(keys()); got != "[other: sibling:]" {
		t.Fatalf("after deleting v/a and moving v/c/y: %s", got)
	}
	// Durable: a reload sees the same.
	sh2, _ := OpenShares(sh.file, nil)
	if n := len(sh2.List()); n != 2 {
		t.Fatalf("reloaded %d shares", n)
	}
}

// crashAt makes the operation stop, as a crash would, the n-th time it
// reaches step.
func crashAt(step string, n int) {
	seen := 0
	testHook = func(s string) error {
		if s == step {
			seen++
			if seen == n {
				return errors.New("crash at " + step)
			}
		}
		return nil
	}
}

// treeFiles is a tree of a few folders and files, one of them large.
func treeFiles() map[string]string {
	files := map[string]string{"big": strings.Repeat("0123456789", 300000)}
	for i := range 12 {
		files[fmt.Sprintf("d%d/s%d/f%d", i%3, i%2, i)] = fmt.Sprintf("file %d", i)
	}
	return files
}

// whole reports whether dir holds exactly files.
func whole(dir string, files map[string]string) bool {
	n := 0
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		b, err := os.ReadFile(p)
		if err != nil || string(b) != files[filepath.ToSlash(rel)] {
			return fmt.Errorf("%s differs", rel)
		}
		n++
		return nil
	})
	return err == nil && n == len(files)
}

// hidden lists what is left in dir that no listing shows (work names).
func hidden(t *testing.T, dir string) []string {
	var out []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && (strings.HasPrefix(d.Name(), tempPrefix) || strings.HasPrefix(d.Name(), stagePrefix)) {
			out = append(out, p)
		}
		return nil
	})
	return out
}

// TestCrossDeviceMoveCrash stops a cross-device move (of a tree and of a
// file) after each of its steps, as a crash would, then opens the store
// again: the source or the destination is whole, never neither, nothing
// half-made is left, and the journal is empty.
func TestCrossDeviceMoveCrash(t *testing.T) {
	steps := []struct {
		step string
		n    int
		// after the restart: where the data is
		srcWhole, dstWhole bool
	}{
		{"journal", 1, true, false},
		{"copy-file", 1, true, false},
		{"copy-file", 7, true, false},
		{"staged", 1, true, false},
		{"published", 1, true, true}, // before the journal says so: both stay
		{"marked", 1, false, true},   // the restart finishes the move
		{"rm-file", 1, false, true},
		{"rm-file", 9, false, true},
		{"source-gone", 1, false, true},
	}
	for _, tree := range []bool{true, false} {
		for _, tc := range steps {
			if !tree && (tc.step == "copy-file" || tc.step == "rm-file" && tc.n > 1) {
				continue
			}
			t.Run(fmt.Sprintf("tree=%v/%s#%d", tree, tc.step, tc.n), func(t *testing.T) {
				testNoRename = true
				defer func() { testNoRename, testHook = false, nil }()
				src, dst := t.TempDir(), t.TempDir()
				a, _ := ParseVolume(src + "::A")
				b, _ := ParseVolume(dst + ":two:A")
				cfg := Config{Volumes: []VolumeSpec{a, b}}
				st, err := Open(cfg)
				if err != nil {
					t.Fatal(err)
				}
				files := treeFiles()
				srcRel, dstRel := "t", "x/t"
				srcPath, dstPath := filepath.Join(src, "t"), filepath.Join(dst, "x", "t")
				check := func(p string) bool { return whole(p, files) }
				if !tree {
					files = map[string]string{"": strings.Repeat("x", 1<<20)}
					srcRel, srcPath = "f", filepath.Join(src, "f")
					os.WriteFile(srcPath, []byte(files[""]), 0o644)
					check = func(p string) bool { b, err := os.ReadFile(p); return err == nil && string(b) == files[""] }
				} else {
					mkfiles(t, srcPath, files)
				}
				vols := map[string]*Volume{}
				for _, v := range st.Volumes() {
					vols[v.VPath] = v
				}
				crashAt(tc.step, tc.n)
				_, err = st.Move(ctx, admin, Loc{vols[""], srcRel}, Loc{vols["two"], dstRel}, DestOptions{Parents: true})
				if !errors.Is(err, errCrash) {
					t.Fatalf("move did not stop at %s: %v", tc.step, err)
				}
				if !check(srcPath) && !check(dstPath) {
					t.Fatal("at the crash neither the source nor the destination is whole")
				}
				st.Close()
				testHook = nil
				st, err = Open(cfg) // the restart
				if err != nil {
					t.Fatal(err)
				}
				defer st.Close()
				s, d := check(srcPath), check(dstPath)
				if s != tc.srcWhole || d != tc.dstWhole {
					t.Fatalf("after the restart: source whole %v, destination whole %v; want %v, %v", s, d, tc.srcWhole, tc.dstWhole)
				}
				if !tc.srcWhole && exists(srcPath) {
					t.Fatal("the source is partly left")
				}
				if !tc.dstWhole && exists(dstPath) {
					t.Fatal("a partial destination is left")
				}
				if h := hidden(t, dst); len(h) > 0 {
					t.Fatalf("work files left: %v", h)
				}
				if des, _ := os.ReadDir(filepath.Join(dst, HistName, "ops")); len(des) > 0 {
					t.Fatalf("journal left: %v", des)
				}
			})
		}
	}
}

// TestCopyCrash stops a tree copy half-way: the next start removes the
// hidden half copy, and the source is untouched.
func TestCopyCrash(t *testing.T) {
	defer func() { testHook = nil }()
	dir := t.TempDir()
	a, _ := ParseVolume(dir + "::A")
	cfg := Config{Volumes: []VolumeSpec{a}}
	st, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	files := treeFiles()
	mkfiles(t, filepath.Join(dir, "t"), files)
	crashAt("copy-file", 5)
	_, err = st.Copy(ctx, admin, Loc{st.Volumes()[0], "t"}, Loc{st.Volumes()[0], "c"}, DestOptions{})
	if !errors.Is(err, errCrash) {
		t.Fatal(err)
	}
	if len(hidden(t, dir)) == 0 {
		t.Fatal("no half copy to clean up: the test tests nothing")
	}
	st.Close()
	testHook = nil
	st, err = Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if h := hidden(t, dir); len(h) > 0 || exists(filepath.Join(dir, "c")) {
		t.Fatalf("left after the restart: %v", h)
	}
	if !whole(filepath.Join(dir, "t"), files) {
		t.Fatal("source damaged")
	}
}

// heapPeak samples the live heap while fn runs and returns the highest
// reading above the one before it. The GC runs often meanwhile (GOGC=10),
// so the heap stays near what is really held.
func heapPeak(t *testing.T, fn func()) (peak, retained uint64) {
	old := debug.SetGCPercent(10)
	defer debug.SetGCPercent(old)
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	var maxSeen uint64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			metrics.Read(sample)
			maxSeen = max(maxSeen, sample[0].Value.Uint64())
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	fn()
	close(stop)
	<-done
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	if maxSeen > before.HeapAlloc {
		peak = maxSeen - before.HeapAlloc
	}
	if after.HeapAlloc > before.HeapAlloc {
		retained = after.HeapAlloc - before.HeapAlloc
	}
	return peak, retained
}

// bigTree makes n files below dir: half in one flat folder, half spread
// over folders of 100, with long names (so that holding every name at once
// would show).
func bigTree(t *testing.T, dir string, n int) {
	t.Helper()
	pad := strings.Repeat("n", 40)
	for i := range n {
		var p string
		if i < n/2 {
			p = filepath.Join(dir, "flat", fmt.Sprintf("%s-%07d", pad, i))
		} else {
			p = filepath.Join(dir, "deep", fmt.Sprintf("g%03d", i/100), fmt.Sprintf("h%d", i%3), fmt.Sprintf("%s-%07d", pad, i))
		}
		if i%100 == 0 || i == n/2 {
			os.MkdirAll(filepath.Dir(p), 0o755)
			for j := range 3 {
				os.MkdirAll(filepath.Join(filepath.Dir(filepath.Dir(p)), fmt.Sprintf("h%d", j)), 0o755)
			}
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// treeMemBound is what a tree operation on 100,000 files may hold on the
// heap at its peak, above what was held before: the walkers keep one
// folder handle and one batch of entries per level, so this does not grow
// with the tree. Holding the 100,000 names alone would take more than
// 6 MiB.
const treeMemBound = 3 << 20

// TestTreeOps100k deletes, moves (across volumes, by copying) and copies a
// tree of 100,000 files, and checks that the memory held stays bounded.
func TestTreeOps100k(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: 100,000 files")
	}
	const n = 100000
	src, dst := t.TempDir(), t.TempDir()
	// On a tmpfs when there is one: the disk's speed is not under test.
	if shm, err := os.MkdirTemp("/dev/shm", "hoard-test-"); err == nil {
		defer os.RemoveAll(shm)
		src, dst = filepath.Join(shm, "a"), filepath.Join(shm, "b")
		os.Mkdir(src, 0o755)
		os.Mkdir(dst, 0o755)
	}
	a, _ := ParseVolume(src + "::A")
	b, _ := ParseVolume(dst + ":two:A")
	st, err := Open(Config{Volumes: []VolumeSpec{a, b}})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	vols := map[string]*Volume{}
	for _, v := range st.Volumes() {
		vols[v.VPath] = v
	}
	var events int
	st.Subscribe(func(Event) { events++ })
	bigTree(t, filepath.Join(src, "t"), n)

	var res DestResult
	testNoRename = true
	peak, kept := heapPeak(t, func() {
		res, err = st.Move(ctx, admin, Loc{vols[""], "t"}, Loc{vols["two"], "t"}, DestOptions{})
	})
	testNoRename = false
	if err != nil || res.Files != n {
		t.Fatalf("move: %+v %v", res, err)
	}
	t.Logf("cross-device move of %d files: heap peak +%d KiB, retained +%d KiB", n, peak>>10, kept>>10)
	if peak > treeMemBound {
		t.Errorf("moving %d files held %d KiB at the peak; bound %d KiB", n, peak>>10, treeMemBound>>10)
	}
	if exists(filepath.Join(src, "t")) {
		t.Fatal("source left")
	}

	var cres DestResult
	peak, kept = heapPeak(t, func() {
		cres, err = st.Copy(ctx, admin, Loc{vols["two"], "t"}, Loc{vols[""], "c"}, DestOptions{})
	})
	if err != nil || cres.Files != n {
		t.Fatalf("copy: %+v %v", cres, err)
	}
	t.Logf("copy of %d files: heap peak +%d KiB, retained +%d KiB", n, peak>>10, kept>>10)
	if peak > treeMemBound {
		t.Errorf("copying %d files held %d KiB at the peak; bound %d KiB", n, peak>>10, treeMemBound>>10)
	}

	var dres DeleteResult
	peak, kept = heapPeak(t, func() {
		dres, err = st.Delete(ctx, admin, Loc{vols["two"], "t"}, DeleteOptions{})
	})
	if err != nil || dres.Files != n {
		t.Fatalf("delete: %+v %v", dres, err)
	}
	t.Logf("delete of %d files: heap peak +%d KiB, retained +%d KiB", n, peak>>10, kept>>10)
	if peak > treeMemBound {
		t.Errorf("deleting %d files held %d KiB at the peak; bound %d KiB", n, peak>>10, treeMemBound>>10)
	}
	if exists(filepath.Join(dst, "t")) {
		t.Fatal("not deleted")
	}
	if events != 3 {
		t.Errorf("%d events for three tree operations; want one each", events)
	}
}

// FuzzSplitDest checks the destination path parsing of Move, Copy and
// Mkdir: what it accepts is a folder os.Root takes and a single name that
// may be created (no .hist anywhere, no work-file name, nothing that walks
// up), and the two joined give back the path.
func FuzzSplitDest(f *testing.F) {
	for _, s := range []string{"a", "a/b", "/a/b/", "", ".", "..", "a/../b", ".hist", "a/.HIST/b", "x.PARTIAL", "a\\b", "a//b", "a/\x00", "é/ü", strings.Repeat("n", 256)} {
		f.Add(s)
	}
	v := &Volume{}
	f.Fuzz(func(t *testing.T, rel string) {
		dir, name, top, err := v.splitDest(rel)
		if err != nil {
			if KindOf(opErr("t", err)) == 0 {
				t.Fatalf("%q: error %v has no kind", rel, err)
			}
			return
		}
		if top {
			if strings.Trim(rel, "/") != "" && strings.Trim(rel, "/") != "." {
				t.Fatalf("%q taken for the volume's top", rel)
			}
			return
		}
		if CheckName(name) != nil || strings.HasSuffix(name, PartialSuffix) || strings.EqualFold(name, HistName) {
			t.Fatalf("%q: name %q accepted", rel, name)
		}
		if _, err := cleanRel(dir); err != nil {
			t.Fatalf("%q: folder %q accepted", rel, dir)
		}
		for c := range strings.SplitSeq(dir, "/") {
			if c == ".." || (c == "." && dir != ".") || strings.EqualFold(c, HistName) {
				t.Fatalf("%q: folder %q accepted", rel, dir)
			}
		}
		if joinRel(dir, name) != strings.Trim(rel, "/") {
			t.Fatalf("%q split into %q + %q", rel, dir, name)
		}
	})
}

// FuzzOpRecord feeds the start-up recovery's record parser: a record it
// accepts never names anything but a hidden work name to remove and a
// clean path to finish deleting, however damaged the file.
func FuzzOpRecord(f *testing.F) {
	f.Add([]byte(`{"op":"move","src_vol":"/a","src":"t","dst_vol":"/b","dst_dir":"x","stage":".hoardop-AAAAAAAAAAAA.PARTIAL","name":"t","tree":true,"phase":"published"}`))
	f.Add([]byte(`{"op":"copy","stage":".hoardop-x.PARTIAL","name":"n","phase":"staging"}`))
	f.Add([]byte(`{"op":"move","src":"..","stage":".hoardop-x.PARTIAL","name":"n","phase":"published"}`))
	f.Add([]byte(`{"op":"copy","stage":"../etc","name":"n","phase":"staging"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var r opRecord
		if json.Unmarshal(b, &r) != nil || !r.valid() {
			return
		}
		if !strings.HasPrefix(r.Stage, stagePrefix) || !strings.HasSuffix(r.Stage, PartialSuffix) || strings.ContainsAny(r.Stage, "/\\\x00") {
			t.Fatalf("stage %q accepted", r.Stage)
		}
		if CheckName(r.Name) != nil || strings.EqualFold(r.Name, HistName) {
			t.Fatalf("name %q accepted", r.Name)
		}
		for _, p := range []string{r.DstDir, r.Src} {
			if p == "" && r.Phase == phaseStaging {
				continue
			}
			for c := range strings.SplitSeq(p, "/") {
				if c == ".." || c == "." && p != "." && p != "" || strings.EqualFold(c, HistName) {
					t.Fatalf("path %q accepted", p)
				}
			}
		}
		if r.Phase == phasePublished && (r.Src == "" || r.Src == "." || r.Op != "move") {
			t.Fatalf("published record %+v accepted", r)
		}
	})
}

// TestEventPaths is a property test of the tree event path helpers.
func TestEventPaths(t *testing.T) {
	for _, tc := range []struct {
		rel, base string
		tree, in  bool
	}{
		{"a", "a", false, true}, {"a/b", "a", false, false}, {"a/b", "a", true, true},
		{"ab", "a", true, false}, {"a", "a/b", true, false}, {"x", "", true, true}, {"", "", false, true},
	} {
		if got := underRel(tc.rel, tc.base, tc.tree); got != tc.in {
			t.Errorf("underRel(%q, %q, %v) = %v", tc.rel, tc.base, tc.tree, got)
		}
	}
	for _, tc := range []struct{ from, to, rel, want string }{
		{"a", "b", "a", "b"}, {"a", "b/c", "a/x/y", "b/c/x/y"}, {"", "z", "x", "z/x"}, {"a/b", "", "a/b/c", "c"},
	} {
		e := Event{From: tc.from, Rel: tc.to, Tree: true}
		if got := e.Rebase(tc.rel); got != tc.want {
			t.Errorf("Rebase(%q) from %q to %q = %q, want %q", tc.rel, tc.from, tc.to, got, tc.want)
		}
		if !e.FromUnder(tc.rel) || !e.Under(e.Rebase(tc.rel)) {
			t.Errorf("%q: not under", tc.rel)
		}
	}
}

// TestCrossDeviceMoveRaces: a move across file systems whose source is
// renamed while it is copied keeps both copies and says so; one whose
// source loses files while it is copied publishes nothing.
func TestCrossDeviceMoveRaces(t *testing.T) {
	testNoRename = true
	defer func() { testNoRename, testHook = false, nil }()
	st, dirs := openStore(t, "::A", ":two:A")
	vols := map[string]*Volume{}
	for _, v := range st.Volumes() {
		vols[v.VPath] = v
	}
	files := treeFiles()
	mkfiles(t, filepath.Join(dirs[0], "t"), files)
	testHook = func(step string) error {
		if step == "published" {
			os.Rename(filepath.Join(dirs[0], "t"), filepath.Join(dirs[0], "t2"))
		}
		return nil
	}
	_, err := st.Move(ctx, admin, Loc{vols[""], "t"}, Loc{vols["two"], "t"}, DestOptions{})
	wantKind(t, "source renamed meanwhile", err, KindConflict)
	if !whole(filepath.Join(dirs[0], "t2"), files) || !whole(filepath.Join(dirs[1], "t"), files) {
		t.Fatal("a copy is not whole")
	}
	// Files vanish from the source while it is copied.
	testHook = func(step string) error {
		if step == "copy-file" {
			filepath.WalkDir(filepath.Join(dirs[0], "t2"), func(p string, d os.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					os.Remove(p)
				}
				return nil
			})
		}
		return nil
	}
	_, err = st.Move(ctx, admin, Loc{vols[""], "t2"}, Loc{vols["two"], "u"}, DestOptions{})
	wantKind(t, "source files vanished", err, KindConflict)
	if exists(filepath.Join(dirs[1], "u")) || len(hidden(t, dirs[1])) > 0 {
		t.Fatal("half a tree was published or left behind")
	}
	if des, _ := os.ReadDir(filepath.Join(dirs[1], HistName, "ops")); len(des) > 0 {
		t.Fatalf("journal left: %v", des)
	}
}

// TestTopLevelLinks: a link as the source or the destination of an
// operation is acted on as the link; what it points at is never touched.
func TestTopLevelLinks(t *testing.T) {
	st, dirs := openStore(t, "::A")
	v := st.Volumes()[0]
	d := dirs[0]
	outside := t.TempDir()
	mkfiles(t, outside, map[string]string{"secret": "s", "victim": "v"})
	mkfiles(t, d, map[string]string{"f": "new"})
	os.Symlink(filepath.Join(outside, "secret"), filepath.Join(d, "lnk"))
	os.Symlink(filepath.Join(outside, "victim"), filepath.Join(d, "dst"))
	// Copying the link copies the link, not what it points at.
	if _, err := st.Copy(ctx, admin, Loc{v, "lnk"}, Loc{v, "lnk2"}, DestOptions{}); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(filepath.Join(d, "lnk2")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("copied a link as %v, %v", fi, err)
	}
	// Replacing a link that leads out replaces the link.
	if _, err := st.Move(ctx, admin, Loc{v, "f"}, Loc{v, "dst"}, DestOptions{Overwrite: true}); err != nil {
		t.Fatal(err)
	}
	if readString(t, filepath.Join(outside, "victim")) != "v" || readString(t, filepath.Join(d, "dst")) != "new" {
		t.Fatal("the move wrote through a link")
	}
	// Deleting and moving the link act on the link.
	if _, err := st.Move(ctx, admin, Loc{v, "lnk"}, Loc{v, "moved"}, DestOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Delete(ctx, admin, Loc{v, "moved"}, DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if readString(t, filepath.Join(outside, "secret")) != "s" {
		t.Fatal("the target of a link was touched")
	}
}

// TestCopyKeepsDiskReserve: a copy is refused like an upload when it would
// eat into the volume's df= reserve.
func TestCopyKeepsDiskReserve(t *testing.T) {
	st, dirs := openStore(t, "::A:c,df=100000000")
	v := st.Volumes()[0]
	mkfiles(t, dirs[0], map[string]string{"f": "x"})
	_, err := st.Copy(ctx, admin, Loc{v, "f"}, Loc{v, "g"}, DestOptions{})
	var df *DiskFullError
	var nr *NoRoomError
	if !errors.As(err, &df) && !errors.As(err, &nr) {
		t.Fatalf("copy past the reserve: %v", err)
	}
	if exists(filepath.Join(dirs[0], "g")) || len(hidden(t, dirs[0])) > 0 {
		t.Fatal("something was left")
	}
}

// TestStagedCopySurvivesListing: a listing of the destination folder while
// a copy is staged there (with its source's old mtime) does not take the
// staged copy for an orphaned work file.
func TestStagedCopySurvivesListing(t *testing.T) {
	defer func() { testHook = nil }()
	dir := t.TempDir()
	spec, _ := ParseVolume(dir + "::A")
	st, err := Open(Config{Volumes: []VolumeSpec{spec}, Now: func() time.Time { return time.Now().Add(3 * time.Hour) }})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	v := st.Volumes()[0]
	mkfiles(t, dir, map[string]string{"f": "data"})
	old := time.Now().Add(-48 * time.Hour)
	os.Chtimes(filepath.Join(dir, "f"), old, old)
	testHook = func(step string) error {
		if step == "staged" {
			if _, err := v.List(ctx, "", ListOptions{Dots: true}); err != nil {
				t.Error(err)
			}
		}
		return nil
	}
	if _, err := st.Copy(ctx, admin, Loc{v, "f"}, Loc{v, "g"}, DestOptions{}); err != nil {
		t.Fatalf("copy with a listing in between: %v", err)
	}
	if readString(t, filepath.Join(dir, "g")) != "data" {
		t.Fatal("copy lost")
	}
}

// TestFailedReplaceKeepsDestination: a copy (or a move across file
// systems) that fails before it is published leaves the destination it
// was to replace as it was, and its source too.
func TestFailedReplaceKeepsDestination(t *testing.T) {
	defer func() { testHook, testNoRename = nil, false }()
	for _, op := range []string{"copy", "move"} {
		st, dirs := openStore(t, "::A", ":two:A")
		vols := map[string]*Volume{}
		for _, v := range st.Volumes() {
			vols[v.VPath] = v
		}
		files := treeFiles()
		mkfiles(t, filepath.Join(dirs[0], "t"), files)
		mkfiles(t, dirs[1], map[string]string{"t/old": "keep me"})
		c, cancel := context.WithCancel(ctx)
		testHook = func(step string) error {
			if step == "copy-file" {
				cancel()
			}
			return nil
		}
		testNoRename = true
		var err error
		if op == "copy" {
			_, err = st.Copy(c, admin, Loc{vols[""], "t"}, Loc{vols["two"], "t"}, DestOptions{Overwrite: true})
		} else {
			_, err = st.Move(c, admin, Loc{vols[""], "t"}, Loc{vols["two"], "t"}, DestOptions{Overwrite: true})
		}
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("%s: %v", op, err)
		}
		if readString(t, filepath.Join(dirs[1], "t/old")) != "keep me" || !whole(filepath.Join(dirs[0], "t"), files) {
			t.Fatalf("%s: a failed replace lost data", op)
		}
		if h := hidden(t, dirs[1]); len(h) > 0 {
			t.Fatalf("%s: left %v", op, h)
		}
	}
}

// TestAbsoluteLinksInside: a folder reached through an absolute link that
// leads back into the volume works as everywhere else, and events name the
// real path.
func TestAbsoluteLinksInside(t *testing.T) {
	st, dirs := openStore(t, "::A")
	v := st.Volumes()[0]
	ev := watch(st)
	mkfiles(t, dirs[0], map[string]string{"real/f": "f", "real/g": "g"})
	os.Symlink(filepath.Join(dirs[0], "real"), filepath.Join(dirs[0], "abs"))
	if _, err := st.Move(ctx, admin, Loc{v, "abs/f"}, Loc{v, "abs/sub/f2"}, DestOptions{Parents: true}); err != nil {
		t.Fatal(err)
	}
	if readString(t, filepath.Join(dirs[0], "real/sub/f2")) != "f" {
		t.Fatal("not moved")
	}
	if _, err := st.Delete(ctx, admin, Loc{v, "abs/g"}, DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := ev.String(); got != "moved tree=false real/f->real/sub/f2;removed tree=false ->real/g;" {
		t.Fatalf("events %s", got)
	}
}

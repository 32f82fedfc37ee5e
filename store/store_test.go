package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestParseVolume(t *testing.T) {
	for _, tc := range []struct {
		in      string
		vpath   string
		perms   map[string]Perm
		errPart string // substring the error must name; "" = ok
	}{
		{in: ".::rw", vpath: "", perms: map[string]Perm{"*": PermRead | PermWrite}},
		{in: "/srv/m:music/a:r:rwd,ed,al", vpath: "music/a", perms: map[string]Perm{"*": PermRead, "ed": PermRead | PermWrite | PermDelete, "al": PermRead | PermWrite | PermDelete}},
		{in: "/x:/up/:w:c,nodupe,lifetime=60", vpath: "up", perms: map[string]Perm{"*": PermWrite}},
		{in: "/x::A", perms: map[string]Perm{"*": PermAll}},
		{in: "/x::G", perms: map[string]Perm{"*": PermGet | PermUpGet}},
		{in: "/x", errPart: "two colons"},
		{in: "/x:y", errPart: "two colons"},
		{in: "/x::rwz", errPart: `'z'`},
		{in: "/x::r,bad user", errPart: `"bad user"`},
		{in: "/x::r:c,bogus", errPart: "bogus"},
		{in: "/x::r:c,lifetime=abc", errPart: "lifetime=abc"},
		{in: "/x::r:c,sz=5k", errPart: "sz=5k"},
		{in: "/x:a/../b:r", errPart: "a/../b"},
		{in: ":a:r", errPart: "SRC"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			v, err := ParseVolume(tc.in)
			if tc.errPart != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errPart) {
					t.Fatalf("ParseVolume(%q) error = %v, want one naming %q", tc.in, err, tc.errPart)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseVolume(%q) = %v", tc.in, err)
			}
			if v.VPath != tc.vpath || fmt.Sprint(v.Perms) != fmt.Sprint(tc.perms) {
				t.Fatalf("ParseVolume(%q) = %q %v, want %q %v", tc.in, v.VPath, v.Perms, tc.vpath, tc.perms)
			}
		})
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"512": 512, "4k": 4096, "1.5m": 3 << 19, "2g": 2 << 30, "100b": 100, "1KiB": 1024, "3T": 3 << 40} {
		if got, err := ParseSize(in, 1); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	if got, _ := ParseSize("2", 1<<30); got != 2<<30 {
		t.Errorf("ParseSize(2, GiB) = %d", got)
	}
	for _, in := range []string{"", "x", "-1", "1q", "1e30"} {
		if _, err := ParseSize(in, 1); err == nil {
			t.Errorf("ParseSize(%q) accepted", in)
		}
	}
}

func openStore(t *testing.T, specs ...string) (*Store, []string) {
	t.Helper()
	var cfg Config
	var dirs []string
	for _, s := range specs {
		dir := t.TempDir()
		v, err := ParseVolume(dir + s)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Volumes = append(cfg.Volumes, v)
		dirs = append(dirs, dir)
	}
	st, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st, dirs
}

func TestResolveNested(t *testing.T) {
	st, _ := openStore(t, "::r", ":music:r", ":music/live:r")
	for _, tc := range []struct {
		path, vol, rel string
	}{
		{"", "", ""}, {"a/b", "", "a/b"}, {"music", "music", ""}, {"music/x.mp3", "music", "x.mp3"},
		{"music/live/y", "music/live", "y"}, {"musicbox", "", "musicbox"},
	} {
		var parts []string
		if tc.path != "" {
			parts = strings.Split(tc.path, "/")
		}
		v, rel := st.Resolve(parts)
		if v == nil || v.VPath != tc.vol || rel != tc.rel {
			t.Errorf("Resolve(%q) = %v %q, want /%s %q", tc.path, v, rel, tc.vol, tc.rel)
		}
	}
	if m := st.MountsBelow(nil); len(m) != 1 || m["music"] == nil {
		t.Errorf("MountsBelow(/) = %v, want music", m)
	}
}

func TestIngestConcurrentNoClobber(t *testing.T) {
	st, dirs := openStore(t, "::rw")
	v := st.Volumes()[0]
	const n = 16
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := v.Ingest(context.Background(), "d", strings.NewReader(fmt.Sprint("body ", i)), IngestOptions{Name: "same.txt", Size: -1, ClientIP: "10.0.0.1"})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	ents, _ := os.ReadDir(filepath.Join(dirs[0], "d"))
	seen := map[string]bool{}
	re := regexp.MustCompile(`^same\.txt(-\d+\.\d{6}-[A-Za-z0-9_-]{8}\.txt)?$`)
	for _, e := range ents {
		if !re.MatchString(e.Name()) {
			t.Errorf("unexpected file %q", e.Name())
		}
		b, _ := os.ReadFile(filepath.Join(dirs[0], "d", e.Name()))
		seen[string(b)] = true
	}
	if len(ents) != n || len(seen) != n {
		t.Fatalf("%d files with %d distinct bodies, want %d: an upload was lost or clobbered", len(ents), len(seen), n)
	}
}

// shortReader yields some bytes, then fails like a dropped connection.
type shortReader struct{ n int }

func (r *shortReader) Read(p []byte) (int, error) {
	if r.n <= 0 {
		return 0, io.ErrUnexpectedEOF
	}
	k := min(len(p), r.n)
	r.n -= k
	return k, nil
}

func TestIngestShortBodyLeavesNothing(t *testing.T) {
	st, dirs := openStore(t, "::rwd")
	v := st.Volumes()[0]
	_, err := v.Ingest(context.Background(), "", &shortReader{n: 1000}, IngestOptions{Name: "x.bin", Size: 5000})
	if !errors.Is(err, ErrShortBody) {
		t.Fatalf("err = %v, want ErrShortBody", err)
	}
	ents, _ := os.ReadDir(dirs[0])
	for _, e := range ents {
		if e.Name() != HistName {
			t.Errorf("left behind: %s", e.Name())
		}
	}
	// An append that fails is cut back to the old content.
	os.WriteFile(filepath.Join(dirs[0], "log.txt"), []byte("old\n"), 0o644)
	_, err = v.Ingest(context.Background(), "", &shortReader{n: 700 << 10}, IngestOptions{Name: "log.txt", Size: 1 << 20, Append: true})
	if !errors.Is(err, ErrShortBody) {
		t.Fatalf("append err = %v, want ErrShortBody", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dirs[0], "log.txt")); string(b) != "old\n" {
		t.Fatalf("after a failed append the file has %d bytes, want the old 4", len(b))
	}
}

func TestCollisionName(t *testing.T) {
	st, _ := openStore(t, "::rw")
	v := st.Volumes()[0]
	st.now = func() time.Time { return time.Unix(1729612345, 678901000) }
	for name, want := range map[string]string{
		"a.txt":       `^a\.txt-1729612345\.678901-[\w-]{8}\.txt$`,
		"x.tar.gz":    `^x\.tar\.gz-1729612345\.678901-[\w-]{8}\.gz$`,
		"README":      `^README-1729612345\.678901-[\w-]{8}\.README$`,
		"Makefile":    `^Makefile-1729612345\.678901-[\w-]{8}$`,
		"photo.jpeg2": `^photo\.jpeg2-1729612345\.678901-[\w-]{8}\.jpeg2$`,
	} {
		if got := v.collisionName(name, "1.2.3.4", 0); !regexp.MustCompile(want).MatchString(got) {
			t.Errorf("collisionName(%q) = %q, want %s", name, got, want)
		}
	}
	if v.clientTag("1.2.3.4") == v.clientTag("1.2.3.5") {
		t.Error("different addresses got the same tag")
	}
}

func TestRootConfinesSymlinks(t *testing.T) {
	st, dirs := openStore(t, "::A")
	v := st.Volumes()[0]
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "secret"), []byte("no"), 0o644)
	os.Symlink(outside, filepath.Join(dirs[0], "out"))
	os.Symlink(filepath.Join(outside, "secret"), filepath.Join(dirs[0], "s"))
	for _, rel := range []string{"out/secret", "s"} {
		if f, _, err := v.Open(rel); err == nil {
			f.Close()
			t.Errorf("Open(%q) reached a file outside the volume", rel)
		}
	}
	if _, err := v.Ingest(context.Background(), "out", strings.NewReader("x"), IngestOptions{Name: "new", Size: -1}); err == nil {
		t.Error("Ingest through a symlink wrote outside the volume")
	}
	if _, err := os.Stat(filepath.Join(outside, "new")); err == nil {
		t.Error("file created outside the volume")
	}
	ents, err := v.List(context.Background(), "", ListOptions{Dots: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.Name == "out" || e.Name == "s" || e.Name == HistName {
			t.Errorf("List shows %q", e.Name)
		}
	}
}

func TestLifetimeExpires(t *testing.T) {
	st, dirs := openStore(t, "::rwd:c,lifetime=3600")
	v := st.Volumes()[0]
	var removed sync.WaitGroup
	removed.Add(1)
	st.Subscribe(func(e Event) {
		if e.Kind == Removed && e.Rel == "tmp.txt" {
			removed.Done()
		}
	})
	if _, err := v.Ingest(context.Background(), "", bytes.NewReader([]byte("bye")), IngestOptions{Name: "tmp.txt", Size: 3, Life: 200 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	removed.Wait()
	if _, err := os.Stat(filepath.Join(dirs[0], "tmp.txt")); !os.IsNotExist(err) {
		t.Fatalf("file still there after its life: %v", err)
	}
	if _, err := v.Ingest(context.Background(), "", bytes.NewReader(nil), IngestOptions{Name: "x", Size: 0, Life: time.Second}); err != nil {
		t.Fatal(err)
	}
	st2, _ := openStore(t, "::rw")
	if _, err := st2.Volumes()[0].Ingest(context.Background(), "", bytes.NewReader(nil), IngestOptions{Name: "x", Size: 0, Life: time.Second}); !errors.Is(err, ErrNoLifetime) {
		t.Fatalf("life without a volume lifetime: err = %v, want ErrNoLifetime", err)
	}
}

func FuzzParseVolume(f *testing.F) {
	for _, s := range []string{".::rw", "/a:b/c:r:rw,ed:c,fk=8,lifetime=5", "x::A:c,sz=1k-2m", "::", "a:b:c:d:e", "/x::r,*,a,b:c,e2dsa,nodupe"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseVolume(s)
		if err != nil {
			return
		}
		if strings.HasPrefix(v.VPath, "/") || strings.HasSuffix(v.VPath, "/") || strings.Contains("/"+v.VPath+"/", "/../") {
			t.Fatalf("ParseVolume(%q) gave VPath %q", s, v.VPath)
		}
		if v.Flags.SzMax < v.Flags.SzMin || v.Flags.Lifetime < 0 || v.Flags.FK < 0 {
			t.Fatalf("ParseVolume(%q) gave flags %+v", s, v.Flags)
		}
	})
}

func TestHistInsideVolumeRefused(t *testing.T) {
	dir := t.TempDir()
	v, _ := ParseVolume(dir + "::r")
	if _, err := Open(Config{Volumes: []VolumeSpec{v}, Hist: filepath.Join(dir, "state")}); err == nil || !strings.Contains(err.Error(), "would be served") {
		t.Fatalf("Open with --hist inside the volume: err = %v, want a refusal", err)
	}
	st, err := Open(Config{Volumes: []VolumeSpec{v}, Hist: filepath.Join(dir, "x", HistName)})
	if err != nil {
		t.Fatalf("Open with --hist in a .hist folder inside the volume: %v", err)
	}
	st.Close()
}

// TestHistSharedByTwoFoldersRefused: one state folder holds one folder's
// index, keyed by paths inside that folder. Two volumes of different
// folders given one state folder (hist=) would mix their records: a
// search of the public one named the private one's files. Refused, at
// start and at a reload; two volumes of one folder share it as before.
func TestHistSharedByTwoFoldersRefused(t *testing.T) {
	pub, priv, state := t.TempDir(), t.TempDir(), t.TempDir()
	refused := func(what string, specs ...string) {
		t.Helper()
		var cfg Config
		for _, sp := range specs {
			v, err := ParseVolume(sp)
			if err != nil {
				t.Fatal(err)
			}
			cfg.Volumes = append(cfg.Volumes, v)
		}
		st, err := Open(cfg)
		if err == nil {
			st.Close()
		}
		if err == nil || !strings.Contains(err.Error(), "share the state folder") {
			t.Errorf("%s: err = %v, want a refusal", what, err)
		}
	}
	refused("two folders given one hist=", pub+":pub:r:c,hist="+state, priv+":priv:r:c,hist="+state)
	refused("hist= in another volume's own state folder", pub+":pub:r:c,hist="+filepath.Join(priv, HistName), priv+":priv:r")
	// One folder mounted twice shares its state folder.
	a, _ := ParseVolume(pub + ":pub:r:c,hist=" + state)
	c, _ := ParseVolume(pub + ":again:r:c,hist=" + state)
	st, err := Open(Config{Volumes: []VolumeSpec{a, c}})
	if err != nil {
		t.Fatalf("Open with one folder mounted twice on one state folder: %v", err)
	}
	defer st.Close()
	d, _ := ParseVolume(pub + ":twice:r")
	if st2, err := Open(Config{Volumes: []VolumeSpec{d, c}}); err != nil {
		t.Errorf("one folder mounted twice, default state folders: %v", err)
	} else {
		st2.Close()
	}
	// A reload that would add a second folder to it is refused.
	b, _ := ParseVolume(priv + ":priv:r:c,hist=" + state)
	if _, err := st.PrepareReload(Config{Volumes: []VolumeSpec{a, c, b}}); err == nil || !strings.Contains(err.Error(), "share the state folder") {
		t.Errorf("a reload adding another folder to the state folder: err = %v, want a refusal", err)
	}
}

func TestListSweepsOrphanWorkFiles(t *testing.T) {
	st, dirs := openStore(t, "::rw")
	v := st.Volumes()[0]
	old := time.Now().Add(-2 * time.Hour)
	// Only hoard's own work file names are swept (.hoard-<12 base64>.PARTIAL).
	for _, n := range []string{".hoard-old012345678.PARTIAL", ".hoard-new012345678.PARTIAL", "movie.mkv.PARTIAL", ".hoard-mine.PARTIAL"} {
		p := filepath.Join(dirs[0], n)
		os.WriteFile(p, []byte("x"), 0o644)
		if n != ".hoard-new012345678.PARTIAL" {
			os.Chtimes(p, old, old)
		}
	}
	if _, err := v.List(context.Background(), "", ListOptions{Dots: true}); err != nil {
		t.Fatal(err)
	}
	for n, want := range map[string]bool{".hoard-old012345678.PARTIAL": false, ".hoard-new012345678.PARTIAL": true, "movie.mkv.PARTIAL": true, ".hoard-mine.PARTIAL": true} {
		if _, err := os.Stat(filepath.Join(dirs[0], n)); (err == nil) != want {
			t.Errorf("%s exists = %v, want %v", n, err == nil, want)
		}
	}
}

package store

import (
	"context"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestResolveLinks: resolve's answer for links written every way, as a
// table.
func TestResolveLinks(t *testing.T) {
	st, dirs := openStore(t, "::A")
	v := st.Volumes()[0]
	vol, outside := dirs[0], t.TempDir()
	for _, p := range []string{"a/b.mp3", "d/e.txt"} {
		os.MkdirAll(filepath.Dir(filepath.Join(vol, p)), 0o755)
		os.WriteFile(filepath.Join(vol, p), []byte(p), 0o644)
	}
	links := map[string]string{
		"fav":     filepath.Join(vol, "a/b.mp3"),
		"favdir":  filepath.Join(vol, "d"),
		"slashes": vol + "//a/./b.mp3",
		"root":    vol,
		"rootsl":  vol + "/",
		"dotdot":  filepath.Join(vol, "a") + "/../d/e.txt",
		"chain":   filepath.Join(vol, "favdir") + "/e.txt",
		"rel":     "favdir/../a/b.mp3",
		"out":     filepath.Join(outside, "x"),
		"climb":   vol + "/../" + filepath.Base(outside),
		"relup":   "../x",
		"hist":    filepath.Join(vol, HistName),
		"prefix":  vol + "x/a", // a sibling whose name starts like the volume's
		"loop":    filepath.Join(vol, "loop"),
		"d/inner": "../fav",
	}
	for l, target := range links {
		if err := os.Symlink(target, filepath.Join(vol, l)); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct{ in, want string }{
		{"fav", "a/b.mp3"}, {"favdir", "d"}, {"favdir/e.txt", "d/e.txt"}, {"favdir/new/deeper", "d/new/deeper"},
		{"slashes", "a/b.mp3"}, {"root", "."}, {"root/fav", "a/b.mp3"}, {"rootsl/d", "d"}, {"dotdot", "d/e.txt"},
		{"chain", "d/e.txt"}, {"rel", "a/b.mp3"}, {"d/inner", "a/b.mp3"}, {"favdir/inner", "a/b.mp3"},
		{"a/b.mp3", "a/b.mp3"}, {"missing/x", "missing/x"},
		{"out", ""}, {"climb", ""}, {"relup", ""}, {"hist", ""}, {"hist/x", ""}, {"prefix", ""}, {"loop", ""},
	} {
		got, err := v.resolve(c.in)
		if c.want == "" {
			if err == nil {
				t.Errorf("resolve(%q) = %q, want an error", c.in, got)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("resolve(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	// The volume's operations go the same way.
	for _, rel := range []string{"fav", "favdir/e.txt", "chain", "dotdot", "d/inner", "root/fav"} {
		f, _, err := v.Open(rel)
		if err != nil {
			t.Errorf("Open(%q): %v", rel, err)
			continue
		}
		f.Close()
	}
	if d, err := v.OpenDir("favdir"); err != nil {
		t.Errorf("OpenDir(favdir): %v", err)
	} else {
		d.Close()
	}
	if ents, err := v.List(context.Background(), "favdir", ListOptions{}); err != nil || len(ents) != 2 {
		t.Errorf("List(favdir) = %v, %v", ents, err)
	}
	res, err := v.Ingest(context.Background(), "favdir/sub", strings.NewReader("x"), IngestOptions{Name: "n.txt", Size: 1})
	if err != nil || res.Rel != "d/sub/n.txt" {
		t.Fatalf("Ingest into favdir/sub = %+v, %v", res, err)
	}
	if b, err := os.ReadFile(filepath.Join(vol, "d/sub/n.txt")); err != nil || string(b) != "x" {
		t.Fatalf("uploaded file: %q %v", b, err)
	}
	if _, err := v.Ingest(context.Background(), "out", strings.NewReader("x"), IngestOptions{Name: "n.txt", Size: 1}); err == nil {
		t.Fatal("Ingest followed a link out of the volume")
	}
	if _, err := os.Stat(filepath.Join(outside, "x", "n.txt")); err == nil {
		t.Fatal("a file was written outside the volume")
	}
}

// FuzzResolve: whatever links a volume holds, resolve never leaves it:
// its answer, opened through the volume's root, is reachable without any
// absolute link, and never names the state folder.
func FuzzResolve(f *testing.F) {
	f.Add("a/b", "/VOL/a", "x/../a/b")
	f.Add("l", "/VOL/../out", "l/x")
	f.Add("a/l", "../../x", "a/l")
	f.Add("l", "/VOL/.hist", "l")
	f.Fuzz(func(t *testing.T, link, target, query string) {
		st, dirs := openStore(t, "::A")
		v := st.Volumes()[0]
		vol := dirs[0]
		os.MkdirAll(filepath.Join(vol, "a"), 0o755)
		os.WriteFile(filepath.Join(vol, "a", "b"), []byte("b"), 0o644)
		link = filepath.Clean("/" + link)[1:]
		if link == "" || strings.Contains(link, "\x00") || strings.HasPrefix(link, HistName) {
			return
		}
		target = strings.ReplaceAll(target, "/VOL", vol)
		os.MkdirAll(filepath.Dir(filepath.Join(vol, link)), 0o755)
		if os.Symlink(target, filepath.Join(vol, link)) != nil {
			return
		}
		r, err := cleanRel(query)
		if err != nil {
			return
		}
		got, err := v.resolve(r)
		if err != nil {
			return
		}
		if got != "." {
			for c := range strings.SplitSeq(got, "/") {
				if c == ".." || c == "" || strings.EqualFold(c, HistName) {
					t.Fatalf("resolve(%q) = %q with link %q → %q", query, got, link, target)
				}
			}
		}
		// Every component of the answer but the last exists as a real
		// folder, or does not exist at all.
		p := vol
		for c := range strings.SplitSeq(got, "/") {
			p = filepath.Join(p, c)
			fi, err := os.Lstat(p)
			if err != nil {
				break
			}
			if fi.Mode()&os.ModeSymlink != 0 {
				t.Fatalf("resolve(%q) = %q still has a link at %s (link %q → %q)", query, got, p, link, target)
			}
		}
	})
}

// TestAbsoluteLinkRace: a folder on the way of an absolute link inside
// the volume is swapped, again and again, with a link leading out of the
// volume (renameat2 RENAME_EXCHANGE) while the link is read, listed and
// written through: nothing outside is ever read or written.
func TestAbsoluteLinkRace(t *testing.T) {
	if !canExchange {
		t.Skip("no atomic exchange of two names here (renameat2 is Linux's)")
	}
	st, dirs := openStore(t, "::A")
	v := st.Volumes()[0]
	vol, outside := dirs[0], t.TempDir()
	os.MkdirAll(filepath.Join(vol, "x"), 0o755)
	os.WriteFile(filepath.Join(vol, "x", "e.txt"), []byte("inside"), 0o644)
	os.WriteFile(filepath.Join(outside, "e.txt"), []byte("OUTSIDE"), 0o644)
	// "sw" is swapped between the folder x and a link to outside.
	os.Symlink(outside, filepath.Join(vol, "sw"))
	os.Symlink(filepath.Join(vol, "x", "e.txt"), filepath.Join(vol, "viaX"))
	os.Symlink(filepath.Join(vol, "sw"), filepath.Join(vol, "viaSw"))
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !stop.Load() {
			exchange(filepath.Join(vol, "x"), filepath.Join(vol, "sw"))
		}
	}()
	var escapes, ok atomic.Int64
	deadline := time.Now().Add(2 * time.Second)
	var rw sync.WaitGroup
	for g := range 4 {
		rw.Add(1)
		go func() {
			defer rw.Done()
			r := rand.New(rand.NewPCG(uint64(g), 9))
			for time.Now().Before(deadline) {
				switch r.IntN(4) {
				case 0, 1:
					rel := []string{"viaX", "viaSw/e.txt", "x/e.txt"}[r.IntN(3)]
					f, _, err := v.Open(rel)
					if err != nil {
						continue
					}
					b, _ := io.ReadAll(f)
					f.Close()
					if string(b) == "OUTSIDE" {
						escapes.Add(1)
					} else {
						ok.Add(1)
					}
				case 2:
					ents, _ := v.List(context.Background(), "viaSw", ListOptions{})
					for _, e := range ents {
						if e.Name == "e.txt" && e.Size == int64(len("OUTSIDE")) {
							escapes.Add(1)
						}
					}
				case 3:
					v.Ingest(context.Background(), "viaSw", strings.NewReader("w"), IngestOptions{Name: "w.txt", Size: 1})
				}
			}
		}()
	}
	rw.Wait()
	stop.Store(true)
	wg.Wait()
	if n := escapes.Load(); n > 0 {
		t.Fatalf("%d reads reached outside the volume", n)
	}
	ents, _ := os.ReadDir(outside)
	for _, e := range ents {
		if e.Name() != "e.txt" {
			t.Errorf("%s was written outside the volume", e.Name())
		}
	}
	if ok.Load() == 0 {
		t.Fatal("no read succeeded: the test proves nothing")
	}
	t.Logf("%d reads inside, none outside", ok.Load())
}

package store

import (
	"context"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// stateTree lists the names below the volume's state folder.
func stateTree(t *testing.T, vol string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(filepath.Join(vol, HistName), func(p string, d os.DirEntry, err error) error {
		if err == nil && !strings.Contains(p, "/ops") { // the file-management journal
			out = append(out, p)
		}
		return nil
	})
	slices.Sort(out)
	return out
}

// File management through a relative link to the state folder: refused
// as a missing file (sources) or refused (destinations), nothing changed.
func TestManageThroughStateLink(t *testing.T) {
	st, dirs := openStore(t, "::A")
	v, vol := st.Volumes()[0], dirs[0]
	mkfiles(t, vol, map[string]string{"a.txt": "a", "sub/b.txt": "b"})
	for link, target := range map[string]string{"h": HistName, "x": HistName + "/secret", "sub/y": "../" + HistName} {
		if err := os.Symlink(target, filepath.Join(vol, link)); err != nil {
			t.Fatal(err)
		}
	}
	secret, err := os.ReadFile(filepath.Join(vol, HistName, "secret"))
	if err != nil {
		t.Fatal(err)
	}
	before := stateTree(t, vol)

	// (Deleting or moving a link itself is not reaching through it.)
	for _, src := range []string{"h/secret", "sub/y/secret"} {
		if _, err := st.Delete(ctx, admin, Loc{v, src}, DeleteOptions{}); err == nil || KindOf(err) != KindNotFound {
			t.Errorf("delete %s: %v", src, err)
		}
		if _, err := st.Move(ctx, admin, Loc{v, src}, Loc{v, "stolen"}, DestOptions{}); err == nil || KindOf(err) != KindNotFound {
			t.Errorf("move %s: %v", src, err)
		}
		if _, err := st.Copy(ctx, admin, Loc{v, src}, Loc{v, "stolen"}, DestOptions{}); err == nil || KindOf(err) != KindNotFound {
			t.Errorf("copy %s: %v", src, err)
		}
	}
	for _, dst := range []string{"h/a.txt", "h/new/a.txt", "sub/y/a.txt"} {
		if _, err := st.Copy(ctx, admin, Loc{v, "a.txt"}, Loc{v, dst}, DestOptions{Parents: true}); err == nil {
			t.Errorf("copy to %s went through", dst)
		}
		if _, err := st.Move(ctx, admin, Loc{v, "sub/b.txt"}, Loc{v, dst}, DestOptions{Parents: true}); err == nil {
			t.Errorf("move to %s went through", dst)
		}
	}
	for _, d := range []string{"h/made", "h/m1/m2", "sub/y/made"} {
		if _, err := st.Mkdir(ctx, admin, Loc{v, d}, MkdirOptions{Parents: true}); err == nil {
			t.Errorf("mkdir %s went through", d)
		}
		if err := v.MakeDir(d); err == nil {
			t.Errorf("MakeDir %s went through", d)
		}
		if _, err := v.CreateTemp(d); err == nil {
			t.Errorf("CreateTemp %s went through", d)
		}
	}
	if _, _, err := v.CreatePartial("h", "u.bin", 10, PartialOptions{}); err == nil {
		t.Error("CreatePartial in h went through")
	}
	if after := stateTree(t, vol); !slices.Equal(before, after) {
		t.Errorf("the state folder changed:\nbefore %q\nafter  %q", before, after)
	}
	if b, _ := os.ReadFile(filepath.Join(vol, HistName, "secret")); string(b) != string(secret) {
		t.Error("the secret changed")
	}
	if _, err := os.Stat(filepath.Join(vol, "stolen")); err == nil {
		t.Error("a state file was moved or copied out")
	}
}

// A normal folder swapped (renameat2 exchange) with a relative link to the
// state folder while opens run: no read ever gets a state file, and no
// write lands in the state folder.
func TestStateLinkRace(t *testing.T) {
	if !canExchange {
		t.Skip("no atomic exchange of two names here (renameat2 is Linux's)")
	}
	st, dirs := openStore(t, "::A")
	v, vol := st.Volumes()[0], dirs[0]
	secret, err := os.ReadFile(filepath.Join(vol, HistName, "secret"))
	if err != nil {
		t.Fatal(err)
	}
	mkfiles(t, vol, map[string]string{"sw/secret": "normal", "sw/hoard.lock": "normal"})
	if err := os.Symlink(HistName, filepath.Join(vol, "swl")); err != nil {
		t.Fatal(err)
	}
	os.Symlink("sw/secret", filepath.Join(vol, "via"))
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	swaps := 0
	go func() {
		defer wg.Done()
		for !stop.Load() {
			if exchange(filepath.Join(vol, "sw"), filepath.Join(vol, "swl")) == nil {
				swaps++
			}
		}
	}()
	var leaks, reads atomic.Int64
	deadline := time.Now().Add(2 * time.Second)
	var rw sync.WaitGroup
	for g := range 4 {
		rw.Add(1)
		go func() {
			defer rw.Done()
			r := rand.New(rand.NewPCG(uint64(g), 14))
			for time.Now().Before(deadline) {
				switch r.IntN(6) {
				case 0, 1:
					f, _, err := v.Open([]string{"sw/secret", "via"}[r.IntN(2)])
					if err != nil {
						continue
					}
					b, _ := io.ReadAll(f)
					f.Close()
					reads.Add(1)
					if string(b) != "normal" {
						leaks.Add(1)
					}
				case 2:
					ents, _ := v.List(context.Background(), "sw", ListOptions{Dots: true})
					for _, e := range ents {
						if e.Name == "idx" || e.Name == "secret" && e.Size != int64(len("normal")) {
							leaks.Add(1)
						}
					}
				case 3:
					if fi, err := v.Stat("sw/secret"); err == nil && fi.Size() != int64(len("normal")) {
						leaks.Add(1)
					}
				case 4:
					d, err := v.OpenDir("sw")
					if err != nil {
						continue
					}
					var buf [128]byte
					n, err := d.ReadSmall("secret", buf[:], 1)
					d.Close()
					if err == nil && string(buf[:n]) != "normal" {
						leaks.Add(1)
					}
				case 5:
					v.Ingest(context.Background(), "sw", strings.NewReader("w"), IngestOptions{Name: "w.txt", Size: 1})
					v.MakeDir("sw/made")
				}
			}
		}()
	}
	rw.Wait()
	stop.Store(true)
	wg.Wait()
	if n := leaks.Load(); n > 0 {
		t.Fatalf("%d reads reached the state folder (%d swaps)", n, swaps)
	}
	for _, p := range stateTree(t, vol) {
		if b := filepath.Base(p); b == "w.txt" || b == "made" || strings.HasPrefix(b, ".hoard") {
			t.Errorf("%s was written into the state folder", p)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(vol, HistName, "secret")); string(b) != string(secret) {
		t.Error("the secret changed")
	}
	t.Logf("%d good reads, %d swaps", reads.Load(), swaps)
}

// TestInStateProperty: inState agrees with its plain statement (the
// prefix test made by concatenation, as it was) on random paths made of
// a few components, .hist among them in any case.
func TestInStateProperty(t *testing.T) {
	ref := func(top, real string) bool {
		rest := real
		if top != "" {
			switch {
			case real == top:
				return false
			case strings.HasPrefix(real, strings.TrimSuffix(top, "/")+"/"):
				rest = real[len(strings.TrimSuffix(top, "/"))+1:]
			}
		}
		for _, c := range strings.Split(rest, "/") {
			if strings.EqualFold(c, HistName) {
				return true
			}
		}
		return false
	}
	parts := []string{"", "a", "vol", ".hist", ".HIST", "x.hist", "hist", "vol2"}
	r := rand.New(rand.NewPCG(1, 2))
	path := func() string {
		n := r.IntN(4)
		s := ""
		for range n {
			s += "/" + parts[r.IntN(len(parts))]
		}
		if r.IntN(5) == 0 {
			s += "/"
		}
		return s
	}
	for range 20000 {
		top, real := path(), path()
		if r.IntN(3) == 0 {
			real = top + path()
		}
		if got, want := inState(top, real), ref(top, real); got != want {
			t.Fatalf("inState(%q, %q) = %v, want %v", top, real, got, want)
		}
	}
}

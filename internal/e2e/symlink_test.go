package e2e

// Symbolic links written with an absolute target: followed when the
// target is inside the same volume (as relative ones are), refused when
// it leaves the volume; in downloads, listings, archives, search and
// uploads into a linked folder.

import (
	"encoding/json"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// absLinkTree makes a volume folder (reached through alias, a link to it
// from outside, as well as by its real path) with links to its own files
// and folders written both ways, and links that lead out of it.
func absLinkTree(t *testing.T) (vol, alias, outside string) {
	t.Helper()
	base := t.TempDir()
	vol, outside = filepath.Join(base, "music"), filepath.Join(base, "outside")
	alias = filepath.Join(base, "alias")
	writeFile(t, vol, "a/b.mp3", []byte("song b"))
	writeFile(t, vol, "d/e.txt", []byte("file e"))
	writeFile(t, outside, "secret.txt", []byte("not yours"))
	writeFile(t, vol, ".hist/keep", []byte("state"))
	if err := os.Symlink(vol, alias); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{
		"fav.mp3":     filepath.Join(vol, "a/b.mp3"),   // absolute, real path
		"fav2.mp3":    filepath.Join(alias, "a/b.mp3"), // absolute, through the alias the volume is mounted by
		"rel.mp3":     "a/b.mp3",                       // relative, as before
		"favdir":      filepath.Join(vol, "d"),         // absolute, a folder
		"dotdot.txt":  filepath.Join(vol, "a/../d/e.txt"),
		"chain.mp3":   filepath.Join(vol, "fav.mp3"), // absolute to an absolute one
		"out.txt":     filepath.Join(outside, "secret.txt"),
		"outdir":      outside,
		"up.txt":      filepath.Join(vol, "../outside/secret.txt"), // starts inside, climbs out
		"hist.txt":    filepath.Join(vol, ".hist/keep"),
		"loop1":       filepath.Join(vol, "loop2"),
		"loop2":       filepath.Join(vol, "loop1"),
		"a/back.mp3":  filepath.Join(vol, "a/b.mp3"),
		"d/sub2/.tmp": "x", // a dangling relative link in a folder made below
	} {
		p := filepath.Join(vol, link)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
	return vol, alias, outside
}

func TestAbsoluteSymlinks(t *testing.T) {
	t.Parallel()
	vol, alias, _ := absLinkTree(t)
	// Mounted by the alias path: both the alias and the real path count.
	s := start(t, "-v", alias+":m:rw", "-e2dsa")
	waitReady(t, s)

	for p, want := range map[string]string{
		"/m/fav.mp3": "song b", "/m/fav2.mp3": "song b", "/m/rel.mp3": "song b", "/m/favdir/e.txt": "file e",
		"/m/dotdot.txt": "file e", "/m/chain.mp3": "song b", "/m/a/back.mp3": "song b",
	} {
		resp, body := s.do(t, "GET", p, nil)
		if resp.StatusCode != 200 || string(body) != want {
			t.Errorf("GET %s: %d %q, want 200 %q", p, resp.StatusCode, body, want)
		}
	}
	for _, p := range []string{"/m/out.txt", "/m/outdir/secret.txt", "/m/up.txt", "/m/hist.txt", "/m/loop1", "/m/outdir/"} {
		resp, body := s.do(t, "GET", p, nil)
		if resp.StatusCode != 404 || strings.Contains(string(body), "not yours") || strings.Contains(string(body), "state") {
			t.Errorf("GET %s: %d %q, want 404", p, resp.StatusCode, body)
		}
	}

	// Listings show the links that work and leave out the others.
	var ls struct {
		Dirs  []struct{ Href string } `json:"dirs"`
		Files []struct{ Href string } `json:"files"`
	}
	resp, body := s.do(t, "GET", "/m/?ls", nil)
	wantStatus(t, resp, body, 200)
	if err := json.Unmarshal(body, &ls); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range append(ls.Dirs, ls.Files...) {
		names = append(names, strings.TrimSuffix(e.Href, "/"))
	}
	slices.Sort(names)
	if want := []string{"a", "chain.mp3", "d", "dotdot.txt", "fav.mp3", "fav2.mp3", "favdir", "rel.mp3"}; !slices.Equal(names, want) {
		t.Errorf("listing %q, want %q", names, want)
	}
	resp, body = s.do(t, "GET", "/m/favdir/?ls", nil)
	if resp.StatusCode != 200 || !strings.Contains(string(body), "e.txt") {
		t.Errorf("listing a folder linked absolutely: %d %s", resp.StatusCode, body)
	}

	// Archives take what the listing shows.
	resp, body = s.do(t, "GET", "/m/?tar", nil)
	wantStatus(t, resp, body, 200)
	got := untarMembers(t, body)
	for name, want := range map[string]string{"m/fav.mp3": "song b", "m/fav2.mp3": "song b", "m/favdir/e.txt": "file e", "m/chain.mp3": "song b", "m/dotdot.txt": "file e"} {
		if string(got[name]) != want {
			t.Errorf("tar member %s = %q, want %q (members %q)", name, got[name], want, slices.Sorted(maps.Keys(got)))
		}
	}
	for name, b := range got {
		if strings.Contains(string(b), "not yours") || strings.HasPrefix(name, "m/outdir") || name == "m/out.txt" || name == "m/hist.txt" {
			t.Errorf("tar has %s", name)
		}
	}

	// Search finds the linked files by their link names.
	for _, q := range []string{"fav.mp3", "fav2", "chain", "dotdot"} {
		code, r := postSearch(t, s, map[string]any{"q": q})
		if code != 200 || len(r.Hits) != 1 {
			t.Errorf("search %q: %d %+v", q, code, r)
		}
	}
	if code, r := postSearch(t, s, map[string]any{"q": "secret"}); code != 200 || len(r.Hits) != 0 {
		t.Errorf("search secret: %d %+v", code, r)
	}

	// Uploads into a folder that is an absolute link land in its target.
	resp, body = s.do(t, "PUT", "/m/favdir/new.txt", []byte("new"))
	wantStatus(t, resp, body, http.StatusCreated)
	if b, err := os.ReadFile(filepath.Join(vol, "d/new.txt")); err != nil || string(b) != "new" {
		t.Fatalf("PUT into favdir: %q %v", b, err)
	}
	resp, body = s.do(t, "PUT", "/m/favdir/sub/deeper.txt", []byte("deep"))
	wantStatus(t, resp, body, http.StatusCreated)
	if b, err := os.ReadFile(filepath.Join(vol, "d/sub/deeper.txt")); err != nil || string(b) != "deep" {
		t.Fatalf("PUT below favdir: %q %v", b, err)
	}
	for _, p := range []string{"/m/favdir/new.txt", "/m/d/new.txt", "/m/favdir/sub/deeper.txt"} {
		resp, body := s.do(t, "GET", p, nil)
		if resp.StatusCode != 200 {
			t.Errorf("GET %s after upload: %d %s", p, resp.StatusCode, body)
		}
	}
	f := newUp2kFile(randomBytes(3<<20 + 11))
	lmod := time.Now().Add(-time.Hour).Unix()
	up2kUpload(t, s, "/m/favdir/", "up2k.bin", f, lmod, 2)
	wantUploaded(t, filepath.Join(vol, "d/up2k.bin"), f.data, lmod)
	// Out of the volume, an upload is refused and writes nothing there.
	resp, body = s.do(t, "PUT", "/m/outdir/x.txt", []byte("x"))
	if resp.StatusCode < 400 {
		t.Errorf("PUT into a link out of the volume: %d %s", resp.StatusCode, body)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(vol), "outside", "x.txt")); err == nil {
		t.Error("an upload went out of the volume")
	}
}

package e2e

// The state folder is never reached through a relative symbolic link
// inside the volume (issue 14): `ln -s .hist h` and links naming files in
// it answer as missing files do, in downloads, listings, archives,
// search, and uploads of every kind into the linked folder.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestStateFolderThroughRelativeLinks(t *testing.T) {
	t.Parallel()
	vol := t.TempDir()
	writeFile(t, vol, "a.txt", []byte("hi"))
	writeFile(t, vol, "sub/b.txt", []byte("bee"))
	for link, target := range map[string]string{
		"h":        ".hist",
		"h2":       "./.hist",
		"x":        "h/secret",
		"cur":      ".hist/idx/CURRENT",
		"sub/y":    "../.hist",
		"sub/ysec": "../.hist/secret",
	} {
		if err := os.Symlink(target, filepath.Join(vol, link)); err != nil {
			t.Fatal(err)
		}
	}
	s := start(t, "-v", vol+":m:rw", "-e2dsa")
	waitReady(t, s)
	secret, err := os.ReadFile(filepath.Join(vol, ".hist", "secret"))
	if err != nil || len(secret) == 0 {
		t.Fatalf("no secret to look for: %v", err)
	}
	leaks := func(b []byte) bool {
		return strings.Contains(string(b), string(secret)) || strings.Contains(string(b), "hoard.lock")
	}

	for _, p := range []string{
		"/m/h/secret", "/m/h2/secret", "/m/x", "/m/cur", "/m/sub/y/secret", "/m/sub/ysec",
		"/m/h/", "/m/h/?ls", "/m/h?ls", "/m/sub/y/?ls", "/m/h/?tar", "/m/h/?zip", "/m/sub/y/?tar",
		"/m/h/idx/CURRENT",
	} {
		resp, body := s.do(t, "GET", p, nil)
		if resp.StatusCode != 404 || leaks(body) {
			t.Errorf("GET %s: %d %.200q, want 404", p, resp.StatusCode, body)
		}
		if want := "not found: " + strings.SplitN(p, "?", 2)[0]; !strings.Contains(p, "?") && strings.TrimSpace(string(body)) != strings.TrimSuffix(want, "/") && strings.TrimSpace(string(body)) != want {
			t.Errorf("GET %s: body %.200q, not a missing file's", p, body)
		}
	}

	// Listings leave the links out; archives and search hold nothing of
	// the state folder.
	for _, p := range []string{"/m/?ls", "/m/sub/?ls"} {
		resp, body := s.do(t, "GET", p, nil)
		wantStatus(t, resp, body, 200)
		var ls struct {
			Dirs  []struct{ Href string } `json:"dirs"`
			Files []struct{ Href string } `json:"files"`
		}
		if err := json.Unmarshal(body, &ls); err != nil {
			t.Fatal(err)
		}
		for _, e := range append(ls.Dirs, ls.Files...) {
			switch strings.TrimSuffix(e.Href, "/") {
			case "h", "h2", "x", "cur", "y", "ysec":
				t.Errorf("%s lists %s", p, e.Href)
			}
		}
	}
	resp, body := s.do(t, "GET", "/m/", nil)
	wantStatus(t, resp, body, 200)
	for _, n := range []string{`href="h/"`, `href="h2/"`, `href="x"`, `href="cur"`} {
		if strings.Contains(string(body), n) {
			t.Errorf("HTML listing has %s", n)
		}
	}
	resp, body = s.do(t, "GET", "/m/?tar", nil)
	wantStatus(t, resp, body, 200)
	for name, b := range untarMembers(t, body) {
		if leaks(b) || strings.HasPrefix(name, "m/h") || name == "m/x" || name == "m/cur" || strings.HasPrefix(name, "m/sub/y") {
			t.Errorf("tar has %s", name)
		}
	}
	resp, body = s.do(t, "GET", "/m/?zip", nil)
	wantStatus(t, resp, body, 200)
	for name, b := range unzipMembers(t, body) {
		if leaks(b) || strings.HasPrefix(name, "m/h") || name == "m/x" || name == "m/cur" || strings.HasPrefix(name, "m/sub/y") {
			t.Errorf("zip has %s", name)
		}
	}
	for _, q := range []string{"secret", "CURRENT", "MANIFEST", "OPTIONS"} {
		if code, r := postSearch(t, s, map[string]any{"q": q}); code != 200 || len(r.Hits) != 0 {
			t.Errorf("search %q: %d %+v", q, code, r)
		}
	}
	if code, r := postSearch(t, s, map[string]any{"q": "b.txt"}); code != 200 || len(r.Hits) != 1 {
		t.Errorf("search b.txt (a control): %d %+v", code, r)
	}

	// Uploads into the linked folder: refused, nothing made in .hist. (A
	// PUT onto the link x itself is a collision: a new file beside it.)
	before := tree(t, filepath.Join(vol, ".hist"))
	for _, p := range []string{"/m/h/put.txt", "/m/h/new/put.txt", "/m/sub/y/put.txt"} {
		resp, body := s.do(t, "PUT", p, []byte("planted"))
		if resp.StatusCode < 400 {
			t.Errorf("PUT %s: %d %s", p, resp.StatusCode, body)
		}
	}
	resp, body = s.do(t, "PUT", "/m/h/secret?apnd", []byte("planted"))
	if resp.StatusCode < 400 {
		t.Errorf("PUT ?apnd into h/secret: %d %s", resp.StatusCode, body)
	}
	form, ct := multipartForm(t, formPart{"act", "", []byte("bput")}, formPart{"f", "mp.txt", []byte("planted")})
	resp, body = s.do(t, "POST", "/m/h/", form, ct)
	if resp.StatusCode < 400 {
		t.Errorf("multipart into h/: %d %s", resp.StatusCode, body)
	}
	form, ct = multipartForm(t, formPart{"act", "", []byte("mkdir")}, formPart{"name", "", []byte("made")})
	resp, body = s.do(t, "POST", "/m/h/", form, ct)
	if resp.StatusCode < 400 {
		t.Errorf("mkdir in h/: %d %s", resp.StatusCode, body)
	}
	f := newUp2kFile(randomBytes(1<<20 + 3))
	resp, body = postHandshake(t, s, "/m/h/", map[string]any{
		"name": "u2.bin", "size": len(f.data), "lmod": time.Now().Unix(), "hash": f.hashes,
	})
	if resp.StatusCode < 400 {
		t.Errorf("up2k handshake into h/: %d %s", resp.StatusCode, body)
	}
	if after := tree(t, filepath.Join(vol, ".hist")); !sameNames(before, after) {
		t.Errorf("the state folder changed: before %q after %q", before, after)
	}
	if b, _ := os.ReadFile(filepath.Join(vol, ".hist", "secret")); string(b) != string(secret) {
		t.Error("the secret changed")
	}
	// ?tail (streams a file as it grows): last, as it hangs when served.
	resp, body = s.do(t, "GET", "/m/h/secret?tail", nil)
	if resp.StatusCode != 404 || leaks(body) {
		t.Errorf("GET h/secret?tail: %d %.200q", resp.StatusCode, body)
	}
	// The volume still works.
	resp, body = s.do(t, "GET", "/m/a.txt", nil)
	if resp.StatusCode != 200 || string(body) != "hi" {
		t.Errorf("GET a.txt: %d %q", resp.StatusCode, body)
	}
}

// sameNames reports whether every name in after was in before (the index
// may drop files, but nothing planted may appear).
func sameNames(before, after []string) bool {
	have := map[string]bool{}
	for _, n := range before {
		have[n] = true
	}
	for _, n := range after {
		if !have[n] && (strings.Contains(n, "put") || strings.Contains(n, "mp.txt") || strings.Contains(n, "made") || strings.Contains(n, "u2.bin") || strings.Contains(n, "PARTIAL")) {
			return false
		}
	}
	return true
}

package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestLinkIntoNestedVolume: a volume whose folder lies inside another
// volume's folder is another volume, with its own permissions. A symbolic
// link in the outer volume that leads into it (relative or absolute, to a
// file or a folder) stays inside the outer volume's os.Root, so only the
// store can refuse it: it is not served, listed, archived or thumbnailed
// for anyone, as links into any other volume are not (docs/http.md,
// "Paths"). The secret volume's canary never appears in a response.
func TestLinkIntoNestedVolume(t *testing.T) {
	t.Parallel()
	top := nestedSecretTree(t, map[string]string{
		"rel.txt":       "secret/s.txt",
		"abs.txt":       "/secret/s.txt",
		"dirlink":       "secret",
		"absdir":        "/secret/deep",
		"sub/up.txt":    "../secret/s.txt",
		"sub/deeplink":  "../secret/deep",
		"chain.txt":     "rel.txt",
		"sub/ok.txt":    "../pub.txt", // a link inside the outer volume still works
		"sub/okdir":     "..",         // a loop, not entered again
		"secret2.mp4":   "secret/s.txt",
		"secretdir.txt": "secret",
	})
	s := start(t, "-a", "boss:pw", "-v", top+"::rw", "-v", filepath.Join(top, "secret")+":secret:r,boss")
	secretBefore := snapshot(t, filepath.Join(top, "secret"))

	noCanary := func(what string, body []byte) {
		t.Helper()
		if strings.Contains(string(body), "CANARY-7f3a") {
			t.Errorf("%s: the nested volume's canary leaked: %q", what, body)
		}
	}
	// The nested volume itself: for boss only.
	resp, body := s.do(t, "GET", "/secret/s.txt", nil)
	noCanary("anonymous GET /secret/s.txt", body)
	if resp.StatusCode < 400 {
		t.Errorf("anonymous GET /secret/s.txt: %d", resp.StatusCode)
	}
	resp, body = s.do(t, "GET", "/secret/s.txt", nil, basicAuth("boss:pw"))
	if resp.StatusCode != 200 || string(body) != nestedCanary {
		t.Errorf("boss GET /secret/s.txt: %d %q", resp.StatusCode, body)
	}
	resp, body = s.do(t, "GET", "/sub/ok.txt", nil)
	if resp.StatusCode != 200 || string(body) != "public" {
		t.Errorf("GET /sub/ok.txt (a link inside the volume): %d %q", resp.StatusCode, body)
	}

	// Through the outer volume's links: for nobody, boss included (a link
	// never leads into another volume).
	for _, auth := range [][]string{nil, {basicAuth("boss:pw")}} {
		who := "anonymous"
		if auth != nil {
			who = "boss"
		}
		for _, p := range []string{"/rel.txt", "/abs.txt", "/dirlink/s.txt", "/dirlink/deep/d.txt", "/absdir/d.txt",
			"/sub/up.txt", "/sub/deeplink/d.txt", "/chain.txt", "/rel.txt?txt", "/sub/up.txt?v",
			"/dirlink/?ls", "/absdir/?ls", "/dirlink/?tar", "/sub/deeplink/?zip", "/secret2.mp4?th", "/rel.txt?zls"} {
			resp, body := s.do(t, "GET", p, nil, auth...)
			noCanary(who+" GET "+p, body)
			if resp.StatusCode == 200 && !strings.HasSuffix(p, "?th") {
				t.Errorf("%s GET %s: 200 %q, want a refusal", who, p, body)
			}
			if strings.HasSuffix(p, "?th") && resp.Header.Get("X-Hoard-Thumb") != "" && resp.Header.Get("X-Hoard-Thumb") != "icon" {
				t.Errorf("%s GET %s: a thumbnail was made (%s)", who, p, resp.Header.Get("X-Hoard-Thumb"))
			}
		}
		for _, p := range []string{"/?ls", "/sub/?ls"} {
			dirs, files := listingNames(t, getListing(t, s, p, auth...))
			for _, n := range append(dirs, files...) {
				if slices.Contains([]string{"rel.txt", "abs.txt", "dirlink", "absdir", "up.txt", "deeplink", "chain.txt", "secret2.mp4", "secretdir.txt"}, strings.TrimSuffix(n, "/")) {
					t.Errorf("%s %s lists the link %s into the nested volume (%q %q)", who, p, n, dirs, files)
				}
			}
		}
		for _, format := range []string{"tar", "zip"} {
			resp, body := s.do(t, "GET", "/?"+format, nil, auth...)
			wantStatus(t, resp, body, 200)
			for name, b := range readArchive(t, format, body) {
				if auth != nil && strings.HasPrefix(name, "top/secret/") {
					continue // boss may read the nested volume, mounted there
				}
				if strings.Contains(string(b), "CANARY-7f3a") {
					t.Errorf("%s /?%s: member %s holds the nested volume's canary", who, format, name)
				}
			}
		}
		// Uploads through the links do not land in the nested volume,
		// where only boss may read (and nobody may write).
		for _, p := range []string{"/dirlink/new.txt", "/absdir/new.txt", "/sub/deeplink/new.txt", "/dirlink/deep/new.txt", "/rel.txt", "/sub/up.txt"} {
			s.do(t, "PUT", p, []byte("written through a link"), auth...)
		}
		for _, folder := range []string{"/dirlink/", "/absdir/", "/sub/deeplink/"} {
			f := newUp2kFile([]byte("up2k through a link " + folder))
			resp, b := postHandshake(t, s, folder, map[string]any{"name": "u.txt", "size": len(f.data), "lmod": 1700000000, "hash": f.hashes}, auth...)
			if resp.StatusCode == 200 {
				var rep handshakeReply
				json.Unmarshal(b, &rep)
				for i := range f.hashes {
					postChunks(t, s, rep.Purl, rep.Wark, f.hashes[i], f.chunk(i), auth...)
				}
			}
		}
		for _, name := range []string{"rel.txt", "dirlink", "sub/deeplink", "absdir", "sub/up.txt"} {
			sel, _ := json.Marshal([]string{name})
			resp, body := s.do(t, "POST", "/?tar", sel, append([]string{"Content-Type: application/json"}, auth...)...)
			if resp.StatusCode == 200 {
				for n, b := range untarMembers(t, body) {
					if strings.Contains(string(b), "CANARY-7f3a") {
						t.Errorf("%s selection %q: member %s holds the nested volume's canary", who, name, n)
					}
				}
			} else {
				noCanary(who+" selection "+name, body)
			}
		}
	}
	wantSameSnapshot(t, secretBefore, snapshot(t, filepath.Join(top, "secret")))
}

// TestManageThroughLinkIntoNestedVolume: file management in the outer
// volume (delete, move, copy, mkdir, with every permission there) never
// reaches through a link into a nested volume: nothing of it is deleted,
// moved out (to be read in the outer volume), or added to.
func TestManageThroughLinkIntoNestedVolume(t *testing.T) {
	t.Parallel()
	top := nestedSecretTree(t, map[string]string{
		"dirlink":      "secret",
		"absdir":       "/secret/deep",
		"sub/deeplink": "../secret/deep",
	})
	s := start(t, "-a", "boss:pw", "-v", top+"::rwmd", "-v", filepath.Join(top, "secret")+":secret:r,boss")
	secretBefore := snapshot(t, filepath.Join(top, "secret"))
	mkdir, ct := multipartForm(t, formPart{"act", "", []byte("mkdir")}, formPart{"name", "", []byte("made")})
	for _, rq := range []struct{ method, path string }{
		{"POST", "/dirlink/s.txt?delete"},
		{"POST", "/absdir/d.txt?delete"},
		{"POST", "/sub/deeplink/d.txt?delete"},
		{"POST", "/dirlink/s.txt?move=/stolen.txt"},
		{"POST", "/absdir/d.txt?move=/stolen2.txt"},
		{"POST", "/dirlink/s.txt?copy=/copied.txt"},
		{"POST", "/dirlink/deep?move=/stolendir"},
		{"POST", "/pub.txt?copy=/dirlink/planted.txt"},
		{"POST", "/pub.txt?copy=/absdir/planted.txt"},
	} {
		resp, body := s.do(t, rq.method, rq.path, nil)
		if strings.Contains(string(body), "CANARY-7f3a") {
			t.Errorf("%s %s: %d %q", rq.method, rq.path, resp.StatusCode, body)
		}
	}
	for _, p := range []string{"/dirlink/", "/absdir/", "/sub/deeplink/"} {
		s.do(t, "POST", p, mkdir, "Content-Type: "+ct)
	}
	wantSameSnapshot(t, secretBefore, snapshot(t, filepath.Join(top, "secret")))
	for _, name := range []string{"stolen.txt", "stolen2.txt", "copied.txt", "stolendir/d.txt"} {
		if b, err := os.ReadFile(filepath.Join(top, name)); err == nil {
			t.Errorf("%s was made in the outer volume: %q", name, b)
		}
	}
}

// nestedCanary is what the nested volume's files hold.
const nestedCanary = "CANARY-7f3a nested secret"

// nestedSecretTree makes the outer volume's folder of the nested-volume
// tests: pub.txt, and secret/ (the nested volume's folder) with the
// canary in s.txt and deep/d.txt; and the links (path → target; a target
// starting with "/" is that path inside the folder, made absolute).
func nestedSecretTree(t *testing.T, links map[string]string) string {
	t.Helper()
	top := t.TempDir()
	writeFile(t, top, "pub.txt", []byte("public"))
	writeFile(t, top, "secret/s.txt", []byte(nestedCanary))
	writeFile(t, top, "secret/deep/d.txt", []byte(nestedCanary))
	for link, target := range links {
		if strings.HasPrefix(target, "/") {
			target = filepath.Join(top, target)
		}
		p := filepath.Join(top, link)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
	return top
}

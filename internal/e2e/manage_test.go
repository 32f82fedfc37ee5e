package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// File management over copyparty's HTTP API (http/manage.go): ?delete,
// ?move=, ?copy=, act=mkdir and unpost.

// mgLs lists a folder through ?ls: its entries' names (folders with a
// trailing slash), sorted.
func mgLs(t *testing.T, s *server, p string, hdr ...string) []string {
	t.Helper()
	resp, body := s.do(t, "GET", p+"?ls", nil, hdr...)
	wantStatus(t, resp, body, http.StatusOK)
	var r struct {
		Dirs, Files []struct {
			Href string `json:"href"`
		}
	}
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatalf("?ls of %s: %v: %s", p, err, body)
	}
	var out []string
	for _, d := range r.Dirs {
		n, _ := url.PathUnescape(strings.TrimSuffix(d.Href, "/"))
		out = append(out, n+"/")
	}
	for _, f := range r.Files {
		n, _ := url.PathUnescape(f.Href)
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

func mgJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mgRead(t *testing.T, dir, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
	if err != nil {
		t.Fatalf("%s: %v", rel, err)
	}
	return string(b)
}

// TestManageOps: each operation succeeds, and the disk, ?ls and search
// agree afterwards.
func TestManageOps(t *testing.T) {
	top, other := t.TempDir(), t.TempDir()
	writeFile(t, top, "gone.txt", []byte("1"))
	writeFile(t, top, "list/one.txt", []byte("22"))
	writeFile(t, top, "list/tree/deep/two.txt", []byte("333"))
	writeFile(t, top, "list/keep.txt", []byte("4444"))
	writeFile(t, top, "mv.txt", []byte("move me"))
	writeFile(t, top, "xv.txt", []byte("cross volume"))
	writeFile(t, top, "cp.txt", []byte("copy me"))
	writeFile(t, top, "fold/in.txt", []byte("in a folder"))
	auth := basicAuth("u:pw")
	s := start(t, "-a", "u:pw", "-v", top+"::rwmd,u", "-v", other+":b:rwmd,u", "-e2dsa")
	waitReady(t, s, auth)
	waitHits(t, s, "txt", []string{"/cp.txt", "/fold/in.txt", "/gone.txt", "/list/keep.txt", "/list/one.txt", "/list/tree/deep/two.txt", "/mv.txt", "/xv.txt"}, auth)

	// One path.
	resp, body := s.do(t, "POST", "/gone.txt?delete", nil, auth)
	wantStatus(t, resp, body, http.StatusOK)
	if !strings.HasPrefix(string(body), "deleted 1 files") {
		t.Errorf("delete reply %q", body)
	}
	// A JSON list, as u2c.py --dr sends it (no leading slash, unescaped)
	// and as the browser does (leading slash).
	resp, body = s.do(t, "POST", "/list/?delete", mgJSON(t, []string{"list/one.txt", "/list/tree"}), "Content-Type: application/json", auth)
	wantStatus(t, resp, body, http.StatusOK)
	if string(body) != "deleted 2 files (and 2/2 folders)\n" {
		t.Errorf("delete reply %q", body)
	}
	// Move and rename, into a new folder, a name needing escapes.
	resp, body = s.do(t, "POST", "/mv.txt?move="+url.QueryEscape("/new dir/moved #1.txt"), nil, auth)
	wantStatus(t, resp, body, http.StatusCreated)
	// Into another volume.
	resp, body = s.do(t, "POST", "/xv.txt?move=/b/xv.txt", nil, auth)
	wantStatus(t, resp, body, http.StatusCreated)
	// A folder.
	resp, body = s.do(t, "POST", "/fold?move=/b/fold2", nil, auth)
	wantStatus(t, resp, body, http.StatusCreated)
	// Copy.
	resp, body = s.do(t, "POST", "/cp.txt?copy=/b/cp2.txt", nil, auth)
	wantStatus(t, resp, body, http.StatusCreated)
	// mkdir, multipart and urlencoded.
	form, ct := multipartForm(t, formPart{"act", "", []byte("mkdir")}, formPart{"name", "", []byte("made here")})
	resp, body = s.do(t, "POST", "/b/", form, ct, auth)
	wantStatus(t, resp, body, http.StatusCreated)
	if got := resp.Header.Get("X-New-Dir"); got != "/b/made%20here" {
		t.Errorf("X-New-Dir = %q", got)
	}
	resp, body = s.do(t, "POST", "/b/fold2/", []byte("act=mkdir&name=sub%2Fdeeper"), "Content-Type: application/x-www-form-urlencoded", auth)
	wantStatus(t, resp, body, http.StatusCreated)
	if got := resp.Header.Get("X-New-Dir"); got != "/b/fold2/sub/deeper" {
		t.Errorf("X-New-Dir = %q", got)
	}

	// The disk.
	wantTop := []string{"cp.txt", "list", "list/keep.txt", "new dir", "new dir/moved #1.txt"}
	if got := tree(t, top); !slices.Equal(slices.DeleteFunc(got, func(p string) bool { return strings.HasPrefix(p, ".hist") }), wantTop) {
		t.Errorf("top volume = %q, want %q", got, wantTop)
	}
	wantB := []string{"cp2.txt", "fold2", "fold2/in.txt", "fold2/sub", "fold2/sub/deeper", "made here", "xv.txt"}
	if got := tree(t, other); !slices.Equal(slices.DeleteFunc(got, func(p string) bool { return strings.HasPrefix(p, ".hist") }), wantB) {
		t.Errorf("volume b = %q, want %q", got, wantB)
	}
	if mgRead(t, top, "new dir/moved #1.txt") != "move me" || mgRead(t, other, "xv.txt") != "cross volume" ||
		mgRead(t, other, "cp2.txt") != "copy me" || mgRead(t, top, "cp.txt") != "copy me" || mgRead(t, other, "fold2/in.txt") != "in a folder" {
		t.Error("moved or copied contents differ")
	}
	// ?ls.
	if got, want := mgLs(t, s, "/", auth), []string{"b/", "cp.txt", "list/", "new dir/"}; !slices.Equal(got, want) {
		t.Errorf("?ls / = %q, want %q", got, want)
	}
	if got, want := mgLs(t, s, "/b/", auth), []string{"cp2.txt", "fold2/", "made here/", "xv.txt"}; !slices.Equal(got, want) {
		t.Errorf("?ls /b/ = %q, want %q", got, want)
	}
	// Search.
	waitHits(t, s, "txt", []string{"/b/cp2.txt", "/b/fold2/in.txt", "/b/xv.txt", "/cp.txt", "/list/keep.txt", "/new%20dir/moved%20%231.txt"}, auth)
}

// TestManagePerms is the permission matrix: d deletes, m+w moves, r+w
// copies, w makes folders, overwriting needs d too; an anonymous user
// without the permission is asked to log in (401), a known one refused
// (403); a refusal changes nothing.
func TestManagePerms(t *testing.T) {
	dir := t.TempDir()
	users := []string{"r", "w", "m", "d", "rw", "wm", "rwm", "rwd", "rwmd"}
	args := []string{"-v", dir + "::"}
	var groups []string
	for _, u := range users {
		args = append(args, "-a", "u"+u+":pw-"+u)
		groups = append(groups, u+",u"+u)
	}
	args[1] += strings.Join(groups, ":")
	args = append(args, "-a", "nobody:pw-nobody")
	s := start(t, args...)
	type op struct {
		name string
		need string // letters needed, all of them
		run  func(who, auth string) (*http.Response, []byte)
		done func(who string) bool // the change happened
	}
	ops := []op{
		{"delete", "d", func(who, auth string) (*http.Response, []byte) {
			writeFile(t, dir, "del-"+who+".txt", []byte("x"))
			return s.do(t, "POST", "/del-"+who+".txt?delete", nil, auth)
		}, func(who string) bool { return !pathExists(dir, "del-"+who+".txt") }},
		{"delete list", "d", func(who, auth string) (*http.Response, []byte) {
			writeFile(t, dir, "dl-"+who+".txt", []byte("x"))
			return s.do(t, "POST", "/?delete", mgJSON(t, []string{"dl-" + who + ".txt"}), "Content-Type: application/json", auth)
		}, func(who string) bool { return !pathExists(dir, "dl-"+who+".txt") }},
		{"move", "mw", func(who, auth string) (*http.Response, []byte) {
			writeFile(t, dir, "mv-"+who+".txt", []byte("x"))
			return s.do(t, "POST", "/mv-"+who+".txt?move=/moved-"+who+".txt", nil, auth)
		}, func(who string) bool {
			return pathExists(dir, "moved-"+who+".txt") && !pathExists(dir, "mv-"+who+".txt")
		}},
		{"copy", "rw", func(who, auth string) (*http.Response, []byte) {
			writeFile(t, dir, "cp-"+who+".txt", []byte("x"))
			return s.do(t, "POST", "/cp-"+who+".txt?copy=/copied-"+who+".txt", nil, auth)
		}, func(who string) bool { return pathExists(dir, "copied-"+who+".txt") }},
		{"copy over", "rwd", func(who, auth string) (*http.Response, []byte) {
			writeFile(t, dir, "co-"+who+".txt", []byte("new"))
			writeFile(t, dir, "co-old-"+who+".txt", []byte("old"))
			return s.do(t, "POST", "/co-"+who+".txt?copy=/co-old-"+who+".txt&replace", nil, auth)
		}, func(who string) bool { return fileHolds(dir, "co-old-"+who+".txt", "new") }},
		{"mkdir", "w", func(who, auth string) (*http.Response, []byte) {
			form, ct := multipartForm(t, formPart{"act", "", []byte("mkdir")}, formPart{"name", "", []byte("md-" + who)})
			return s.do(t, "POST", "/", form, ct, auth)
		}, func(who string) bool { return pathExists(dir, "md-"+who) }},
	}
	for _, o := range ops {
		for _, u := range append([]string{"anon", "nobody"}, users...) {
			auth, ok := matrixAuth(u, o.need)
			resp, body := o.run(u, auth)
			want := http.StatusForbidden
			switch {
			case ok && (o.name == "move" || o.name == "copy" || o.name == "copy over" || o.name == "mkdir"):
				want = http.StatusCreated
			case ok:
				want = http.StatusOK
			case u == "anon":
				want = http.StatusUnauthorized
			}
			if resp.StatusCode != want {
				t.Errorf("%s as %s: %d %s, want %d", o.name, u, resp.StatusCode, body, want)
			}
			if want == http.StatusUnauthorized && resp.Header.Get("WWW-Authenticate") == "" {
				t.Errorf("%s as %s: 401 without WWW-Authenticate", o.name, u)
			}
			if o.done(u) != ok {
				t.Errorf("%s as %s: done = %v, want %v", o.name, u, !ok, ok)
			}
		}
	}
}

// TestManageRefusals: what must not happen gets a clear 4xx and changes
// nothing.
func TestManageRefusals(t *testing.T) {
	dir, other := t.TempDir(), t.TempDir()
	writeFile(t, dir, "a.txt", []byte("a"))
	writeFile(t, dir, "b.txt", []byte("b"))
	writeFile(t, dir, "d/sub/c.txt", []byte("c"))
	auth := basicAuth("u:pw")
	s := start(t, "-a", "u:pw", "-v", dir+":v:rwmd,u", "-v", other+":o:rwmd,u", "-e2dsa")
	waitReady(t, s, auth)
	noHist := func(p string) bool { return strings.HasPrefix(p, ".hist") }
	before := slices.DeleteFunc(tree(t, dir), noHist)
	beforeO := slices.DeleteFunc(tree(t, other), noHist)
	cases := []struct {
		name, method, path string
		body               []byte
		hdr                []string
		want               int
	}{
		{"delete a volume's top", "POST", "/v/?delete", nil, nil, 400},
		{"delete a volume's top by list", "POST", "/?delete", mgJSON(t, []string{"/v"}), []string{"Content-Type: application/json"}, 400},
		{"delete .hist", "POST", "/v/.hist?delete", nil, nil, 0},
		{"delete .hist by list", "POST", "/?delete", mgJSON(t, []string{"v/.hist/"}), []string{"Content-Type: application/json"}, 0},
		{"delete in no volume", "POST", "/?delete", mgJSON(t, []string{"/nowhere/x"}), []string{"Content-Type: application/json"}, 403},
		{"delete a list ending in no volume", "POST", "/?delete", mgJSON(t, []string{"/v/a.txt", "/nowhere/x"}), []string{"Content-Type: application/json"}, 403},
		{"delete a list ending with ..", "POST", "/?delete", mgJSON(t, []string{"/v/a.txt", "/v/../x"}), []string{"Content-Type: application/json"}, 400},
		{"delete with ..", "POST", "/?delete", mgJSON(t, []string{"/v/../etc/passwd"}), []string{"Content-Type: application/json"}, 400},
		{"delete encoded ..", "POST", "/?delete", mgJSON(t, []string{"/v/%2e%2e/x"}), []string{"Content-Type: application/json"}, 400},
		{"delete missing", "POST", "/v/nope.txt?delete", nil, nil, 404},
		{"delete bad json", "POST", "/?delete", []byte(`["v/a.txt"`), []string{"Content-Type: application/json"}, 422},
		{"delete json not a list", "POST", "/?delete", []byte(`{"a":1}`), []string{"Content-Type: application/json"}, 422},
		{"delete empty list", "POST", "/?delete", []byte(`[]`), []string{"Content-Type: application/json"}, 400},
		{"delete huge list", "POST", "/?delete", append(append([]byte(`["`), make([]byte, 1<<20)...), '"', ']'), []string{"Content-Type: application/json"}, 413},
		{"move a volume's top", "POST", "/v/?move=/o/v", nil, nil, 400},
		{"move into itself", "POST", "/v/d?move=/v/d/sub/d", nil, nil, 400},
		{"move onto itself", "POST", "/v/a.txt?move=/v/a.txt", nil, nil, 0},
		{"move onto existing", "POST", "/v/a.txt?move=/v/b.txt", nil, nil, 409},
		{"copy onto existing", "POST", "/v/a.txt?copy=/v/b.txt", nil, nil, 409},
		{"move onto a volume's top", "POST", "/v/a.txt?move=/o/", nil, nil, 409},
		{"move to .hist", "POST", "/v/a.txt?move=/v/.hist/a.txt", nil, nil, 0},
		{"move to a PARTIAL name", "POST", "/v/a.txt?move=/v/x.PARTIAL", nil, nil, 400},
		{"move with ..", "POST", "/v/a.txt?move=/v/../../x", nil, nil, 400},
		{"move with escaped ..", "POST", "/v/a.txt?move=" + url.QueryEscape("/v/%2e%2e/%2e%2e/x"), nil, nil, 400},
		{"move with escaped slash", "POST", "/v/a.txt?move=" + url.QueryEscape("/o/..%2fx"), nil, nil, 400},
		{"move with a backslash", "POST", "/v/a.txt?move=" + url.QueryEscape(`/o/..\x`), nil, nil, 400},
		{"move with a NUL", "POST", "/v/a.txt?move=/o/a%00b", nil, nil, 400},
		{"move to another host", "POST", "/v/a.txt?move=" + url.QueryEscape("http://evil.example/o/x"), nil, nil, 400},
		{"move to //host", "POST", "/v/a.txt?move=" + url.QueryEscape("//evil.example/o/x"), nil, nil, 400},
		{"move to no volume", "POST", "/v/a.txt?move=/elsewhere/x", nil, nil, 403},
		{"move without dst", "POST", "/v/a.txt?move=", nil, nil, 400},
		{"move missing", "POST", "/v/nope?move=/o/nope", nil, nil, 404},
		{"copy a folder into itself", "POST", "/v/d?copy=/v/d/sub/x", nil, nil, 400},
		{"mkdir with ..", "POST", "/v/", []byte("act=mkdir&name=..%2F..%2Fx"), []string{"Content-Type: application/x-www-form-urlencoded"}, 400},
		{"mkdir absolute", "POST", "/v/", []byte("act=mkdir&name=%2Fo%2Fx"), []string{"Content-Type: application/x-www-form-urlencoded"}, 400},
		{"mkdir empty", "POST", "/v/", []byte("act=mkdir&name="), []string{"Content-Type: application/x-www-form-urlencoded"}, 400},
		{"mkdir existing", "POST", "/v/", []byte("act=mkdir&name=d"), []string{"Content-Type: application/x-www-form-urlencoded"}, 409},
		{"mkdir .hist", "POST", "/v/", []byte("act=mkdir&name=.hist"), []string{"Content-Type: application/x-www-form-urlencoded"}, 0},
		{"mkdir too long", "POST", "/v/", []byte("act=mkdir&name=" + strings.Repeat("x", 600)), []string{"Content-Type: application/x-www-form-urlencoded"}, 400},
	}
	// From another site's page: the browser attaches cached Basic
	// credentials, so the cross-origin check applies to these too.
	xs := []string{"Sec-Fetch-Site: cross-site"}
	form, ct := multipartForm(t, formPart{"act", "", []byte("mkdir")}, formPart{"name", "", []byte("csrf")})
	cases = append(cases, []struct {
		name, method, path string
		body               []byte
		hdr                []string
		want               int
	}{
		{"cross-site delete", "POST", "/v/a.txt?delete", nil, xs, 403},
		{"cross-site delete list", "POST", "/?delete", mgJSON(t, []string{"/v/a.txt"}), append(xs, "Content-Type: text/plain"), 403},
		{"cross-site move", "POST", "/v/a.txt?move=/o/a.txt", nil, append(xs, "Origin: http://evil.example"), 403},
		{"cross-site copy", "POST", "/v/a.txt?copy=/o/a.txt", nil, xs, 403},
		{"cross-site mkdir", "POST", "/v/", form, append(xs, ct), 403},
		{"cross-site urlencoded mkdir", "POST", "/v/", []byte("act=mkdir&name=csrf"), append(xs, "Content-Type: application/x-www-form-urlencoded"), 403},
	}...)
	// The same holds for uploads with cached Basic credentials (the
	// hole is one of a class: any change a page could ask for).
	upf, upct := multipartForm(t, formPart{"act", "", []byte("bput")}, formPart{"f", "planted.txt", []byte("x")})
	cases = append(cases, struct {
		name, method, path string
		body               []byte
		hdr                []string
		want               int
	}{"cross-site upload", "POST", "/v/", upf, append(xs, upct), 403})
	for _, c := range cases {
		resp, body := s.do(t, c.method, c.path, c.body, append(c.hdr, auth)...)
		if c.want != 0 && resp.StatusCode != c.want || resp.StatusCode < 400 || resp.StatusCode >= 500 {
			t.Errorf("%s: %d %s, want %d", c.name, resp.StatusCode, body, c.want)
		} else if len(strings.TrimSpace(string(body))) == 0 {
			t.Errorf("%s: %d with no message", c.name, resp.StatusCode)
		}
		if got := slices.DeleteFunc(tree(t, dir), noHist); !slices.Equal(got, before) {
			t.Fatalf("%s changed the disk: %q, was %q", c.name, got, before)
		}
		if got := slices.DeleteFunc(tree(t, other), noHist); !slices.Equal(got, beforeO) {
			t.Fatalf("%s changed the other volume: %q, was %q", c.name, got, beforeO)
		}
	}
	if !pathExists(dir, ".hist/secret") || !pathExists(dir, ".hist/idx") {
		t.Error("the state folder lost files")
	}
	waitHits(t, s, "txt", []string{"/v/a.txt", "/v/b.txt", "/v/d/sub/c.txt"}, auth)
}

// TestManageUnpost: the uploader may delete their own upload without d,
// within --unpost; nobody else may, and never a folder.
func TestManageUnpost(t *testing.T) {
	dir := t.TempDir()
	s := start(t, "-a", "ann:pw1", "-a", "bob:pw2", "-v", dir+"::rw,ann,bob", "-e2d")
	ann, bob := basicAuth("ann:pw1"), basicAuth("bob:pw2")
	waitReady(t, s, ann)
	for _, n := range []string{"mine.txt", "mine2.txt"} {
		resp, body := s.do(t, "PUT", "/up/"+n, []byte("mine"), ann)
		wantStatus(t, resp, body, http.StatusCreated)
	}
	writeFile(t, dir, "up/scanned.txt", []byte("not uploaded"))
	// Without &unpost, w is not enough.
	resp, body := s.do(t, "POST", "/up/mine.txt?delete", nil, ann)
	wantStatus(t, resp, body, http.StatusForbidden)
	// Another user may not.
	resp, body = s.do(t, "POST", "/?delete&unpost&lim=1", mgJSON(t, []string{"/up/mine.txt"}), "Content-Type: text/plain;charset=UTF-8", bob)
	wantStatus(t, resp, body, http.StatusForbidden)
	if !strings.Contains(string(body), "not uploaded by (You)") {
		t.Errorf("bob's unpost: %s", body)
	}
	// Nor a file that was not uploaded, nor a folder.
	resp, body = s.do(t, "POST", "/?delete&unpost", mgJSON(t, []string{"/up/scanned.txt"}), "Content-Type: text/plain;charset=UTF-8", ann)
	if resp.StatusCode < 400 || resp.StatusCode >= 500 {
		t.Errorf("unpost of a scanned file: %d %s", resp.StatusCode, body)
	}
	resp, body = s.do(t, "POST", "/up?delete&unpost", nil, ann)
	wantStatus(t, resp, body, http.StatusBadRequest)
	if !pathExists(dir, "up/mine.txt") || !pathExists(dir, "up/scanned.txt") {
		t.Fatal("a refused unpost deleted something")
	}
	// An anonymous uploader refused gets 403 with the reason, not a
	// password prompt.
	resp, body = s.do(t, "POST", "/?delete&unpost", mgJSON(t, []string{"/up/mine.txt"}), "Content-Type: text/plain;charset=UTF-8")
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(body), "you cannot delete this") && !strings.Contains(string(body), "may not") {
		t.Errorf("anonymous unpost: %d %s", resp.StatusCode, body)
	}
	// The uploader, as copyparty's browser asks.
	resp, body = s.do(t, "POST", "/?delete&unpost&lim=1", mgJSON(t, []string{"/up/mine.txt"}), "Content-Type: text/plain;charset=UTF-8", ann)
	wantStatus(t, resp, body, http.StatusOK)
	resp, body = s.do(t, "POST", "/up/mine2.txt?delete&unpost", nil, ann)
	wantStatus(t, resp, body, http.StatusOK)
	if pathExists(dir, "up/mine.txt") || pathExists(dir, "up/mine2.txt") {
		t.Fatal("unposted files are still there")
	}
	if got, want := mgLs(t, s, "/up/", ann), []string{"scanned.txt"}; !slices.Equal(got, want) {
		t.Errorf("?ls = %q, want %q", got, want)
	}
	waitHits(t, s, "mine", nil, ann)
}

// TestManageU2CDelete: u2c.py --dr, re-run after local deletes, removes
// exactly those remote files and exits 0.
func TestManageU2CDelete(t *testing.T) {
	u2cNeed(t)
	vol, src := t.TempDir(), t.TempDir()
	tr := filepath.Join(src, "tree")
	for _, n := range []string{"a.txt", "b b.txt", "sub/c.txt", "sub/ünï.txt", "sub/deeper/d.txt", "gone/e.txt"} {
		writeFile(t, tr, n, []byte("content of "+n))
	}
	s := start(t, "-a", "u:pw", "-v", vol+"::rwd,u", "-e2d")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out, err := u2cRun(t, ctx, "-a", "pw", s.URL+"/up/", tr)
	if err != nil {
		t.Fatalf("u2c: %v\n%s", err, out)
	}
	for _, n := range []string{"b b.txt", "sub/ünï.txt", "gone/e.txt"} {
		if err := os.Remove(filepath.Join(tr, n)); err != nil {
			t.Fatal(err)
		}
	}
	os.Remove(filepath.Join(tr, "gone"))
	out, err = u2cRun(t, ctx, "-a", "pw", "--dr", s.URL+"/up/", tr)
	if err != nil {
		t.Fatalf("u2c --dr: %v\n%s\nserver log:\n%s", err, out, s.logs)
	}
	got := slices.DeleteFunc(tree(t, vol), func(p string) bool { return strings.HasPrefix(p, ".hist") })
	want := []string{"up", "up/tree", "up/tree/a.txt", "up/tree/sub", "up/tree/sub/c.txt", "up/tree/sub/deeper", "up/tree/sub/deeper/d.txt"}
	if !slices.Equal(got, want) {
		t.Fatalf("after --dr the server has %q, want %q\n%s", got, want, out)
	}
}

// TestManageInShare: a share's visitor cannot delete, move, copy or make
// folders through it, not even with a share that grants every letter
// (the paths these requests carry would reach outside the share).
func TestManageInShare(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "proj/a.txt", []byte("a"))
	writeFile(t, dir, "other/b.txt", []byte("b"))
	s := start(t, shareArgs(dir)...)
	makeShare(t, s, "apw", map[string]any{"k": "all", "vp": []string{"/proj/"}, "pw": "", "exp": "60", "perms": []string{"read", "write", "move", "delete"}}, 201)
	before := tree(t, dir)
	for _, c := range []struct {
		path string
		body []byte
		hdr  []string
	}{
		{"/shr/all/a.txt?delete", nil, nil},
		{"/shr/all/?delete", mgJSON(t, []string{"/other/b.txt"}), []string{"Content-Type: application/json"}},
		{"/shr/all/a.txt?move=/other/a.txt", nil, nil},
		{"/shr/all/a.txt?copy=/other/a.txt", nil, nil},
		{"/shr/all/", []byte("act=mkdir&name=x"), []string{"Content-Type: application/x-www-form-urlencoded"}},
	} {
		resp, body := s.do(t, "POST", c.path, c.body, c.hdr...)
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s: %d %s, want 403", c.path, resp.StatusCode, body)
		}
	}
	if got := tree(t, dir); !slices.Equal(slices.DeleteFunc(got, func(p string) bool { return strings.HasPrefix(p, ".hist") }),
		slices.DeleteFunc(before, func(p string) bool { return strings.HasPrefix(p, ".hist") })) {
		t.Fatalf("the volume changed: %q, was %q", got, before)
	}
}

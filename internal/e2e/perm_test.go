package e2e

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// rsBasic is an Authorization header line for HTTP Basic auth.
func rsBasic(userpass string) string {
	return "Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte(userpass))
}

// rsFileIs reports whether the file below dir holds exactly want.
func rsFileIs(dir, rel, want string) bool {
	b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
	return err == nil && string(b) == want
}

func rsExists(dir, rel string) bool {
	_, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(rel)))
	return err == nil
}

// TestPermMatrix checks every permission letter (and a few combinations)
// against every operation the server has: user u holds the letters, the
// anonymous user holds nothing.
func TestPermMatrix(t *testing.T) {
	t.Parallel()
	for _, tc := range permCases {
		t.Run("perm "+tc.letters, func(t *testing.T) {
			t.Parallel()
			runPermCase(t, tc, func(dir string) *server {
				return start(t, "-a", "u:pw1", "-v", dir+"::"+tc.letters+",u")
			})
		})
	}
}

const (
	pmNone  = ""
	pmIndex = "INDEX-PAGE"
	pmList  = "x.txt"
)

// permCase is one row of the permission matrix.
type permCase struct {
	letters    string
	getFile    int
	getMissing int
	ls         int
	lsShows    bool     // ?ls lists the files
	perms      []string // ?ls perms when ls is 200
	html       int      // GET /sub/
	htmlHas    string   // what the page must contain
	put        int
	replace    int
	post       int
	dots       bool // ?ls&dots lists .dot
}

var permCases = []permCase{
	{"r", 200, 404, 200, true, []string{"read"}, 200, pmList, 403, 403, 403, false},
	{"w", 403, 403, 200, false, []string{"write"}, 200, pmNone, 201, 403, 201, false},
	{"m", 403, 403, 403, false, nil, 403, pmNone, 403, 403, 403, false},
	{"d", 403, 403, 403, false, nil, 403, pmNone, 403, 403, 403, false},
	{"g", 200, 403, 403, false, nil, 403, pmNone, 403, 403, 403, false},
	{"G", 200, 403, 403, false, nil, 403, pmNone, 403, 403, 403, false},
	{"h", 200, 403, 403, false, nil, 200, pmIndex, 403, 403, 403, false},
	{".", 403, 403, 403, false, nil, 403, pmNone, 403, 403, 403, false},
	{"a", 403, 403, 403, false, nil, 403, pmNone, 403, 403, 403, false},
	{"A", 200, 404, 200, true, []string{"read", "write", "move", "delete", "dot", "admin"}, 200, pmList, 201, 201, 201, true},
	{"rw", 200, 404, 200, true, []string{"read", "write"}, 200, pmList, 201, 403, 201, false},
	{"rwd", 200, 404, 200, true, []string{"read", "write", "delete"}, 200, pmList, 201, 201, 201, false},
	{"r.", 200, 404, 200, true, []string{"read", "dot"}, 200, pmList, 403, 403, 403, true},
	{"wd", 403, 403, 200, false, []string{"write", "delete"}, 200, pmNone, 201, 201, 201, false},
	{"rg", 200, 404, 200, true, []string{"read", "get"}, 200, pmList, 403, 403, 403, false},
}

// runPermCase checks one row against a server that start runs with user
// u (password pw1) holding tc.letters on the volume dir at /.
func runPermCase(t *testing.T, tc permCase, start func(dir string) *server) {
	dir := t.TempDir()
	writeFile(t, dir, "f.txt", []byte("F-CONTENT"))
	writeFile(t, dir, "r.txt", []byte("R-OLD"))
	writeFile(t, dir, ".dot", []byte("D"))
	writeFile(t, dir, "sub/index.html", []byte("<p>"+pmIndex+"</p>"))
	writeFile(t, dir, "sub/x.txt", []byte("X"))
	s := start(dir)
	cred := "PW: pw1"

	t.Run("anonymous gets 401", func(t *testing.T) {
		resp, body := s.do(t, "GET", "/f.txt", nil)
		wantStatus(t, resp, body, http.StatusUnauthorized)
		if got := resp.Header.Get("WWW-Authenticate"); !strings.HasPrefix(got, `Basic realm="hoard"`) {
			t.Errorf("WWW-Authenticate = %q, want Basic realm=\"hoard\"", got)
		}
	})
	t.Run("GET file", func(t *testing.T) {
		resp, body := s.do(t, "GET", "/f.txt", nil, cred)
		wantStatus(t, resp, body, tc.getFile)
		if got := strings.Contains(string(body), "F-CONTENT"); got != (tc.getFile == 200) {
			t.Errorf("body has the file: %v, want %v", got, tc.getFile == 200)
		}
	})
	t.Run("GET missing file", func(t *testing.T) {
		resp, body := s.do(t, "GET", "/missing.txt", nil, cred)
		wantStatus(t, resp, body, tc.getMissing)
	})
	t.Run("ls", func(t *testing.T) {
		resp, body := s.do(t, "GET", "/?ls", nil, cred)
		wantStatus(t, resp, body, tc.ls)
		if tc.ls != 200 {
			if strings.Contains(string(body), "f.txt") {
				t.Errorf("refused listing names f.txt: %s", body)
			}
			return
		}
		l := rsDecodeLs(t, body)
		_, files := rsNames(t, l)
		if got := slices.Contains(files, "f.txt"); got != tc.lsShows {
			t.Errorf("files = %q: lists f.txt %v, want %v", files, got, tc.lsShows)
		}
		if !tc.lsShows && (len(l.Dirs) != 0 || len(l.Files) != 0) {
			t.Errorf("write-only listing: dirs %v files %v, want both empty", l.Dirs, l.Files)
		}
		if !reflect.DeepEqual(l.Perms, tc.perms) {
			t.Errorf("perms = %q, want %q", l.Perms, tc.perms)
		}
		if l.Acct != "u" {
			t.Errorf("acct = %q, want u", l.Acct)
		}
	})
	t.Run("ls=t", func(t *testing.T) {
		resp, body := s.do(t, "GET", "/sub/?ls=t", nil, cred)
		wantStatus(t, resp, body, tc.ls)
		if got := strings.Contains(string(body), "x.txt"); got != tc.lsShows {
			t.Errorf("text listing names x.txt: %v, want %v", got, tc.lsShows)
		}
	})
	t.Run("GET folder page", func(t *testing.T) {
		resp, body := s.do(t, "GET", "/sub/", nil, cred)
		wantStatus(t, resp, body, tc.html)
		if tc.htmlHas != "" && !strings.Contains(string(body), tc.htmlHas) {
			t.Errorf("page lacks %q: %.300s", tc.htmlHas, body)
		}
		if tc.htmlHas != pmList && strings.Contains(string(body), "x.txt") {
			t.Errorf("page names x.txt, want no listing: %.300s", body)
		}
		if tc.htmlHas != pmIndex && strings.Contains(string(body), pmIndex) {
			t.Errorf("page serves index.html, want not: %.300s", body)
		}
	})
	t.Run("dots", func(t *testing.T) {
		resp, body := s.do(t, "GET", "/?ls&dots", nil, cred)
		wantStatus(t, resp, body, tc.ls)
		if got := strings.Contains(string(body), ".dot"); got != tc.dots {
			t.Errorf("?ls&dots lists .dot: %v, want %v", got, tc.dots)
		}
	})
	t.Run("PUT", func(t *testing.T) {
		resp, body := s.do(t, "PUT", "/new.txt", []byte("NEW"), cred)
		wantStatus(t, resp, body, tc.put)
		if got := rsFileIs(dir, "new.txt", "NEW"); got != (tc.put == 201) {
			t.Errorf("new.txt stored: %v, want %v", got, tc.put == 201)
		}
	})
	t.Run("PUT replace", func(t *testing.T) {
		resp, body := s.do(t, "PUT", "/r.txt?replace", []byte("R-NEW"), cred)
		wantStatus(t, resp, body, tc.replace)
		want := "R-OLD"
		if tc.replace == 201 {
			want = "R-NEW"
		}
		if !rsFileIs(dir, "r.txt", want) {
			t.Errorf("r.txt does not hold %q after the request", want)
		}
	})
	t.Run("PUT Replace header", func(t *testing.T) {
		writeFile(t, dir, "r2.txt", []byte("R-OLD"))
		resp, body := s.do(t, "PUT", "/r2.txt", []byte("R-NEW"), cred, "Replace: 1")
		wantStatus(t, resp, body, tc.replace)
	})
	t.Run("multipart POST", func(t *testing.T) {
		mp, ct := rsMultipart(t, [2]string{"mp.txt", "MP"})
		resp, body := s.do(t, "POST", "/", mp, cred, ct)
		wantStatus(t, resp, body, tc.post)
		if got := rsFileIs(dir, "mp.txt", "MP"); got != (tc.post == 201) {
			t.Errorf("mp.txt stored: %v, want %v", got, tc.post == 201)
		}
	})
	t.Run("anonymous writes get 401", func(t *testing.T) {
		resp, body := s.do(t, "PUT", "/anon.txt", []byte("A"))
		wantStatus(t, resp, body, http.StatusUnauthorized)
		mp, ct := rsMultipart(t, [2]string{"anon2.txt", "A"})
		resp, body = s.do(t, "POST", "/", mp, ct)
		wantStatus(t, resp, body, http.StatusUnauthorized)
		if rsExists(dir, "anon.txt") || rsExists(dir, "anon2.txt") {
			t.Errorf("anonymous upload stored, want nothing")
		}
	})
}

// TestPermAuth checks every way of sending a password and the 401/403 rule.
func TestPermAuth(t *testing.T) {
	t.Parallel()
	a, b := t.TempDir(), t.TempDir()
	writeFile(t, a, "f.txt", []byte("PRIVATE"))
	writeFile(t, b, "p.txt", []byte("PUBLIC"))
	s := start(t, "--log-level", "debug", "-a", "u:pw-user", "-a", "o:pw-other", "-v", a+"::r,u", "-v", b+":pub:r")
	cases := []struct {
		name, path string
		hdr        []string
		status     int
	}{
		{"no credentials", "/f.txt", nil, 401},
		{"PW header", "/f.txt", []string{"PW: pw-user"}, 200},
		{"pw query", "/f.txt?pw=pw-user", nil, 200},
		{"basic user:pass", "/f.txt", []string{rsBasic("u:pw-user")}, 200},
		{"basic any-name:pass", "/f.txt", []string{rsBasic("whoever:pw-user")}, 200},
		{"basic password only", "/f.txt", []string{rsBasic("pw-user")}, 200},
		{"cookie", "/f.txt", []string{"Cookie: cppwd=pw-user"}, 200},
		{"other user PW", "/f.txt", []string{"PW: pw-other"}, 403},
		{"other user basic", "/f.txt", []string{rsBasic("o:pw-other")}, 403},
		{"other user cookie", "/f.txt", []string{"Cookie: cppwd=pw-other"}, 403},
		{"other user pw query", "/f.txt?pw=pw-other", nil, 403},
		{"public, anonymous", "/pub/p.txt", nil, 200},
		{"public, other user", "/pub/p.txt", []string{"PW: pw-other"}, 200},
		{"public listing, anonymous", "/pub/?ls", nil, 200},
		{"private listing, anonymous", "/?ls", nil, 401},
		{"private listing, other user", "/?ls", []string{"PW: pw-other"}, 403},
		{"private tree, anonymous", "/?tree=.", nil, 401},
		{"private tree, other user", "/?tree", []string{"PW: pw-other"}, 403},
		{"private missing file, anonymous", "/nope.txt", nil, 401},
		{"private page, anonymous", "/", nil, 401},
		{"PUT, anonymous", "/pub/x.txt", nil, 401},
		{"PUT, reader", "/x.txt", []string{"PW: pw-user"}, 403},
		// Wrong passwords last: after three the server slows down.
		{"wrong cookie", "/f.txt", []string{"Cookie: cppwd=wrong-pw"}, 401},
		{"wrong PW header", "/f.txt", []string{"PW: wrong-pw"}, 401},
		{"wrong pw query", "/f.txt?pw=wrong-pw", nil, 401},
		{"wrong basic", "/f.txt", []string{rsBasic("u:wrong-pw")}, 401},
		{"wrong PW on a public volume", "/pub/p.txt", []string{"PW: wrong-pw"}, 401},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			method := "GET"
			var body []byte
			if strings.HasPrefix(tc.name, "PUT") {
				method, body = "PUT", []byte("x")
			}
			resp, rb := s.do(t, method, tc.path, body, tc.hdr...)
			wantStatus(t, resp, rb, tc.status)
			if tc.status == 401 {
				if got := resp.Header.Get("WWW-Authenticate"); !strings.HasPrefix(got, `Basic realm="hoard"`) {
					t.Errorf("WWW-Authenticate = %q, want Basic realm=\"hoard\"", got)
				}
			}
			if tc.status != 200 && (strings.Contains(string(rb), "PRIVATE") || strings.Contains(string(rb), "wrong-pw")) {
				t.Errorf("refusal body = %q, want neither the file nor the password in it", rb)
			}
			if tc.status == 200 && strings.HasPrefix(tc.path, "/f.txt") && string(rb) != "PRIVATE" {
				t.Errorf("body = %q, want PRIVATE", rb)
			}
		})
	}
	t.Run("passwords never logged", func(t *testing.T) {
		for _, pw := range []string{"pw-user", "pw-other", "wrong-pw"} {
			if strings.Contains(s.logs.String(), pw) {
				t.Errorf("server log contains %q", pw)
			}
		}
	})
}

// TestPermWriteOnly: a w-only user uploads without seeing anything.
func TestPermWriteOnly(t *testing.T) {
	t.Parallel()
	dir, drop := t.TempDir(), t.TempDir()
	writeFile(t, dir, "f.txt", []byte("SECRET"))
	writeFile(t, dir, "sub/g.txt", []byte("SECRET"))
	writeFile(t, drop, "f.txt", []byte("SECRET"))
	s := start(t, "-a", "u:pw1", "-v", dir+"::w,u")
	anon := start(t, "-v", drop+"::w")
	cred := "PW: pw1"
	t.Run("PUT works, no key or listing in reply", func(t *testing.T) {
		resp, body := s.do(t, "PUT", "/up.txt", []byte("UP"), cred)
		wantStatus(t, resp, body, http.StatusCreated)
		if !rsFileIs(dir, "up.txt", "UP") {
			t.Errorf("up.txt not stored")
		}
	})
	cases := []struct {
		name, path, cred string
		status           int
	}{
		{"user GET existing file", "/f.txt", cred, 403},
		{"user GET uploaded file", "/up.txt", cred, 403},
		{"user GET missing file", "/missing.txt", cred, 403},
		{"user GET file in sub", "/sub/g.txt", cred, 403},
		{"anonymous GET existing file", "/f.txt", "", 401},
		{"anonymous GET missing file", "/missing.txt", "", 401},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var hdr []string
			if tc.cred != "" {
				hdr = append(hdr, tc.cred)
			}
			srv := s
			if tc.cred == "" {
				srv = anon
			}
			resp, body := srv.do(t, "GET", tc.path, nil, hdr...)
			wantStatus(t, resp, body, tc.status)
			if strings.Contains(string(body), "SECRET") {
				t.Errorf("body carries the file")
			}
		})
	}
	t.Run("anonymous PUT works", func(t *testing.T) {
		resp, body := anon.do(t, "PUT", "/up.txt", []byte("UP"))
		wantStatus(t, resp, body, http.StatusCreated)
		l := rsLsGet(t, anon, "/?ls")
		if len(l.Dirs) != 0 || len(l.Files) != 0 || !reflect.DeepEqual(l.Perms, []string{"write"}) {
			t.Errorf("anonymous listing: dirs %v files %v perms %q, want empty, empty, [write]", l.Dirs, l.Files, l.Perms)
		}
	})
	for _, path := range []string{"/?ls", "/sub/?ls"} {
		t.Run("listing "+path, func(t *testing.T) {
			l := rsLsGet(t, s, path, cred)
			if len(l.Dirs) != 0 || len(l.Files) != 0 {
				t.Errorf("dirs %v files %v, want both empty", l.Dirs, l.Files)
			}
			if !reflect.DeepEqual(l.Perms, []string{"write"}) {
				t.Errorf("perms = %q, want [write]", l.Perms)
			}
		})
	}
	for _, path := range []string{"/", "/?ls=t", "/?ls=v", "/?tree=.", "/?tree", "/sub/?tree", "/?ls&dots"} {
		t.Run("nothing shown by "+path, func(t *testing.T) {
			resp, body := s.do(t, "GET", path, nil, cred)
			wantStatus(t, resp, body, http.StatusOK)
			for _, n := range []string{"f.txt", "g.txt", "up.txt", `"sub"`, "sub/"} {
				if strings.Contains(string(body), n) {
					t.Errorf("GET %s shows %q to a write-only user: %.300s", path, n, body)
				}
			}
		})
	}
}

var rsKeyRE = regexp.MustCompile(`\?k=([A-Za-z0-9_-]+)`)

// TestPermGetAndFileKeys: g downloads by exact URL only; with fk it needs
// the file's key, which readers see in listings and G uploaders get back.
func TestPermGetAndFileKeys(t *testing.T) {
	t.Parallel()
	t.Run("g without fk", func(t *testing.T) {
		dir := t.TempDir()
		writeFile(t, dir, "sub/f.txt", []byte("F"))
		s := start(t, "-a", "gg:pw1", "-v", dir+"::g,gg")
		cases := []struct {
			name, path string
			status     int
		}{
			{"exact URL", "/sub/f.txt", 200},
			{"folder listing", "/sub/?ls", 403},
			{"folder page", "/sub/", 403},
			{"text listing", "/sub/?ls=t", 403},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				resp, body := s.do(t, "GET", tc.path, nil, "PW: pw1")
				wantStatus(t, resp, body, tc.status)
			})
		}
	})

	dir := t.TempDir()
	writeFile(t, dir, "f.txt", []byte("F-DATA"))
	writeFile(t, dir, "other.txt", []byte("O-DATA"))
	s := start(t, "-a", "gg:pw-g", "-a", "rr:pw-r", "-a", "up:pw-G", "-a", "wo:pw-w",
		"-v", dir+"::g,gg:r,rr:wG,up:w,wo:c,fk")
	l := rsLsGet(t, s, "/?ls", "PW: pw-r")
	keys := map[string]string{}
	for _, e := range l.Files {
		m := rsKeyRE.FindStringSubmatch(e.Href)
		if m == nil {
			t.Fatalf("reader's href %q has no ?k=, want one with volume flag fk", e.Href)
		}
		if len(m[1]) != 8 {
			t.Errorf("key %q has %d characters, want 8 (fk default)", m[1], len(m[1]))
		}
		keys[strings.SplitN(e.Href, "?", 2)[0]] = m[1]
	}
	if keys["f.txt"] == "" || keys["f.txt"] == keys["other.txt"] {
		t.Fatalf("keys = %v, want distinct keys for f.txt and other.txt", keys)
	}
	cases := []struct {
		name, path, cred string
		status           int
	}{
		{"g without key", "/f.txt", "PW: pw-g", 403},
		{"g with wrong key", "/f.txt?k=AAAAAAAA", "PW: pw-g", 403},
		{"g with empty key", "/f.txt?k=", "PW: pw-g", 403},
		{"g with another file's key", "/f.txt?k=" + keys["other.txt"], "PW: pw-g", 403},
		{"g with key prefix", "/f.txt?k=" + keys["f.txt"][:4], "PW: pw-g", 403},
		{"g with the key", "/f.txt?k=" + keys["f.txt"], "PW: pw-g", 200},
		{"g missing file", "/nope.txt?k=" + keys["f.txt"], "PW: pw-g", 403},
		{"r without key", "/f.txt", "PW: pw-r", 200},
		{"anonymous with the key", "/f.txt?k=" + keys["f.txt"], "", 401},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var hdr []string
			if tc.cred != "" {
				hdr = append(hdr, tc.cred)
			}
			resp, body := s.do(t, "GET", tc.path, nil, hdr...)
			wantStatus(t, resp, body, tc.status)
			if got := strings.Contains(string(body), "F-DATA"); got != (tc.status == 200) {
				t.Errorf("body has the file: %v, want %v", got, tc.status == 200)
			}
		})
	}
	t.Run("G uploader gets a working key", func(t *testing.T) {
		resp, body := s.do(t, "PUT", "/byG.txt?j", []byte("G-UP"), "PW: pw-G")
		wantStatus(t, resp, body, http.StatusCreated)
		var up struct{ URL string }
		if err := json.Unmarshal(body, &up); err != nil {
			t.Fatal(err)
		}
		m := rsKeyRE.FindStringSubmatch(up.URL)
		if m == nil {
			t.Fatalf("url = %q, want a ?k= for a G user", up.URL)
		}
		resp, body = s.do(t, "GET", "/byG.txt?k="+m[1], nil, "PW: pw-g")
		wantStatus(t, resp, body, http.StatusOK)
		if string(body) != "G-UP" {
			t.Errorf("body = %q, want G-UP", body)
		}
	})
	t.Run("w uploader gets no key", func(t *testing.T) {
		for _, form := range []struct{ path, accept string }{
			{"/byW1.txt", ""}, {"/byW2.txt?j", ""}, {"/byW3.txt", "Accept: url"},
		} {
			hdr := []string{"PW: pw-w"}
			if form.accept != "" {
				hdr = append(hdr, form.accept)
			}
			resp, body := s.do(t, "PUT", form.path, []byte("W-UP"), hdr...)
			wantStatus(t, resp, body, http.StatusCreated)
			if strings.Contains(string(body), "?k=") || strings.Contains(resp.Header.Get("Location"), "?k=") {
				t.Errorf("PUT %s by a w-only user: reply %q, Location %q, want no file key", form.path, body, resp.Header.Get("Location"))
			}
		}
		mp, ct := rsMultipart(t, [2]string{"byW4.txt", "W-UP"})
		resp, body := s.do(t, "POST", "/?j", mp, "PW: pw-w", ct)
		wantStatus(t, resp, body, http.StatusCreated)
		if strings.Contains(string(body), "?k=") {
			t.Errorf("multipart reply %s, want no file key", body)
		}
	})
	t.Run("fk length", func(t *testing.T) {
		dir := t.TempDir()
		writeFile(t, dir, "f.txt", []byte("F"))
		s := start(t, "-v", dir+"::r:c,fk=12")
		l := rsLsGet(t, s, "/?ls")
		if len(l.Files) != 1 {
			t.Fatalf("files = %v, want one", l.Files)
		}
		m := rsKeyRE.FindStringSubmatch(l.Files[0].Href)
		if m == nil || len(m[1]) != 12 {
			t.Errorf("href = %q, want a 12-character key", l.Files[0].Href)
		}
	})
}

// TestPermIndexHTML: h serves a folder's index.html instead of a listing.
func TestPermIndexHTML(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, dir, "site/index.html", []byte("<h1>SITE-INDEX</h1>"))
	writeFile(t, dir, "site/page.txt", []byte("PAGE"))
	writeFile(t, dir, "noindex/x.txt", []byte("X"))
	s := start(t, "-a", "hh:pw-h", "-a", "rr:pw-r", "-v", dir+"::h,hh:r,rr")
	cases := []struct {
		name, path, cred string
		status           int
		has, hasNot      string
	}{
		{"h folder serves index.html", "/site/", "PW: pw-h", 200, "SITE-INDEX", "page.txt"},
		{"h file by URL", "/site/page.txt", "PW: pw-h", 200, "PAGE", ""},
		{"h listing refused", "/site/?ls", "PW: pw-h", 403, "", "page.txt"},
		{"h folder without index", "/noindex/", "PW: pw-h", 403, "", "x.txt"}, // as for a missing one: h learns nothing else
		{"h missing folder", "/nothere/", "PW: pw-h", 403, "", ""},
		{"r folder is a listing", "/site/", "PW: pw-r", 200, "page.txt", "SITE-INDEX"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := s.do(t, "GET", tc.path, nil, tc.cred)
			wantStatus(t, resp, body, tc.status)
			if tc.has != "" && !strings.Contains(string(body), tc.has) {
				t.Errorf("body %.200q lacks %q", body, tc.has)
			}
			if tc.hasNot != "" && strings.Contains(string(body), tc.hasNot) {
				t.Errorf("body %.200q contains %q, want not", body, tc.hasNot)
			}
		})
	}
	t.Run("index is sandboxed html", func(t *testing.T) {
		resp, body := s.do(t, "GET", "/site/", nil, "PW: pw-h")
		wantStatus(t, resp, body, http.StatusOK)
		if got := resp.Header.Get("Content-Type"); got != "text/html; charset=utf-8" {
			t.Errorf("Content-Type = %q, want text/html; charset=utf-8", got)
		}
	})
}

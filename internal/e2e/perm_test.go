package e2e

import (
	"encoding/json"
	"net/http"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

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
		{name: "no credentials", path: "/f.txt", hdr: nil, status: 401},
		{name: "PW header", path: "/f.txt", hdr: []string{"PW: pw-user"}, status: 200},
		{name: "pw query", path: "/f.txt?pw=pw-user", hdr: nil, status: 200},
		{name: "basic user:pass", path: "/f.txt", hdr: []string{basicAuth("u:pw-user")}, status: 200},
		{name: "basic any-name:pass", path: "/f.txt", hdr: []string{basicAuth("whoever:pw-user")}, status: 200},
		{name: "basic password only", path: "/f.txt", hdr: []string{basicAuth("pw-user")}, status: 200},
		{name: "cookie", path: "/f.txt", hdr: []string{"Cookie: cppwd=pw-user"}, status: 200},
		{name: "other user PW", path: "/f.txt", hdr: []string{"PW: pw-other"}, status: 403},
		{name: "other user basic", path: "/f.txt", hdr: []string{basicAuth("o:pw-other")}, status: 403},
		{name: "other user cookie", path: "/f.txt", hdr: []string{"Cookie: cppwd=pw-other"}, status: 403},
		{name: "other user pw query", path: "/f.txt?pw=pw-other", hdr: nil, status: 403},
		{name: "public, anonymous", path: "/pub/p.txt", hdr: nil, status: 200},
		{name: "public, other user", path: "/pub/p.txt", hdr: []string{"PW: pw-other"}, status: 200},
		{name: "public listing, anonymous", path: "/pub/?ls", hdr: nil, status: 200},
		{name: "private listing, anonymous", path: "/?ls", hdr: nil, status: 401},
		{name: "private listing, other user", path: "/?ls", hdr: []string{"PW: pw-other"}, status: 403},
		{name: "private tree, anonymous", path: "/?tree=.", hdr: nil, status: 401},
		{name: "private tree, other user", path: "/?tree", hdr: []string{"PW: pw-other"}, status: 403},
		{name: "private missing file, anonymous", path: "/nope.txt", hdr: nil, status: 401},
		{name: "private page, anonymous", path: "/", hdr: nil, status: 401},
		{name: "PUT, anonymous", path: "/pub/x.txt", hdr: nil, status: 401},
		{name: "PUT, reader", path: "/x.txt", hdr: []string{"PW: pw-user"}, status: 403},
		// Wrong passwords last: after three the server slows down.
		{name: "wrong cookie", path: "/f.txt", hdr: []string{"Cookie: cppwd=wrong-pw"}, status: 401},
		{name: "wrong PW header", path: "/f.txt", hdr: []string{"PW: wrong-pw"}, status: 401},
		{name: "wrong pw query", path: "/f.txt?pw=wrong-pw", hdr: nil, status: 401},
		{name: "wrong basic", path: "/f.txt", hdr: []string{basicAuth("u:wrong-pw")}, status: 401},
		{name: "wrong PW on a public volume", path: "/pub/p.txt", hdr: []string{"PW: wrong-pw"}, status: 401},
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
		if !fileHolds(dir, "up.txt", "UP") {
			t.Errorf("up.txt not stored")
		}
	})
	cases := []struct {
		name, path, cred string
		status           int
	}{
		{name: "user GET existing file", path: "/f.txt", cred: cred, status: 403},
		{name: "user GET uploaded file", path: "/up.txt", cred: cred, status: 403},
		{name: "user GET missing file", path: "/missing.txt", cred: cred, status: 403},
		{name: "user GET file in sub", path: "/sub/g.txt", cred: cred, status: 403},
		{name: "anonymous GET existing file", path: "/f.txt", cred: "", status: 401},
		{name: "anonymous GET missing file", path: "/missing.txt", cred: "", status: 401},
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
		l := getListing(t, anon, "/?ls")
		if len(l.Dirs) != 0 || len(l.Files) != 0 || !reflect.DeepEqual(l.Perms, []string{"write"}) {
			t.Errorf("anonymous listing: dirs %v files %v perms %q, want empty, empty, [write]", l.Dirs, l.Files, l.Perms)
		}
	})
	for _, path := range []string{"/?ls", "/sub/?ls"} {
		t.Run("listing "+path, func(t *testing.T) {
			l := getListing(t, s, path, cred)
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

var fileKeyRE = regexp.MustCompile(`\?k=([A-Za-z0-9_-]+)`)

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
			{name: "exact URL", path: "/sub/f.txt", status: 200},
			{name: "folder listing", path: "/sub/?ls", status: 403},
			{name: "folder page", path: "/sub/", status: 403},
			{name: "text listing", path: "/sub/?ls=t", status: 403},
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
	l := getListing(t, s, "/?ls", "PW: pw-r")
	keys := map[string]string{}
	for _, e := range l.Files {
		m := fileKeyRE.FindStringSubmatch(e.Href)
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
		{name: "g without key", path: "/f.txt", cred: "PW: pw-g", status: 403},
		{name: "g with wrong key", path: "/f.txt?k=AAAAAAAA", cred: "PW: pw-g", status: 403},
		{name: "g with empty key", path: "/f.txt?k=", cred: "PW: pw-g", status: 403},
		{name: "g with another file's key", path: "/f.txt?k=" + keys["other.txt"], cred: "PW: pw-g", status: 403},
		{name: "g with key prefix", path: "/f.txt?k=" + keys["f.txt"][:4], cred: "PW: pw-g", status: 403},
		{name: "g with the key", path: "/f.txt?k=" + keys["f.txt"], cred: "PW: pw-g", status: 200},
		{name: "g missing file", path: "/nope.txt?k=" + keys["f.txt"], cred: "PW: pw-g", status: 403},
		{name: "r without key", path: "/f.txt", cred: "PW: pw-r", status: 200},
		{name: "anonymous with the key", path: "/f.txt?k=" + keys["f.txt"], cred: "", status: 401},
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
		m := fileKeyRE.FindStringSubmatch(up.URL)
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
			{path: "/byW1.txt", accept: ""}, {path: "/byW2.txt?j", accept: ""}, {path: "/byW3.txt", accept: "Accept: url"},
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
		mp, ct := multipartFiles(t, [2]string{"byW4.txt", "W-UP"})
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
		l := getListing(t, s, "/?ls")
		if len(l.Files) != 1 {
			t.Fatalf("files = %v, want one", l.Files)
		}
		m := fileKeyRE.FindStringSubmatch(l.Files[0].Href)
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
		{name: "h folder serves index.html", path: "/site/", cred: "PW: pw-h", status: 200, has: "SITE-INDEX", hasNot: "page.txt"},
		{name: "h file by URL", path: "/site/page.txt", cred: "PW: pw-h", status: 200, has: "PAGE", hasNot: ""},
		{name: "h listing refused", path: "/site/?ls", cred: "PW: pw-h", status: 403, has: "", hasNot: "page.txt"},
		{name: "h folder without index", path: "/noindex/", cred: "PW: pw-h", status: 403, has: "", hasNot: "x.txt"}, // as for a missing one: h learns nothing else
		{name: "h missing folder", path: "/nothere/", cred: "PW: pw-h", status: 403, has: "", hasNot: ""},
		{name: "r folder is a listing", path: "/site/", cred: "PW: pw-r", status: 200, has: "page.txt", hasNot: "SITE-INDEX"},
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

package e2e

import (
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

var mtime2024 = time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)

func TestListingJSON(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	files := map[string]int{
		"a.txt":                   11,
		"arch.tar.gz":             3,
		"b c.txt":                 0,
		"f.abcdefghijklmnopqrstu": 7,
		"noext":                   1234,
		"Ünï.txt":                 5,
		// never listed:
		"x.PARTIAL":                 4,
		".hoard-abc.PARTIAL":        4,
		"sub/y.PARTIAL":             4,
		".dot":                      2,
		"sub/in.txt":                1,
		"z dir/%41 literal pct.txt": 1,
	}
	for n, sz := range files {
		p := writeFile(t, dir, n, []byte(strings.Repeat("x", sz)))
		setMtime(t, p, mtime2024)
	}
	os.Mkdir(filepath.Join(dir, "d.PARTIAL"), 0o755)
	setMtime(t, filepath.Join(dir, "sub"), mtime2024.Add(time.Hour))
	setMtime(t, filepath.Join(dir, "z dir"), mtime2024.Add(2*time.Hour))
	s := start(t, "-a", "ed:pw1", "-v", dir+"::rw:A,ed")

	resp, body := s.do(t, "GET", "/?ls", nil)
	wantStatus(t, resp, body, http.StatusOK)
	t.Run("content type", func(t *testing.T) {
		if got := resp.Header.Get("Content-Type"); !strings.HasPrefix(got, "application/json") {
			t.Errorf("Content-Type = %q, want application/json", got)
		}
	})
	t.Run("top-level keys", func(t *testing.T) {
		var top map[string]json.RawMessage
		if err := json.Unmarshal(body, &top); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"dirs", "files", "acct", "perms", "srvinf", "taglist"} {
			if _, ok := top[k]; !ok {
				t.Errorf("key %q missing, want it (copyparty's ?ls shape)", k)
			}
		}
		var ents struct{ Dirs, Files []map[string]json.RawMessage }
		json.Unmarshal(body, &ents)
		for _, e := range append(ents.Dirs, ents.Files...) {
			for _, k := range []string{"href", "name", "sz", "ts", "ext", "tags"} {
				if _, ok := e[k]; !ok {
					t.Errorf("entry %s: key %q missing, want it", e["href"], k)
				}
			}
		}
	})
	l := decodeListing(t, body)
	t.Run("acct and perms", func(t *testing.T) {
		if l.Acct != "*" {
			t.Errorf("acct = %q, want *", l.Acct)
		}
		if want := []string{"read", "write"}; !reflect.DeepEqual(l.Perms, want) {
			t.Errorf("perms = %q, want %q", l.Perms, want)
		}
		if l.Taglist == nil {
			t.Errorf("taglist = null, want an array")
		}
		if !strings.Contains(l.Srvinf, "free") && !onS3(t) { // a bucket tells no free space
			t.Errorf("srvinf = %q, want free space", l.Srvinf)
		}
		ed := getListing(t, s, "/?ls", "PW: pw1")
		if ed.Acct != "ed" {
			t.Errorf("acct with PW = %q, want ed", ed.Acct)
		}
		for _, p := range []string{"read", "write", "move", "delete", "dot", "admin"} {
			if !slices.Contains(ed.Perms, p) {
				t.Errorf("perms with A = %q, want %q among them", ed.Perms, p)
			}
		}
	})
	t.Run("dirs", func(t *testing.T) {
		want := []listingEntry{
			{Href: "sub/", Name: "sub", Ext: "---", Ts: mtime2024.Add(time.Hour).Unix()},
			{Href: "z%20dir/", Name: "z dir", Ext: "---", Ts: mtime2024.Add(2 * time.Hour).Unix()},
		}
		if len(l.Dirs) != len(want) {
			t.Fatalf("dirs = %+v, want %d entries %+v", l.Dirs, len(want), want)
		}
		for i, w := range want {
			g := l.Dirs[i]
			if g.Href != w.Href || g.Name != w.Name || g.Ext != w.Ext || (g.Ts != w.Ts && !onS3(t)) || g.Tags == nil { // an object's time is its LastModified; a folder has none
				t.Errorf("dirs[%d] = %+v, want %+v with tags {}", i, g, w)
			}
		}
	})
	t.Run("files", func(t *testing.T) {
		ts := mtime2024.Unix()
		want := []listingEntry{
			{Href: "a.txt", Name: "a.txt", Sz: 11, Ts: ts, Ext: "txt"},
			{Href: "arch.tar.gz", Name: "arch.tar.gz", Sz: 3, Ts: ts, Ext: "gz"},
			{Href: "b%20c.txt", Name: "b c.txt", Sz: 0, Ts: ts, Ext: "txt"},
			{Href: "f.abcdefghijklmnopqrstu", Name: "f.abcdefghijklmnopqrstu", Sz: 7, Ts: ts, Ext: "abcdefghijklmnop"},
			{Href: "noext", Name: "noext", Sz: 1234, Ts: ts, Ext: "%"},
			{Href: "%C3%9Cn%C3%AF.txt", Name: "Ünï.txt", Sz: 5, Ts: ts, Ext: "txt"},
		}
		if len(l.Files) != len(want) {
			t.Fatalf("files = %+v, want %d entries %+v", l.Files, len(want), want)
		}
		for i, w := range want {
			g := l.Files[i]
			if g.Href != w.Href || g.Name != w.Name || g.Sz != w.Sz || (g.Ts != w.Ts && !onS3(t)) || g.Ext != w.Ext || g.Tags == nil {
				t.Errorf("files[%d] = %+v, want %+v with tags {}", i, g, w)
			}
		}
	})
	t.Run("hrefs are percent-encoded", func(t *testing.T) {
		sub := getListing(t, s, "/z%20dir/?ls")
		if len(sub.Files) != 1 || sub.Files[0].Href != "%2541%20literal%20pct.txt" {
			t.Fatalf("files = %+v, want one with href %%2541%%20literal%%20pct.txt", sub.Files)
		}
		resp, body := s.do(t, "GET", "/z%20dir/"+sub.Files[0].Href, nil)
		wantStatus(t, resp, body, http.StatusOK)
	})
	t.Run("PARTIAL never listed", func(t *testing.T) {
		for _, path := range []string{"/?ls", "/?ls&dots", "/sub/?ls&dots", "/?ls=t&dots", "/?dots", "/?tree=.&dots"} {
			for _, cred := range []string{"X-None: 1", "PW: pw1"} {
				resp, body := s.do(t, "GET", path, nil, cred)
				wantStatus(t, resp, body, http.StatusOK)
				if strings.Contains(string(body), "PARTIAL") {
					t.Errorf("GET %s (%s) lists a .PARTIAL: %.400s", path, cred, body)
				}
			}
		}
		for _, path := range []string{"/x.PARTIAL", "/sub/y.PARTIAL", "/.hoard-abc.PARTIAL", "/d.PARTIAL/?ls"} {
			resp, body := s.do(t, "GET", path, nil, "PW: pw1")
			if resp.StatusCode != http.StatusNotFound {
				t.Errorf("GET %s: status = %d, want 404", path, resp.StatusCode)
			}
			if strings.Contains(string(body), "xxxx") {
				t.Errorf("GET %s served the work file", path)
			}
		}
	})
	t.Run("dotfiles need dots and the dot permission", func(t *testing.T) {
		cases := []struct {
			name, path, cred string
			want             bool
		}{
			{name: "anonymous rw without dots", path: "/?ls", cred: "X-None: 1", want: false},
			{name: "anonymous rw with dots", path: "/?ls&dots", cred: "X-None: 1", want: false},
			{name: "A without dots", path: "/?ls", cred: "PW: pw1", want: false},
			{name: "A with dots", path: "/?ls&dots", cred: "PW: pw1", want: true},
			{name: "A with dots, text", path: "/?ls=t&dots", cred: "PW: pw1", want: true},
			{name: "A with dots, html", path: "/?dots", cred: "PW: pw1", want: true},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				resp, body := s.do(t, "GET", tc.path, nil, tc.cred)
				wantStatus(t, resp, body, http.StatusOK)
				if got := strings.Contains(string(body), ".dot"); got != tc.want {
					t.Errorf("GET %s lists .dot: %v, want %v", tc.path, got, tc.want)
				}
			})
		}
	})
}

func withCommas(n int64) string {
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func TestListingText(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	setMtime(t, writeFile(t, dir, "a.txt", []byte("hello")), mtime2024)
	big := writeFile(t, dir, "big.bin", nil)
	if err := os.Truncate(big, 1234567); err != nil {
		t.Fatal(err)
	}
	setMtime(t, big, mtime2024.Add(-24*time.Hour))
	os.Mkdir(filepath.Join(dir, "sub"), 0o755)
	setMtime(t, filepath.Join(dir, "sub"), time.Date(2024, 10, 1, 12, 34, 56, 0, time.UTC))
	os.Mkdir(filepath.Join(dir, "ünï dir"), 0o755)
	setMtime(t, filepath.Join(dir, "ünï dir"), time.Date(2024, 10, 1, 12, 34, 57, 0, time.UTC))
	s := start(t, "-v", dir+"::r")

	type row struct {
		name string
		dir  bool
	}
	rows := []row{{"sub", true}, {"ünï dir", true}, {"a.txt", false}, {"big.bin", false}}
	width := 0
	sizes := map[string]string{}
	for _, r := range rows {
		fi, err := os.Stat(filepath.Join(dir, r.name))
		if err != nil {
			t.Fatal(err)
		}
		sizes[r.name] = withCommas(fi.Size())
		width = max(width, len(sizes[r.name]))
	}
	var want []string
	for _, r := range rows {
		fi, _ := os.Stat(filepath.Join(dir, r.name))
		n := r.name
		if r.dir {
			n += "/"
		}
		want = append(want, fmt.Sprintf("%s  %*s  %s", fi.ModTime().UTC().Format("2006-01-02 15:04:05"), width, sizes[r.name], n))
	}

	t.Run("ls=t", func(t *testing.T) {
		resp, body := s.do(t, "GET", "/?ls=t", nil)
		wantStatus(t, resp, body, http.StatusOK)
		if got := resp.Header.Get("Content-Type"); got != "text/plain; charset=utf-8" {
			t.Errorf("Content-Type = %q, want text/plain; charset=utf-8", got)
		}
		if !strings.HasSuffix(string(body), "\n") {
			t.Errorf("body does not end in a newline: %q", body)
		}
		lines := strings.Split(strings.TrimSuffix(string(body), "\n"), "\n")
		if len(lines) != 3+len(want) {
			t.Fatalf("got %d lines %q, want 3 header lines and %d entries", len(lines), lines, len(want))
		}
		if lines[0] != "# acct: *" {
			t.Errorf("line 1 = %q, want %q", lines[0], "# acct: *")
		}
		if lines[1] != "# perms: ['read']" {
			t.Errorf("line 2 = %q, want %q", lines[1], "# perms: ['read']")
		}
		if !strings.HasPrefix(lines[2], "# srvinf: ") {
			t.Errorf("line 3 = %q, want prefix %q", lines[2], "# srvinf: ")
		}
		for i, w := range want {
			if lines[3+i] != w {
				t.Errorf("entry line %d = %q, want %q", i, lines[3+i], w)
			}
		}
		if !strings.Contains(string(body), "1,234,567  big.bin") {
			t.Errorf("body lacks %q: %s", "1,234,567  big.bin", body)
		}
	})
	t.Run("ls=txt is ls=t", func(t *testing.T) {
		_, a := s.do(t, "GET", "/?ls=t", nil)
		resp, b := s.do(t, "GET", "/?ls=txt", nil)
		wantStatus(t, resp, b, http.StatusOK)
		if string(a) != string(b) {
			t.Errorf("ls=txt = %q, want the same as ls=t %q", b, a)
		}
	})
	t.Run("ls=v", func(t *testing.T) {
		resp, body := s.do(t, "GET", "/?ls=v", nil)
		wantStatus(t, resp, body, http.StatusOK)
		b := string(body)
		if !strings.Contains(b, "\x1b[") {
			t.Errorf("body has no ANSI escape sequence: %q", b)
		}
		for _, r := range rows {
			if !strings.Contains(b, r.name) {
				t.Errorf("body lacks %q: %q", r.name, b)
			}
		}
		if !strings.Contains(b, "\x1b[94msub/") {
			t.Errorf("body lacks the folder colour before sub/: %q", b)
		}
		if !strings.HasPrefix(b, "# acct: *\n# perms: ['read']\n# srvinf: ") {
			t.Errorf("body starts %q, want the # acct/# perms/# srvinf header", b[:min(60, len(b))])
		}
		if !strings.HasSuffix(b, "\x1b[0m") {
			t.Errorf("body ends %q, want a colour reset", b[max(0, len(b)-10):])
		}
		if strings.Contains(b, "1,234,567") {
			t.Errorf("ls=v shows the exact size, want the terse form (1.17M)")
		}
		if !strings.Contains(b, "1.17M") {
			t.Errorf("body lacks the terse size 1.17M: %q", b)
		}
	})
	for _, v := range []string{"x", "tt", "json", "T"} {
		t.Run("bad ls="+v, func(t *testing.T) {
			resp, body := s.do(t, "GET", "/?ls="+v, nil)
			wantStatus(t, resp, body, http.StatusBadRequest)
			if got := resp.Header.Get("Content-Type"); got != "text/plain; charset=utf-8" {
				t.Errorf("Content-Type = %q, want text/plain; charset=utf-8", got)
			}
		})
	}
}

func TestListingSymlinks(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	old := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
	setMtime(t, writeFile(t, dir, "target.txt", []byte("target content")), old)
	os.Mkdir(filepath.Join(dir, "realdir"), 0o755)
	for link, to := range map[string]string{"link.txt": "target.txt", "linkdir": "realdir", "broken": "nowhere.txt"} {
		if err := os.Symlink(to, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	li, err := os.Lstat(filepath.Join(dir, "link.txt"))
	if err != nil {
		t.Fatal(err)
	}
	s := start(t, "-v", dir+"::r")
	cases := []struct {
		name, path string
		ts         int64
	}{
		{name: "target time by default", path: "/?ls", ts: old.Unix()},
		{name: "link time with lt", path: "/?ls&lt", ts: li.ModTime().Unix()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := getListing(t, s, tc.path)
			dirs, files := listingNames(t, l)
			if want := []string{"link.txt", "target.txt"}; !reflect.DeepEqual(files, want) {
				t.Errorf("files = %q, want %q (broken link left out)", files, want)
			}
			if want := []string{"linkdir", "realdir"}; !reflect.DeepEqual(dirs, want) {
				t.Errorf("dirs = %q, want %q", dirs, want)
			}
			for _, e := range l.Files {
				if e.Href != "link.txt" {
					continue
				}
				if e.Ts != tc.ts {
					t.Errorf("link.txt ts = %d, want %d", e.Ts, tc.ts)
				}
				if e.Sz != int64(len("target content")) {
					t.Errorf("link.txt sz = %d, want the target's size %d", e.Sz, len("target content"))
				}
			}
		})
	}
	t.Run("link serves the target", func(t *testing.T) {
		resp, body := s.do(t, "GET", "/link.txt", nil)
		wantStatus(t, resp, body, http.StatusOK)
		if string(body) != "target content" {
			t.Errorf("body = %q, want %q", body, "target content")
		}
	})
}

// getTree fetches a ?tree reply and decodes it into plain Go values.
func getTree(t *testing.T, s *server, path string, hdr ...string) map[string]any {
	t.Helper()
	resp, body := s.do(t, "GET", path, nil, hdr...)
	wantStatus(t, resp, body, http.StatusOK)
	if got := resp.Header.Get("Content-Type"); !strings.HasPrefix(got, "application/json") {
		t.Errorf("Content-Type = %q, want application/json", got)
	}
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("GET %s: %v; body %s", path, err, body)
	}
	return m
}

// parseJSONObject parses a JSON literal for comparisons.
func parseJSONObject(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("bad test literal %s: %v", s, err)
	}
	return m
}

func TestListingTree(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, d := range []string{"a/a1/deep/deeper", "a/a2", "b", ".dotdir", "sp ace/x"} {
		os.MkdirAll(filepath.Join(dir, d), 0o755)
	}
	writeFile(t, dir, "file.txt", []byte("f"))
	writeFile(t, dir, "a/afile.txt", []byte("f"))
	s := start(t, "-a", "dotty:pw1", "-v", dir+"::r:r.,dotty")
	cases := []struct {
		name, path, cred, want string
	}{
		{name: "one level at root", path: "/?tree=.", cred: "", want: `{"a":["a","b","sp%20ace"]}`},
		{name: "one level below", path: "/a/?tree=.", cred: "", want: `{"a":["a1","a2"]}`},
		{name: "dotdot is one level too", path: "/a/?tree=..", cred: "", want: `{"a":["a1","a2"]}`},
		{name: "one level, no folders", path: "/b/?tree=.", cred: "", want: `{"a":[]}`},
		{name: "full tree at root", path: "/?tree", cred: "", want: `{"a":["a","b","sp%20ace"]}`},
		{name: "full tree from the root down", path: "/a/a1/?tree", cred: "", want: `{"a":["b","sp%20ace"],"ka":{"a":["a2"],"ka1":{"a":["deep"]}}}`},
		{name: "full tree, escaped key", path: "/sp%20ace/?tree", cred: "", want: `{"a":["a","b"],"ksp%20ace":{"a":["x"]}}`},
		{name: "dots without the permission", path: "/?tree=.&dots", cred: "", want: `{"a":["a","b","sp%20ace"]}`},
		{name: "dot permission without dots", path: "/?tree=.", cred: "PW: pw1", want: `{"a":["a","b","sp%20ace"]}`},
		{name: "dots with the permission", path: "/?tree=.&dots", cred: "PW: pw1", want: `{"a":[".dotdir","a","b","sp%20ace"]}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var hdr []string
			if tc.cred != "" {
				hdr = append(hdr, tc.cred)
			}
			got := getTree(t, s, tc.path, hdr...)
			if want := parseJSONObject(t, tc.want); !reflect.DeepEqual(got, want) {
				t.Errorf("GET %s = %v, want %v", tc.path, got, want)
			}
		})
	}
}

func TestListingHTML(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	evil := []string{
		"<script>alert(1).txt",
		`"onmouseover=x.txt`,
		"'><img src=x onerror=alert(1)>.txt",
		"a&b.txt",
		"javascript:alert(1)",
	}
	for _, n := range evil {
		writeFile(t, dir, n, []byte("x"))
	}
	os.Mkdir(filepath.Join(dir, "<i>dir"), 0o755)
	s := start(t, "-a", "ed:hunter2pw", "-v", dir+"::r")
	resp, body := s.do(t, "GET", "/?pw=hunter2pw", nil)
	wantStatus(t, resp, body, http.StatusOK)
	b := string(body)
	t.Run("content type", func(t *testing.T) {
		if got := resp.Header.Get("Content-Type"); got != "text/html; charset=utf-8" {
			t.Errorf("Content-Type = %q, want text/html; charset=utf-8", got)
		}
	})
	for _, n := range append(evil, "<i>dir") {
		t.Run("escapes "+n, func(t *testing.T) {
			if html.EscapeString(n) != n && strings.Contains(b, n) {
				t.Errorf("page contains the raw name %q, want it escaped", n)
			}
			if !strings.Contains(b, html.EscapeString(n)) {
				t.Errorf("page lacks the escaped name %q", html.EscapeString(n))
			}
		})
	}
	t.Run("no markup from names", func(t *testing.T) {
		// The one script is the UI's module from /.cpr/ (issue 17).
		page := uiScriptRE.ReplaceAllString(b, "")
		for _, bad := range []string{"<script", "<img", "<i>", `href="javascript:`, `href='javascript:`} {
			if strings.Contains(strings.ToLower(page), bad) {
				t.Errorf("page contains %q, want none", bad)
			}
		}
	})
	t.Run("links are relative and encoded", func(t *testing.T) {
		for _, m := range regexp.MustCompile(`href="([^"]*)"`).FindAllStringSubmatch(b, -1) {
			h := m[1]
			if strings.ContainsAny(h, "<>\" '") {
				t.Errorf("href %q has an unencoded character", h)
			}
			if u, err := url.Parse(html.UnescapeString(h)); err != nil || u.Scheme != "" || u.Host != "" {
				t.Errorf("href %q is absolute or unparsable (%v), want a relative path", h, err)
			}
		}
	})
	t.Run("CSP allows only the UI's own script files", func(t *testing.T) {
		csp := resp.Header.Get("Content-Security-Policy")
		if csp == "" {
			t.Fatalf("Content-Security-Policy missing, want one without script")
		}
		dirs := map[string]string{}
		for _, d := range strings.Split(csp, ";") {
			f := strings.Fields(d)
			if len(f) > 0 {
				dirs[strings.ToLower(f[0])] = strings.Join(f[1:], " ")
			}
		}
		src, ok := dirs["script-src"]
		if !ok {
			src, ok = dirs["default-src"]
		}
		m := uiScriptRE.FindStringSubmatch(b)
		if !ok || m == nil || src != "'nonce-"+m[2]+"' 'strict-dynamic'" {
			t.Errorf("Content-Security-Policy = %q: script source %q, want only the page's own nonce (no 'self', no inline script, no eval)", csp, src)
		}
	})
	t.Run("password not echoed", func(t *testing.T) {
		if strings.Contains(b, "hunter2pw") {
			t.Errorf("page contains the password, want it never echoed")
		}
		if strings.Contains(s.logs.String(), "hunter2pw") {
			t.Errorf("server log contains the password, want it never logged")
		}
	})
}

func TestListingRedirect(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "sub", "dïr x"), 0o755)
	s := start(t, "-v", dir+"::r")
	cases := []struct {
		name, path, loc string
	}{
		{name: "plain", path: "/sub", loc: "/sub/"},
		{name: "nested and encoded", path: "/sub/d%C3%AFr%20x", loc: "/sub/d%C3%AFr%20x/"},
		{name: "query kept", path: "/sub?dots", loc: "/sub/?dots"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := s.do(t, "GET", tc.path, nil)
			wantStatus(t, resp, body, http.StatusMovedPermanently)
			if got := resp.Header.Get("Location"); got != tc.loc {
				t.Errorf("Location = %q, want %q", got, tc.loc)
			}
			resp, body = s.do(t, "GET", tc.loc, nil)
			wantStatus(t, resp, body, http.StatusOK)
		})
	}
	t.Run("ls needs no slash", func(t *testing.T) {
		l := getListing(t, s, "/sub?ls")
		if dirs, _ := listingNames(t, l); !reflect.DeepEqual(dirs, []string{"dïr x"}) {
			t.Errorf("dirs = %q, want [dïr x]", dirs)
		}
	})
}

func TestListingMounts(t *testing.T) {
	t.Parallel()
	a, b := t.TempDir(), t.TempDir()
	writeFile(t, a, "a.txt", []byte("A"))
	os.Mkdir(filepath.Join(a, "real"), 0o755)
	writeFile(t, b, "b.txt", []byte("B"))
	s := start(t, "-v", a+"::r", "-v", b+":sub/inner:r")
	cases := []struct {
		name, path  string
		dirs, files []string
	}{
		{name: "root shows the mount's first folder", path: "/?ls", dirs: []string{"real", "sub"}, files: []string{"a.txt"}},
		{name: "intermediate virtual folder", path: "/sub/?ls", dirs: []string{"inner"}, files: nil},
		{name: "the mounted volume", path: "/sub/inner/?ls", dirs: nil, files: []string{"b.txt"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := s.do(t, "GET", tc.path, nil)
			wantStatus(t, resp, body, http.StatusOK)
			dirs, files := listingNames(t, decodeListing(t, body))
			if !reflect.DeepEqual(dirs, tc.dirs) || !reflect.DeepEqual(files, tc.files) {
				t.Errorf("GET %s: dirs %q files %q, want %q %q", tc.path, dirs, files, tc.dirs, tc.files)
			}
		})
	}
	t.Run("file in the mount", func(t *testing.T) {
		resp, body := s.do(t, "GET", "/sub/inner/b.txt", nil)
		wantStatus(t, resp, body, http.StatusOK)
		if string(body) != "B" {
			t.Errorf("body = %q, want B", body)
		}
	})
	t.Run("html lists the mount", func(t *testing.T) {
		resp, body := s.do(t, "GET", "/", nil)
		wantStatus(t, resp, body, http.StatusOK)
		if !strings.Contains(string(body), `href="./sub/"`) {
			t.Errorf("page lacks a link to sub/: %s", body)
		}
	})
	t.Run("tree", func(t *testing.T) {
		if got, want := getTree(t, s, "/?tree=."), parseJSONObject(t, `{"a":["real","sub"]}`); !reflect.DeepEqual(got, want) {
			t.Errorf("/?tree=. = %v, want %v", got, want)
		}
		if got, want := getTree(t, s, "/sub/inner/?tree"), parseJSONObject(t, `{"a":["real"],"ksub":{"a":[],"kinner":{"a":[]}}}`); !reflect.DeepEqual(got, want) {
			t.Errorf("/sub/inner/?tree = %v, want %v", got, want)
		}
	})

	t.Run("mount over a real folder", func(t *testing.T) {
		a, b := t.TempDir(), t.TempDir()
		writeFile(t, a, "sub/s.txt", []byte("S"))
		writeFile(t, a, "sub/inner/shadowed.txt", []byte("hidden by the mount"))
		writeFile(t, b, "b.txt", []byte("B"))
		s := start(t, "-v", a+"::r", "-v", b+":sub/inner:r")
		dirs, files := listingNames(t, getListing(t, s, "/sub/?ls"))
		if !reflect.DeepEqual(dirs, []string{"inner"}) || !reflect.DeepEqual(files, []string{"s.txt"}) {
			t.Errorf("/sub/?ls: dirs %q files %q, want [inner] [s.txt]", dirs, files)
		}
		dirs, files = listingNames(t, getListing(t, s, "/sub/inner/?ls"))
		if len(dirs) != 0 || !reflect.DeepEqual(files, []string{"b.txt"}) {
			t.Errorf("/sub/inner/?ls: dirs %q files %q, want [] [b.txt]", dirs, files)
		}
		resp, body := s.do(t, "GET", "/sub/inner/shadowed.txt", nil)
		wantStatus(t, resp, body, http.StatusNotFound)
	})
}

// TestListingHiddenMount: a volume mounted over a folder of another (here
// its own folder on the outer volume's disk) is that folder by URL. One
// who may not see the inner volume learns nothing of it from the outer
// volume's listings: no entry of that name in ?ls, ?ls=t, the HTML page or
// ?tree (as WebDAV and archives already leave it out); one who may sees it
// once, as the mount.
func TestListingHiddenMount(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, dir, "a.txt", []byte("A"))
	writeFile(t, dir, "vault2024/plan.txt", []byte("P"))
	writeFile(t, dir, "deep/vaultfile", []byte("on the outer disk, mounted over"))
	other := t.TempDir()
	writeFile(t, other, "x.txt", []byte("X"))
	s := start(t, "-a", "ann:pw1", "-v", dir+"::r", "-v", filepath.Join(dir, "vault2024")+":vault2024:r,ann", "-v", other+":deep/vaultfile:r,ann")
	for _, c := range []struct {
		who         string
		hdr         []string
		path        string
		dirs, files []string
	}{
		{who: "anonymous", path: "/?ls", dirs: []string{"deep"}, files: []string{"a.txt"}},
		{who: "ann", hdr: []string{"PW: pw1"}, path: "/?ls", dirs: []string{"deep", "vault2024"}, files: []string{"a.txt"}},
		{who: "anonymous", path: "/deep/?ls", dirs: nil, files: nil},
		{who: "ann", hdr: []string{"PW: pw1"}, path: "/deep/?ls", dirs: []string{"vaultfile"}, files: nil},
	} {
		dirs, files := listingNames(t, getListing(t, s, c.path, c.hdr...))
		if !reflect.DeepEqual(dirs, c.dirs) || !reflect.DeepEqual(files, c.files) {
			t.Errorf("%s as %s: dirs %q files %q, want %q %q", c.path, c.who, dirs, files, c.dirs, c.files)
		}
	}
	for _, p := range []string{"/", "/?ls=t", "/?tree=.", "/deep/?ls=t", "/deep/", "/deep/?tree=."} {
		resp, body := s.do(t, "GET", p, nil)
		wantStatus(t, resp, body, http.StatusOK)
		if strings.Contains(string(body), "vault") {
			t.Errorf("GET %s as anonymous names the hidden volume: %s", p, body)
		}
	}
	if got, want := getTree(t, s, "/?tree=.", "PW: pw1"), parseJSONObject(t, `{"a":["deep","vault2024"]}`); !reflect.DeepEqual(got, want) {
		t.Errorf("/?tree=. as ann = %v, want %v", got, want)
	}
}

func TestListingVirtualRoot(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, dir, "song.mp3", []byte("la"))
	s := start(t, "-v", dir+":music:r")
	t.Run("html", func(t *testing.T) {
		resp, body := s.do(t, "GET", "/", nil)
		wantStatus(t, resp, body, http.StatusOK)
		if !strings.Contains(string(body), "music/") {
			t.Errorf("page lacks music/: %s", body)
		}
	})
	t.Run("ls", func(t *testing.T) {
		dirs, files := listingNames(t, getListing(t, s, "/?ls"))
		if !reflect.DeepEqual(dirs, []string{"music"}) || len(files) != 0 {
			t.Errorf("/?ls: dirs %q files %q, want [music] []", dirs, files)
		}
	})
	t.Run("ls=t", func(t *testing.T) {
		resp, body := s.do(t, "GET", "/?ls=t", nil)
		wantStatus(t, resp, body, http.StatusOK)
		if !strings.HasSuffix(string(body), "  music/\n") {
			t.Errorf("body = %q, want a music/ line", body)
		}
	})
	t.Run("tree", func(t *testing.T) {
		if got, want := getTree(t, s, "/?tree=."), parseJSONObject(t, `{"a":["music"]}`); !reflect.DeepEqual(got, want) {
			t.Errorf("/?tree=. = %v, want %v", got, want)
		}
	})
	t.Run("volume", func(t *testing.T) {
		_, files := listingNames(t, getListing(t, s, "/music/?ls"))
		if !reflect.DeepEqual(files, []string{"song.mp3"}) {
			t.Errorf("files = %q, want [song.mp3]", files)
		}
		resp, body := s.do(t, "GET", "/music", nil)
		wantStatus(t, resp, body, http.StatusMovedPermanently)
		if got := resp.Header.Get("Location"); got != "/music/" {
			t.Errorf("Location = %q, want /music/", got)
		}
	})
	t.Run("elsewhere", func(t *testing.T) {
		resp, body := s.do(t, "GET", "/nothing", nil)
		wantStatus(t, resp, body, http.StatusNotFound)
		resp, body = s.do(t, "PUT", "/x.txt", []byte("x"))
		if resp.StatusCode < 400 || resp.StatusCode >= 500 {
			t.Errorf("PUT /x.txt outside any volume: status = %d, want 4xx; body %s", resp.StatusCode, body)
		}
	})
	t.Run("private volume", func(t *testing.T) {
		s := start(t, "-a", "u:pw1", "-v", dir+":music:r,u")
		resp, body := s.do(t, "GET", "/?ls", nil)
		wantStatus(t, resp, body, http.StatusUnauthorized)
		if strings.Contains(string(body), "music") {
			t.Errorf("401 body names the hidden volume: %s", body)
		}
		dirs, _ := listingNames(t, getListing(t, s, "/?ls", "PW: pw1"))
		if !reflect.DeepEqual(dirs, []string{"music"}) {
			t.Errorf("dirs = %q, want [music]", dirs)
		}
	})
}

package e2e

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// This file also holds the small helpers shared by download_test.go,
// perm_test.go, listing_test.go, traversal_test.go and cli_test.go; their
// names start with "rs" so they cannot clash with other test files.

// loggedRandomBytes returns n pseudo-random bytes from a logged seed.
func loggedRandomBytes(t *testing.T, n int) []byte {
	t.Helper()
	seed := time.Now().UnixNano()
	t.Logf("random data seed %d", seed)
	var key [32]byte
	copy(key[:], strconv.FormatInt(seed, 10))
	b := make([]byte, n)
	rand.NewChaCha8(key).Read(b)
	return b
}

var filenameStarRE = regexp.MustCompile(`filename\*=UTF-8''([^;\s]*)`)

// checkFilenameStar checks that the Content-Disposition header cd carries an
// RFC 8187 filename* parameter in UTF-8 whose value holds attr-char and
// %XX only and decodes to name.
func checkFilenameStar(t *testing.T, cd, name string) {
	t.Helper()
	m := filenameStarRE.FindStringSubmatch(cd)
	if m == nil {
		t.Errorf("Content-Disposition = %q, want filename*=UTF-8''…", cd)
		return
	}
	v := m[1]
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("!#$&+-.^_`|~", c) >= 0:
		case c == '%' && i+2 < len(v) && strings.IndexByte("0123456789ABCDEFabcdef", v[i+1]) >= 0 && strings.IndexByte("0123456789ABCDEFabcdef", v[i+2]) >= 0:
			i += 2
		default:
			t.Errorf("Content-Disposition = %q: byte %q in filename* is not an RFC 8187 attr-char, want it %%-encoded", cd, c)
			return
		}
	}
	if got, err := url.PathUnescape(v); err != nil || got != name {
		t.Errorf("filename* %q decodes to %q (%v), want %q", v, got, err, name)
	}
}

var mtime2023 = time.Date(2023, 4, 5, 6, 7, 8, 0, time.UTC)

func TestDownloadHeaders(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	files := map[string][]byte{
		"a.txt":            []byte("hello text\n"),
		"UPPER.TXT":        []byte("upper\n"),
		"page.html":        []byte("<script>alert(1)</script>"),
		"pic.svg":          []byte(`<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>`),
		"data.json":        []byte(`{"a":1}`),
		"img.png":          []byte("\x89PNG\r\n\x1a\n"),
		"arch.tar.gz":      []byte("\x1f\x8b"),
		"noext":            []byte("no extension"),
		"odd.qqqzz":        []byte("unknown extension"),
		"empty.txt":        {},
		"naïve 日本.txt":     []byte("unicode name\n"),
		"100% #1?.txt":     []byte("reserved characters\n"),
		"it's (1) a=b.txt": []byte("quote and parens\n"),
	}
	for name, data := range files {
		p := writeFile(t, dir, name, data)
		if err := os.Chtimes(p, mtime2023, mtime2023); err != nil {
			t.Fatal(err)
		}
	}
	s := start(t, "-v", dir+"::r")

	cases := []struct {
		name, ctype string
		sandbox     bool
	}{
		{name: "a.txt", ctype: "text/plain; charset=utf-8", sandbox: false},
		{name: "UPPER.TXT", ctype: "text/plain; charset=utf-8", sandbox: false},
		{name: "page.html", ctype: "text/html; charset=utf-8", sandbox: true},
		{name: "pic.svg", ctype: "image/svg+xml", sandbox: true},
		{name: "data.json", ctype: "application/json", sandbox: false},
		{name: "img.png", ctype: "image/png", sandbox: false},
		{name: "arch.tar.gz", ctype: "application/gzip", sandbox: false},
		{name: "noext", ctype: "application/octet-stream", sandbox: false},
		{name: "odd.qqqzz", ctype: "application/octet-stream", sandbox: false},
		{name: "empty.txt", ctype: "text/plain; charset=utf-8", sandbox: false},
		{name: "naïve 日本.txt", ctype: "text/plain; charset=utf-8", sandbox: false},
		{name: "100% #1?.txt", ctype: "text/plain; charset=utf-8", sandbox: false},
		{name: "it's (1) a=b.txt", ctype: "text/plain; charset=utf-8", sandbox: false},
	}
	etags := map[string]string{}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := s.do(t, "GET", "/"+url.PathEscape(tc.name), nil)
			wantStatus(t, resp, body, http.StatusOK)
			want := files[tc.name]
			if !bytes.Equal(body, want) {
				t.Errorf("body = %q, want %q", body, want)
			}
			h := resp.Header
			if got := h.Get("Content-Type"); got != tc.ctype {
				t.Errorf("Content-Type = %q, want %q", got, tc.ctype)
			}
			if got, want := h.Get("Content-Length"), strconv.Itoa(len(want)); got != want {
				t.Errorf("Content-Length = %q, want %q", got, want)
			}
			if got, want := h.Get("Last-Modified"), mtime2023.Format(http.TimeFormat); got != want && !onS3(t) { // an object's time is its LastModified
				t.Errorf("Last-Modified = %q, want %q", got, want)
			}
			et := h.Get("ETag")
			if !regexp.MustCompile(`^"[\x21\x23-\x7e]+"$`).MatchString(et) {
				t.Errorf("ETag = %q, want a strong entity tag (\"…\", no W/)", et)
			}
			etags[tc.name] = et
			if got := h.Get("Accept-Ranges"); got != "bytes" {
				t.Errorf("Accept-Ranges = %q, want %q", got, "bytes")
			}
			if got := h.Get("X-Content-Type-Options"); got != "nosniff" {
				t.Errorf("X-Content-Type-Options = %q, want nosniff", got)
			}
			cd := h.Get("Content-Disposition")
			if !strings.HasPrefix(cd, "inline;") {
				t.Errorf("Content-Disposition = %q, want inline; …", cd)
			}
			checkFilenameStar(t, cd, tc.name)
			disp, params, err := mime.ParseMediaType(cd)
			if err != nil || disp != "inline" || params["filename"] != tc.name {
				t.Errorf("Content-Disposition %q parses as (%q, filename %q, %v), want (inline, %q, nil)", cd, disp, params["filename"], err, tc.name)
			}
			csp := h.Get("Content-Security-Policy")
			if tc.sandbox && !strings.Contains(csp, "sandbox") {
				t.Errorf("Content-Security-Policy = %q, want sandbox for active content", csp)
			}
			if !tc.sandbox && csp != "" {
				t.Errorf("Content-Security-Policy = %q, want none for passive content", csp)
			}
		})
	}
	t.Run("etags differ per file", func(t *testing.T) {
		seen := map[string]string{}
		for name, et := range etags {
			if other, ok := seen[et]; ok {
				t.Errorf("ETag %s is shared by %q and %q, want distinct", et, name, other)
			}
			seen[et] = name
		}
	})
	t.Run("etag changes with content", func(t *testing.T) {
		resp, body := s.do(t, "GET", "/a.txt", nil)
		wantStatus(t, resp, body, http.StatusOK)
		old := resp.Header.Get("ETag")
		writeFile(t, dir, "a.txt", []byte("changed, and longer than before\n"))
		resp, body = s.do(t, "GET", "/a.txt", nil, "If-None-Match: "+old)
		wantStatus(t, resp, body, http.StatusOK)
		if got := resp.Header.Get("ETag"); got == old {
			t.Errorf("ETag after rewrite = %q, want different from %q", got, old)
		}
		if string(body) != "changed, and longer than before\n" {
			t.Errorf("body = %q, want the new content", body)
		}
	})
	t.Run("HEAD", func(t *testing.T) {
		resp, body := s.do(t, "HEAD", "/img.png", nil)
		wantStatus(t, resp, body, http.StatusOK)
		if len(body) != 0 {
			t.Errorf("HEAD body = %d bytes, want 0", len(body))
		}
		if got, want := resp.Header.Get("Content-Length"), strconv.Itoa(len(files["img.png"])); got != want {
			t.Errorf("HEAD Content-Length = %q, want %q", got, want)
		}
		for _, k := range []string{"Content-Type", "ETag", "Last-Modified", "Accept-Ranges", "Content-Disposition"} {
			if resp.Header.Get(k) == "" {
				t.Errorf("HEAD: header %s missing, want it as on GET", k)
			}
		}
	})
	t.Run("missing file", func(t *testing.T) {
		resp, body := s.do(t, "GET", "/nope.txt", nil)
		wantStatus(t, resp, body, http.StatusNotFound)
		if got := resp.Header.Get("Content-Type"); got != "text/plain; charset=utf-8" {
			t.Errorf("error Content-Type = %q, want text/plain; charset=utf-8", got)
		}
		if bytes.Contains(body, []byte(dir)) {
			t.Errorf("error body %q names the server's folder %q, want no file-system path", body, dir)
		}
	})
}

func TestDownloadDisposition(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, dir, "a.txt", []byte("A"))
	writeFile(t, dir, "naïve 日本.txt", []byte("N"))
	s := start(t, "-v", dir+"::r")
	cases := []struct {
		name, path, disp, filename string
	}{
		{name: "inline by default", path: "/a.txt", disp: "inline", filename: "a.txt"},
		{name: "dl", path: "/a.txt?dl", disp: "attachment", filename: "a.txt"},
		{name: "dl empty value", path: "/a.txt?dl=", disp: "attachment", filename: "a.txt"},
		{name: "dl other name", path: "/a.txt?dl=other.name", disp: "attachment", filename: "other.name"},
		{name: "dl name with folders keeps the base", path: "/a.txt?dl=..%2F..%2Fx.bin", disp: "attachment", filename: "x.bin"},
		{name: "dl unicode name", path: "/a.txt?dl=" + url.QueryEscape("ünï (2).txt"), disp: "attachment", filename: "ünï (2).txt"},
		{name: "unicode file inline", path: "/" + url.PathEscape("naïve 日本.txt"), disp: "inline", filename: "naïve 日本.txt"},
		{name: "unicode file dl", path: "/" + url.PathEscape("naïve 日本.txt") + "?dl", disp: "attachment", filename: "naïve 日本.txt"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := s.do(t, "GET", tc.path, nil)
			wantStatus(t, resp, body, http.StatusOK)
			cd := resp.Header.Get("Content-Disposition")
			if want := tc.disp + ";"; !strings.HasPrefix(cd, want) {
				t.Errorf("Content-Disposition = %q, want prefix %q", cd, want)
			}
			checkFilenameStar(t, cd, tc.filename)
			disp, params, err := mime.ParseMediaType(cd)
			if err != nil || disp != tc.disp || params["filename"] != tc.filename {
				t.Errorf("Content-Disposition %q parses as (%q, %q, %v), want (%q, %q, nil)", cd, disp, params["filename"], err, tc.disp, tc.filename)
			}
		})
	}
}

func TestDownloadRanges(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	data := loggedRandomBytes(t, 1<<20+int(time.Now().UnixNano()%(2<<20)))
	size := len(data)
	writeFile(t, dir, "big.bin", data)
	writeFile(t, dir, "empty.bin", nil)
	s := start(t, "-v", dir+"::r")
	s2 := start(t, "-v", dir+"::r", "--max-ranges", "2")

	single := []struct {
		name   string
		rng    string
		lo, hi int // inclusive
	}{
		{name: "first byte", rng: "bytes=0-0", lo: 0, hi: 0},
		{name: "closed", rng: "bytes=1000-99999", lo: 1000, hi: 99999},
		{name: "open end", rng: fmt.Sprintf("bytes=%d-", size-12345), lo: size - 12345, hi: size - 1},
		{name: "suffix", rng: "bytes=-500", lo: size - 500, hi: size - 1},
		{name: "suffix larger than file", rng: fmt.Sprintf("bytes=-%d", size+100), lo: 0, hi: size - 1},
		{name: "clipped past the end", rng: fmt.Sprintf("bytes=%d-%d", size-10, size+1000), lo: size - 10, hi: size - 1},
		{name: "last byte", rng: fmt.Sprintf("bytes=%d-%d", size-1, size-1), lo: size - 1, hi: size - 1},
		{name: "whole", rng: "bytes=0-", lo: 0, hi: size - 1},
	}
	for _, tc := range single {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := s.do(t, "GET", "/big.bin", nil, "Range: "+tc.rng)
			wantStatus(t, resp, body, http.StatusPartialContent)
			if got, want := resp.Header.Get("Content-Range"), fmt.Sprintf("bytes %d-%d/%d", tc.lo, tc.hi, size); got != want {
				t.Errorf("Content-Range = %q, want %q", got, want)
			}
			if got, want := resp.Header.Get("Content-Length"), strconv.Itoa(tc.hi-tc.lo+1); got != want {
				t.Errorf("Content-Length = %q, want %q", got, want)
			}
			if !bytes.Equal(body, data[tc.lo:tc.hi+1]) {
				t.Errorf("body: %d bytes not equal to file[%d:%d], want byte-exact", len(body), tc.lo, tc.hi+1)
			}
		})
	}

	multi := []struct {
		name  string
		srv   *server
		parts [][2]int // inclusive; nil: expect the whole file with 200
	}{
		{name: "two ranges", srv: s, parts: [][2]int{{0, 9}, {size - 10, size - 1}}},
		{name: "three ranges with suffix", srv: s, parts: [][2]int{{100, 199}, {5000, 5000}, {-777, 0}}},
		{name: "sixteen ranges (the cap)", srv: s, parts: manyRanges(16, size)},
		{name: "seventeen ranges: whole file", srv: s, parts: nil},
		{name: "--max-ranges 2: two ranges", srv: s2, parts: [][2]int{{0, 0}, {10, 20}}},
		{name: "--max-ranges 2: three ranges: whole file", srv: s2, parts: nil},
	}
	for _, tc := range multi {
		t.Run(tc.name, func(t *testing.T) {
			var specs []string
			parts := tc.parts
			if parts == nil {
				n := 17
				if tc.srv == s2 {
					n = 3
				}
				parts = manyRanges(n, size)
			}
			for i, p := range parts {
				if p[0] < 0 {
					specs = append(specs, fmt.Sprintf("-%d", -p[0]))
					parts[i] = [2]int{size + p[0], size - 1}
				} else {
					specs = append(specs, fmt.Sprintf("%d-%d", p[0], p[1]))
				}
			}
			resp, body := tc.srv.do(t, "GET", "/big.bin", nil, "Range: bytes="+strings.Join(specs, ","))
			if tc.parts == nil {
				wantStatus(t, resp, body, http.StatusOK)
				if !bytes.Equal(body, data) {
					t.Errorf("body: %d bytes, want the whole file (%d bytes) byte-exact", len(body), size)
				}
				return
			}
			wantStatus(t, resp, body, http.StatusPartialContent)
			mt, params, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
			if err != nil || mt != "multipart/byteranges" {
				t.Fatalf("Content-Type = %q (%v), want multipart/byteranges", resp.Header.Get("Content-Type"), err)
			}
			mr := multipart.NewReader(bytes.NewReader(body), params["boundary"])
			for i, p := range parts {
				part, err := mr.NextPart()
				if err != nil {
					t.Fatalf("part %d: %v, want a part for bytes %d-%d", i, err, p[0], p[1])
				}
				if got, want := part.Header.Get("Content-Range"), fmt.Sprintf("bytes %d-%d/%d", p[0], p[1], size); got != want {
					t.Errorf("part %d Content-Range = %q, want %q", i, got, want)
				}
				got, _ := io.ReadAll(part)
				if !bytes.Equal(got, data[p[0]:p[1]+1]) {
					t.Errorf("part %d: %d bytes not equal to file[%d:%d], want byte-exact", i, len(got), p[0], p[1]+1)
				}
			}
			if _, err := mr.NextPart(); err != io.EOF {
				t.Errorf("after %d parts: %v, want io.EOF", len(parts), err)
			}
		})
	}

	bad := []struct {
		name, path, rng string
		n               int
	}{
		{name: "start at size", path: "/big.bin", rng: fmt.Sprintf("bytes=%d-", size), n: size},
		{name: "start past size", path: "/big.bin", rng: fmt.Sprintf("bytes=%d-%d", size+5, size+10), n: size},
		{name: "all of several past the end", path: "/big.bin", rng: fmt.Sprintf("bytes=%d-%d,%d-", size+1, size+2, size+9), n: size},
	}
	for _, tc := range bad {
		t.Run("416 "+tc.name, func(t *testing.T) {
			resp, body := s.do(t, "GET", tc.path, nil, "Range: "+tc.rng)
			wantStatus(t, resp, body, http.StatusRequestedRangeNotSatisfiable)
			if got, want := resp.Header.Get("Content-Range"), fmt.Sprintf("bytes */%d", tc.n); got != want {
				t.Errorf("Content-Range = %q, want %q", got, want)
			}
			if tc.n > 0 && bytes.Contains(body, data[:64]) {
				t.Errorf("416 body carries file data, want none")
			}
		})
	}
}

func TestDownloadRangesEmptyFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, dir, "empty.bin", nil)
	s := start(t, "-v", dir+"::r")
	// No byte of an empty file can be ranged over: either the range is
	// ignored (200, empty) or refused (416, bytes */0); never a 206.
	for _, rng := range []string{"bytes=0-0", "bytes=0-", "bytes=-1", "bytes=0-0,-1"} {
		t.Run(rng, func(t *testing.T) {
			resp, body := s.do(t, "GET", "/empty.bin", nil, "Range: "+rng)
			switch resp.StatusCode {
			case http.StatusOK:
				if len(body) != 0 || resp.Header.Get("Content-Range") != "" {
					t.Errorf("200 with body %q, Content-Range %q, want empty and none", body, resp.Header.Get("Content-Range"))
				}
			case http.StatusRequestedRangeNotSatisfiable:
				if got := resp.Header.Get("Content-Range"); got != "bytes */0" {
					t.Errorf("Content-Range = %q, want bytes */0", got)
				}
			default:
				t.Errorf("status = %d (Content-Range %q), want 200 or 416", resp.StatusCode, resp.Header.Get("Content-Range"))
			}
		})
	}
}

// manyRanges returns n small disjoint ranges spread over size bytes.
func manyRanges(n, size int) [][2]int {
	out := make([][2]int, n)
	step := size / (n + 1)
	for i := range out {
		lo := i*step + 3
		out[i] = [2]int{lo, lo + 10 + i}
	}
	return out
}

func TestDownloadConditional(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	data := loggedRandomBytes(t, 100000)
	p := writeFile(t, dir, "f.bin", data)
	os.Chtimes(p, mtime2023, mtime2023)
	s := start(t, "-v", dir+"::r")
	resp, body := s.do(t, "GET", "/f.bin", nil)
	wantStatus(t, resp, body, http.StatusOK)
	et, lm := resp.Header.Get("ETag"), resp.Header.Get("Last-Modified")
	if et == "" || lm == "" {
		t.Fatalf("ETag = %q, Last-Modified = %q, want both set", et, lm)
	}
	cases := []struct {
		name   string
		hdr    []string
		status int
		lo, hi int // body = data[lo:hi]; for 304 none
	}{
		{name: "If-None-Match same etag", hdr: []string{"If-None-Match: " + et}, status: 304, lo: 0, hi: 0},
		{name: "If-None-Match in a list", hdr: []string{`If-None-Match: "nope", ` + et}, status: 304, lo: 0, hi: 0},
		{name: "If-None-Match star", hdr: []string{"If-None-Match: *"}, status: 304, lo: 0, hi: 0},
		{name: "If-None-Match weak form matches", hdr: []string{"If-None-Match: W/" + et}, status: 304, lo: 0, hi: 0},
		{name: "If-None-Match other etag", hdr: []string{`If-None-Match: "other"`}, status: 200, lo: 0, hi: len(data)},
		{name: "If-Modified-Since = Last-Modified", hdr: []string{"If-Modified-Since: " + lm}, status: 304, lo: 0, hi: 0},
		{name: "If-Modified-Since later", hdr: []string{"If-Modified-Since: " + mtime2023.Add(time.Hour).Format(http.TimeFormat)}, status: 304, lo: 0, hi: 0},
		{name: "If-Modified-Since earlier", hdr: []string{"If-Modified-Since: " + mtime2023.Add(-time.Second).Format(http.TimeFormat)}, status: 200, lo: 0, hi: len(data)},
		{name: "If-None-Match wins over If-Modified-Since", hdr: []string{`If-None-Match: "other"`, "If-Modified-Since: " + lm}, status: 200, lo: 0, hi: len(data)},
		{name: "If-Range current etag", hdr: []string{"If-Range: " + et, "Range: bytes=10-19"}, status: 206, lo: 10, hi: 20},
		{name: "If-Range stale etag", hdr: []string{`If-Range: "stale"`, "Range: bytes=10-19"}, status: 200, lo: 0, hi: len(data)},
		{name: "If-Range current date", hdr: []string{"If-Range: " + lm, "Range: bytes=10-19"}, status: 206, lo: 10, hi: 20},
		{name: "If-Range stale date", hdr: []string{"If-Range: " + mtime2023.Add(-time.Hour).Format(http.TimeFormat), "Range: bytes=10-19"}, status: 200, lo: 0, hi: len(data)},
		{name: "If-Range weak etag never matches", hdr: []string{"If-Range: W/" + et, "Range: bytes=10-19"}, status: 200, lo: 0, hi: len(data)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := s.do(t, "GET", "/f.bin", nil, tc.hdr...)
			wantStatus(t, resp, body, tc.status)
			if tc.status == 304 {
				if len(body) != 0 {
					t.Errorf("304 body = %d bytes, want 0", len(body))
				}
				if got := resp.Header.Get("ETag"); got != et {
					t.Errorf("304 ETag = %q, want %q", got, et)
				}
				return
			}
			if !bytes.Equal(body, data[tc.lo:tc.hi]) {
				t.Errorf("body = %d bytes, want data[%d:%d] byte-exact", len(body), tc.lo, tc.hi)
			}
		})
	}
}

func TestDownloadMime(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, dir, "a.bin", []byte("<b>hi</b>"))
	writeFile(t, dir, "b.txt", []byte("text"))
	s := start(t, "-v", dir+"::r")
	cases := []struct {
		name, path string
		status     int
		ctype      string
		sandbox    bool
	}{
		{name: "text/plain", path: "/a.bin?mime=text/plain", status: 200, ctype: "text/plain", sandbox: false},
		{name: "with parameter", path: "/a.bin?mime=" + url.QueryEscape("text/plain; charset=latin1"), status: 200, ctype: "text/plain; charset=latin1", sandbox: false},
		{name: "html gets a sandbox", path: "/b.txt?mime=text/html", status: 200, ctype: "text/html", sandbox: true},
		{name: "svg gets a sandbox", path: "/b.txt?mime=image/svg%2Bxml", status: 200, ctype: "image/svg+xml", sandbox: true},
		{name: "empty", path: "/a.bin?mime=", status: 400, ctype: "", sandbox: false},
		{name: "no subtype", path: "/a.bin?mime=text/", status: 400, ctype: "", sandbox: false},
		{name: "no slash", path: "/a.bin?mime=notatype", status: 400, ctype: "", sandbox: false},
		{name: "space", path: "/a.bin?mime=a%20b", status: 400, ctype: "", sandbox: false},
		{name: "header injection", path: "/a.bin?mime=text/plain%0d%0aX-Evil:%201", status: 400, ctype: "", sandbox: false},
		{name: "bad parameter", path: "/a.bin?mime=text/plain%3Bx", status: 400, ctype: "", sandbox: false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := s.do(t, "GET", tc.path, nil)
			wantStatus(t, resp, body, tc.status)
			if resp.Header.Get("X-Evil") != "" {
				t.Errorf("X-Evil header present, want no header injection")
			}
			if got := resp.Header.Get("X-Content-Type-Options"); got != "nosniff" {
				t.Errorf("X-Content-Type-Options = %q, want nosniff", got)
			}
			if tc.status != 200 {
				if strings.Contains(string(body), "<b>hi</b>") {
					t.Errorf("error body carries the file, want an error message")
				}
				return
			}
			if got := resp.Header.Get("Content-Type"); got != tc.ctype {
				t.Errorf("Content-Type = %q, want %q", got, tc.ctype)
			}
			if got := resp.Header.Get("Content-Security-Policy"); strings.Contains(got, "sandbox") != tc.sandbox {
				t.Errorf("Content-Security-Policy = %q, want sandbox: %v", got, tc.sandbox)
			}
		})
	}
}

// TestDownloadUploadedActive checks that HTML and SVG put there by an
// uploader cannot run script in the server's origin.
func TestDownloadUploadedActive(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := start(t, "-v", dir+"::rw")
	cases := []struct{ name, body string }{
		{name: "x.html", body: "<script>alert(document.cookie)</script>"},
		{name: "x.HTM", body: "<script>alert(1)</script>"},
		{name: "x.svg", body: `<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"/>`},
		{name: "x.xhtml", body: `<html xmlns="http://www.w3.org/1999/xhtml"><script>alert(1)</script></html>`},
		{name: "x.js", body: "alert(1)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := s.do(t, "PUT", "/"+tc.name, []byte(tc.body))
			wantStatus(t, resp, body, http.StatusCreated)
			resp, body = s.do(t, "GET", "/"+tc.name, nil)
			wantStatus(t, resp, body, http.StatusOK)
			if string(body) != tc.body {
				t.Errorf("body = %q, want %q", body, tc.body)
			}
			if got := resp.Header.Get("Content-Security-Policy"); !strings.Contains(got, "sandbox") {
				t.Errorf("Content-Security-Policy = %q (Content-Type %q), want sandbox", got, resp.Header.Get("Content-Type"))
			}
			if got := resp.Header.Get("X-Content-Type-Options"); got != "nosniff" {
				t.Errorf("X-Content-Type-Options = %q, want nosniff", got)
			}
		})
	}
}

// TestDownloadNames fetches files with awkward names through
// percent-encoded URLs.
func TestDownloadNames(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	names := []string{
		"naïve 日本.txt",
		"sub dir/ünï/😀 emoji.bin",
		"100% #1?.txt",
		"a+b=c&d.txt",
		"semi;colon,comma.txt",
		"it's (1).txt",
		"   leading spaces.txt",
		"Ωmega/ДОК.md",
	}
	for i, n := range names {
		writeFile(t, dir, n, []byte(fmt.Sprintf("content %d of %s", i, n)))
	}
	s := start(t, "-v", dir+"::r")
	for i, n := range names {
		t.Run(n, func(t *testing.T) {
			parts := strings.Split(n, "/")
			for j, p := range parts {
				parts[j] = url.PathEscape(p)
			}
			u := "/" + strings.Join(parts, "/")
			resp, body := s.do(t, "GET", u, nil)
			wantStatus(t, resp, body, http.StatusOK)
			if want := fmt.Sprintf("content %d of %s", i, n); string(body) != want {
				t.Errorf("GET %s = %q, want %q", u, body, want)
			}
			// Every byte percent-encoded must work too.
			var all strings.Builder
			for _, p := range strings.Split(n, "/") {
				all.WriteByte('/')
				for k := 0; k < len(p); k++ {
					fmt.Fprintf(&all, "%%%02x", p[k])
				}
			}
			resp, body = rawRequest(t, s, "GET", all.String(), nil)
			wantStatus(t, resp, body, http.StatusOK)
			if want := fmt.Sprintf("content %d of %s", i, n); string(body) != want {
				t.Errorf("GET %s = %q, want %q", all.String(), body, want)
			}
		})
	}
	t.Run("listing hrefs lead back to the files", func(t *testing.T) {
		resp, body := s.do(t, "GET", "/"+url.PathEscape("sub dir")+"/"+url.PathEscape("ünï")+"/?ls", nil)
		wantStatus(t, resp, body, http.StatusOK)
		ls := decodeListing(t, body)
		if len(ls.Files) != 1 {
			t.Fatalf("files = %v, want one", ls.Files)
		}
		href := ls.Files[0].Href
		resp, body = s.do(t, "GET", "/"+url.PathEscape("sub dir")+"/"+url.PathEscape("ünï")+"/"+href, nil)
		wantStatus(t, resp, body, http.StatusOK)
		if want := "content 1 of sub dir/ünï/😀 emoji.bin"; string(body) != want {
			t.Errorf("GET via href %q = %q, want %q", href, body, want)
		}
	})
	t.Run("file on disk unchanged", func(t *testing.T) {
		if _, err := os.Stat(filepath.Join(dir, "naïve 日本.txt")); err != nil {
			t.Errorf("stat: %v, want the file still there", err)
		}
	})
}

package http

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestPlainDownloadProperty: a download answered by the plain path
// (getplain.go) is the answer http.ServeContent gives — status, every
// header, body — for random Range headers (plain ones, odd ones, several,
// out of the file), validators (If-None-Match with the file's ETag or
// another, If-Modified-Since before and after, If-Range, If-Match,
// If-Unmodified-Since), GET and HEAD, files empty, small, bigger than a
// corked body, with an mtime at the Unix epoch. A plain path that skipped
// a rule (a validator, a range's bounds) answers differently.
func TestPlainDownloadProperty(t *testing.T) {
	s, dir := newTestServer(t, "r")
	rnd := rand.New(rand.NewPCG(7, 19))
	type file struct {
		name string
		data []byte
		mt   time.Time
	}
	var files []file
	for i, size := range []int{0, 1, 100, 4096, corkBody + 1, 200 << 10} {
		b := make([]byte, size)
		for j := range b {
			b[j] = byte(rnd.IntN(256))
		}
		name := fmt.Sprintf("f%d.bin", i)
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		mt := time.Date(2024, 3, 4, 5, 6, 7, 123456789, time.UTC)
		if i == 2 {
			mt = time.Unix(0, 0) // net/http sends no Last-Modified for it
		}
		if err := os.Chtimes(p, mt, mt); err != nil {
			t.Fatal(err)
		}
		files = append(files, file{name, b, mt})
	}
	num := func(size int) string {
		switch rnd.IntN(6) {
		case 0:
			return strconv.Itoa(size + rnd.IntN(3) - 1)
		case 1:
			return "0"
		case 2:
			return "+" + strconv.Itoa(rnd.IntN(size+2))
		case 3:
			return " " + strconv.Itoa(rnd.IntN(size+2))
		}
		return strconv.Itoa(rnd.IntN(size + 2))
	}
	rangeHdr := func(size int) string {
		switch rnd.IntN(9) {
		case 0:
			return ""
		case 1:
			return "bytes=" + num(size) + "-"
		case 2:
			return "bytes=-" + num(size)
		case 3:
			return "bytes=" + num(size) + "-" + num(size) + "," + num(size) + "-" + num(size)
		case 4:
			return []string{"bytes=", "bytes=-", "items=0-1", "bytes=1-0", "bytes = 0-1", "bytes=0-1 ", "bytes=00-01", "bytes=-0", "bytes=99999999999999999999-"}[rnd.IntN(9)]
		}
		return "bytes=" + num(size) + "-" + num(size)
	}
	n := 0
	for range 3000 {
		f := files[rnd.IntN(len(files))]
		fi, err := os.Stat(filepath.Join(dir, f.name))
		if err != nil {
			t.Fatal(err)
		}
		method := "GET"
		if rnd.IntN(4) == 0 {
			method = "HEAD"
		}
		r := httptest.NewRequest(method, "/"+f.name, nil)
		if rg := rangeHdr(len(f.data)); rg != "" {
			r.Header.Set("Range", rg)
		}
		lm := f.mt.UTC().Format(http.TimeFormat)
		switch rnd.IntN(16) {
		case 0:
			r.Header.Set("If-None-Match", etag(fi))
		case 1:
			r.Header.Set("If-None-Match", `"other"`)
		case 2:
			r.Header.Set("If-Modified-Since", lm)
		case 3:
			r.Header.Set("If-Modified-Since", f.mt.Add(-time.Hour).UTC().Format(http.TimeFormat))
		case 4:
			r.Header.Set("If-Range", []string{etag(fi), `"other"`, lm}[rnd.IntN(3)])
		case 5:
			r.Header.Set("If-Match", []string{etag(fi), `"other"`}[rnd.IntN(2)])
		case 6:
			r.Header.Set("If-Unmodified-Since", f.mt.Add(-time.Hour).UTC().Format(http.TimeFormat))
		}
		_, _, _, plain := plainRange(r, fi.Size())
		if plain {
			n++
		}
		got := httptest.NewRecorder()
		s.ServeHTTP(got, r.Clone(r.Context()))

		// The reference: the same headers set before (serveFile sets
		// Accept-Ranges before ServeContent too), then ServeContent.
		want := httptest.NewRecorder()
		for _, k := range []string{"Content-Type", "X-Content-Type-Options", "Cache-Control", "Accept-Ranges", "Content-Disposition", "Etag", "X-Request-Id", "Content-Security-Policy"} {
			if v, ok := got.Header()[k]; ok {
				want.Header()[k] = v
			}
		}
		if want.Header().Get("Etag") != etag(fi) && got.Code < 400 {
			t.Fatalf("%s: ETag %q, want %q", f.name, want.Header().Get("Etag"), etag(fi))
		}
		want.Header().Set("Etag", etag(fi)) // an error's answer drops it
		rr := r.Clone(r.Context())
		if fi.Size() == 0 {
			rr.Header.Del("Range") // as serveFile does
		}
		fh, err := os.Open(filepath.Join(dir, f.name))
		if err != nil {
			t.Fatal(err)
		}
		http.ServeContent(want, rr, "", fi.ModTime(), fh)
		fh.Close()
		what := fmt.Sprintf("%s %s Range %q If-* %v (plain %v)", method, f.name, r.Header.Get("Range"), r.Header, plain)
		if got.Code != want.Code {
			t.Fatalf("%s: status %d, ServeContent %d", what, got.Code, want.Code)
		}
		if strings.HasPrefix(want.Header().Get("Content-Type"), "multipart/") {
			if plain {
				t.Fatalf("%s: took the plain path", what)
			}
			continue // a random boundary: ServeContent's own answer both ways
		}
		if !bytes.Equal(got.Body.Bytes(), want.Body.Bytes()) {
			t.Fatalf("%s: %d body bytes differ from ServeContent's %d", what, got.Body.Len(), want.Body.Len())
		}
		gh, wh := got.Header(), want.Header()
		if got.Code >= 400 {
			continue // fail() rewrites an error's headers; the status and body are compared
		}
		for k := range wh {
			if gh.Get(k) != wh.Get(k) || len(gh[k]) != len(wh[k]) {
				t.Fatalf("%s: %s %q, ServeContent %q", what, k, gh[k], wh[k])
			}
		}
		for k := range gh {
			if _, ok := wh[k]; !ok {
				t.Fatalf("%s: %s %q, ServeContent sends none", what, k, gh[k])
			}
		}
	}
	if n < 400 {
		t.Fatalf("only %d of 3000 requests took the plain path", n)
	}
	t.Logf("%d of 3000 took the plain path", n)
}

// FuzzPlainRange: a Range that parsePlainRange takes is one net/http
// answers with 206 and exactly those bytes.
func FuzzPlainRange(f *testing.F) {
	for _, s := range []string{"bytes=0-0", "bytes=5-", "bytes=-3", "bytes=3-1", "bytes=-0", "bytes=+1-2", "bytes=1-2,3-4", "bytes=0-99999999999999999", "bytes=10-"} {
		f.Add(s, int64(10))
	}
	f.Fuzz(func(t *testing.T, s string, size int64) {
		size = size & 0xfff
		start, n, ok := parsePlainRange(s, size)
		if !ok {
			return
		}
		if start < 0 || n <= 0 || start+n > size {
			t.Fatalf("%q over %d: start %d n %d", s, size, start, n)
		}
		data := make([]byte, size)
		for i := range data {
			data[i] = byte(i * 7)
		}
		r := httptest.NewRequest("GET", "/", nil)
		r.Header.Set("Range", s)
		w := httptest.NewRecorder()
		w.Header().Set("Content-Type", "application/octet-stream")
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(data))
		want := fmt.Sprintf("bytes %d-%d/%d", start, start+n-1, size)
		if w.Code != http.StatusPartialContent || w.Header().Get("Content-Range") != want || !bytes.Equal(w.Body.Bytes(), data[start:start+n]) {
			t.Fatalf("%q over %d: plain says %s; net/http %d %q", s, size, want, w.Code, w.Header().Get("Content-Range"))
		}
	})
}

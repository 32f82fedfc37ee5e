package http

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"hoard/store"
)

// testStore opens a store over one temporary volume at / with the given
// permissions for everyone, logging nowhere.
func testStore(t testing.TB, perms string) (*store.Store, string, *slog.Logger) {
	t.Helper()
	dir := t.TempDir()
	spec, err := store.ParseVolume(dir + "::" + perms)
	if err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.DiscardHandler)
	st, err := store.Open(store.Config{Volumes: []store.VolumeSpec{spec}, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st, dir, quiet
}

// newTestServer serves one temporary volume at / with the given permissions
// for everyone.
func newTestServer(t testing.TB, perms string) (*Server, string) {
	t.Helper()
	st, dir, quiet := testStore(t, perms)
	return New(Config{Store: st, Logger: quiet}), dir
}

// sendfileProbe is a ResponseWriter that, like net/http's own, implements
// io.ReaderFrom, and records whether the body reached it as an *os.File
// (bare or inside the *io.LimitedReader that http.ServeContent makes). Only
// such a source lets net/http use sendfile(2).
type sendfileProbe struct {
	header    http.Header
	code      int
	body      bytes.Buffer
	readFroms int
	fromFile  bool
}

func (p *sendfileProbe) Header() http.Header { return p.header }
func (p *sendfileProbe) WriteHeader(c int) {
	if p.code == 0 {
		p.code = c
	}
}
func (p *sendfileProbe) Write(b []byte) (int, error) {
	if p.code == 0 {
		p.code = 200
	}
	return p.body.Write(b)
}
func (p *sendfileProbe) ReadFrom(r io.Reader) (int64, error) {
	if p.code == 0 {
		p.code = 200
	}
	p.readFroms++
	src := r
	if lr, ok := r.(*io.LimitedReader); ok {
		src = lr.R
	}
	// The same test net's sendfile path makes: the source, bare or
	// inside the LimitedReader, must expose the file descriptor.
	if _, ok := src.(syscall.Conn); ok {
		p.fromFile = true
	}
	return io.Copy(&p.body, struct{ io.Reader }{r})
}

// TestDownloadReachesSendfile fails if anything in the handler chain stops
// the file from reaching the ResponseWriter's ReadFrom as an *os.File.
func TestDownloadReachesSendfile(t *testing.T) {
	s, dir := newTestServer(t, "r")
	data := bytes.Repeat([]byte("0123456789abcdef"), 64<<10) // 1 MiB
	if err := os.WriteFile(filepath.Join(dir, "big.bin"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, rng string
		code      int
		want      []byte
	}{
		{"whole", "", 200, data},
		{"range", "bytes=1000-99999", 206, data[1000:100000]},
		{"suffix", "bytes=-4096", 206, data[len(data)-4096:]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest("GET", "/big.bin", nil)
			if tc.rng != "" {
				req.Header.Set("Range", tc.rng)
			}
			p := &sendfileProbe{header: http.Header{}}
			s.ServeHTTP(p, req)
			if p.code != tc.code {
				t.Fatalf("status = %d, want %d", p.code, tc.code)
			}
			if !p.fromFile || p.readFroms == 0 {
				t.Fatalf("body did not reach ReadFrom as an *os.File (ReadFrom calls %d): sendfile is lost", p.readFroms)
			}
			if !bytes.Equal(p.body.Bytes(), tc.want) {
				t.Fatalf("body differs: got %d bytes, want %d", p.body.Len(), len(tc.want))
			}
		})
	}
}

func TestParsePath(t *testing.T) {
	for _, tc := range []struct {
		in    string
		parts []string
		slash bool
		bad   bool
	}{
		{"/", nil, true, false},
		{"/a/b", []string{"a", "b"}, false, false},
		{"/a//b/./c/", []string{"a", "b", "c"}, true, false},
		{"/a/../b", nil, false, true},
		{"/..", nil, false, true},
		{"/a\\b", nil, false, true},
		{"/a\x00b", nil, false, true},
		{"/a\nb", nil, false, true},
		{"/a\x7fb", nil, false, true},
		{"/\xc0\xae\xc0\xae/x", nil, false, true},     // overlong "."
		{"/%2e%2e", []string{"%2e%2e"}, false, false}, // decoded once already: a literal name
		{"/" + strings.Repeat("x", 256), nil, false, true},
		{"/日本/naïve.txt", []string{"日本", "naïve.txt"}, false, false},
	} {
		parts, slash, err := parsePath(tc.in)
		if (err != nil) != tc.bad {
			t.Errorf("parsePath(%q) error = %v, want bad=%v", tc.in, err, tc.bad)
			continue
		}
		if tc.bad {
			continue
		}
		if strings.Join(parts, "|") != strings.Join(tc.parts, "|") || slash != tc.slash {
			t.Errorf("parsePath(%q) = %q, %v; want %q, %v", tc.in, parts, slash, tc.parts, tc.slash)
		}
	}
}

// FuzzConfined: whatever path a request names, nothing outside the volume
// is ever served. A canary sits beside the volume, with a symbolic link to
// it inside; the oracle is that its content never appears in a response.
func FuzzConfined(f *testing.F) {
	for _, s := range []string{"/a.txt", "/../canary/secret", "/out/secret", "/%2e%2e/canary/secret", "/..%2fcanary", "/abs/secret",
		"/.hist/secret", "/sub/../../canary/secret", "//canary/secret", "/\\..\\canary"} {
		f.Add(s)
	}
	base := f.TempDir()
	vol, canary := filepath.Join(base, "vol"), filepath.Join(base, "canary")
	os.MkdirAll(filepath.Join(vol, "sub"), 0o755)
	os.MkdirAll(canary, 0o755)
	secret := []byte("CANARY-d41d8cd98f00b204")
	os.WriteFile(filepath.Join(canary, "secret"), secret, 0o644)
	os.WriteFile(filepath.Join(vol, "a.txt"), []byte("inside"), 0o644)
	os.Symlink(canary, filepath.Join(vol, "out"))
	os.Symlink("/", filepath.Join(vol, "abs"))
	spec, _ := store.ParseVolume(vol + "::A")
	st, err := store.Open(store.Config{Volumes: []store.VolumeSpec{spec}})
	if err != nil {
		f.Fatal(err)
	}
	defer st.Close()
	s := New(Config{Store: st})
	f.Fuzz(func(t *testing.T, p string) {
		req, err := http.NewRequest("GET", "http://x/", nil)
		if err != nil {
			t.Skip()
		}
		req.URL.Path = p
		for _, q := range []string{"", "ls", "ls=t", "tree", "dots"} {
			req.URL.RawQuery = q
			w := httptest.NewRecorder()
			s.ServeHTTP(w, req)
			if bytes.Contains(w.Body.Bytes(), secret) {
				t.Fatalf("GET %q?%s served the canary outside the volume", p, q)
			}
			if w.Code == http.StatusOK && strings.Contains(w.Body.String(), "secret") && strings.Contains(w.Body.String(), "canary") {
				t.Fatalf("GET %q?%s listed the canary's folder", p, q)
			}
		}
	})
}

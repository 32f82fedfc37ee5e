package http

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// These benchmarks run the real handler behind a real loopback listener, so
// downloads take net/http's sendfile path exactly as in production.
// Side-by-side figures against nginx and copyparty come from bench/.

func benchServer(b *testing.B) (*httptest.Server, string) {
	b.Helper()
	s, dir := newTestServer(b, "rwd")
	ts := httptest.NewServer(s)
	b.Cleanup(ts.Close)
	return ts, dir
}

func randomFile(b *testing.B, path string, n int64) {
	b.Helper()
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if _, err := io.CopyN(f, rand.Reader, n); err != nil {
		b.Fatal(err)
	}
}

func BenchmarkDownload(b *testing.B) {
	for _, size := range []int64{4 << 10, 64 << 20} {
		b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) {
			ts, dir := benchServer(b)
			randomFile(b, filepath.Join(dir, "f.bin"), size)
			c := ts.Client()
			b.SetBytes(size)
			b.ReportAllocs()
			for b.Loop() {
				resp, err := c.Get(ts.URL + "/f.bin")
				if err != nil {
					b.Fatal(err)
				}
				n, _ := io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if n != size {
					b.Fatalf("got %d bytes", n)
				}
			}
		})
	}
}

func BenchmarkPut(b *testing.B) {
	const size = 64 << 20
	data := make([]byte, size)
	rand.Read(data)
	for _, ck := range []string{"sha512", "no"} {
		b.Run("ck="+ck, func(b *testing.B) {
			ts, _ := benchServer(b)
			c := ts.Client()
			b.SetBytes(size)
			b.ReportAllocs()
			for b.Loop() {
				req, _ := http.NewRequest("PUT", ts.URL+"/up.bin?replace&ck="+ck, bytes.NewReader(data))
				resp, err := c.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusCreated {
					b.Fatalf("status %d", resp.StatusCode)
				}
			}
		})
	}
}

// BenchmarkPutSmall is the per-upload path of a small PUT (4 KiB, a new
// name each time, durable before its 201): its allocs/op and B/op are the
// figures to watch (issue 19); the time per op is the disk's.
func BenchmarkPutSmall(b *testing.B) {
	data := make([]byte, 4<<10)
	rand.Read(data)
	ts, _ := benchServer(b)
	c := ts.Client()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		req, _ := http.NewRequest("PUT", fmt.Sprintf("%s/s%d.bin", ts.URL, i), bytes.NewReader(data))
		resp, err := c.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			b.Fatalf("status %d", resp.StatusCode)
		}
	}
}

// TestEtagOneAlloc: the ETag of a download is formatted with one
// allocation (it was five), and stays the same text: the quoted inode,
// size and mtime in nanoseconds, in base 36, joined by dashes.
func TestEtagOneAlloc(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	if err := os.WriteFile(p, []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	want := `"` + strconv.FormatUint(inode(fi), 36) + "-" + strconv.FormatInt(fi.Size(), 36) + "-" + strconv.FormatInt(fi.ModTime().UnixNano(), 36) + `"`
	if got := etag(fi); got != want {
		t.Fatalf("etag = %s, want %s", got, want)
	}
	if n := testing.AllocsPerRun(100, func() { etag(fi) }); n > 1 {
		t.Fatalf("etag allocates %v times, want 1", n)
	}
}

// TestSmallGetAllocs: a 4 KiB GET through the handler (an in-memory
// recorder, so only the server's own work is counted) allocates at most
// 40 times (the recorder and request included; 64 before the plain
// download, getplain.go, which takes it to 37); its constant headers (Accept-Ranges, Cache-Control, nosniff)
// are shared values, not a new slice each (66 before, 63 after). The body and the
// headers stay what they were.
func TestSmallGetAllocs(t *testing.T) {
	s, dir := newTestServer(t, "r")
	body := bytes.Repeat([]byte("abcd"), 1024)
	if err := os.WriteFile(filepath.Join(dir, "f.txt"), body, 0o644); err != nil {
		t.Fatal(err)
	}
	get := func() *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, httptest.NewRequest("GET", "/f.txt", nil))
		return rec
	}
	rec := get()
	if rec.Code != http.StatusOK || !bytes.Equal(rec.Body.Bytes(), body) {
		t.Fatalf("status %d, %d bytes", rec.Code, rec.Body.Len())
	}
	h := rec.Header()
	for k, want := range map[string]string{"Accept-Ranges": "bytes", "Cache-Control": "no-cache", "X-Content-Type-Options": "nosniff", "Content-Length": "4096"} {
		if got := h.Get(k); got != want {
			t.Errorf("%s: %q, want %q", k, got, want)
		}
	}
	if raceEnabled {
		t.Skip("the race detector changes allocation counts")
	}
	// The least of three runs: AllocsPerRun counts the whole process's
	// allocations, and other tests' goroutines may allocate meanwhile.
	n := math.Inf(1)
	for range 3 {
		n = min(n, testing.AllocsPerRun(100, func() { get() }))
	}
	t.Logf("%v allocations per GET (recorder included)", n)
	if n > 40 {
		t.Fatalf("a 4 KiB GET allocates %v times, want at most 40", n)
	}
}

// BenchmarkGetPath is a keep-alive client's small GET and 64 KiB range
// through the handler behind the production listener stack (the framing
// listener and its ConnContext, so small bodies are corked: cork.go).
// allocs/op counts the client's allocations too (one process).
func BenchmarkGetPath(b *testing.B) {
	s, dir := newTestServer(b, "r")
	randomFile(b, filepath.Join(dir, "s.bin"), 4<<10)
	randomFile(b, filepath.Join(dir, "big.bin"), 4<<20)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := &http.Server{Handler: s, ConnContext: FramingContext}
	go srv.Serve(FramingListener(ln))
	b.Cleanup(func() { srv.Close() })
	base := "http://" + ln.Addr().String()
	c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
	b.Cleanup(c.CloseIdleConnections)
	for _, bc := range []struct {
		name, path, rng string
		n               int64
	}{
		{"small", "/s.bin", "", 4 << 10},
		{"range64k", "/big.bin", "bytes=65536-131071", 64 << 10},
	} {
		b.Run(bc.name, func(b *testing.B) {
			req, _ := http.NewRequest("GET", base+bc.path, nil)
			if bc.rng != "" {
				req.Header.Set("Range", bc.rng)
			}
			buf := make([]byte, 128<<10)
			b.SetBytes(bc.n)
			b.ReportAllocs()
			for b.Loop() {
				resp, err := c.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				n, _ := io.ReadFull(resp.Body, buf[:bc.n])
				resp.Body.Close()
				if int64(n) != bc.n {
					b.Fatalf("got %d bytes", n)
				}
			}
		})
	}
}

package http

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
)

// TestTrackedDownloadKeepsSendfile: a download large enough for ?dls goes
// out in several ReadFrom calls, each still with the *os.File inside, and
// the bytes arrive whole and in order.
func TestTrackedDownloadKeepsSendfile(t *testing.T) {
	s, dir := newTestServer(t, "r")
	data := bytes.Repeat([]byte("0123456789abcdef"), (dlsChunk*2+dlsChunk/2)/16)
	if err := os.WriteFile(filepath.Join(dir, "big.bin"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		rng  string
		code int
		want []byte
	}{
		{"", 200, data},
		{"bytes=100-", 206, data[100:]},
		{"bytes=5-9000000", 206, data[5:9000001]},
	} {
		req := httptest.NewRequest("GET", "/big.bin", nil)
		if tc.rng != "" {
			req.Header.Set("Range", tc.rng)
		}
		p := &sendfileProbe{header: http.Header{}}
		s.ServeHTTP(p, req)
		if p.code != tc.code || !p.fromFile {
			t.Fatalf("%q: status %d, from file %v", tc.rng, p.code, p.fromFile)
		}
		if wantCalls := (len(tc.want) + dlsChunk - 1) / dlsChunk; p.readFroms < wantCalls {
			t.Fatalf("%q: %d ReadFrom calls, want at least %d", tc.rng, p.readFroms, wantCalls)
		}
		if !bytes.Equal(p.body.Bytes(), tc.want) {
			t.Fatalf("%q: body differs (%d bytes, want %d)", tc.rng, p.body.Len(), len(tc.want))
		}
		if n := len(s.dls.list()); n != 0 {
			t.Fatalf("%d downloads still registered", n)
		}
	}
}

// BenchmarkDownloadTracked compares 64 MiB downloads with and without the
// ?dls registry (chunked ReadFrom), alternating in one run.
func BenchmarkDownloadTracked(b *testing.B) {
	const size = 64 << 20
	ts, dir := benchServer(b)
	randomFile(b, filepath.Join(dir, "f.bin"), size)
	c := ts.Client()
	old := dlsMin
	b.Cleanup(func() { dlsMin = old })
	for _, mode := range []string{"tracked", "untracked", "tracked", "untracked"} {
		b.Run(fmt.Sprintf("mode=%s", mode), func(b *testing.B) {
			dlsMin = old
			if mode == "untracked" {
				dlsMin = 1 << 62
			}
			b.SetBytes(size)
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

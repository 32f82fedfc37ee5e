package http

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// FuzzTailStart: any ?tail= value gives a start inside the file or a 400
// or 416, never a panic.
func FuzzTailStart(f *testing.F) {
	for _, s := range []string{"", "0", "10", "-3", "-99", "99", "abc", "9223372036854775807", "-9223372036854775808", " 5 ", "+5", "1e3"} {
		f.Add(s, int64(10))
	}
	f.Fuzz(func(t *testing.T, v string, size int64) {
		if size < 0 {
			size = -(size + 1)
		}
		n, err := tailStart(v, size)
		if err != nil {
			he, ok := err.(*httpError)
			if !ok || (he.code != 400 && he.code != 416) {
				t.Fatalf("%q: %v", v, err)
			}
			return
		}
		if n < 0 || n > size {
			t.Fatalf("tail=%q size %d: start %d", v, size, n)
		}
	})
}

// BenchmarkTailLatency measures how long an appended line takes to reach a
// ?tail client (one append and its arrival per op), through a real
// loopback listener.
func BenchmarkTailLatency(b *testing.B) {
	ts, dir := benchServer(b)
	p := filepath.Join(dir, "t.log")
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		b.Fatal(err)
	}
	resp, err := ts.Client().Get(ts.URL + "/t.log?tail")
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	line := []byte("0123456789abcdef\n")
	got := make([]byte, len(line))
	for b.Loop() {
		if _, err := f.Write(line); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(resp.Body, got); err != nil {
			b.Fatal(err)
		}
	}
}

// TestTailPerClient: one client address holds at most a quarter of the
// ?tail streams (429 past that), so it cannot take them all and keep
// them; another address still gets one, and a closed stream frees its
// place.
func TestTailPerClient(t *testing.T) {
	s, dir := newTestServer(t, "r")
	if err := os.WriteFile(filepath.Join(dir, "t.log"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s)
	defer ts.Close()
	defer s.StopStreams()
	get := func(c *http.Client) *http.Response {
		t.Helper()
		resp, err := c.Get(ts.URL + "/t.log?tail")
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	per := tailPerClient(s.tailMax)
	var open []*http.Response
	for range per {
		resp := get(ts.Client())
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("stream %d: %d", len(open), resp.StatusCode)
		}
		open = append(open, resp)
	}
	resp := get(ts.Client())
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("stream %d of one address: %d, want 429 with Retry-After", per+1, resp.StatusCode)
	}
	other := &http.Client{Transport: &http.Transport{DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}).DialContext}}
	if resp, err := other.Get(ts.URL + "/t.log?tail"); err != nil {
		t.Logf("cannot dial from 127.0.0.2 here: %v", err)
	} else {
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("another address: %d, want 200", resp.StatusCode)
		}
	}
	open[0].Body.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		resp := get(ts.Client())
		if resp.StatusCode == http.StatusOK {
			resp.Body.Close()
			break
		}
		resp.Body.Close()
		if time.Now().After(deadline) {
			t.Fatalf("after closing a stream: still %d", resp.StatusCode)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, r := range open[1:] {
		r.Body.Close()
	}
}

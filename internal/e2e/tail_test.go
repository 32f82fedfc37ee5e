package e2e

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

func TestTailFollowsAppender(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := start(t, "-v", dir+"::r")
	initial := bytes.Repeat([]byte("0123456789"), 100) // 1000 bytes
	for _, tc := range []struct {
		name, q string
		from    int
	}{
		{name: "start", q: "?tail", from: 0},
		{name: "empty", q: "?tail=", from: 0},
		{name: "offset", q: "?tail=437", from: 437},
		{name: "end", q: "?tail=1000", from: 1000},
		{name: "fromEnd", q: "?tail=-250", from: 750},
		{name: "fromEndClamped", q: "?tail=-5000", from: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fn := "log-" + tc.name + ".txt"
			p := writeFile(t, dir, fn, initial)
			tr := startTail(t, s, "/"+fn+tc.q)
			if te := tr.resp.TransferEncoding; len(te) == 0 || te[0] != "chunked" {
				t.Fatalf("Transfer-Encoding %v, want chunked", te)
			}
			tr.waitLen(t, len(initial)-tc.from, 5*time.Second)
			f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			// One line first, to see how soon it arrives.
			fmt.Fprintf(f, "line %05d\n", 0)
			lat := tr.waitLen(t, len(initial)-tc.from+11, 2*time.Second)
			t.Logf("an appended line arrived after %v", lat)
			// Then a burst with pauses, in varied write sizes.
			for i := 1; i < 400; i++ {
				fmt.Fprintf(f, "line %05d\n", i)
				if i%50 == 0 {
					time.Sleep(30 * time.Millisecond)
				}
			}
			f.Close()
			want, _ := os.ReadFile(p)
			want = want[tc.from:]
			tr.waitLen(t, len(want), 5*time.Second)
			// Deleting the file ends the stream.
			os.Remove(p)
			tr.waitEnd(t, 5*time.Second)
			if got := tr.bytes(); !bytes.Equal(got, want) {
				t.Fatalf("received %d bytes, want %d; they differ (lost, repeated or reordered bytes)", len(got), len(want))
			}
		})
	}
}

func TestTailEnds(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := start(t, "-v", dir+"::r", "--tail-tmax", "2", "--tail-cmax", "2")
	// Replacing the file (another inode at the path) ends the stream.
	p := writeFile(t, dir, "a.log", []byte("old\n"))
	tr := startTail(t, s, "/a.log?tail")
	tr.waitLen(t, 4, 5*time.Second)
	tmp := writeFile(t, dir, "a.log.new", []byte("new content\n"))
	if err := os.Rename(tmp, p); err != nil {
		t.Fatal(err)
	}
	tr.waitEnd(t, 5*time.Second)
	if got := string(tr.bytes()); got != "old\n" {
		t.Fatalf("got %q", got)
	}
	// Truncation ends it too.
	writeFile(t, dir, "b.log", []byte("0123456789"))
	tr = startTail(t, s, "/b.log?tail")
	tr.waitLen(t, 10, 5*time.Second)
	os.Truncate(filepath.Join(dir, "b.log"), 2)
	tr.waitEnd(t, 5*time.Second)
	// --tail-tmax ends it after its time.
	writeFile(t, dir, "c.log", []byte("c\n"))
	t0 := time.Now()
	tr = startTail(t, s, "/c.log?tail")
	tr.waitEnd(t, 10*time.Second)
	if d := time.Since(t0); d < 1500*time.Millisecond {
		t.Fatalf("ended after %v, before --tail-tmax", d)
	}
}

func TestTailCapAndClientLeaving(t *testing.T) {
	dir := t.TempDir()
	s := start(t, "-v", dir+"::r", "--tail-cmax", "1")
	writeFile(t, dir, "a.log", []byte("a\n"))
	tr := startTail(t, s, "/a.log?tail")
	tr.waitLen(t, 2, 5*time.Second)
	resp, body := s.do(t, "GET", "/a.log?tail", nil)
	wantStatus(t, resp, body, 503)
	if resp.Header.Get("Retry-After") == "" {
		t.Fatal("503 without Retry-After")
	}
	// The client leaves; its slot frees up soon.
	tr.resp.Body.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		req, _ := http.NewRequest("GET", s.URL+"/a.log?tail", nil)
		resp, err := (&http.Client{}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		code := resp.StatusCode
		resp.Body.Close()
		if code == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("still %d after the first client left", code)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestTailBadOffsets(t *testing.T) {
	dir := t.TempDir()
	s := start(t, "-v", dir+"::r")
	writeFile(t, dir, "a.log", []byte("0123456789"))
	for _, tc := range []struct {
		v    string
		code int
	}{
		{v: "abc", code: 400}, {v: "1e3", code: 400}, {v: "0x10", code: 400}, {v: "11", code: 416}, {v: "9223372036854775807", code: 416},
		{v: "99999999999999999999", code: 400}, {v: "-9223372036854775808", code: 400}, {v: "--5", code: 400}, {v: "%2B-5", code: 400},
	} {
		resp, body := s.do(t, "GET", "/a.log?tail="+tc.v, nil)
		if resp.StatusCode != tc.code {
			t.Errorf("tail=%s: %d %s, want %d", tc.v, resp.StatusCode, body, tc.code)
		}
	}
	// The boundary itself is fine: at the end, waiting for more.
	req, _ := http.NewRequest("GET", s.URL+"/a.log?tail="+strconv.Itoa(10), nil)
	resp, err := (&http.Client{}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("tail=10: %d", resp.StatusCode)
	}
	resp2, body := s.do(t, "GET", "/missing.log?tail", nil)
	wantStatus(t, resp2, body, 404)
}

// TestTailEndsOnShutdown: an open tail does not hold up a graceful stop.
func TestTailEndsOnShutdown(t *testing.T) {
	dir := t.TempDir()
	s := start(t, "-v", dir+"::r")
	writeFile(t, dir, "a.log", []byte("a\n"))
	tr := startTail(t, s, "/a.log?tail")
	tr.waitLen(t, 2, 5*time.Second)
	t0 := time.Now()
	if err := s.stop(); err != nil {
		t.Fatalf("stop: %v\n%s", err, s.logs)
	}
	if d := time.Since(t0); d > 10*time.Second {
		t.Fatalf("stopping took %v with a tail open", d)
	}
	tr.waitEnd(t, 5*time.Second)
}

package http

import (
	"io"
	"os"
	"path/filepath"
	"testing"
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

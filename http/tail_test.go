package http

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestTailWaiterWakes checks both ways of waiting: inotify wakes on a write,
// and the polling fallback (no inotify) wakes by itself; both stop when the
// context ends.
func TestTailWaiterWakes(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := newTailWaiter(f)
	defer w.close()
	if w.fd < 0 {
		t.Skip("no inotify here")
	}
	go func() {
		time.Sleep(20 * time.Millisecond)
		os.WriteFile(p, []byte("xy"), 0o644)
	}()
	if !w.wait(context.Background()) {
		t.Fatal("inotify wait returned false")
	}
	for i := 0; i < 10 && !w.changed; i++ {
		w.wait(context.Background()) // a periodic wake may come first
	}
	if !w.changed {
		t.Fatal("no change event after a write")
	}
	poll := &tailWaiter{fd: -1}
	if !poll.wait(context.Background()) {
		t.Fatal("polling wait returned false")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if w.wait(ctx) || poll.wait(ctx) {
		t.Fatal("wait ignored a canceled context")
	}
}

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

package logbuf

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// sink records every write to it.
type sink struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	writes int
	gate   chan struct{} // non-nil: each write waits for it to close
}

func (s *sink) Write(p []byte) (int, error) {
	if s.gate != nil {
		<-s.gate
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writes++
	return s.buf.Write(p)
}

func (s *sink) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !ok(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// TestLinesArriveInBatches: lines reach the output within Every, many
// per write, whole and in order.
func TestLinesArriveInBatches(t *testing.T) {
	out := &sink{}
	w := New(out, Options{Every: 50 * time.Millisecond})
	defer w.Close(t.Context())
	var want strings.Builder
	for i := range 1000 {
		line := fmt.Sprintf("line %d\n", i)
		want.WriteString(line)
		w.Write([]byte(line))
	}
	waitFor(t, "the batch", func() bool { return out.String() == want.String() })
	out.mu.Lock()
	defer out.mu.Unlock()
	if out.writes > 2 {
		t.Errorf("1000 lines took %d writes, want 1 (or 2)", out.writes)
	}
}

// TestOrderKeptAcrossWriters: each writer's lines come out whole and in
// its order, however the batches fall.
func TestOrderKeptAcrossWriters(t *testing.T) {
	out := &sink{}
	w := New(out, Options{Every: time.Millisecond, Batch: 512})
	var wg sync.WaitGroup
	const writers, lines = 8, 2000
	for g := range writers {
		wg.Go(func() {
			for i := range lines {
				w.Write([]byte(strconv.Itoa(g) + " " + strconv.Itoa(i) + "\n"))
				if i%100 == 0 {
					w.Urgent().Write([]byte(strconv.Itoa(g) + " u\n"))
				}
			}
		})
	}
	wg.Wait()
	if err := w.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	next := make([]int, writers)
	for _, l := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
		var g int
		var tail string
		if _, err := fmt.Sscanf(l, "%d %s", &g, &tail); err != nil {
			t.Fatalf("line %q is not whole: %v", l, err)
		}
		if tail == "u" {
			continue
		}
		if i, _ := strconv.Atoi(tail); i != next[g] {
			t.Fatalf("writer %d: line %d after %d", g, i, next[g]-1)
		}
		next[g]++
	}
	for g, n := range next {
		if n != lines {
			t.Errorf("writer %d: %d lines, want %d", g, n, lines)
		}
	}
}

// TestUrgentGoesOutAtOnce: an urgent line does not wait for Every.
func TestUrgentGoesOutAtOnce(t *testing.T) {
	out := &sink{}
	w := New(out, Options{Every: time.Hour})
	defer w.Close(t.Context())
	w.Write([]byte("access\n"))
	w.Urgent().Write([]byte("warning\n"))
	waitFor(t, "the urgent line", func() bool { return out.String() == "access\nwarning\n" })
}

// TestCloseFlushes: Close writes what is left; later lines go straight out.
func TestCloseFlushes(t *testing.T) {
	out := &sink{}
	w := New(out, Options{Every: time.Hour})
	w.Write([]byte("a\n"))
	w.Write([]byte("b\n"))
	if err := w.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != "a\nb\n" {
		t.Fatalf("after Close: %q", got)
	}
	w.Write([]byte("c\n"))
	if got := out.String(); got != "a\nb\nc\n" {
		t.Fatalf("a line after Close: %q", got)
	}
}

// TestStuckOutputDropsAndCounts: with the output stuck, Write returns at
// once, memory stays bounded, the lines that do not fit are dropped and
// counted, and the count is reported once the output takes lines again.
func TestStuckOutputDropsAndCounts(t *testing.T) {
	out := &sink{gate: make(chan struct{})}
	var reported atomic.Uint64
	var w *Writer
	w = New(out, Options{Every: time.Millisecond, Batch: 1024, Max: 4096, Dropped: func(n uint64) {
		reported.Add(n)
		fmt.Fprintf(w.Urgent(), "dropped %d\n", n)
	}})
	line := []byte(strings.Repeat("x", 99) + "\n")
	// The loop takes the first batch and blocks in Write; the rest fill
	// the 4 KiB and then drop.
	start := time.Now()
	const n = 5000
	for range n {
		w.Write(line)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("%d writes to a stuck output took %v", n, d)
	}
	waitFor(t, "drops", func() bool { return w.Dropped() > 0 })
	close(out.gate) // the output catches up
	waitFor(t, "the drop report", func() bool { return strings.Contains(out.String(), "dropped ") })
	if err := w.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	kept := strings.Count(got, "x\n")
	if uint64(kept)+reported.Load() != n {
		t.Fatalf("%d lines kept + %d reported dropped != %d written", kept, reported.Load(), n)
	}
	if kept > 2*4096/100 {
		t.Fatalf("%d lines kept: more than the buffers hold", kept)
	}
	if !strings.Contains(got, fmt.Sprintf("dropped %d\n", reported.Load())) {
		t.Fatalf("the report does not give the count %d:\n%.300s", reported.Load(), got)
	}
}

// TestCloseGivesUpOnStuckOutput: Close returns when its context ends,
// and lines after it are dropped rather than waited for.
func TestCloseGivesUpOnStuckOutput(t *testing.T) {
	out := &sink{gate: make(chan struct{})}
	defer close(out.gate)
	w := New(out, Options{Every: time.Millisecond})
	w.Write([]byte("a\n"))
	waitFor(t, "the write under way", func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		return len(w.buf) == 0
	})
	w.Write([]byte("b\n"))
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	if err := w.Close(ctx); err != ErrStuck {
		t.Fatalf("Close = %v, want ErrStuck", err)
	}
	done := make(chan struct{})
	go func() { w.Write([]byte("c\n")); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		t.Fatal("a Write after a stuck Close waited for the output")
	}
}

// BenchmarkWrite is one access line's cost in the writer.
func BenchmarkWrite(b *testing.B) {
	w := New(io.Discard, Options{})
	defer w.Close(context.Background())
	line := []byte(`time=2026-11-24T03:32:15.123Z level=INFO msg=access pkg=http id=Ab3d-1x ip=192.168.1.20 user="" method=GET path=/some/folder/file.bin status=200 bytes=4096 dur=87µs` + "\n")
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			w.Write(line)
		}
	})
}

// BenchmarkFile is the output half of the logging path of one request,
// from many goroutines to a real file: one write(2) per line (slog's
// handler, as before) against the batching Writer.
func BenchmarkFile(b *testing.B) {
	line := []byte(`time=2026-11-24T03:32:15.123Z level=INFO msg=access pkg=http id=Ab3d-1x ip=192.168.1.20 user="" method=GET path=/some/folder/file.bin status=200 bytes=4096 dur=87µs` + "\n")
	open := func(b *testing.B) *os.File {
		f, err := os.Create(filepath.Join(b.TempDir(), "log"))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { f.Close() })
		return f
	}
	b.Run("direct", func(b *testing.B) {
		f := open(b)
		var mu sync.Mutex // slog's handlers hold one around each write
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				mu.Lock()
				f.Write(line)
				mu.Unlock()
			}
		})
	})
	b.Run("batched", func(b *testing.B) {
		w := New(open(b), Options{})
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				w.Write(line)
			}
		})
		w.Close(context.Background())
	})
}

// TestReportHasRoom: while ordinary lines are being dropped, a report of
// the drops still fits (the room kept for reports), so the count is not
// lost with it.
func TestReportHasRoom(t *testing.T) {
	out := &sink{gate: make(chan struct{})}
	w := New(out, Options{Every: time.Millisecond, Batch: 1024, Max: 4096})
	line := []byte(strings.Repeat("x", 99) + "\n")
	for range 200 {
		w.Write(line)
	}
	waitFor(t, "drops", func() bool { return w.Dropped() > 0 })
	before := w.Dropped()
	w.Write(line) // still no room for an ordinary line
	if w.Dropped() != before+1 {
		t.Fatalf("an ordinary line was kept in a full buffer (dropped %d → %d)", before, w.Dropped())
	}
	fmt.Fprintf(w.Report(), "dropped %d\n", before+1)
	if w.Dropped() != before+1 {
		t.Fatal("the report of the drops was dropped too")
	}
	close(out.gate)
	if err := w.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), fmt.Sprintf("dropped %d\n", before+1)) {
		t.Fatalf("the report did not come out: %d bytes out", len(out.String()))
	}
}

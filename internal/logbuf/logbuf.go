// Package logbuf batches log lines on their way to a slow file
// descriptor: many lines go out in one write(2), and a writer that falls
// behind (a terminal scrolled back, a pipe nobody reads) costs the lines
// that no longer fit, counted, never a blocked request or unbounded memory.
//
// Lines are kept whole and in the order their Writes returned. A batch is
// written when the buffer holds Batch bytes, when a line comes through an
// Urgent writer, at least every Every, on Flush and on Close. A crash
// loses the lines not yet written: at most Every's worth (docs/operations.md).
package logbuf

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"
)

// Defaults of Options.
const (
	DefaultEvery = 100 * time.Millisecond
	DefaultBatch = 64 << 10
	DefaultMax   = 1 << 20
)

// Options tune a Writer; zero fields take the defaults.
type Options struct {
	Every time.Duration // longest a line waits (100 ms)
	Batch int           // bytes that start a write at once (64 KiB)
	Max   int           // bytes held while a write is under way; more are dropped (1 MiB)
	// Dropped hears how many lines were dropped, once the writer has
	// caught up (from the writing goroutine, no lock held): it should log
	// the count through this Writer's Report writer, which has room kept
	// for it (a report dropped in turn would lose the count).
	Dropped func(n uint64)
}

// Writer is an io.Writer whose Write never blocks on the output.
type Writer struct {
	out  io.Writer
	opt  Options
	kick chan struct{} // a batch is ready, or an urgent line waits
	stop chan struct{} // Close asks the loop to end
	done chan struct{} // the loop ended

	mu      sync.Mutex
	buf     []byte // lines not yet handed to out
	dropped uint64 // lines dropped since the last report
	closed  bool   // Close was called: lines go out at once
	stuck   bool   // Close gave up on the output: lines are dropped

	wmu   sync.Mutex // one write to out at a time, in order
	spare []byte     // the other buffer, reused (guarded by wmu)
	err   error      // out's last write error (guarded by wmu)
}

// New starts a Writer over out; Close stops it.
func New(out io.Writer, opt Options) *Writer {
	if opt.Every <= 0 {
		opt.Every = DefaultEvery
	}
	if opt.Batch <= 0 {
		opt.Batch = DefaultBatch
	}
	if opt.Max < opt.Batch {
		opt.Max = max(DefaultMax, opt.Batch)
	}
	w := &Writer{out: out, opt: opt, kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	w.buf = make([]byte, 0, opt.Batch)
	go w.loop()
	return w
}

// Write takes p, one or more whole lines, for the next batch; when the
// buffer has no room for p, p is dropped and counted. It never fails
// and never waits for the output.
func (w *Writer) Write(p []byte) (int, error) {
	w.add(p, false, false)
	return len(p), nil
}

// Urgent is a writer over w whose lines are written at once rather than
// within Every (still without waiting for the output): for the rare
// lines (warnings, start-up) that a reader expects promptly.
func (w *Writer) Urgent() io.Writer { return urgent{w} }

type urgent struct{ w *Writer }

func (u urgent) Write(p []byte) (int, error) {
	u.w.add(p, true, false)
	return len(p), nil
}

// Report is an urgent writer over w for the reports of dropped lines: it
// may use the last part of the buffer (reportRoom), which other lines
// leave free, so a report is not dropped while the output is slow.
func (w *Writer) Report() io.Writer { return report{w} }

type report struct{ w *Writer }

func (r report) Write(p []byte) (int, error) {
	r.w.add(p, true, true)
	return len(p), nil
}

// reportRoom is the part of Max only reports may fill (at most a quarter
// of Max).
const reportRoom = 4 << 10

func (w *Writer) add(p []byte, now, isReport bool) {
	limit := w.opt.Max
	if !isReport {
		limit -= min(reportRoom, w.opt.Max/4)
	}
	w.mu.Lock()
	if len(w.buf)+len(p) > limit || w.stuck {
		w.dropped++
		w.mu.Unlock()
		return
	}
	w.buf = append(w.buf, p...)
	full, closed := len(w.buf) >= w.opt.Batch, w.closed
	w.mu.Unlock()
	if closed {
		w.flush() // nothing batches any more: out at once
		return
	}
	if now || full {
		w.Kick()
	}
}

func (w *Writer) loop() {
	defer close(w.done)
	t := time.NewTicker(w.opt.Every)
	defer t.Stop()
	for {
		select {
		case <-w.kick:
		case <-t.C:
		case <-w.stop:
			return
		}
		w.flush()
	}
}

// flush writes what the buffer holds in one write, then reports drops.
func (w *Writer) flush() error {
	w.wmu.Lock()
	w.mu.Lock()
	b := w.buf
	w.buf = w.spare[:0]
	if w.buf == nil {
		w.buf = make([]byte, 0, w.opt.Batch)
	}
	w.mu.Unlock()
	if len(b) > 0 {
		_, w.err = w.out.Write(b)
	}
	w.spare = b // reused: the two buffers stay within 2 × Max
	err := w.err
	w.wmu.Unlock()

	w.mu.Lock()
	n := w.dropped
	w.dropped = 0
	w.mu.Unlock()
	if n > 0 && w.opt.Dropped != nil {
		w.opt.Dropped(n)
	}
	return err
}

// Kick has the lines taken so far written now, without waiting for the
// output (a SIGHUP: an operator rotating logs sees them at once).
func (w *Writer) Kick() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// Flush writes every line taken so far, waiting for the output; it
// returns the output's last write error.
func (w *Writer) Flush() error { return w.flush() }

// Dropped returns the lines dropped and not yet reported.
func (w *Writer) Dropped() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.dropped
}

// ErrStuck is Close's error when the output did not take the last lines
// in time.
var ErrStuck = errors.New("the log output did not take the last lines in time")

// Close stops the batching and writes what is left, waiting for the
// output until ctx ends (a pipe nobody reads must not hold the process
// forever). Lines written after Close go straight to the output.
func (w *Writer) Close(ctx context.Context) error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	w.closed = true
	w.mu.Unlock()
	close(w.stop)
	flushed := make(chan error, 1)
	go func() {
		<-w.done
		flushed <- w.flush() // a report of drops it makes goes out at once
	}()
	select {
	case err := <-flushed:
		return err
	case <-ctx.Done():
		w.mu.Lock()
		w.stuck = true
		w.mu.Unlock()
		return ErrStuck
	}
}

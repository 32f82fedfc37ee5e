package store

import (
	"context"
	"os"
	"time"
)

// A Watch waits for an open file to change: by inotify on Linux (on the
// inode the descriptor holds, whatever happens to its name), otherwise
// by comparing the file's size, time and link count every poll.
//
// Wait always returns after at most one poll interval, so a caller that
// also checks something else (a departed client, a deadline) notices it
// soon. Changed says whether that wake-up was for a change.
type Watch struct {
	f       *os.File
	every   time.Duration
	n       *notifier // nil: polling
	changed bool
	last    fileState
}

// fileState is what the polling fallback compares.
type fileState struct {
	size  int64
	mtime time.Time
	links uint64
	ok    bool
}

func stateOf(f *os.File) fileState {
	fi, err := f.Stat()
	if err != nil {
		return fileState{}
	}
	return fileState{size: fi.Size(), mtime: fi.ModTime(), links: Links(fi), ok: true}
}

// WatchFile starts watching f, waking at least every interval. The
// Watch must be closed; f must stay open until then.
func WatchFile(f *os.File, every time.Duration) *Watch {
	w := &Watch{f: f, every: every, n: newNotifier(f)}
	if w.n == nil {
		w.last = stateOf(f)
	}
	return w
}

// watchPolling is WatchFile without the notifier, as where there is none.
func watchPolling(f *os.File, every time.Duration) *Watch {
	return &Watch{f: f, every: every, last: stateOf(f)}
}

// Notified reports whether changes are reported by the system (inotify)
// rather than found by polling.
func (w *Watch) Notified() bool { return w.n != nil }

// Wait returns true when the file may have changed or the interval has
// passed, false when ctx ended.
func (w *Watch) Wait(ctx context.Context) bool {
	w.changed = false
	if w.n != nil {
		ch, ok := w.n.wait(ctx, w.every)
		w.changed = ch
		return ok
	}
	t := time.NewTimer(w.every)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
	}
	if cur := stateOf(w.f); cur != w.last {
		w.last, w.changed = cur, true
	}
	return ctx.Err() == nil
}

// Changed reports whether the last Wait returned for a change of the
// file (a write, a new size or time, a delete or rename) rather than
// for the interval.
func (w *Watch) Changed() bool { return w.changed }

// Close stops watching.
func (w *Watch) Close() {
	if w.n != nil {
		w.n.close()
		w.n = nil
	}
}

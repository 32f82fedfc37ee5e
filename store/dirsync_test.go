package store

import (
	"errors"
	"sync"
	"testing"
	"time"
)

// TestDirSyncGroupCommit: callers arriving while a folder's fsync is under
// way share one later fsync, and its result (an error too) reaches each.
func TestDirSyncGroupCommit(t *testing.T) {
	st, _ := openStore(t, "::rw")
	v := st.Volumes()[0]
	release := make(chan struct{})
	var mu sync.Mutex
	var calls []string
	boom := errors.New("flush failed")
	v.dirs.flush = func(dir string) error {
		mu.Lock()
		calls = append(calls, dir)
		first := len(calls) == 1
		mu.Unlock()
		if first {
			<-release // the flight under way, begun before the others arrived
			return nil
		}
		return boom
	}
	firstDone := make(chan error)
	go func() { firstDone <- v.syncDir("d") }()
	waitFor(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(calls) == 1 })

	const n = 10
	errs := make(chan error, n)
	for range n {
		go func() { errs <- v.syncDir("d") }()
	}
	// Every late caller must be waiting on the next flight, none on the
	// first (which began before their changes).
	waitFor(t, func() bool {
		v.dirs.mu.Lock()
		defer v.dirs.mu.Unlock()
		st := v.dirs.m["d"]
		return st != nil && st.next != nil && st.next.waiters == n
	})
	otherDir := v.syncDir("e") // another folder is not held up by "d"
	close(release)
	if err := <-firstDone; err != nil {
		t.Fatalf("first caller: %v", err)
	}
	if !errors.Is(otherDir, boom) {
		t.Fatalf("folder e: got %v, want the flush's own result", otherDir)
	}
	for range n {
		if err := <-errs; !errors.Is(err, boom) {
			t.Fatalf("a covered caller got %v, want the shared flush's error", err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(calls) != 3 {
		t.Fatalf("flushes %q: want 3 (d, e, and one shared d for %d callers)", calls, n)
	}
	v.dirs.mu.Lock()
	defer v.dirs.mu.Unlock()
	if len(v.dirs.m) != 0 {
		t.Fatalf("idle folders left in the table: %d", len(v.dirs.m))
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 5 s")
		}
		time.Sleep(time.Millisecond)
	}
}

package store

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestGroupFlushCoversLateComers: a caller that arrives while a flush is
// under way is not answered by it (it may have started before the
// caller's write) but by the next one, which the callers waiting together
// share; an error goes to the callers of its flush only.
func TestGroupFlushCoversLateComers(t *testing.T) {
	var mu sync.Mutex
	var g flushGroup
	var runs atomic.Int32
	release := make(chan struct{})
	started := make(chan struct{}, 10)
	boom := errors.New("flush failed")
	flush := func() error {
		n := runs.Add(1)
		started <- struct{}{}
		if n == 1 {
			<-release // the first flush hangs until the others have queued
			return nil
		}
		if n == 2 {
			return boom
		}
		return nil
	}
	errs := make(chan error, 10)
	go func() { errs <- g.do(&mu, flush) }()
	<-started // flush 1 under way
	for range 5 {
		go func() { errs <- g.do(&mu, flush) }()
	}
	// All five wait for flush 2; none may be answered by flush 1.
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		n := 0
		if g.next != nil {
			n = g.next.waiters
		}
		mu.Unlock()
		if n == 5 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d callers queued for the next flush, want 5", n)
		}
		time.Sleep(time.Millisecond)
	}
	close(release)
	if err := <-errs; err != nil {
		t.Fatalf("the first caller got %v from its own flush", err)
	}
	for range 5 {
		if err := <-errs; !errors.Is(err, boom) {
			t.Fatalf("a late caller got %v, want the error of the flush that covered it", err)
		}
	}
	if n := runs.Load(); n != 2 {
		t.Fatalf("%d flushes for 6 callers in two waves, want 2", n)
	}
	if err := g.do(&mu, flush); err != nil {
		t.Fatalf("a caller after the failed flush got %v: errors must not stick", err)
	}
}

// TestPublishSmallSharesFlush: a small file is made durable by the shared
// flush of its file system, which runs when the file holds all its bytes
// and before its name exists; a big file, or any file with NoGroupSync,
// gets its own fsync instead. A failed shared flush publishes nothing.
func TestPublishSmallSharesFlush(t *testing.T) {
	st, dirs := openStore(t, "::rw")
	v := st.Volumes()[0]
	var calls atomic.Int32
	var check func()
	st.fsFlush.flush = func(f *os.File) error {
		calls.Add(1)
		if check != nil {
			check()
		}
		return syncFS(f)
	}
	publish := func(name string, data []byte) error {
		tmp, err := v.CreateTemp("")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tmp.File.Write(data); err != nil {
			t.Fatal(err)
		}
		work := filepath.Join(dirs[0], tmp.name)
		check = func() {
			if b, err := os.ReadFile(work); err != nil || !bytes.Equal(b, data) {
				t.Errorf("at the shared flush the work file holds %d bytes (%v), want all %d", len(b), err, len(data))
			}
			if _, err := os.Lstat(filepath.Join(dirs[0], name)); err == nil {
				t.Errorf("%s is published before its bytes were flushed", name)
			}
		}
		_, _, err = tmp.Publish(name, PublishOptions{})
		return err
	}
	small := bytes.Repeat([]byte("s"), SmallFile)
	if err := publish("small.bin", small); err != nil {
		t.Fatal(err)
	}
	if n := calls.Load(); n != 1 && !fsyncEachFile {
		t.Fatalf("%d shared flushes for a small file, want 1", n)
	}
	calls.Store(0)
	if err := publish("big.bin", bytes.Repeat([]byte("b"), SmallFile+1)); err != nil {
		t.Fatal(err)
	}
	if n := calls.Load(); n != 0 {
		t.Fatalf("a file above SmallFile went through the shared flush (%d)", n)
	}
	st.noGroupSync = true
	if err := publish("own.bin", small); err != nil {
		t.Fatal(err)
	}
	if n := calls.Load(); n != 0 {
		t.Fatalf("with NoGroupSync a small file went through the shared flush (%d)", n)
	}
	st.noGroupSync = false
	if fsyncEachFile {
		return
	}
	boom := errors.New("syncfs failed")
	st.fsFlush.flush = func(*os.File) error { return boom }
	if err := publish("failed.bin", small); !errors.Is(err, boom) {
		t.Fatalf("Publish with a failing shared flush = %v, want its error", err)
	}
	got := names(t, dirs[0])
	for _, n := range got {
		if n == "failed.bin" || len(n) > 7 && n[:7] == tempPrefix {
			t.Fatalf("after a failed shared flush the folder holds %q", got)
		}
	}
}

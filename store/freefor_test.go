package store

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// TestFreeSpaceReadOnce: the checks of many small uploads in a row read
// the volume's free space once per roomFresh while it is far from what
// they need; near the limit every check reads it again, so an upload
// that no longer fits is refused at once, never let through on an old
// answer.
func TestFreeSpaceReadOnce(t *testing.T) {
	dir := t.TempDir()
	st, err := Open(Config{Volumes: []VolumeSpec{{Src: dir, Perms: map[string]Perm{"*": PermRead | PermWrite}}}})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	v := st.Volumes()[0]
	var reads atomic.Int64
	var free atomic.Uint64
	free.Store(10 << 30)
	old := volStatfs
	volStatfs = func(string) (uint64, uint64, error) {
		reads.Add(1)
		return free.Load(), 100 << 30, nil
	}
	defer func() { volStatfs = old }()

	t0 := time.Now()
	for range 100 {
		if err := v.CheckSize(4096); err != nil {
			t.Fatal(err)
		}
		if _, _, err := v.Room(); err != nil {
			t.Fatal(err)
		}
	}
	if n, d := reads.Load(), time.Since(t0); n > 1+int64(d/roomFresh) {
		t.Errorf("200 checks in %v read the free space %d times, want at most %d", d, n, 1+int64(d/roomFresh))
	}

	// Near the limit (less than roomMargin beyond what is needed): every
	// check reads, and sees the space go.
	free.Store(roomMargin)
	v.seen.Store(nil)
	if err := v.CheckSize(4096); err != nil {
		t.Fatal(err)
	}
	free.Store(1024)
	before := reads.Load()
	err = v.CheckSize(4096)
	var nr *NoRoomError
	if !errors.As(err, &nr) {
		t.Fatalf("4 KiB into 1 KiB free: %v, want a NoRoomError", err)
	}
	if reads.Load() == before {
		t.Fatal("a check near the limit answered from the last read")
	}
	// A claim far from the limit still counts: one as large as the space
	// is refused even right after a read that left plenty.
	free.Store(1 << 40)
	v.seen.Store(nil)
	if err := v.CheckSize(4096); err != nil {
		t.Fatal(err)
	}
	if err := v.CheckSize(1<<40 + 1); err == nil {
		t.Fatal("an upload larger than the free space was let through on the last read")
	}
}

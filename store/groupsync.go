package store

import (
	"os"
	"sync"
	"syscall"
)

// Small files are group-committed. Publishing a file used to start with
// its own fsync; when many small uploads finish at once (parallel PUTs,
// u2c's small files), each waited for its own flush, one after another
// in the kernel's journal. A small file (≤ SmallFile bytes) now joins a
// shared flush of its whole file system instead: one syncfs(2) answers
// every small upload whose bytes were written before that syncfs
// started. After it, each upload checks its own file's write-back errors
// (sync_file_range with both waits: no device flush, only the error
// state of that file since it was opened), so an error that syncfs
// reported to another caller is not lost. Publishing then goes on as
// before: no-clobber link, folder fsync (group-committed, dirsync.go).
//
// So the rule is unchanged, only shared: a small upload's bytes are on
// the disk before its name is, and both before it is acknowledged. A
// syncfs also writes back whatever else is dirty on the file system;
// big uploads start their write-back as their bodies arrive (copyIn), so
// little is left for it. Where syncfs is not available (not Linux) or
// --no-group-sync is given, every file gets its own fsync.

// SmallFile is the largest file that is made durable by the shared flush
// of its file system rather than by its own fsync.
const SmallFile = 256 << 10

// fsFlushes coordinates the shared flushes of the file systems holding
// volumes, one group per device.
type fsFlushes struct {
	mu sync.Mutex
	m  map[uint64]*flushGroup
	// flush replaces syncfs in tests: it is called by the leader of a
	// flight with the leader's file.
	flush func(f *os.File) error
}

// flushGroup is the flight state of one key: at most one flush under way
// and one queued behind it that every newcomer joins.
type flushGroup struct {
	cur  *dirFlight
	next *dirFlight
}

// do runs flush, or waits for a run of it by another caller that starts
// after this call; mu guards g. An error goes to every caller the run
// covered and is not kept for later ones.
func (g *flushGroup) do(mu *sync.Mutex, flush func() error) error {
	mu.Lock()
	if f := g.next; f != nil {
		f.waiters++
		mu.Unlock()
		<-f.done
		return f.err
	}
	f := &dirFlight{done: make(chan struct{}), waiters: 1}
	g.next = f
	for g.cur != nil {
		c := g.cur
		mu.Unlock()
		<-c.done
		mu.Lock()
	}
	g.cur, g.next = f, nil
	mu.Unlock()

	f.err = flush()

	mu.Lock()
	g.cur = nil
	mu.Unlock()
	close(f.done)
	return f.err
}

// syncSmall makes the bytes (and size and times) of the small file f,
// whose file system is dev, durable: by a shared syncfs when group
// commit is on, else by its own fsync.
func (s *Store) syncSmall(f *os.File, dev uint64) error {
	if s.noGroupSync || fsyncEachFile || dev == 0 {
		return fsyncFile(f)
	}
	g := &s.fsFlush
	g.mu.Lock()
	if g.m == nil {
		g.m = map[uint64]*flushGroup{}
	}
	grp := g.m[dev]
	if grp == nil {
		grp = &flushGroup{}
		g.m[dev] = grp
	}
	flush := g.flush
	g.mu.Unlock()
	if flush == nil {
		flush = syncFS
	}
	// The leader flushes through its own file: the group is per device,
	// so that is the file system of every caller it answers.
	if err := grp.do(&g.mu, func() error { return timed(func() error { return flush(f) }) }); err != nil {
		return err
	}
	return fileWritebackErr(f)
}

// devOf is the device of the file fi describes (0 when unknown: such a
// file gets its own fsync).
func devOf(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Dev)
	}
	return 0
}

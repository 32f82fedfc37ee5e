package store

import (
	"errors"
	"os"
	"strconv"
	"sync"
	"syscall"
)

// Folder fsyncs are group-committed. Publishing a file ends with an fsync
// of its folder so that the new name survives a crash; when many uploads
// land in one folder at once (parallel PUTs, u2c's small files), each
// would wait for its own flush. Instead, callers that arrive while a
// folder's fsync is under way share the next one: it starts after they
// arrived, so it covers their names, and one flush answers all of them.
// An fsync error goes to every caller it covered; none is retried.

// dirSyncs coordinates the folder fsyncs of one volume.
type dirSyncs struct {
	mu    sync.Mutex
	m     map[string]*dirSyncState
	flush func(dir string) error // tests replace it; nil means Volume.fsyncDir
}

type dirSyncState struct {
	cur  *dirFlight // the fsync under way; it may have started before a caller's change
	next *dirFlight // the fsync that starts when cur ends; every waiter on it is covered
}

type dirFlight struct {
	done    chan struct{}
	err     error
	waiters int // callers it answers, the leader included
}

// syncDir fsyncs the folder dir (a cleaned path inside the volume), or
// waits for an fsync of it that starts after the call.
func (v *Volume) syncDir(dir string) error {
	return v.syncDirKey(dir, dir, func() error { return v.fsyncDir(dir) })
}

// syncDirKey runs own (the flush of the folder dir), or waits for a
// flush of the same group key that starts after the call. Tests' flush
// hook replaces own.
func (v *Volume) syncDirKey(key, dir string, own func() error) error {
	g := &v.dirs
	g.mu.Lock()
	if g.m == nil {
		g.m = map[string]*dirSyncState{}
	}
	st := g.m[key]
	if st == nil {
		st = &dirSyncState{}
		g.m[key] = st
	}
	if f := st.next; f != nil {
		f.waiters++
		g.mu.Unlock()
		<-f.done
		return f.err
	}
	// This caller leads the next flight: it waits for the one under way,
	// then flushes for itself and everyone who joined meanwhile.
	f := &dirFlight{done: make(chan struct{}), waiters: 1}
	st.next = f
	for st.cur != nil {
		c := st.cur
		g.mu.Unlock()
		<-c.done
		g.mu.Lock()
	}
	st.cur, st.next = f, nil
	flush := g.flush
	g.mu.Unlock()

	if flush != nil {
		f.err = flush(dir)
	} else {
		f.err = own()
	}

	g.mu.Lock()
	st.cur = nil
	if st.next == nil {
		delete(g.m, key)
	}
	g.mu.Unlock()
	close(f.done)
	return f.err
}

// fsyncDir flushes the folder dir's entries to the disk.
func (v *Volume) fsyncDir(dir string) error {
	d, err := v.root.OpenFile(dir, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NONBLOCK, 0) // see Open on O_NONBLOCK
	if err != nil {
		return mapErr(err)
	}
	defer d.Close()
	if err := fsyncFile(d); err != nil && !errors.Is(err, syscall.EINVAL) {
		return v.writeErr(err, 0)
	}
	return nil
}

// syncDirOf is syncDir for a folder the caller holds open (d, found at
// the path dir). Its group is keyed by the folder's identity rather than
// its path, so the leader flushes through its own descriptor and that is
// the very folder of every caller it answers, even if a folder was moved
// or replaced meanwhile; and nothing is opened again.
func (v *Volume) syncDirOf(d *os.File, dir string) error {
	fi, err := d.Stat()
	if err != nil {
		return mapErr(err)
	}
	id, ok := idOf(fi)
	if !ok {
		return v.syncDir(dir)
	}
	key := "\x00" + strconv.FormatUint(id.dev, 36) + ":" + strconv.FormatUint(id.ino, 36)
	return v.syncDirKey(key, dir, func() error {
		if err := fsyncFile(d); err != nil && !errors.Is(err, syscall.EINVAL) {
			return v.writeErr(err, 0)
		}
		return nil
	})
}

package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// lockName is the file in each state folder that a running hoard holds a
// flock(2) on: exclusive when its volume there is writable, so that a
// second server cannot share its upload sessions and index; shared when
// it only reads, so that several read-only servers can still serve one
// folder. The lock goes with the process (also on a crash); the file
// only carries the exclusive holder's pid, for the message.
const lockName = "hoard.lock"

// LockedError is a state folder that another process holds.
type LockedError struct {
	Hist string // the state folder
	PID  int    // the holder's pid, when it could be read; 0 otherwise
	// Readers: only servers that do not write hold it (and this one
	// would).
	Readers bool
}

func (e *LockedError) Error() string {
	who := "another hoard"
	switch {
	case e.Readers:
		who = "another hoard, serving it read-only,"
	case e.PID > 0:
		who = fmt.Sprintf("another hoard (pid %d)", e.PID)
	}
	return fmt.Sprintf("%s is using the state folder %s; two servers on one state folder lose each other's upload sessions, so this one does not start (stop the other, or give this one its own --hist)", who, e.Hist)
}

// held is the state folders this process has locked, with how many
// Stores use each (tests open several Stores on one folder; flock would
// refuse the second open file description even in the same process).
var held = struct {
	sync.Mutex
	m map[string]*heldLock
}{m: map[string]*heldLock{}}

type heldLock struct {
	f    *os.File // nil when the file system has no locks or was full
	refs int
	excl bool
}

// Writable reports whether anyone may change the volume's files (w, m or
// d for some user): its server then writes upload sessions and index
// records, and must be the only one on its state folder.
func (v *Volume) Writable() bool {
	for _, p := range v.permMap() {
		if p&(PermWrite|PermMove|PermDelete) != 0 {
			return true
		}
	}
	return false
}

// lockHist takes the lock of the state folder dir, once per folder and
// Store (volumes may share one): exclusive for a server that writes
// there, shared for one that only reads (several such may serve a
// folder side by side, as before).
func (s *Store) lockHist(dir string, excl bool) error {
	held.Lock()
	defer held.Unlock()
	h := held.m[dir]
	if h == nil {
		f, err := s.flock(dir, excl)
		if err != nil {
			return err
		}
		h = &heldLock{f: f, excl: excl}
		held.m[dir] = h
	} else if excl && !h.excl {
		if h.f != nil {
			if err := lockFile(h.f, dir, true, false); err != nil {
				return err
			}
			writePID(h.f)
		}
		h.excl = true
	}
	if _, ok := s.locks[dir]; !ok {
		h.refs++
		s.locks[dir] = h.f
	}
	return nil
}

// flock opens dir's lock file and locks it. A nil file with no error is
// a folder that cannot be locked (said in the log).
func (s *Store) flock(dir string, excl bool) (*os.File, error) {
	name := filepath.Join(dir, lockName)
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0o600)
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		// A full state folder must not keep the server from starting.
		s.log.Warn("cannot make the state folder's lock file (the disk is full); make sure no other hoard uses it", "dir", dir, "err", err)
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("locking the state folder %s: %w", dir, err)
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("locking the state folder %s: %s is not a regular file", dir, name)
	}
	err = lockFile(f, dir, excl, true)
	var le *LockedError
	if errors.As(err, &le) {
		f.Close()
		return nil, err
	}
	if err != nil {
		// No locks on this file system (some network ones): serve, as
		// before, but say that nothing guards the folder.
		s.log.Warn("cannot lock the state folder; make sure no other hoard uses it", "dir", dir, "err", err)
	} else if excl {
		writePID(f)
	}
	return f, nil
}

// lockFile flocks f (dir's lock file), exclusively or shared, without
// waiting: a *LockedError names the holder when another process has it.
// fresh: f holds no lock yet (then a refused exclusive lock looks whether
// only readers hold it).
func lockFile(f *os.File, dir string, excl, fresh bool) error {
	how := syscall.LOCK_SH
	if excl {
		how = syscall.LOCK_EX
	}
	var err error
	for {
		err = syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if errors.Is(err, syscall.EWOULDBLOCK) {
		if excl && fresh && syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB) == nil {
			// Shared holders only: servers that read.
			syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
			return &LockedError{Hist: dir, Readers: true}
		}
		b := make([]byte, 32)
		n, _ := f.ReadAt(b, 0)
		pid, _ := strconv.Atoi(strings.TrimSpace(string(b[:n])))
		return &LockedError{Hist: dir, PID: pid}
	}
	return err
}

// writePID records the exclusive holder's pid in its lock file, for the
// message another server gets (best effort: on a full disk the pid may
// not fit; the lock holds).
func writePID(f *os.File) {
	if f.Truncate(0) == nil {
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
}

// unlock releases the Store's hold on its state folders' locks.
func (s *Store) unlock() {
	for dir := range s.locks {
		s.unlockDir(dir)
	}
}

// unlockDir releases the Store's hold on the lock of the state folder dir.
func (s *Store) unlockDir(dir string) {
	held.Lock()
	defer held.Unlock()
	if _, ok := s.locks[dir]; !ok {
		return
	}
	delete(s.locks, dir)
	if h := held.m[dir]; h != nil {
		if h.refs--; h.refs == 0 {
			if h.f != nil {
				h.f.Close()
			}
			delete(held.m, dir)
		}
	}
}

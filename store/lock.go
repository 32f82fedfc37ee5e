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

// lockName is the file in each state folder that a running hoard holds an
// exclusive flock(2) on, so that a second one cannot share its upload
// sessions and index. The lock goes with the process (also on a crash);
// the file only carries the holder's pid, for the message.
const lockName = "hoard.lock"

// LockedError is a state folder that another process holds.
type LockedError struct {
	Hist string // the state folder
	PID  int    // the holder's pid, when it could be read; 0 otherwise
}

func (e *LockedError) Error() string {
	who := "another hoard"
	if e.PID > 0 {
		who = fmt.Sprintf("another hoard (pid %d)", e.PID)
	}
	return fmt.Sprintf("store: %s is using the state folder %s; two servers on one state folder lose each other's upload sessions, so this one does not start (stop the other, or give this one its own --hist)", who, e.Hist)
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
}

// lockHist takes the lock of the state folder dir, once per folder and
// Store (volumes may share one).
func (s *Store) lockHist(dir string) error {
	if _, ok := s.locks[dir]; ok {
		return nil
	}
	held.Lock()
	defer held.Unlock()
	if h := held.m[dir]; h != nil {
		h.refs++
		s.locks[dir] = h.f
		return nil
	}
	f, err := s.flock(dir)
	if err != nil {
		return err
	}
	held.m[dir] = &heldLock{f: f, refs: 1}
	s.locks[dir] = f
	return nil
}

// flock opens dir's lock file and locks it. A nil file with no error is
// a folder that cannot be locked (said in the log).
func (s *Store) flock(dir string) (*os.File, error) {
	name := filepath.Join(dir, lockName)
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0o600)
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		// A full state folder must not keep the server from starting.
		s.log.Warn("cannot make the state folder's lock file (the disk is full); make sure no other hoard uses it", "dir", dir, "err", err)
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("store: locking the state folder %s: %w", dir, err)
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("store: locking the state folder %s: %s is not a regular file", dir, name)
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if errors.Is(err, syscall.EWOULDBLOCK) {
		b := make([]byte, 32)
		n, _ := f.ReadAt(b, 0)
		f.Close()
		pid, _ := strconv.Atoi(strings.TrimSpace(string(b[:n])))
		return nil, &LockedError{Hist: dir, PID: pid}
	}
	if err != nil {
		// No locks on this file system (some network ones): serve, as
		// before, but say that nothing guards the folder.
		s.log.Warn("cannot lock the state folder; make sure no other hoard uses it", "dir", dir, "err", err)
	} else if f.Truncate(0) == nil {
		// Best effort: on a full disk the pid may not fit, the lock holds.
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return f, nil
}

// unlock releases the Store's hold on its state folders' locks.
func (s *Store) unlock() {
	held.Lock()
	defer held.Unlock()
	for dir := range s.locks {
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
}

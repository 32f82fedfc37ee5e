package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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

// lockHist takes the lock of the state folder dir, once per folder and
// process (volumes may share one).
func (s *Store) lockHist(dir string) error {
	if _, ok := s.locks[dir]; ok {
		return nil
	}
	name := filepath.Join(dir, lockName)
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0o600)
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		// A full state folder must not keep the server from starting.
		s.log.Warn("cannot make the state folder's lock file (the disk is full); make sure no other hoard uses it", "dir", dir, "err", err)
		return nil
	}
	if err != nil {
		return fmt.Errorf("store: locking the state folder %s: %w", dir, err)
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return fmt.Errorf("store: locking the state folder %s: %s is not a regular file", dir, name)
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
		return &LockedError{Hist: dir, PID: pid}
	}
	if err != nil {
		// No locks on this file system (some network ones): serve, as
		// before, but say that nothing guards the folder.
		s.log.Warn("cannot lock the state folder; make sure no other hoard uses it", "dir", dir, "err", err)
	} else if f.Truncate(0) == nil {
		// Best effort: on a full disk the pid may not fit, the lock holds.
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	s.locks[dir] = f
	return nil
}

// unlock releases the state folders' locks.
func (s *Store) unlock() {
	for dir, f := range s.locks {
		f.Close()
		delete(s.locks, dir)
	}
}

package store

import (
	"errors"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// noTmpfile is set once a file system has refused O_TMPFILE: the
// callers then make named work files, as before.
var noTmpfile atomic.Bool

// openAnon makes an unnamed regular file in the folder dir (O_TMPFILE):
// it has no name until linkAnon gives it one, and it vanishes when closed
// without one (or when the process dies). ok is false where the kernel or
// the file system cannot.
func openAnon(dir *os.File, perm uint32) (f *os.File, err error, ok bool) {
	if noTmpfile.Load() || !canLinkAnon() {
		return nil, nil, false
	}
	var fd int
	err = retryEINTR(func() (err error) {
		fd, err = unix.Openat(fdOf(dir), ".", unix.O_RDWR|unix.O_TMPFILE|unix.O_CLOEXEC, perm)
		return err
	})
	switch {
	case err == nil:
		return os.NewFile(uintptr(fd), "(unnamed work file)"), nil, true
	case errors.Is(err, syscall.EOPNOTSUPP) || errors.Is(err, syscall.EISDIR) || errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOSYS):
		noTmpfile.Store(true)
		return nil, nil, false
	}
	return nil, pathErr("openat", "O_TMPFILE", err), true
}

// canLinkAnon reports whether an unnamed file can be given a name here:
// by linkat(AT_EMPTY_PATH) (root) or by its /proc name.
var canLinkAnon = sync.OnceValue(func() bool {
	if unix.Geteuid() == 0 {
		return true
	}
	_, err := os.Stat("/proc/self/fd")
	return err == nil
})

// emptyPathLink is cleared once linkat(AT_EMPTY_PATH) was refused (it
// needs CAP_DAC_READ_SEARCH): the /proc name of the descriptor is used
// from then on.
var emptyPathLink atomic.Bool

func init() { emptyPathLink.Store(true) }

// linkAnon gives the unnamed file f the name nname in ndir, never
// replacing a file there (EEXIST).
func linkAnon(f *os.File, ndir *os.File, nname string) error {
	fd := fdOf(f)
	var err error
	if emptyPathLink.Load() {
		err = retryEINTR(func() error { return unix.Linkat(fd, "", fdOf(ndir), nname, unix.AT_EMPTY_PATH) })
		if errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.EINVAL) {
			emptyPathLink.Store(false)
		} else {
			return linkErr(nname, err)
		}
	}
	err = retryEINTR(func() error {
		return unix.Linkat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(fd), fdOf(ndir), nname, unix.AT_SYMLINK_FOLLOW)
	})
	return linkErr(nname, err)
}

func linkErr(nname string, err error) error {
	if err != nil {
		return &os.LinkError{Op: "linkat", Old: "(unnamed work file)", New: nname, Err: err}
	}
	return nil
}

package store

import (
	"os"
	"strconv"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// StartWriteback asks the kernel to start writing n bytes of the file fd
// from off back to disk, without waiting for them (sync_file_range), so a
// later fsync or Datasync finds little left to do.
func StartWriteback(fd int, off, n int64) {
	unix.SyncFileRange(fd, off, n, unix.SYNC_FILE_RANGE_WRITE)
}

// Datasync makes f's bytes durable (fdatasync: its size too, but not its
// times when nothing else changed).
func Datasync(f *os.File) error {
	return timed(func() error { return unix.Fdatasync(int(f.Fd())) })
}

// setMtime sets f's access and modification times to mt through its open
// descriptor (no path lookup inside the volume).
// utimensat(2) with a NULL path sets the times of the descriptor itself
// (futimens): no walk through /proc as a path.
func setMtime(f *os.File, mt time.Time) error {
	ts := unix.NsecToTimespec(mt.UnixNano())
	tss := [2]unix.Timespec{ts, ts}
	fd := f.Fd()
	for {
		_, _, e := unix.Syscall6(unix.SYS_UTIMENSAT, fd, 0, uintptr(unsafe.Pointer(&tss[0])), 0, 0, 0)
		switch e {
		case 0:
			return nil
		case unix.EINTR:
			continue
		case unix.EINVAL, unix.ENOSYS, unix.EFAULT:
			// A kernel without the NULL path: by the descriptor's /proc name.
			return unix.UtimesNanoAt(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(int(fd)), tss[:], 0)
		}
		return &os.PathError{Op: "utimensat", Path: f.Name(), Err: e}
	}
}

// fileWritebackErr writes back what is left of f's bytes and waits for
// it, returning any write-back error of f since it was opened (or last
// checked). It flushes no device cache and commits no metadata: it is the
// per-file error check after a shared syncfs (groupsync.go).
func fileWritebackErr(f *os.File) error {
	err := unix.SyncFileRange(int(f.Fd()), 0, 0, unix.SYNC_FILE_RANGE_WAIT_BEFORE|unix.SYNC_FILE_RANGE_WRITE|unix.SYNC_FILE_RANGE_WAIT_AFTER)
	if err != nil {
		return &os.PathError{Op: "sync_file_range", Path: f.Name(), Err: err}
	}
	return nil
}

//go:build !linux

package store

import (
	"errors"
	"os"
	"time"
)

// StartWriteback does nothing here: sync_file_range is Linux's. The
// fsync that confirms the bytes does all the writing back.
func StartWriteback(fd int, off, n int64) {}

// Datasync makes f's bytes durable; without fdatasync that is a full
// fsync (F_FULLFSYNC on macOS, which is slower and stronger).
func Datasync(f *os.File) error {
	return timed(f.Sync)
}

// setMtime cannot set times through a descriptor portably; the caller
// falls back to setting them by name inside the volume's root.
func setMtime(f *os.File, mt time.Time) error {
	return errors.ErrUnsupported
}

// fileWritebackErr is not needed here: without syncfs every file gets its
// own fsync (groupsync.go).
func fileWritebackErr(f *os.File) error { return nil }

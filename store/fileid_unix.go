//go:build unix

package store

import (
	"io/fs"
	"syscall"
)

// FileID returns the device and inode numbers of fi, which identify a
// file whatever its name; ok is false when fi does not carry them.
func FileID(fi fs.FileInfo) (dev, ino uint64, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, false
	}
	return uint64(st.Dev), uint64(st.Ino), true
}

// Links returns fi's number of hard links: 0 once an open file has been
// deleted. Where fi does not say, it is 1.
func Links(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}

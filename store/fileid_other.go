//go:build !unix

package store

import "io/fs"

// FileID returns the device and inode numbers of fi; this system's
// FileInfo does not carry them, so ok is false.
func FileID(fi fs.FileInfo) (dev, ino uint64, ok bool) { return 0, 0, false }

// Links returns fi's number of hard links; unknown here, so 1.
func Links(fi fs.FileInfo) uint64 { return 1 }

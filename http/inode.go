package http

import (
	"io/fs"

	"hoard/store"
)

func inode(fi fs.FileInfo) uint64 {
	_, ino, _ := store.FileID(fi)
	return ino
}

//go:build !linux

package store

import (
	"errors"
	"io/fs"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// Portable versions of manage_linux.go's calls: the same *at system calls
// where the system has them, a check-and-rename under a lock instead of
// RENAME_NOREPLACE, no cloning (a copy streams), and an fsync per file
// instead of one syncfs per tree.

// fsyncEachFile: without syncfs, a copied tree is flushed file by file.
const fsyncEachFile = true

func fdOf(f *os.File) int { return int(f.Fd()) }

func pathErr(op, name string, err error) error {
	if err == nil {
		return nil
	}
	return &fs.PathError{Op: op, Path: name, Err: err}
}

func lstatAt(dir *os.File, name string) (unix.Stat_t, error) {
	var st unix.Stat_t
	err := unix.Fstatat(fdOf(dir), name, &st, unix.AT_SYMLINK_NOFOLLOW)
	return st, pathErr("fstatat", name, err)
}

func openDirAt(dir *os.File, name string) (*os.File, error) {
	fd, err := unix.Openat(fdOf(dir), name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, pathErr("openat", name, err)
	}
	return os.NewFile(uintptr(fd), name), nil
}

func openFileAt(dir *os.File, name string, flag int, perm uint32) (*os.File, error) {
	fd, err := unix.Openat(fdOf(dir), name, flag|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, perm)
	if err != nil {
		return nil, pathErr("openat", name, err)
	}
	return os.NewFile(uintptr(fd), name), nil
}

func unlinkAt(dir *os.File, name string, isDir bool) error {
	flags := 0
	if isDir {
		flags = unix.AT_REMOVEDIR
	}
	return pathErr("unlinkat", name, unix.Unlinkat(fdOf(dir), name, flags))
}

func mkdirAt(dir *os.File, name string, perm uint32) error {
	return pathErr("mkdirat", name, unix.Mkdirat(fdOf(dir), name, perm))
}

func readlinkAt(dir *os.File, name string) (string, error) {
	buf := make([]byte, 4096)
	n, err := unix.Readlinkat(fdOf(dir), name, buf)
	if err != nil {
		return "", pathErr("readlinkat", name, err)
	}
	return string(buf[:n]), nil
}

func symlinkAt(target string, dir *os.File, name string) error {
	return pathErr("symlinkat", name, unix.Symlinkat(target, fdOf(dir), name))
}

func renameAt(odir *os.File, oname string, ndir *os.File, nname string, replace bool) error {
	if !replace {
		placeMu.Lock()
		defer placeMu.Unlock()
		if _, err := lstatAt(ndir, nname); err == nil {
			return pathErr("renameat", nname, syscall.EEXIST)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return pathErr("renameat", nname, unix.Renameat(fdOf(odir), oname, fdOf(ndir), nname))
}

func cloneFile(dst, src *os.File) error { return errors.ErrUnsupported }

func syncFS(f *os.File) error { return f.Sync() }

func realPath(f *os.File) (string, error) { return "", errors.ErrUnsupported }

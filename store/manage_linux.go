//go:build linux

package store

import (
	"errors"
	"io/fs"
	"os"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// The system calls below work on one name inside a folder held open by
// descriptor, and never follow a symbolic link in that name: a folder is
// entered, a file opened, renamed or removed exactly where the walk found
// it, so nothing a tree holds (a link to elsewhere in the volume, or out of
// it) can redirect a delete, copy or move. The folders themselves are
// opened through the volume's os.Root, which the kernel confines.

// fsyncEachFile: a copied tree is flushed by one syncfs(2), not file by
// file.
const fsyncEachFile = false

func fdOf(f *os.File) int { return int(f.Fd()) }

func pathErr(op, name string, err error) error {
	if err == nil {
		return nil
	}
	return &fs.PathError{Op: op, Path: name, Err: err}
}

// lstatAt describes name in dir without following a link.
func lstatAt(dir *os.File, name string) (unix.Stat_t, error) {
	var st unix.Stat_t
	err := retryEINTR(func() error { return unix.Fstatat(fdOf(dir), name, &st, unix.AT_SYMLINK_NOFOLLOW) })
	return st, pathErr("fstatat", name, err)
}

// openDirAt opens the folder name in dir; a link there is refused (ELOOP
// or ENOTDIR), never followed.
func openDirAt(dir *os.File, name string) (*os.File, error) {
	var fd int
	err := retryEINTR(func() (err error) {
		fd, err = unix.Openat(fdOf(dir), name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		return err
	})
	if err != nil {
		return nil, pathErr("openat", name, err)
	}
	return os.NewFile(uintptr(fd), name), nil
}

// openFileAt opens the file name in dir with flag (O_NOFOLLOW is added:
// a link there is refused with ELOOP).
func openFileAt(dir *os.File, name string, flag int, perm uint32) (*os.File, error) {
	var fd int
	err := retryEINTR(func() (err error) {
		fd, err = unix.Openat(fdOf(dir), name, flag|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, perm)
		return err
	})
	if err != nil {
		return nil, pathErr("openat", name, err)
	}
	return os.NewFile(uintptr(fd), name), nil
}

// unlinkAt removes the file (or, with isDir, the empty folder) name in dir.
func unlinkAt(dir *os.File, name string, isDir bool) error {
	flags := 0
	if isDir {
		flags = unix.AT_REMOVEDIR
	}
	return pathErr("unlinkat", name, retryEINTR(func() error { return unix.Unlinkat(fdOf(dir), name, flags) }))
}

// mkdirAt makes the folder name in dir.
func mkdirAt(dir *os.File, name string, perm uint32) error {
	return pathErr("mkdirat", name, retryEINTR(func() error { return unix.Mkdirat(fdOf(dir), name, perm) }))
}

// readlinkAt reads the link name in dir.
func readlinkAt(dir *os.File, name string) (string, error) {
	buf := make([]byte, 256)
	for {
		n, err := unix.Readlinkat(fdOf(dir), name, buf)
		if err != nil {
			return "", pathErr("readlinkat", name, err)
		}
		if n < len(buf) {
			return string(buf[:n]), nil
		}
		if len(buf) >= 1<<16 {
			return "", pathErr("readlinkat", name, syscall.ENAMETOOLONG)
		}
		buf = make([]byte, 2*len(buf))
	}
}

// symlinkAt makes name in dir a link with the text target.
func symlinkAt(target string, dir *os.File, name string) error {
	return pathErr("symlinkat", name, unix.Symlinkat(target, fdOf(dir), name))
}

// renameAt renames oname in odir to nname in ndir. Without replace an
// existing nname is never clobbered (renameat2's RENAME_NOREPLACE; where
// the file system lacks it, a check and a rename under a process-wide
// lock). With replace, a file at nname is atomically replaced.
func renameAt(odir *os.File, oname string, ndir *os.File, nname string, replace bool) error {
	if replace {
		return pathErr("renameat", nname, retryEINTR(func() error { return unix.Renameat(fdOf(odir), oname, fdOf(ndir), nname) }))
	}
	err := retryEINTR(func() error { return unix.Renameat2(fdOf(odir), oname, fdOf(ndir), nname, unix.RENAME_NOREPLACE) })
	if errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOSYS) || errors.Is(err, syscall.ENOTSUP) {
		// No RENAME_NOREPLACE here (some network and FUSE file systems).
		placeMu.Lock()
		defer placeMu.Unlock()
		if _, serr := lstatAt(ndir, nname); serr == nil {
			return pathErr("renameat", nname, syscall.EEXIST)
		} else if !errors.Is(serr, fs.ErrNotExist) {
			return serr
		}
		err = retryEINTR(func() error { return unix.Renameat(fdOf(odir), oname, fdOf(ndir), nname) })
	}
	return pathErr("renameat2", nname, err)
}

// cloneFile makes dst share src's blocks (FICLONE: btrfs, XFS, bcachefs,
// ZFS 2.2+); it fails where the file system cannot, and the caller copies.
func cloneFile(dst, src *os.File) error {
	return unix.IoctlFileClone(fdOf(dst), fdOf(src))
}

// syncFS flushes the whole file system that f lives on: one call instead
// of one fsync per file after a tree was copied.
func syncFS(f *os.File) error {
	return unix.Syncfs(fdOf(f))
}

// realPath is the absolute path of the open file f as the kernel knows
// it, symbolic links resolved.
func realPath(f *os.File) (string, error) {
	return os.Readlink("/proc/self/fd/" + strconv.Itoa(fdOf(f)))
}

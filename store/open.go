package store

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// ErrNotRegular is a name held by something that is not a regular file or
// folder: a pipe (fifo), socket or device node. Nothing reads or writes it.
var ErrNotRegular = &Error{Kind: KindInvalid, Msg: "that name belongs to a pipe, socket or device, not a file"}

// Every open of a file inside a volume is non-blocking: opening a fifo
// for reading or writing, or some devices, waits for the other end, which
// would pin a thread and stall shutdown. Opens that may meet such a thing
// add O_NONBLOCK, check the type with fstat and refuse anything but a
// regular file; for a regular file O_NONBLOCK changes nothing, and it is
// cleared before the file is handed out.

// openRegular opens the existing regular file rel (clean) with flag, as
// the volume's root resolves it (links that stay inside the volume are
// followed). A missing file is ErrNotFound (wrapping the cause); a folder
// ErrIsDir; a fifo, socket or device ErrNotRegular.
func (v *Volume) openRegular(rel string, flag int) (*os.File, fs.FileInfo, error) {
	// The fast open (fastopen_linux.go) when it can: one openat2 instead
	// of a walk and the /proc check; a regular file only, never read as
	// a folder. Anything it cannot open goes the full way below.
	if f, ok := v.fastOpen(rel, flag|syscall.O_NONBLOCK); ok {
		return regularOnly(f)
	}
	f, err := v.root.OpenFile(rel, flag|syscall.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, syscall.ENXIO) { // a fifo without a reader, a socket
			return nil, nil, fmt.Errorf("%w: %v", ErrNotRegular, err)
		}
		if errors.Is(err, syscall.EISDIR) {
			return nil, nil, fmt.Errorf("%w: %v", ErrIsDir, err)
		}
		return nil, nil, mapErr(err)
	}
	if err := v.guard(f, rel); err != nil { // never a state file (guard.go)
		return nil, nil, err
	}
	return regularOnly(f)
}

// openDirChecked opens the folder dir (clean, reached) for *at calls:
// the fast open where the path is plain, else through the root and
// checked not to be (in) a state folder (guard.go). Never read the
// result as a folder (ReadDir): a fast-opened one is not "in a root".
func (v *Volume) openDirChecked(dir string) (*os.File, error) {
	const flag = os.O_RDONLY | syscall.O_DIRECTORY | syscall.O_NONBLOCK
	if d, ok := v.fastOpen(dir, flag); ok {
		return d, nil
	}
	d, err := v.root.OpenFile(dir, flag, 0)
	if err == nil {
		err = v.guard(d, dir) // never in a state folder (guard.go)
	}
	if err != nil {
		return nil, mapErr(err)
	}
	return d, nil
}

// leafAt opens the regular file name in the open folder d (which is dir)
// without following a link in name's place.
func (v *Volume) leafAt(d *os.File, dir, name string, flag int) (*os.File, fs.FileInfo, error) {
	var fd int
	var err error
	for {
		fd, err = unix.Openat(int(d.Fd()), name, flag|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	p := filepath.Join(v.Src, filepath.FromSlash(path.Join(dir, name)))
	switch {
	case err == nil:
	case errors.Is(err, syscall.ELOOP), errors.Is(err, syscall.ENXIO):
		return nil, nil, fmt.Errorf("%w: %v", ErrNotRegular, &fs.PathError{Op: "openat", Path: p, Err: err})
	case errors.Is(err, syscall.EISDIR):
		return nil, nil, fmt.Errorf("%w: %v", ErrIsDir, &fs.PathError{Op: "openat", Path: p, Err: err})
	default:
		return nil, nil, mapErr(&fs.PathError{Op: "openat", Path: p, Err: err})
	}
	return regularOnly(os.NewFile(uintptr(fd), p))
}

// regularOnly keeps f when it is a regular file, with O_NONBLOCK cleared.
func regularOnly(f *os.File) (*os.File, fs.FileInfo, error) {
	fi, err := f.Stat()
	switch {
	case err != nil:
		f.Close()
		return nil, nil, mapErr(err)
	case fi.IsDir():
		f.Close()
		return nil, nil, ErrIsDir
	case !fi.Mode().IsRegular():
		f.Close()
		return nil, nil, ErrNotRegular
	}
	if sc, err := f.SyscallConn(); err == nil {
		sc.Control(func(fd uintptr) { unix.SetNonblock(int(fd), false) })
	}
	return f, fi, nil
}

// readStateFile reads a small file of a state folder (outside any volume's
// root): without following a link in its place, without blocking on a
// fifo, and at most max bytes (more is an error).
func readStateFile(name string, max int64) ([]byte, error) {
	f, err := os.OpenFile(name, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, &fs.PathError{Op: "read", Path: name, Err: ErrNotRegular}
	}
	if fi.Size() > max {
		return nil, &fs.PathError{Op: "read", Path: name, Err: fmt.Errorf("%d bytes; at most %d expected", fi.Size(), max)}
	}
	b := make([]byte, fi.Size()+1)
	n, err := io.ReadFull(f, b)
	switch {
	case n == len(b):
		return nil, &fs.PathError{Op: "read", Path: name, Err: fmt.Errorf("grew while read; at most %d bytes expected", max)}
	case err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF):
		return nil, err
	}
	return b[:n], nil
}

// readStateDir lists a folder of a state folder, as os.ReadDir does,
// without blocking when something else has its name.
func readStateDir(dir string) ([]fs.DirEntry, error) {
	d, err := os.OpenFile(dir, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	des, err := d.ReadDir(-1)
	slices.SortFunc(des, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return des, err
}

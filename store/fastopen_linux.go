package store

import (
	"errors"
	"io/fs"
	"os"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// The fast open. os.Root walks a path one component at a time (an
// openat and a close per folder on the way), and openIn then reads the
// opened file's real path back from /proc to refuse a state folder
// reached through a link: for a file two folders down, seven system calls
// before the first byte. Where the kernel has openat2(2) (Linux 5.6), one
// call does the same walk with RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS: it
// refuses to leave the volume's folder and refuses every symbolic link on
// the way. A path it opens therefore lies below the volume's folder by
// exactly its own components, so the state-folder check is the name check
// on those components. Anything else — a link on the way (links inside the
// volume are allowed and absolute ones retried, links.go), a name that
// might be the state folder's, a view (share), a create, any error — goes
// the full way through os.Root as before, so the answers do not change;
// only their cost does. One difference is left on purpose: the full way
// also refuses a file of a volume whose folder was moved, while hoard
// runs, into a folder named like a state folder; the fast path reads only
// the components below the volume's folder.

// noOpenat2 is set once the kernel has said it has no openat2.
var noOpenat2 atomic.Bool

// fastOpens counts the opens the fast way took (tests read it).
var fastOpens atomic.Int64

// volDir opens the volume's folder src as a descriptor for openat2 and
// checks that it is the folder root was opened on (a folder swapped in
// between the two opens turns the fast path off for the volume).
func volDir(src string, root *os.Root) *os.File {
	d, err := os.OpenFile(src, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	a, err1 := d.Stat()
	b, err2 := root.Stat(".")
	if err1 != nil || err2 != nil || !os.SameFile(a, b) {
		d.Close()
		return nil
	}
	return d
}

// openPlain opens r below the folder dir in one openat2 that refuses to
// leave it and refuses every link on the way; a kernel without openat2
// turns the fast opens off for good.
func openPlain(dir *os.File, r string, flag int) (int, error) {
	how := unix.OpenHow{
		Flags:   uint64(flag | unix.O_CLOEXEC),
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	}
	for {
		fd, err := unix.Openat2(int(dir.Fd()), r, &how)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if errors.Is(err, unix.ENOSYS) {
			noOpenat2.Store(true)
		}
		return fd, err
	}
}

// fastOpen opens r (clean, relative) below v's folder in one openat2,
// or reports false: the caller then takes the full way.
func (v *Volume) fastOpen(r string, flag int) (*os.File, bool) {
	f, err, ok := v.fastOpenOrMissing(r, flag)
	if err != nil {
		return nil, false
	}
	return f, ok
}

// fastOpenOrMissing is fastOpen that also answers "not found" for good:
// openat2 walks the path left to right and refuses the first link it
// meets (ELOOP), so ENOENT means every folder before the missing name is
// a plain folder and the name itself is nothing, not even a link — the
// full way, which follows links, would meet the same missing name. The
// error is then a *fs.PathError wrapping ENOENT, as os.Root gives it.
func (v *Volume) fastOpenOrMissing(r string, flag int) (*os.File, error, bool) {
	if v.dir == nil || v.outer != nil || flag&(os.O_CREATE|os.O_TRUNC) != 0 || noOpenat2.Load() {
		return nil, nil, false
	}
	if r == "." || containsFold(r, HistName) {
		return nil, nil, false
	}
	fd, err := openPlain(v.dir, r, flag)
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			fastOpens.Add(1)
			return nil, &fs.PathError{Op: "openat", Path: r, Err: err}, true
		}
		return nil, nil, false
	}
	fastOpens.Add(1)
	return os.NewFile(uintptr(fd), v.root.Name()+"/"+r), nil, true // named as os.Root names its files
}

// fastOpen opens the file name (a bare name, not the state folder's)
// right in the folder d holds, in one openat2 that refuses any link: the
// file is then a plain child of the folder that OpenDir guarded, and
// needs neither os.Root's walk nor the guard's reading of its real path
// (an archive opens every member this way: a system call and 12 % of its
// allocations saved per file). A link, a missing name or any error
// reports false: the caller takes the full way. As with Volume.fastOpen,
// a folder moved under a state folder after OpenDir is not noticed.
func (d *Dir) fastOpen(name string, flag int) (*os.File, bool) {
	if d.dirf == nil || d.v.outer != nil || noOpenat2.Load() || containsFold(name, HistName) {
		return nil, false
	}
	fd, err := openPlain(d.dirf, name, flag)
	if err != nil {
		return nil, false
	}
	fastOpens.Add(1)
	return os.NewFile(uintptr(fd), d.root.Name()+"/"+name), true
}

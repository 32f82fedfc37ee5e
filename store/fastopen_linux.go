package store

import (
	"errors"
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

// fastOpen opens r (clean, relative) below v's folder in one openat2,
// or reports false: the caller then takes the full way.
func (v *Volume) fastOpen(r string, flag int) (*os.File, bool) {
	if v.dir == nil || v.outer != nil || flag&(os.O_CREATE|os.O_TRUNC) != 0 || noOpenat2.Load() {
		return nil, false
	}
	if r == "." || containsFold(r, HistName) {
		return nil, false
	}
	how := unix.OpenHow{
		Flags:   uint64(flag | unix.O_CLOEXEC),
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	}
	var fd int
	var err error
	for {
		fd, err = unix.Openat2(int(v.dir.Fd()), r, &how)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if err != nil {
		if errors.Is(err, unix.ENOSYS) {
			noOpenat2.Store(true)
		}
		return nil, false
	}
	return os.NewFile(uintptr(fd), v.root.Name()+"/"+r), true // named as os.Root names its files
}

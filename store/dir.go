package store

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"syscall"
)

// Dir is one folder of a volume held open, so that many of its files can be
// opened by their bare names: one openat(2) each instead of one per path
// component. It is an os.Root opened through the volume's own, so it is as
// confined: a folder reached by a symbolic link is entered only when the
// link stays inside the volume, and below it nothing (not even a link
// inside the volume) leads above the folder. Callers that meet a link to
// elsewhere in the volume open it by its full path with Volume.Open.
type Dir struct {
	v    *Volume
	rel  string
	root *os.Root
	dirf *os.File // the folder as held and guarded, for the fast open (fastopen_linux.go)
}

// OpenDir opens the folder rel of the volume. The caller closes it.
func (v *Volume) OpenDir(rel string) (*Dir, error) {
	if v.obj != nil {
		return nil, unbuilt("this feature")
	}
	r, err := cleanRel(rel)
	if err != nil {
		return nil, err
	}
	if v.only != nil {
		return nil, ErrNotFound // a view of files has no folders to walk
	}
	asked := r
	root, err := v.root.OpenRoot(r)
	if r2, ok := v.retry(r, err); ok {
		r = r2
		root, err = v.root.OpenRoot(r)
	}
	if err != nil {
		return nil, mapErr(err)
	}
	// The folder as held is checked, not the path (guard.go).
	f, err := root.OpenFile(".", os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NONBLOCK, 0)
	if err == nil {
		err = v.guardAs(f, r, asked)
	}
	if err != nil {
		root.Close()
		return nil, mapErr(err)
	}
	return &Dir{v: v, rel: rel, root: root, dirf: f}, nil
}

// Rel is the folder's path inside its volume, as given to OpenDir.
func (d *Dir) Rel() string { return d.rel }

// Close releases the folder.
func (d *Dir) Close() error {
	d.dirf.Close()
	return d.root.Close()
}

// Open opens the regular file name (a bare name, no slash) in the folder
// for reading, with the same rules and results as Volume.Open. A symbolic
// link is followed only if it stays inside the folder; one that leads
// elsewhere gives ErrOutside even when its target is inside the volume.
func (d *Dir) Open(name string) (*os.File, fs.FileInfo, error) {
	f, err := d.open(name)
	if err != nil {
		return nil, nil, err
	}
	return checkRegular(f)
}

func (d *Dir) open(name string) (*os.File, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	if strings.EqualFold(name, HistName) {
		return nil, ErrReserved
	}
	if strings.HasSuffix(name, PartialSuffix) {
		return nil, ErrNotFound
	}
	// O_NONBLOCK does nothing to a regular file's reads, but it spares
	// os.newFile two fcntl(2) pairs per file (it would set the flag for
	// the poller, fail to register the file, and clear it again), and a
	// fifo put in place of a file cannot block the open.
	if f, ok := d.fastOpen(name, os.O_RDONLY|syscall.O_NONBLOCK); ok {
		return f, nil
	}
	f, err := d.root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err == nil {
		err = d.v.guard(f, path.Join(d.rel, name)) // a link to the state folder (guard.go)
	}
	if err != nil {
		return nil, mapErr(err)
	}
	return f, nil
}

// ReadSmall reads the file name into buf, as io.ReadAtLeast(f, buf, min)
// would, and closes it: for a small file a listing has just described,
// whose size the caller checks by what it reads (ask one byte more than
// the size to catch a file that grew). Unlike Open it does not fstat the
// file to see that it is still a regular file: what else a name can have
// become since the listing either fails to open (a socket, a link out of
// the folder), fails to read (a folder: ErrIsDir; a fifo with a writer),
// or reads short (a fifo without one); only a device node, which only root
// can make, would be read.
func (d *Dir) ReadSmall(name string, buf []byte, min int) (int, error) {
	f, err := d.open(name)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	n, err := io.ReadAtLeast(f, buf, min)
	switch {
	case errors.Is(err, syscall.EISDIR):
		return n, ErrIsDir
	case errors.Is(err, syscall.EAGAIN):
		return n, io.ErrUnexpectedEOF // a fifo, no regular file
	}
	return n, err
}

// checkRegular keeps f when it is a regular file, with its FileInfo.
func checkRegular(f *os.File) (*os.File, fs.FileInfo, error) {
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, mapErr(err)
	}
	if fi.IsDir() {
		f.Close()
		return nil, fi, ErrIsDir
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, nil, ErrNotFound
	}
	return f, fi, nil
}

// MakeDir makes the folder rel, and its parents, where missing, and makes
// the new names durable. A file in the way is ErrNotDir.
func (v *Volume) MakeDir(rel string) error {
	if v.obj != nil {
		return unbuilt("making folders")
	}
	r, err := cleanRel(rel)
	if err != nil {
		return err
	}
	if v.only != nil {
		return ErrReadOnly
	}
	if r == "." {
		return nil
	}
	if v.Flags().NoSub {
		return ErrNoSub
	}
	r = v.reach(r)              // links.go
	d, made, err := v.mkdirs(r) // never into a state folder (guard.go)
	if err != nil {
		return mapErr(err)
	}
	d.Close()
	if made == "" {
		return nil
	}
	for p := r; p != "."; p = path.Dir(p) {
		if err := v.syncDir(path.Dir(p)); err != nil {
			return err
		}
	}
	return nil
}

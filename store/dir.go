package store

import (
	"io/fs"
	"os"
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
}

// OpenDir opens the folder rel of the volume. The caller closes it.
func (v *Volume) OpenDir(rel string) (*Dir, error) {
	r, err := cleanRel(rel)
	if err != nil {
		return nil, err
	}
	root, err := v.root.OpenRoot(r)
	if err != nil {
		return nil, mapErr(err)
	}
	return &Dir{v: v, rel: rel, root: root}, nil
}

// Rel is the folder's path inside its volume, as given to OpenDir.
func (d *Dir) Rel() string { return d.rel }

// Close releases the folder.
func (d *Dir) Close() error { return d.root.Close() }

// Open opens the regular file name (a bare name, no slash) in the folder
// for reading, with the same rules and results as Volume.Open. A symbolic
// link is followed only if it stays inside the folder; one that leads
// elsewhere gives ErrOutside even when its target is inside the volume.
func (d *Dir) Open(name string) (*os.File, fs.FileInfo, error) {
	if err := checkName(name); err != nil {
		return nil, nil, err
	}
	if strings.EqualFold(name, HistName) {
		return nil, nil, ErrReserved
	}
	if strings.HasSuffix(name, PartialSuffix) {
		return nil, nil, ErrNotFound
	}
	// O_NONBLOCK does nothing to a regular file's reads, but it spares
	// os.newFile two fcntl(2) pairs per file (it would set the flag for
	// the poller, fail to register the file, and clear it again), and a
	// fifo put in place of a file cannot block the open.
	f, err := d.root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, mapErr(err)
	}
	return checkRegular(f)
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

package arch

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"strings"

	"hoard/store"
)

// opener opens the files of an archive, holding the folder of the last one
// open (a store.Dir): the files of a folder come one after another, and
// each then costs one openat(2) by its bare name instead of a walk of its
// whole path through the volume's root. One opener serves one goroutine.
type opener struct {
	vol *store.Volume
	rel string     // folder of dir, or of the failed attempt to open it
	dir *store.Dir // nil: not open (or could not be)
}

// open opens fl for reading, as fl.Vol.Open(fl.Rel) would. Symbolic links
// (which may lead elsewhere in the volume, where the folder's handle does
// not reach) and whatever the folder's handle refuses as outside it are
// opened by their full path through the volume's root, which keeps every
// other rule.
func (o *opener) open(fl *File) (*os.File, fs.FileInfo, error) {
	if d, name := o.dirOf(fl); d != nil {
		f, fi, err := d.Open(name)
		if !errors.Is(err, store.ErrOutside) {
			return f, fi, err
		}
	}
	return fl.Vol.Open(fl.Rel)
}

// read reads fl into b as io.ReadAtLeast(file, b, min) does, with the
// file's folder handle when it can (store.Dir.ReadSmall: no fstat(2); the
// caller checks the size by what it reads).
func (o *opener) read(fl *File, b []byte, min int) (int, error) {
	if d, name := o.dirOf(fl); d != nil {
		n, err := d.ReadSmall(name, b, min)
		if !errors.Is(err, store.ErrOutside) {
			return n, err
		}
	}
	f, _, err := fl.Vol.Open(fl.Rel)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return io.ReadAtLeast(f, b, min)
}

// dirOf returns the handle on fl's folder and fl's name in it, or nil
// for a link or a folder that cannot be opened (Vol.Open then tells why).
func (o *opener) dirOf(fl *File) (*store.Dir, string) {
	if fl.link {
		return nil, ""
	}
	dir, name := "", fl.Rel
	if i := strings.LastIndexByte(fl.Rel, '/'); i >= 0 {
		dir, name = fl.Rel[:i], fl.Rel[i+1:]
	}
	if o.vol != fl.Vol || o.rel != dir {
		o.close()
		o.vol, o.rel = fl.Vol, dir
		o.dir, _ = fl.Vol.OpenDir(dir)
	}
	return o.dir, name
}

func (o *opener) close() {
	if o.dir != nil {
		o.dir.Close()
	}
	o.vol, o.rel, o.dir = nil, "", nil
}

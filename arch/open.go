package arch

import (
	"errors"
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
	dir, name := "", fl.Rel
	if i := strings.LastIndexByte(fl.Rel, '/'); i >= 0 {
		dir, name = fl.Rel[:i], fl.Rel[i+1:]
	}
	if fl.link {
		return fl.Vol.Open(fl.Rel)
	}
	if o.vol != fl.Vol || o.rel != dir {
		o.close()
		o.vol, o.rel = fl.Vol, dir
		o.dir, _ = fl.Vol.OpenDir(dir) // on failure, Vol.Open tells why
	}
	if o.dir != nil {
		f, fi, err := o.dir.Open(name)
		if !errors.Is(err, store.ErrOutside) {
			return f, fi, err
		}
	}
	return fl.Vol.Open(fl.Rel)
}

func (o *opener) close() {
	if o.dir != nil {
		o.dir.Close()
	}
	o.vol, o.rel, o.dir = nil, "", nil
}

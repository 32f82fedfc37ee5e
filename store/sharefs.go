package store

import (
	"io/fs"
	"path"
	"path/filepath"
)

// CheckNoLinks returns ErrNotFound when a component of rest, below the
// folder base, is a symbolic link: a share reaches exactly its folder, and
// a link inside it could lead to a sibling. Components that do not exist
// are left for the caller's own lookup to report.
func (v *Volume) CheckNoLinks(base string, rest []string) error {
	p := base
	for _, c := range rest {
		p = path.Join(p, c)
		r, err := cleanRel(p)
		if err != nil {
			return err
		}
		fi, err := v.root.Lstat(r)
		if err != nil {
			return nil
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return ErrNotFound
		}
	}
	return nil
}

// Confine returns a read view of the folder rel as a volume of its own:
// its os.Root is opened at rel (through the volume's), so every Stat,
// List, Open and OpenDir through it is resolved by the kernel's openat
// walk below rel, and a symbolic link (file or folder) that leads outside
// rel is refused or left out of listings, even when its target is inside
// the volume. A share's archives walk it. The view is for reading only:
// it has no state folder and is no part of the store's volumes. The
// caller calls release when done.
func (v *Volume) Confine(rel string) (c *Volume, release func() error, err error) {
	r, err := cleanRel(rel)
	if err != nil {
		return nil, nil, err
	}
	d, err := v.OpenDir(r) // ErrNotDir when rel is not a folder
	if err != nil {
		return nil, nil, err
	}
	c = &Volume{Src: filepath.Join(v.Src, filepath.FromSlash(r)), VPath: path.Join(v.VPath, r), Flags: v.Flags, perms: v.perms, root: d.root, secret: v.secret, store: v.store}
	return c, d.Close, nil
}

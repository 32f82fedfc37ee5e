package store

import (
	"io/fs"
	"path"
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

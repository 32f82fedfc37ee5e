package store

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// ErrReadOnly is a write through a view that takes none (a share of files).
var ErrReadOnly = &Error{Kind: KindForbidden, Msg: "nothing can be uploaded here"}

// Confine returns a view of the folder rel as a volume of its own: its
// os.Root is opened at rel (through the volume's, refusing any symbolic
// link on the way, so the view is of that very folder), so every operation
// through it (Stat, Open, List, OpenDir, and the writes: CreateTemp,
// Ingest, Publish) is resolved by the kernel's openat walk below rel, one
// component at a time from a descriptor, and a symbolic link (file or
// folder) that leads outside rel is refused or left out of listings, even
// when its target is inside the volume, and even when a folder is swapped
// for such a link while the request runs. A share is served through it.
//
// Writes through the view are as atomic as the volume's own (work file,
// fsync, no-clobber publish, folder fsync); their events and lifetimes are
// the volume's (a view's paths are turned back into the volume's). The view
// has no state folder of its own and is no part of the store's volumes:
// up2k uploads and the index take the volume itself. The caller calls
// release when done with the view and with every file opened through it.
func (v *Volume) Confine(rel string) (c *Volume, release func() error, err error) {
	return v.confine(rel, nil)
}

// ConfineFiles returns a view of the folder rel that reaches only the named
// files in it (bare names), and none of them through a symbolic link: a
// share of some files of a folder. Its top lists just those files; every
// other path is ErrNotFound; writes are ErrReadOnly.
func (v *Volume) ConfineFiles(rel string, names []string) (c *Volume, release func() error, err error) {
	for _, n := range names {
		if err := checkName(n); err != nil {
			return nil, nil, err
		}
	}
	return v.confine(rel, append([]string{}, names...))
}

func (v *Volume) confine(rel string, only []string) (*Volume, func() error, error) {
	r, err := cleanRel(rel)
	if err != nil {
		return nil, nil, err
	}
	if err := v.inScope(r, true); err != nil || v.only != nil && r != "." {
		return nil, nil, ErrNotFound // a view of files has no folders
	}
	if v.obj != nil {
		return v.confineObjects(r, only) // objshare.go
	}
	root, err := v.openDirNoLinks(r)
	if err != nil {
		return nil, nil, err
	}
	outer, _ := v.Outer()
	c := &Volume{
		Src: filepath.Join(v.Src, filepath.FromSlash(r)), VPath: v.VPath,
		root: root, secret: v.secret, store: v.store, claims: v.claims,
		outer: outer, base: v.outerRel(r), only: only,
	}
	c.perms.Store(v.perms.Load())
	c.flags.Store(v.flags.Load())
	if r != "." {
		c.VPath = path.Join(v.VPath, r)
	}
	return c, root.Close, nil
}

// openDirNoLinks opens the folder r (cleaned) as an os.Root, one component
// at a time, and refuses a component that is a symbolic link, even one
// inside the volume: a view is of that very folder, not of what a link
// swapped in for it (or for a folder above it) leads to. Each component is
// opened from its parent's descriptor and then compared, by device and
// inode, with the parent's entry of that name as lstat sees it: a link
// (at either moment) or a swap in between makes them differ.
func (v *Volume) openDirNoLinks(r string) (*os.Root, error) {
	if v.only != nil {
		return nil, ErrNotFound // a view of files has no folders
	}
	cur, err := v.root.OpenRoot(".")
	if err != nil {
		return nil, mapErr(err)
	}
	if r == "." {
		return cur, nil
	}
	for _, c := range strings.Split(r, "/") {
		next, err := cur.OpenRoot(c)
		if err != nil {
			cur.Close()
			return nil, mapErr(err)
		}
		fi, err := next.Stat(".")
		var li fs.FileInfo
		if err == nil {
			li, err = cur.Lstat(c)
		}
		cur.Close()
		if err != nil {
			next.Close()
			return nil, mapErr(err)
		}
		if !fi.IsDir() || li.Mode()&fs.ModeSymlink != 0 || !os.SameFile(fi, li) {
			next.Close()
			return nil, fmt.Errorf("%w: %s is reached through a symbolic link", ErrOutside, r)
		}
		cur = next
	}
	return cur, nil
}

// Outer returns the volume a view (Confine, ConfineFiles) lies in and the
// view's folder inside it; for a volume, the volume itself and "".
func (v *Volume) Outer() (*Volume, string) {
	if v.outer == nil {
		return v, ""
	}
	return v.outer, v.base
}

// outerRel is rel (a path inside v) as a path inside v's outer volume,
// "" for its top.
func (v *Volume) outerRel(rel string) string {
	rel = relOf(rel)
	if rel == "." {
		rel = ""
	}
	if v.base == "" {
		return rel
	}
	return path.Join(v.base, rel)
}

// inScope checks a cleaned path against a view of files: only the top
// folder (when dirOK) and the named files are in it.
func (v *Volume) inScope(r string, dirOK bool) error {
	if v.only == nil {
		return nil
	}
	if r == "." && dirOK || slices.Contains(v.only, r) {
		return nil
	}
	return ErrNotFound
}

// noLink checks that the file f, opened as r in a view of files, is the
// very entry r and not what a symbolic link there leads to: lstat gives
// the entry itself, and its identity must be the opened file's. Whatever
// is swapped in between, a link is never taken for the file.
func (v *Volume) noLink(r string, fi fs.FileInfo) error {
	if v.only == nil {
		return nil
	}
	li, err := v.root.Lstat(r)
	if err != nil {
		return mapErr(err)
	}
	if li.Mode()&fs.ModeSymlink != 0 || !os.SameFile(li, fi) {
		return ErrNotFound
	}
	return nil
}

// Shadowed reports whether the path rel of v (a volume or a view) is, by
// URL, another volume's: a volume mounted at or above it, below v's own
// mount, hides the folder on disk from requests. A view (a share) must not
// reach there through the disk.
func (s *Store) Shadowed(v *Volume, rel string) bool {
	outer, _ := v.Outer()
	var parts []string
	if p := path.Join(outer.VPath, v.outerRel(rel)); p != "" {
		parts = strings.Split(p, "/")
	}
	w, _ := s.Resolve(parts)
	return w != outer
}

// Shadows returns the paths inside the volume v (relative, "/"-separated)
// where other served volumes are mounted: by URL those folders, and all
// below them, are the other volumes', so nothing of v's there may be
// named to a client (Shadowed, one path at a time). Nil when there are
// none.
func (s *Store) Shadows(v *Volume) []string {
	var out []string
	for _, w := range *s.served.Load() {
		if w == v {
			continue
		}
		rel, ok := w.VPath, w.VPath != ""
		if v.VPath != "" {
			rel, ok = strings.CutPrefix(w.VPath, v.VPath+"/")
		}
		if ok && rel != "" {
			out = append(out, rel)
		}
	}
	return out
}

// UnderAny reports whether rel is one of dirs or lies below one of them
// (paths as Shadows returns them).
func UnderAny(rel string, dirs []string) bool {
	for _, d := range dirs {
		if within(rel, d) {
			return true
		}
	}
	return false
}

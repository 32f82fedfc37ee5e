package store

import (
	"path"
	"slices"
)

// Shares of folders and files on object-store volumes. A view of such a
// volume (Confine, ConfineFiles) is the same object store with its key
// prefix moved down to the shared folder: every key it can name lies
// below that prefix (paths are cleaned, ".." refused, before they become
// keys), so it reaches nothing beside the folder. A view of files
// reaches exactly those objects: objStat and eachObject refuse or leave
// out everything else, folders included. There are no symbolic links in
// a bucket, so nothing else can lead out of the view.

// confineObjects is confine for an object-store volume: the view of the
// folder r (cleaned), with only the named files when only is not nil.
func (v *Volume) confineObjects(r string, only []string) (*Volume, func() error, error) {
	ctx, cancel := objCtx()
	defer cancel()
	if r != "." {
		fi, err := v.objStat(ctx, r)
		if err != nil {
			return nil, nil, err
		}
		if !fi.IsDir() {
			return nil, nil, ErrNotDir
		}
	}
	// The view's os.Root is the volume's state-only folder, as the
	// volume's own is: code shared with disk volumes that looks at it
	// finds no user file there.
	root, err := v.root.OpenRoot(".")
	if err != nil {
		return nil, nil, mapErr(err)
	}
	outer, _ := v.Outer()
	c := &Volume{
		Src: v.Src, VPath: v.VPath,
		root: root, secret: v.secret, store: v.store, claims: v.claims,
		outer: outer, base: v.outerRel(r), only: only,
		obj: v.obj, objPre: v.key(r), objSec: v.objSec,
	}
	if r != "." {
		c.objPre += "/"
		c.VPath = path.Join(v.VPath, r)
	}
	c.perms.Store(v.perms.Load())
	c.flags.Store(v.flags.Load())
	return c, root.Close, nil
}

// objInView reports whether the path r (cleaned) of a view of files may
// be looked at: its top, or one of its files (never a folder).
func (v *Volume) objInView(r string) bool {
	return v.only == nil || r == "." || slices.Contains(v.only, r)
}

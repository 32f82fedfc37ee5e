package store

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"
)

// PartialSuffix marks files being written. They are never listed or served.
const PartialSuffix = ".PARTIAL"

// checkName validates one path component as hoard accepts it from clients.
func checkName(c string) error {
	switch {
	case c == "", c == ".", c == "..":
		return ErrBadName
	case len(c) > 255:
		return ErrBadName
	case !utf8.ValidString(c):
		return ErrBadName
	}
	for i := 0; i < len(c); i++ {
		if b := c[i]; b < 0x20 || b == 0x7f || b == '/' || b == '\\' {
			return ErrBadName
		}
	}
	return nil
}

// CheckName reports whether name is acceptable as a single file or folder
// name: not empty, not . or .., no slash, backslash, NUL or control
// character, valid UTF-8, at most 255 bytes.
func CheckName(name string) error { return checkName(name) }

// cleanRel validates a slash-separated path inside a volume and returns the
// form os.Root takes ("." for the volume's own folder).
func cleanRel(rel string) (string, error) {
	if rel == "" || rel == "." {
		return ".", nil
	}
	parts := strings.Split(rel, "/")
	for _, c := range parts {
		if err := checkName(c); err != nil {
			return "", err
		}
		if strings.EqualFold(c, HistName) { // at any depth: another volume's state may lie below
			return "", ErrReserved
		}
		if strings.HasSuffix(c, PartialSuffix) {
			return "", ErrNotFound
		}
	}
	return rel, nil
}

// Stat returns information about the file or folder at rel, following
// symbolic links that stay inside the volume.
func (v *Volume) Stat(rel string) (fs.FileInfo, error) {
	r, err := cleanRel(rel)
	if err != nil {
		return nil, err
	}
	if err := v.inScope(r, true); err != nil {
		return nil, err
	}
	if v.obj != nil {
		ctx, cancel := objCtx()
		defer cancel()
		return v.objStat(ctx, r)
	}
	if v.only != nil && r != "." {
		fi, err := v.root.Lstat(r) // never through a link
		if err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return nil, ErrNotFound
		}
		return fi, mapErr(err)
	}
	fi, err := v.statIn(r) // guard.go
	return fi, mapErr(err)
}

// Open opens the regular file at rel for reading. Folders give ErrIsDir.
// The caller closes the file.
func (v *Volume) Open(rel string) (*os.File, fs.FileInfo, error) {
	r, err := cleanRel(rel)
	if err != nil {
		return nil, nil, err
	}
	if err := v.inScope(r, false); err != nil {
		return nil, nil, err
	}
	if v.obj != nil {
		return nil, nil, unbuilt("reading a file as a local file (this feature)")
	}
	// O_NONBLOCK does nothing to a regular file's reads, but it spares
	// os's fcntl pair (set and clear non-blocking mode) on every open, and
	// a fifo put in a file's place cannot hang the open.
	f, _, err := v.openFileIn(r, os.O_RDONLY|syscall.O_NONBLOCK) // guard.go
	if err != nil {
		return nil, nil, mapErr(err)
	}
	f, fi, err := checkRegular(f)
	if err == nil {
		if err = v.noLink(r, fi); err != nil {
			f.Close()
			return nil, nil, err
		}
	}
	return f, fi, err
}

// Entry is one item of a folder listing.
type Entry struct {
	Name  string
	Dir   bool
	Size  int64 // of the target for symbolic links
	Mtime time.Time
	Link  bool        // a symbolic link (inside the volume)
	Mode  fs.FileMode // of the target for symbolic links
	// Ino is the inode number of what Size describes (the target of a
	// link), 0 where the system does not say: with Size and Mtime it
	// makes an ETag without another stat.
	Ino uint64
}

// ListOptions select what List shows.
type ListOptions struct {
	Dots  bool // include names starting with a dot
	Lstat bool // a symbolic link's own mtime rather than its target's
}

// List returns the folder's entries, folders first, each group sorted by
// name (byte order). Work files (*.PARTIAL), the state folder, and symbolic
// links that are broken or lead outside the volume are left out.
func (v *Volume) List(ctx context.Context, rel string, opt ListOptions) ([]Entry, error) {
	r, err := cleanRel(rel)
	if err != nil {
		return nil, err
	}
	if v.only != nil && r != "." {
		return nil, ErrNotFound
	}
	if v.obj != nil {
		var out []Entry
		err := v.eachObject(ctx, r, opt, func(e Entry) error { out = append(out, e); return nil })
		if err != nil {
			return nil, err
		}
		sortEntries(out)
		return out, nil
	}
	// see Open; entries are looked at by the path opened (guard.go)
	d, r, err := v.openIn(r, os.O_RDONLY|syscall.O_NONBLOCK)
	if err != nil {
		return nil, mapErr(err)
	}
	defer d.Close()
	fi, err := d.Stat()
	if err != nil {
		return nil, mapErr(err)
	}
	if !fi.IsDir() {
		return nil, ErrNotDir
	}
	var out []Entry
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		des, err := d.ReadDir(1024)
		for _, de := range des {
			e, ok := v.entry(r, de, opt)
			if ok {
				out = append(out, e)
			}
		}
		if errors.Is(err, io.EOF) || (err == nil && len(des) == 0) {
			break
		}
		if err != nil {
			return nil, mapErr(err)
		}
	}
	sortEntries(out)
	return out, nil
}

func (v *Volume) entry(dir string, de fs.DirEntry, opt ListOptions) (Entry, bool) {
	name := de.Name()
	if v.only != nil && (!slices.Contains(v.only, name) || !de.Type().IsRegular()) {
		return Entry{}, false // a view of files: those, and not through links
	}
	if strings.HasSuffix(name, PartialSuffix) {
		v.sweepOrphan(dir, de)
		return Entry{}, false
	}
	if !opt.Dots && strings.HasPrefix(name, ".") {
		return Entry{}, false
	}
	if strings.EqualFold(name, HistName) {
		return Entry{}, false
	}
	if checkName(name) != nil {
		return Entry{}, false // not addressable by URL (e.g. not UTF-8)
	}
	li, err := de.Info()
	if err != nil {
		return Entry{}, false
	}
	e := Entry{Name: name, Dir: li.IsDir(), Size: li.Size(), Mtime: li.ModTime(), Mode: li.Mode()}
	_, e.Ino, _ = FileID(li)
	if li.Mode()&fs.ModeSymlink != 0 {
		p := path.Join(dir, name)
		ti, err := v.statIn(p)
		if err != nil {
			return Entry{}, false // broken, leads outside the volume or into its state
		}
		e.Link, e.Dir, e.Size, e.Mode = true, ti.IsDir(), ti.Size(), ti.Mode()
		_, e.Ino, _ = FileID(ti)
		if !opt.Lstat {
			e.Mtime = ti.ModTime()
		}
	}
	if !e.Dir && !li.Mode().IsRegular() && !e.Link {
		return Entry{}, false // sockets, devices, fifos
	}
	return e, true
}

// orphanAge is how old an untouched PUT/multipart work file must be before
// it is taken for the leftover of a crash. A live upload writes to its file
// all the time and is dropped after two idle minutes, so an hour is safe.
const orphanAge = time.Hour

// sweepOrphan deletes a work file of a PUT or multipart upload (named
// .hoard-*.PARTIAL; up2k's partial files are its sessions' business) that
// a crash left behind, when a listing comes across it.
func (v *Volume) sweepOrphan(dir string, de fs.DirEntry) {
	name := de.Name()
	if !isTempName(name) || !de.Type().IsRegular() {
		return
	}
	fi, err := de.Info()
	if err != nil || v.store.now().Sub(fi.ModTime()) < orphanAge {
		return
	}
	if v.store.removeUnlessLive(v, path.Join(dir, name)) {
		v.store.log.Info("removed the work file of an upload that never finished", "volume", "/"+v.VPath, "path", path.Join(dir, name), "size", fi.Size())
	}
}

// sortEntries sorts a listing: folders first, each group by name (bytes).
func sortEntries(out []Entry) {
	slices.SortFunc(out, func(a, b Entry) int {
		if a.Dir != b.Dir {
			if a.Dir {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Name, b.Name)
	})
}

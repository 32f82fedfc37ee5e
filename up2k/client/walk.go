package client

import (
	"context"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"unicode/utf8"
)

// A Target is one PATH argument: Local is the file or folder; Remote is
// the folder below the URL's path that it goes to ("" for the URL's
// folder itself), with rsync's rule: "dir" goes into URL/dir/, "dir/"
// puts its content into URL/.
type Target struct {
	Local  string
	Remote string
	Dir    bool
}

// NewTarget resolves a PATH argument. It fails when the path does not
// exist or is neither a regular file nor a folder.
func NewTarget(p string) (Target, error) {
	fi, err := os.Stat(p)
	if err != nil {
		return Target{}, err
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return Target{}, err
	}
	switch {
	case fi.IsDir():
		// A link to a folder is walked where it points (a walk does
		// not follow a link, not even at its top), and named as there,
		// like u2c.py's realpath.
		if abs, err = filepath.EvalSymlinks(abs); err != nil {
			return Target{}, err
		}
		if strings.HasSuffix(p, "/") || strings.HasSuffix(p, string(filepath.Separator)) {
			return Target{Local: abs, Dir: true}, nil
		}
		base := filepath.Base(abs)
		if base == "/" || base == "." {
			base = ""
		}
		return Target{Local: abs, Remote: base, Dir: true}, nil
	case fi.Mode().IsRegular():
		return Target{Local: abs}, nil
	}
	return Target{}, &fs.PathError{Op: "upload", Path: p, Err: errIrregular}
}

var errIrregular = errorString("not a regular file or folder")

type errorString string

func (e errorString) Error() string { return string(e) }

// Filter picks files and folders by u2c's -x (regular expressions on the
// absolute path, matched from its start, case-insensitively) and by
// globs on the name or the path below the target.
type Filter struct {
	Exclude []*regexp.Regexp
	Skip    []string // --exclude globs: skip files and folders
	Only    []string // --include globs: upload only files matching one
}

// CompileX compiles a -x expression as u2c reads it.
func CompileX(expr string) (*regexp.Regexp, error) {
	return regexp.Compile("(?i)^(?:" + expr + ")")
}

func globAny(globs []string, name, rel string) bool {
	for _, g := range globs {
		if ok, _ := path.Match(g, name); ok {
			return true
		}
		if ok, _ := path.Match(g, rel); ok {
			return true
		}
	}
	return false
}

// skip reports whether the file or folder at abs (rel below its target)
// is left out.
func (f *Filter) skip(abs, rel string, dir bool) bool {
	slash := filepath.ToSlash(abs)
	for _, re := range f.Exclude {
		if re.MatchString(slash) {
			return true
		}
	}
	name := path.Base(rel)
	if globAny(f.Skip, name, rel) {
		return true
	}
	return !dir && len(f.Only) > 0 && !globAny(f.Only, name, rel)
}

// A local is one file found by the walk.
type local struct {
	abs    string
	rdir   string // remote folder below the URL's path, "" or "a/b"
	name   string
	rel    string // rdir/name, for messages
	size   int64
	mtime  int64 // seconds
	mtimeN int64 // nanoseconds, to notice a change
}

// walk sends every file of the targets to out, folder by folder (one
// folder's names in memory at a time), and reports what it cannot read to
// bad. It stops when ctx ends.
func walk(ctx context.Context, targets []Target, flt *Filter, out chan<- *local, bad func(rel string, err error)) {
	for _, t := range targets {
		if !t.Dir {
			fi, err := os.Stat(t.Local)
			if err != nil {
				bad(filepath.Base(t.Local), err)
				continue
			}
			name := filepath.Base(t.Local)
			if flt.skip(t.Local, name, false) {
				continue
			}
			if !send(ctx, out, newLocal(t.Local, "", name, fi)) {
				return
			}
			continue
		}
		err := filepath.WalkDir(t.Local, func(p string, d fs.DirEntry, err error) error {
			rel, _ := filepath.Rel(t.Local, p)
			rel = filepath.ToSlash(rel)
			if rel == "." {
				rel = ""
			}
			shown := path.Join(t.Remote, rel)
			if err != nil {
				bad(shown, err)
				if d != nil && d.IsDir() && rel != "" {
					return fs.SkipDir
				}
				return nil
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if rel == "" {
				return nil
			}
			typ := d.Type()
			if typ&fs.ModeSymlink != 0 {
				fi, err := os.Stat(p) // a link to a file is uploaded; to a folder, skipped (no loops)
				if err != nil {
					bad(shown, err)
					return nil
				}
				if !fi.Mode().IsRegular() {
					return nil
				}
				typ = 0
			}
			if d.IsDir() {
				if flt.skip(p, rel, true) {
					return fs.SkipDir
				}
				return nil
			}
			if !typ.IsRegular() {
				return nil // sockets, pipes, devices
			}
			if flt.skip(p, rel, false) {
				return nil
			}
			if !utf8.ValidString(rel) {
				bad(strings.ToValidUTF8(shown, "?"), errorString("the name is not valid UTF-8"))
				return nil
			}
			fi, err := os.Stat(p)
			if err != nil {
				bad(shown, err)
				return nil
			}
			dir, name := path.Split(shown)
			if !send(ctx, out, newLocal(p, strings.TrimSuffix(dir, "/"), name, fi)) {
				return ctx.Err()
			}
			return nil
		})
		if err != nil && ctx.Err() != nil {
			return
		}
	}
}

func newLocal(abs, rdir, name string, fi fs.FileInfo) *local {
	rel := name
	if rdir != "" {
		rel = rdir + "/" + name
	}
	return &local{abs: abs, rdir: rdir, name: name, rel: rel, size: fi.Size(), mtime: fi.ModTime().Unix(), mtimeN: fi.ModTime().UnixNano()}
}

func send[T any](ctx context.Context, ch chan<- T, v T) bool {
	select {
	case ch <- v:
		return true
	case <-ctx.Done():
		return false
	}
}

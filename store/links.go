package store

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync/atomic"
)

// Absolute symbolic links inside a volume.
//
// os.Root follows a relative link while it stays below the root, but
// refuses every absolute one ("path escapes from parent"), even when its
// target is inside the volume: `ln -s /srv/music/a/b.mp3 /srv/music/fav`
// would be a 404 while `ln -s a/b.mp3 fav` works. copyparty follows both.
// So when an operation through the root fails that way, the path is
// resolved here, component by component through the same root (Lstat,
// Readlink): an absolute target that starts with the volume's folder (as
// configured, or its real path) is rewritten to the rest of it, walked
// from the root; any other absolute target, and any ".." above the root,
// is refused. The operation is then retried on the resolved path, through
// the root again, so the kernel's openat walk still confines it: if a
// component is swapped for a link after the resolution, the retry follows
// it only inside the root (or fails), never out of the volume. The
// absolute path itself is never opened.

// maxLinks bounds the links one resolution follows (Linux's MAXSYMLINKS).
const maxLinks = 40

// escaped reports whether err is os.Root refusing a path that leads out
// of it (an absolute link, or a relative one climbing above the root).
func escaped(err error) bool {
	var pe *fs.PathError
	var le *os.LinkError
	switch {
	case errors.As(err, &pe):
		err = pe.Err
	case errors.As(err, &le):
		err = le.Err
	default:
		return false
	}
	return err != nil && strings.HasSuffix(err.Error(), "path escapes from parent")
}

// retry returns the path to try again when an operation on r (a clean
// relative path) failed with err because of an absolute link on the way
// that leads back into the volume: r with its links resolved. ok is false
// when there is nothing to retry.
func (v *Volume) retry(r string, err error) (string, bool) {
	if !escaped(err) {
		return "", false
	}
	r2, err := v.resolve(r)
	if err != nil || r2 == r {
		return "", false
	}
	return r2, true
}

// reachWalks counts the walks reach made (tests read it: a write into a
// plain folder needs none, the fast open finds it).
var reachWalks atomic.Int64

// reach returns the clean relative path r in the form the volume's root
// can walk: r itself, unless an absolute link into the volume lies on the
// way, then r with its links resolved. For writes, whose several steps
// (make the folder, create, link, sync) must all go the same way.
func (v *Volume) reach(r string) string {
	if r == "." {
		return r
	}
	reachWalks.Add(1)
	_, err := v.root.Stat(r)
	if r2, ok := v.retry(r, err); ok {
		return r2
	}
	return r
}

// volPrefixes are the absolute paths that name the volume's folder: as
// configured and, when it differs, its real path.
func (v *Volume) volPrefixes() []string {
	if v.real != "" && v.real != v.Src {
		return []string{v.Src, v.real}
	}
	return []string{v.Src}
}

// inVolume returns the components of the absolute link target t below
// the volume's folder, or ok false when t does not start with it. The
// match is on whole components, before any "." or ".." in t is applied
// (those are walked from the root like any other component).
func (v *Volume) inVolume(t string) (rest []string, ok bool) {
	tc := splitPath(t)
	for _, p := range v.volPrefixes() {
		pc := splitPath(p)
		if len(tc) < len(pc) {
			continue
		}
		match := true
		for i := range pc {
			if tc[i] != pc[i] {
				match = false
				break
			}
		}
		if match {
			return tc[len(pc):], true
		}
	}
	return nil, false
}

// splitPath splits a slash-separated path into its components, dropping
// empty ones and ".".
func splitPath(p string) []string {
	var out []string
	for c := range strings.SplitSeq(filepath.ToSlash(p), "/") {
		if c != "" && c != "." {
			out = append(out, c)
		}
	}
	return out
}

// resolve returns r (a clean relative path) with every symbolic link on
// the way replaced by its target, as the kernel would walk it from the
// root, except that absolute targets are taken relative to the volume's
// folder. Components that do not exist are kept as they are (a write may
// be about to make them). ErrOutside: a link leads out of the volume, or
// there are too many.
func (v *Volume) resolve(r string) (string, error) {
	todo := splitPath(r)
	var done []string // resolved, link-free
	links := 0
	for len(todo) > 0 {
		c := todo[0]
		todo = todo[1:]
		if c == ".." {
			if len(done) == 0 {
				return "", ErrOutside
			}
			done = done[:len(done)-1]
			continue
		}
		p := path.Join(append(done, c)...)
		fi, err := v.root.Lstat(p)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				// Nothing below a missing name can be a link: keep the
				// rest as it is (".." in it is os.Root's to refuse).
				done = append(append(done, c), todo...)
				break
			}
			return "", mapErr(err)
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			done = append(done, c)
			continue
		}
		if links++; links > maxLinks {
			return "", ErrOutside
		}
		t, err := v.root.Readlink(p)
		if err != nil {
			return "", mapErr(err)
		}
		var tc []string
		if strings.HasPrefix(t, "/") {
			rest, ok := v.inVolume(t)
			if !ok {
				return "", ErrOutside
			}
			done, tc = nil, rest
		} else {
			tc = splitPath(t)
		}
		todo = append(tc, todo...)
	}
	if len(done) == 0 {
		return ".", nil
	}
	// The resolved path keeps every rule of a requested one: no state
	// folder, no work file.
	return cleanRel(path.Join(done...))
}

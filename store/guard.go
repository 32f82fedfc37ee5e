package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// The state folder is never reached through a symbolic link.
//
// A request's path is refused when a component is named .hist (cleanRel),
// but os.Root follows a relative link that stays inside the volume, so
// `ln -s .hist h` (or `x -> h/secret`, `sub/y -> ../.hist`) would reach the
// state folder (the volume's secret, the index, sessions) by another name.
// So every descriptor opened through a volume's root for a request is
// checked after the open, by where the kernel actually put it: its real
// path (/proc/self/fd/N) must not be a state folder or lie below one. The
// check is on the open descriptor, so a link swapped in between a check
// and the open cannot get through; writes open their folder, check it, and
// make names in it relative to that descriptor. The answer is the one for
// a missing file (ErrNotFound): no oracle for what the state folder holds.
// Where /proc is missing (other systems) the path is resolved link by link
// instead (links.go), which is not race-free.

// guard refuses f, opened through v's root by the path r (cleaned), when
// it is a state folder or inside one. It closes f when it refuses it.
func (v *Volume) guard(f *os.File, r string) error {
	return v.guardAs(f, r, r)
}

// guardAs is guard for a file asked for as asked and opened as r (asked
// with an absolute link resolved, links.go): a link on the way is judged
// by where the asked path was meant to lead.
func (v *Volume) guardAs(f *os.File, r, asked string) error {
	if err := v.checkReal(f, r, asked); err != nil {
		f.Close()
		return err
	}
	return nil
}

func (v *Volume) checkReal(f *os.File, r, asked string) error {
	real, err := realPath(f)
	if err != nil {
		return v.checkResolved(asked) // no /proc: resolve by walking
	}
	top := v.volReal()
	if inState(top, real) {
		return ErrNotFound
	}
	if real != filepath.Join(top, filepath.FromSlash(v.outerRel(asked))) && v.otherVolumes(top, real) {
		return ErrNotFound
	}
	return nil
}

// checkResolved is the fallback check: r with its links resolved (racy).
func (v *Volume) checkResolved(r string) error {
	if r == "." || r == "" {
		return nil
	}
	r2, err := v.resolve(r)
	if errors.Is(err, ErrReserved) {
		return ErrNotFound
	}
	if err == nil && r2 != r && v.store != nil && v.store.Shadowed(v, r2) {
		return ErrNotFound
	}
	return nil
}

// A link never leads into another volume, and os.Root does not see to
// that where the other volume's folder lies inside this one's (-v
// /srv/a:a -v /srv/a/priv:a/priv:r,boss): `ln -s priv/x y` in /srv/a stays
// inside /srv/a, and would hand /a/y's readers what only boss may read at
// /a/priv/x. So a file reached through a link (its real path is not the
// one its own components name) is refused when the place it lies at is,
// by URL, another volume's: a volume mounted there hides it. A path
// without links into such a place is the URL's business (a request for
// /a/priv/x goes to the priv volume), so it is left alone. The answer is
// the one for a missing file, as for a link out of the volume.

// otherVolumes reports whether real (a link-free absolute path) lies below
// the volume's folder top at a place another volume's URL hides.
func (v *Volume) otherVolumes(top, real string) bool {
	if v.store == nil || top == "" {
		return false
	}
	t := strings.TrimSuffix(top, "/")
	if len(real) <= len(t) || real[len(t)] != '/' || !strings.HasPrefix(real, t) {
		return false // the top itself, or not below it (moved while running)
	}
	outer, _ := v.Outer()
	return v.store.Shadowed(outer, filepath.ToSlash(real[len(t)+1:]))
}

// volReal is the real path of the volume's folder (of the volume a view
// belongs to): the base that real paths are judged below.
func (v *Volume) volReal() string {
	if v.outer != nil {
		return v.outer.real
	}
	return v.real
}

// inState reports whether real (an absolute, link-free path) is a folder
// named .hist below top, or inside one. When real is not below top (the
// volume's folder was moved while running), every component counts.
func inState(top, real string) bool {
	rest := real
	if top != "" {
		t := strings.TrimSuffix(top, "/")
		switch {
		case real == top:
			return false
		case len(real) > len(t) && real[len(t)] == '/' && strings.HasPrefix(real, t):
			// real is below top (tested without building t+"/": this
			// runs for every file an archive or a download opens)
			rest = real[len(t)+1:]
		}
	}
	// Fast path: no component can be .hist without the text ".hist".
	if !containsFold(rest, HistName) {
		return false
	}
	for c := range strings.SplitSeq(rest, "/") {
		if strings.EqualFold(c, HistName) {
			return true
		}
	}
	return false
}

// containsFold is strings.Contains, ignoring ASCII case.
func containsFold(s, sub string) bool {
	n := len(sub)
	for i := 0; i+n <= len(s); i++ {
		if strings.EqualFold(s[i:i+n], sub) {
			return true
		}
	}
	return false
}

// openIn opens r (cleaned) through v's root with flag, retrying through an
// absolute link back into the volume (links.go), and refuses a state
// folder. The path actually opened is returned with the file.
func (v *Volume) openIn(r string, flag int) (*os.File, string, error) {
	asked := r
	f, err := v.root.OpenFile(r, flag, 0)
	if r2, ok := v.retry(r, err); ok {
		r = r2
		f, err = v.root.OpenFile(r, flag, 0)
	}
	if err != nil {
		return nil, r, err
	}
	if err := v.guardAs(f, r, asked); err != nil {
		return nil, r, err
	}
	return f, r, nil
}

// openFileIn is openIn for a caller that only reads, stats or syncs
// the file it opens, never reads it as a folder: such a caller may take
// the fast open (fastopen_linux.go), whose files are not "in a root" for
// package os, so a folder's entries read through one would be looked
// up by path, not by descriptor.
func (v *Volume) openFileIn(r string, flag int) (*os.File, string, error) {
	if f, err, ok := v.fastOpenOrMissing(r, flag); ok {
		return f, r, err
	}
	return v.openIn(r, flag)
}

// statIn is os.Root.Stat (links followed inside the volume), refusing a
// state folder: the target is opened and checked, then described by its
// descriptor. A target that may not be opened (no read permission) is
// described by path and checked by resolving it.
func (v *Volume) statIn(r string) (fs.FileInfo, error) {
	f, _, err := v.openFileIn(r, os.O_RDONLY|syscall.O_NONBLOCK)
	if err == nil {
		defer f.Close()
		return f.Stat()
	}
	if !errors.Is(err, fs.ErrPermission) {
		return nil, err
	}
	fi, err := v.root.Stat(r)
	if r2, ok := v.retry(r, err); ok {
		fi, err = v.root.Stat(r2)
	}
	if err != nil {
		return nil, err
	}
	if err := v.checkResolved(r); err != nil {
		return nil, err
	}
	return fi, nil
}

// mkdirs makes the folder d (cleaned; reached as reach gives it) and its
// missing parents, and returns it open and checked. The deepest existing
// folder is opened through the root and checked; each missing one is made
// and entered relative to its parent's descriptor without following a
// link, so nothing made lands in a state folder. made is the topmost
// folder it made ("" if none). Errors are the system's (callers map
// them), ErrNotDir, or ErrNotFound for a state folder.
func (v *Volume) mkdirs(d string) (dir *os.File, made string, err error) {
	const flag = os.O_RDONLY | syscall.O_DIRECTORY | syscall.O_NONBLOCK
	var missing []string
	cur := d
	for {
		f, _, err := v.openIn(cur, flag)
		if err == nil {
			dir = f
			break
		}
		if errors.Is(err, ErrNotFound) { // refused by guard
			return nil, "", err
		}
		if !errors.Is(err, fs.ErrNotExist) || cur == "." {
			if errors.Is(err, syscall.ENOTDIR) {
				return nil, "", fmt.Errorf("%w: %v", ErrNotDir, err)
			}
			return nil, "", err
		}
		missing = append(missing, path.Base(cur))
		cur = path.Dir(cur)
	}
	for i := len(missing) - 1; i >= 0; i-- {
		name := missing[i]
		err := mkdirAt(dir, name, 0o755)
		if err == nil && made == "" {
			made = path.Join(cur, name)
		}
		if err != nil && !errors.Is(err, fs.ErrExist) {
			dir.Close()
			return nil, "", err
		}
		next, err := openDirAt(dir, name)
		dir.Close()
		if err != nil {
			if errors.Is(err, syscall.ENOTDIR) || errors.Is(err, syscall.ELOOP) || errors.Is(err, fs.ErrExist) {
				return nil, "", fmt.Errorf("%w: %v", ErrNotDir, err)
			}
			return nil, "", err
		}
		dir = next
		cur = path.Join(cur, name)
	}
	return dir, made, nil
}

// linkAt makes the hard link nname in ndir to oname in odir (no link in
// either name is followed).
func linkAt(odir *os.File, oname string, ndir *os.File, nname string) error {
	err := retryEINTR(func() error { return unix.Linkat(fdOf(odir), oname, fdOf(ndir), nname, 0) })
	if err != nil {
		return &os.LinkError{Op: "linkat", Old: oname, New: nname, Err: err}
	}
	return nil
}

// checkHeld checks a folder held open since an upload began, before a
// file is placed in it: it must still lie below the volume's folder,
// outside every state folder, and be the folder dir names (a folder can
// be moved while it is held: out of the volume, into a state folder, or
// elsewhere inside the volume, where the file would appear under another
// path than the one recorded, reported and indexed). Its real path
// (/proc) is dir's own for a folder reached without links; otherwise
// (links on the way, or no /proc) it must be the folder the root reaches
// as dir now.
func (v *Volume) checkHeld(d *os.File, dir string) error {
	same := func() bool {
		a, err1 := d.Stat()
		b, err2 := v.root.Stat(dir)
		return err1 == nil && err2 == nil && os.SameFile(a, b)
	}
	real, err := realPath(d)
	if err != nil {
		if !same() {
			return ErrNotFound
		}
		return v.checkResolved(dir)
	}
	top := strings.TrimSuffix(v.volReal(), "/")
	if real != top && !strings.HasPrefix(real, top+"/") {
		return ErrNotFound
	}
	if inState(top, real) {
		return ErrNotFound
	}
	if v.otherVolumes(top, real) {
		// Another volume's by URL: a request for it goes to that volume,
		// so only a link (relative, or absolute and resolved by reach)
		// leads a write of this volume here.
		return ErrNotFound
	}
	if dir == "." && real == top || dir != "." && real == top+"/"+dir {
		return nil
	}
	if !same() {
		return ErrNotFound // moved inside the volume
	}
	return nil
}

package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Tree walks for Delete, Copy and cross-device Move. They hold one open
// folder and one batch of its entries per level of depth, whatever the
// number of files: memory grows with the depth of a tree, never with its
// size. Nothing is followed: a symbolic link in a tree is removed, copied
// or moved as the link itself.

// treeBatch is how many entries of a folder are read at a time.
const treeBatch = 256

// treeStats counts what a walk did.
type treeStats struct {
	Files, Dirs, Bytes int64
}

// testHook, when set (tests only), is called at each named step of a
// multi-step operation; an error it returns stops the operation there as
// a crash would: nothing is cleaned up.
var testHook func(step string) error

// errCrash marks an operation stopped by testHook.
var errCrash = errors.New("simulated crash")

func hook(step string) error {
	if testHook == nil {
		return nil
	}
	if err := testHook(step); err != nil {
		return errors.Join(errCrash, err)
	}
	return nil
}

type rmFrame struct {
	dir   *os.File
	name  string // in the folder of the frame below (or the walk's parent)
	ents  []fs.DirEntry
	i     int
	tries int
}

// removeTree deletes the folder name in parent and everything below it.
// Entries that appear while it runs (an upload landing in the folder) are
// deleted too; a folder that keeps refilling gives up with ENOTEMPTY.
func removeTree(ctx context.Context, parent *os.File, name string, st *treeStats) error {
	d, err := openDirAt(parent, name)
	if err != nil {
		return err
	}
	stack := []*rmFrame{{dir: d, name: name}}
	defer func() {
		for _, f := range stack {
			f.dir.Close()
		}
	}()
	for len(stack) > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		top := stack[len(stack)-1]
		if top.i == len(top.ents) {
			ents, rerr := nextBatch(top.dir, top.ents)
			if rerr != nil {
				return rerr
			}
			if len(ents) > 0 {
				top.ents, top.i = ents, 0
				continue
			}
			// Empty now: remove it from the folder above.
			top.dir.Close()
			stack = stack[:len(stack)-1]
			up := parent
			if len(stack) > 0 {
				up = stack[len(stack)-1].dir
			}
			err := unlinkAt(up, top.name, true)
			if errors.Is(err, syscall.ENOTEMPTY) || errors.Is(err, syscall.EEXIST) {
				if top.tries >= 3 {
					return err
				}
				// Something was added meanwhile: go over it again.
				nd, oerr := openDirAt(up, top.name)
				if oerr != nil {
					return oerr
				}
				stack = append(stack, &rmFrame{dir: nd, name: top.name, tries: top.tries + 1})
				continue
			}
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
			st.Dirs++
			continue
		}
		e := top.ents[top.i]
		top.i++
		if e.Type().IsDir() {
			sub, err := openDirAt(top.dir, e.Name())
			switch {
			case err == nil:
				stack = append(stack, &rmFrame{dir: sub, name: e.Name()})
				continue
			case errors.Is(err, fs.ErrNotExist):
				continue
			case !errors.Is(err, syscall.ENOTDIR) && !errors.Is(err, syscall.ELOOP):
				return err
			}
			// Replaced by a file or a link since it was listed: unlink it.
		}
		err := unlinkAt(top.dir, e.Name(), false)
		if errors.Is(err, syscall.EISDIR) || errors.Is(err, syscall.EPERM) {
			// Replaced by a folder since it was listed: descend next time.
			if sub, oerr := openDirAt(top.dir, e.Name()); oerr == nil {
				stack = append(stack, &rmFrame{dir: sub, name: e.Name()})
				continue
			}
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		st.Files++
		if err := hook("rm-file"); err != nil {
			return err
		}
	}
	return nil
}

// copyFileData fills dst with src's size bytes: a clone where the file
// system shares blocks, else a copy in steps (copy_file_range, which some
// file systems also turn into a clone) between which ctx is checked.
func (v *Volume) copyFileData(ctx context.Context, dst, src *os.File, size int64) error {
	if size > 0 && cloneFile(dst, src) == nil {
		return nil
	}
	for done := int64(0); done < size; {
		if err := ctx.Err(); err != nil {
			return err
		}
		n, err := io.CopyN(dst, src, min(copyStep, size-done))
		done += n
		if errors.Is(err, io.EOF) {
			return nil // it shrank meanwhile; what is there is copied
		}
		if err != nil {
			return v.writeErr(err, size-done)
		}
	}
	// Bytes appended meanwhile are not copied: a move then sees the
	// source differ and keeps it (removeMoved).
	return nil
}

// copyFileAt copies the regular file name of sdir into a new file dname in
// ddir (which must not exist), with its mode and mtime. With sync the copy
// is fsynced before it returns.
func (v *Volume) copyFileAt(ctx context.Context, sdir *os.File, name string, ddir *os.File, dname string, sync bool) (int64, error) {
	sf, err := openFileAt(sdir, name, os.O_RDONLY, 0)
	if err != nil {
		return 0, err
	}
	defer sf.Close()
	fi, err := sf.Stat()
	if err != nil {
		return 0, err
	}
	if !fi.Mode().IsRegular() {
		return 0, pathErr("open", name, syscall.EINVAL)
	}
	// The volume's df= reserve, and the space promised to unfinished
	// uploads, hold for copies as for uploads.
	if err := v.roomFor(fi.Size()); err != nil {
		return 0, err
	}
	df, err := openFileAt(ddir, dname, os.O_WRONLY|os.O_CREATE|os.O_EXCL, uint32(fi.Mode().Perm()))
	if err != nil {
		return 0, v.writeErr(err, fi.Size())
	}
	ok := false
	defer func() {
		if !ok {
			df.Close()
		}
	}()
	if err := v.copyFileData(ctx, df, sf, fi.Size()); err != nil {
		return 0, err
	}
	if err := copyProps(df, sf); err != nil { // davprops.go
		return 0, v.writeErr(err, 0)
	}
	setMtime(df, fi.ModTime())
	if sync || fsyncEachFile {
		if err := df.Sync(); err != nil {
			return 0, v.writeErr(err, 0)
		}
	}
	ok = true
	return fi.Size(), v.writeErr(df.Close(), 0)
}

type cpFrame struct {
	src, dst *os.File
	ents     []fs.DirEntry
	i        int
}

// errVanished is a source entry that went away while a move copied it.
var errVanished = errors.New("a file of the source went away while it was copied")

// copyTree copies everything in the open folder src into the open, empty
// folder dst: folders, regular files (mode and mtime kept) and symbolic
// links (as links, their text unchanged). Work files of uploads in
// progress (*.PARTIAL) and special files (sockets, fifos, devices) are left
// out. An entry that vanishes meanwhile is skipped, or with strict (a
// move, which must not publish half a tree) stops the copy. Nothing is
// synced; the caller flushes the tree once.
func (v *Volume) copyTree(ctx context.Context, src, dst *os.File, st *treeStats, strict bool) error {
	vanished := func(err error) bool {
		if !errors.Is(err, fs.ErrNotExist) {
			return false
		}
		return !strict
	}
	stack := []*cpFrame{{src: src, dst: dst}}
	defer func() {
		for _, f := range stack {
			if f.src != src {
				f.src.Close()
				f.dst.Close()
			}
		}
	}()
	for len(stack) > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		top := stack[len(stack)-1]
		if top.i == len(top.ents) {
			ents, rerr := nextBatch(top.src, top.ents)
			if rerr != nil {
				return rerr
			}
			if len(ents) > 0 {
				top.ents, top.i = ents, 0
				continue
			}
			if fsyncEachFile {
				if err := top.dst.Sync(); err != nil {
					return v.writeErr(err, 0)
				}
			}
			if len(stack) > 1 {
				top.src.Close()
				top.dst.Close()
			}
			stack = stack[:len(stack)-1]
			continue
		}
		e := top.ents[top.i]
		top.i++
		name := e.Name()
		if strings.HasSuffix(name, PartialSuffix) {
			continue
		}
		switch t := e.Type(); {
		case t.IsDir():
			sd, err := openDirAt(top.src, name)
			if vanished(err) {
				continue
			}
			if err != nil {
				return err
			}
			sfi, err := sd.Stat()
			if err == nil {
				err = mkdirAt(top.dst, name, uint32(sfi.Mode().Perm()|0o700))
			}
			var dd *os.File
			if err == nil {
				dd, err = openDirAt(top.dst, name)
			}
			if err == nil {
				if err = copyProps(dd, sd); err != nil { // davprops.go
					dd.Close()
				}
			}
			if err != nil {
				sd.Close()
				return v.writeErr(err, 0)
			}
			st.Dirs++
			stack = append(stack, &cpFrame{src: sd, dst: dd})
		case t&fs.ModeSymlink != 0:
			target, err := readlinkAt(top.src, name)
			if vanished(err) {
				continue
			}
			if err == nil {
				err = symlinkAt(target, top.dst, name)
			}
			if err != nil {
				return v.writeErr(err, 0)
			}
			st.Files++
		case t.IsRegular():
			n, err := v.copyFileAt(ctx, top.src, name, top.dst, name, false)
			if vanished(err) {
				continue
			}
			if errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("%w: %v", errVanished, err)
			}
			if err != nil {
				return err
			}
			st.Files++
			st.Bytes += n
			if err := hook("copy-file"); err != nil {
				return err
			}
		}
	}
	return nil
}

func isDirStat(st *unix.Stat_t) bool  { return st.Mode&unix.S_IFMT == unix.S_IFDIR }
func isLinkStat(st *unix.Stat_t) bool { return st.Mode&unix.S_IFMT == unix.S_IFLNK }
func isRegStat(st *unix.Stat_t) bool  { return st.Mode&unix.S_IFMT == unix.S_IFREG }

// nextBatch reads the next treeBatch entries of the folder d, after
// clearing the used-up batch ents (so its entries can be collected). An
// empty result with a nil error means the folder has been read to the end.
func nextBatch(d *os.File, ents []fs.DirEntry) ([]fs.DirEntry, error) {
	clear(ents)
	got, err := d.ReadDir(treeBatch)
	if len(got) > 0 {
		return got, nil
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return nil, nil
}

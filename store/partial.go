package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// This file holds what resumable (up2k) uploads need from a volume: the
// state folder, sparse work files named <final name>.PARTIAL that survive
// restarts, and server-side copies and links of existing files.

// HistPath returns the volume's state folder (absolute), or "" when it
// could not be made.
func (v *Volume) HistPath() string { return v.hist }

// PartialOptions control how CreatePartial picks the final name.
type PartialOptions struct {
	// Replace keeps the asked name even when a file has it; that file is
	// replaced when the upload is published.
	Replace  bool
	ClientIP string // for copyparty's collision suffix
	// Reserve, when set, is asked before a name is taken (and the name
	// is skipped as taken when it says no): the caller's record of the
	// names that uploads without a work file yet hold (FreeName).
	Reserve func(name string) bool
	// Exact takes the name as it is, reserved earlier by FreeName: no
	// collision suffix, and a file that has the final name meanwhile is
	// no reason to pick another (publishing renames on a collision).
	Exact bool
}

// CreatePartial reserves a final name for an upload of size bytes into
// folder dir (made when missing) and creates its work file
// <final>.PARTIAL, sparse, already size bytes long. The name is taken when
// a file or another upload has it; then copyparty's collision suffix is
// added. It returns the work file and the final name.
func (v *Volume) CreatePartial(dir, name string, size int64, opt PartialOptions) (*Temp, string, error) {
	if v.obj != nil {
		return nil, "", unbuilt("up2k")
	}
	d, err := cleanRel(dir)
	if err != nil {
		return nil, "", err
	}
	if v.outer != nil {
		return nil, "", ErrReadOnly // up2k works on volumes, never on views
	}
	if v.Flags().NoSub && d != "." {
		return nil, "", ErrNoSub
	}
	if err := v.checkTarget(d, name); err != nil {
		return nil, "", err
	}
	// The work file is made under a PUT work file's name, marked as an
	// up2k work file and sized there, and only then moved to its own name
	// without clobbering: a crash leaves either a .hoard-*.PARTIAL (swept
	// by its name) or a marked work file (swept when no session owns it),
	// never an unmarked one that could be a user's. Where the file system
	// has no user attributes, such a leftover stays.
	// A folder that is there, reached without a link, is opened in one
	// openat2 (fastopen_linux.go: below the volume's folder by exactly
	// its components, none a state folder, so neither reach nor the
	// guard could change the answer); anything else the full way.
	dirf, fast := v.fastOpen(d, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NONBLOCK)
	if !fast {
		d = v.reach(d)             // links.go
		dirf, _, err = v.mkdirs(d) // never in a state folder (guard.go)
		if err != nil {
			return nil, "", v.writeErr(err, 0)
		}
	}
	// The folder stays held with the work file (Temp.dirf): the caller
	// may write and publish through it with no walk (a publish re-checks
	// where it is then: checkHeld), or Close it.
	held := false
	defer func() {
		if !held {
			dirf.Close()
		}
	}()
	tmp := newTempName()
	v.store.tempLive(v, path.Join(d, tmp), true)
	defer v.store.tempLive(v, path.Join(d, tmp), false)
	f, err := openFileAt(dirf, tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, "", mapErr(err)
	}
	placed := false
	defer func() {
		if !placed {
			f.Close()
			v.root.Remove(path.Join(d, tmp))
		}
	}()
	unix.Fsetxattr(int(f.Fd()), partialMark, []byte("1"), 0)
	if err := f.Truncate(size); err != nil {
		return nil, "", v.writeErr(err, size)
	}
	for i := range 10 {
		cand := name
		if i > 0 {
			if opt.Exact {
				break
			}
			cand = v.collisionName(name, opt.ClientIP, i-1)
		}
		// Looked up in the folder held (the one the work file is in),
		// not by a walk from the volume's top again.
		st, err := lstatAt(dirf, cand)
		if opt.Exact {
			err = fs.ErrNotExist
		}
		switch {
		case err == nil && opt.Replace && i == 0:
			if st.Mode&syscall.S_IFMT == syscall.S_IFDIR {
				return nil, "", ErrIsDir
			}
		case err == nil:
			continue // taken
		case !errors.Is(err, fs.ErrNotExist):
			return nil, "", mapErr(err)
		}
		if opt.Reserve != nil && !opt.Exact && !opt.Reserve(cand) {
			continue // an upload without a work file yet has it
		}
		work := cand + PartialSuffix
		err = renameAt(dirf, tmp, dirf, work, false) // RENAME_NOREPLACE where it exists
		if errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOSYS) || errors.Is(err, syscall.ENOTSUP) {
			// No renameat2 here: a hard link does not clobber either.
			if err = v.root.Link(path.Join(d, tmp), path.Join(d, work)); err == nil {
				v.root.Remove(path.Join(d, tmp))
			}
		}
		if errors.Is(err, fs.ErrExist) {
			continue // another upload has this name
		}
		if err != nil {
			return nil, "", mapErr(err)
		}
		placed, held = true, true
		return &Temp{File: f, v: v, dir: d, name: work, dirf: dirf}, cand, nil
	}
	return nil, "", ErrExists
}

// OpenPartial opens the work file of the upload named name in folder dir,
// made earlier by CreatePartial, for reading and writing.
func (v *Volume) OpenPartial(dir, name string) (*Temp, error) {
	if v.obj != nil {
		return nil, unbuilt("up2k")
	}
	d, err := cleanRel(dir)
	if err != nil {
		return nil, err
	}
	if err := checkName(name); err != nil {
		return nil, err
	}
	work := name + PartialSuffix
	// A work file is hoard's own: never a link (which could lead the
	// chunks into another file), a fifo or a device.
	// The folder is held from here to the publish (or Close): a chunk
	// post that completes the upload publishes and drops the work file
	// by descriptor, with no walk to the folder again; place re-checks
	// where the held folder is now (guard.go). A folder reached without
	// a link needs no reach (links.go): one openat2 opens it.
	dirf, fast := v.fastOpen(d, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NONBLOCK)
	if !fast {
		d = v.reach(d)
		if dirf, err = v.openDirChecked(d); err != nil {
			return nil, err
		}
	}
	f, _, err := v.leafAt(dirf, d, work, os.O_RDWR)
	if err != nil {
		dirf.Close()
		return nil, err
	}
	return &Temp{File: f, v: v, dir: d, name: work, dirf: dirf}, nil
}

// Recheck tells whether a work file kept open since CreatePartial (or
// OpenPartial) is still what opening it again would give: its folder
// still where dir names it (checkHeld), and the work file's name there
// still this regular file — not removed, and not a link, fifo or other
// file put in its place. A caller that gets an error opens it again with
// OpenPartial, whose answer then decides.
func (t *Temp) Recheck() error {
	if t.dirf == nil || t.done || t.linked {
		return ErrNotFound
	}
	if err := t.v.checkHeld(t.dirf, t.dir); err != nil {
		return err
	}
	if t.File == nil {
		return nil // a folder held for an unnamed work file (FreeName)
	}
	st, err := lstatAt(t.dirf, t.name)
	if err != nil {
		return mapErr(err)
	}
	fi, err := t.File.Stat()
	if err != nil {
		return mapErr(err)
	}
	own, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || st.Mode&syscall.S_IFMT != syscall.S_IFREG || uint64(st.Ino) != uint64(own.Ino) || uint64(st.Dev) != uint64(own.Dev) {
		return ErrNotRegular
	}
	return nil
}

// Close closes the work file and keeps it on disk (to be opened again with
// OpenPartial). The Temp cannot be published afterwards.
func (t *Temp) Close() error {
	t.releaseDir()
	if t.linked {
		t.linked = false
		return t.File.Close()
	}
	if t.done {
		return nil
	}
	t.done = true
	if t.File == nil {
		return nil // a folder held for an unnamed work file (FreeName)
	}
	return t.File.Close()
}

// partialMark is the extended attribute that marks up2k work files.
const partialMark = "user.hoard.partial"

// PublishLinked publishes an up2k work file like Publish (fsync, no-clobber
// link or collision rename, folder fsync, journal note, event), but keeps
// the work file as a second name of the published file until DropWork. A
// crash before the caller has recorded the upload as finished thus leaves
// the work file next to the file it became (PublishedAs finds it), and
// never a session whose work file is gone without a trace. The Temp stays
// open until DropWork or Close. (Where the file system has no hard links
// the work file is renamed instead.)
func (t *Temp) PublishLinked(name string, opt PublishOptions) (string, fs.FileInfo, error) {
	return t.publish(name, opt, true)
}

// DropWork removes the work file of an upload published by PublishLinked
// (the published file stays) and closes it. A crash before the removal is
// durable leaves a work file without a session, which SweepLeftovers
// removes at the next start.
func (t *Temp) DropWork() error {
	if !t.linked {
		return nil
	}
	t.linked = false
	var err error
	if t.dirf != nil {
		err = unlinkAt(t.dirf, t.name, false) // the folder published in
		t.releaseDir()
	} else {
		err = t.v.root.Remove(path.Join(t.dir, t.name))
	}
	if err == nil || errors.Is(err, fs.ErrNotExist) {
		// The published file (same inode) needs no mark.
		unix.Fremovexattr(int(t.File.Fd()), partialMark)
	}
	t.File.Close()
	if errors.Is(err, fs.ErrNotExist) {
		return nil // renamed into place: there is no second name
	}
	return mapErr(err)
}

// PublishedAs finds the file that the up2k work file name.PARTIAL in
// folder dir was published as when PublishLinked completed but its caller
// was cut short (a crash before the upload was recorded as finished): the
// other name of the same inode in the folder. rel is "" when the work file
// has no other name there.
func (v *Volume) PublishedAs(dir, name string) (rel string, fi fs.FileInfo, err error) {
	if v.obj != nil {
		return "", nil, unbuilt("up2k")
	}
	d, err := cleanRel(dir)
	if err != nil {
		return "", nil, err
	}
	if err := checkName(name); err != nil {
		return "", nil, err
	}
	wfi, err := v.root.Lstat(path.Join(d, name+PartialSuffix))
	if err != nil {
		return "", nil, mapErr(err)
	}
	ws, ok := wfi.Sys().(*syscall.Stat_t)
	if !ok || ws.Nlink < 2 || !wfi.Mode().IsRegular() {
		return "", nil, nil
	}
	f, err := v.root.OpenFile(d, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return "", nil, mapErr(err)
	}
	defer f.Close()
	for {
		des, rerr := f.ReadDir(1024)
		for _, de := range des {
			n := de.Name()
			if !de.Type().IsRegular() || strings.HasSuffix(n, PartialSuffix) {
				continue
			}
			fi, err := de.Info()
			if err != nil {
				continue
			}
			if s, ok := fi.Sys().(*syscall.Stat_t); ok && s.Ino == ws.Ino && s.Dev == ws.Dev {
				return relOf(path.Join(d, n)), fi, nil
			}
		}
		if rerr != nil || len(des) == 0 {
			if rerr != nil && !errors.Is(rerr, io.EOF) {
				return "", nil, mapErr(rerr)
			}
			return "", nil, nil
		}
	}
}

// Announce reports a file that an upload published before a crash cut its
// bookkeeping short (found at start by PublishedAs or by its content): its
// lifetime is scheduled and the index is told, as publishing would have.
func (v *Volume) Announce(rel string, opt PublishOptions) (fs.FileInfo, error) {
	if v.obj != nil {
		return nil, unbuilt("up2k")
	}
	r, err := cleanRel(rel)
	if err != nil {
		return nil, err
	}
	life, err := v.lifeFor(opt.Life)
	if err != nil {
		life = 0
	}
	fi, err := v.root.Lstat(r)
	if err != nil {
		return nil, mapErr(err)
	}
	now := v.store.now()
	if life > 0 {
		if err := v.scheduleExpiry(r, fi, now.Add(life)); err != nil {
			return nil, err
		}
	}
	v.store.emit(Event{Kind: Created, Vol: v, Rel: relOf(r), Size: fi.Size(), Mtime: fi.ModTime(), At: now, Uploader: opt.Uploader, ClientIP: opt.ClientIP, Wark: opt.Wark, Chunks: opt.Chunks})
	return fi, nil
}

// RemoveWork removes the up2k work file name.PARTIAL in folder dir (an
// upload found published at start whose work file is its second name).
func (v *Volume) RemoveWork(dir, name string) error {
	d, err := cleanRel(dir)
	if err != nil {
		return err
	}
	if err := checkName(name); err != nil {
		return err
	}
	err = v.root.Remove(path.Join(d, name+PartialSuffix))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return mapErr(err)
}

// SyncDir fsyncs the folder dir of the volume, making the names in it
// durable.
func (v *Volume) SyncDir(dir string) error {
	d, err := cleanRel(dir)
	if err != nil {
		return err
	}
	return v.syncDir(v.reach(d))
}

// SetMtime sets the modification (and access) time of the file at rel.
func (v *Volume) SetMtime(rel string, t time.Time) error {
	r, err := cleanRel(rel)
	if err != nil {
		return err
	}
	return mapErr(v.root.Chtimes(v.reach(r), t, t))
}

// copyStep is how much CopyFile copies between checks of its context.
const copyStep = 64 << 20

// CopyFile publishes a copy of the file srcRel of volume src as name in
// folder dir of v (like an upload: temp file, fsync, no-clobber publish or
// collision rename, folder fsync). The kernel copies the bytes
// (copy_file_range, which clones them on file systems that can).
func (v *Volume) CopyFile(ctx context.Context, src *Volume, srcRel, dir, name string, opt PublishOptions) (string, fs.FileInfo, error) {
	if v.obj != nil || src.obj != nil {
		return "", nil, unbuilt("copying files")
	}
	sf, sfi, err := src.Open(srcRel)
	if err != nil {
		return "", nil, err
	}
	defer sf.Close()
	if err := v.CheckSize(sfi.Size()); err != nil {
		return "", nil, err
	}
	t, err := v.createTemp(dir, true, true) // an unnamed work file where there are, as Ingest's
	if err != nil {
		return "", nil, err
	}
	defer t.Abort()
	for done := int64(0); done < sfi.Size(); {
		if err := ctx.Err(); err != nil {
			return "", nil, err
		}
		n, err := io.CopyN(t.File, sf, min(copyStep, sfi.Size()-done))
		done += n
		if err != nil {
			return "", nil, v.writeErr(err, sfi.Size()-done)
		}
	}
	return t.Publish(name, opt)
}

// LinkFile publishes a hard link to the file srcRel as name in folder dir
// of the same volume (no clobbering; collision rename). The link shares
// the source's inode, so opt.Mtime is not applied. It fails where the file
// system has no hard links; callers then copy.
func (v *Volume) LinkFile(srcRel, dir, name string, opt PublishOptions) (string, fs.FileInfo, error) {
	if v.obj != nil {
		return "", nil, unbuilt("copying files")
	}
	s, err := cleanRel(srcRel)
	if err != nil {
		return "", nil, err
	}
	d, err := cleanRel(dir)
	if err != nil {
		return "", nil, err
	}
	if v.Flags().NoSub && d != "." {
		return "", nil, ErrNoSub
	}
	if err := v.checkTarget(d, name); err != nil {
		return "", nil, err
	}
	life, err := v.lifeFor(opt.Life)
	if err != nil {
		return "", nil, err
	}
	s, d = v.reach(s), v.reach(d) // links.go
	if d != "." {
		dirf, _, err := v.mkdirs(d) // never in a state folder (guard.go)
		if err != nil {
			return "", nil, v.writeErr(err, 0)
		}
		dirf.Close()
	}
	tmp := path.Join(d, newTempName())
	v.store.tempLive(v, tmp, true)
	defer v.store.tempLive(v, tmp, false)
	if err := v.root.Link(s, tmp); err != nil {
		return "", nil, mapErr(err)
	}
	sfi, err := v.root.Lstat(tmp)
	if err != nil {
		v.root.Remove(tmp)
		return "", nil, mapErr(err)
	}
	now := v.store.now()
	ev := Event{Kind: Created, Vol: v, Rel: relOf(path.Join(d, name)), Size: sfi.Size(), Mtime: sfi.ModTime(), At: now, Uploader: opt.Uploader, ClientIP: opt.ClientIP}
	nid, err := v.store.note(ev)
	if err != nil {
		v.root.Remove(tmp)
		return "", nil, fmt.Errorf("noting the upload for the index: %w", err)
	}
	if life > 0 { // before the file appears (see publish)
		if err := v.scheduleExpiry(ev.Rel, sfi, now.Add(life)); err != nil {
			v.root.Remove(tmp)
			v.store.forget(v, nid)
			return "", nil, err
		}
	}
	final, err := v.place(tmp, d, name, opt, false, nil, nil)
	if err != nil {
		v.root.Remove(tmp)
		v.store.forget(v, nid)
		return "", nil, err
	}
	if opt.Replace {
		v.store.lifeReplaced(v, final, sfi)
	}
	if rel := relOf(final); rel != ev.Rel {
		ev.Rel = rel
		if id, err := v.store.renote(ev, nid); err == nil {
			nid = id
		} else {
			nid = 0 // emit notes it
		}
	}
	if err := v.syncDir(d); err != nil {
		return "", nil, err
	}
	fi, err := v.root.Stat(final)
	if err != nil {
		return "", nil, mapErr(err)
	}
	if life > 0 && relOf(final) != relOf(path.Join(d, name)) {
		if err := v.scheduleExpiry(final, fi, now.Add(life)); err != nil {
			return "", nil, err
		}
	}
	v.store.emit(Event{Kind: Created, Vol: v, Rel: relOf(final), Size: fi.Size(), Mtime: fi.ModTime(), At: now, Uploader: opt.Uploader, ClientIP: opt.ClientIP, Note: nid})
	return relOf(final), fi, nil
}

// WriteErr describes a failed write to one of the volume's files: ENOSPC
// and EDQUOT become a *DiskFullError naming the free space (need is the
// size of the write); other errors map to the package's sentinels.
func (v *Volume) WriteErr(err error, need int64) error { return v.writeErr(err, need) }

// FreeName picks the final name of an upload into folder dir (made when
// missing) that does not make its work file yet: name, or copyparty's
// collision name of it, that neither a file nor another upload's work file
// has, and that reserve accepts (reserve records it as the caller's; the
// caller releases what it does not keep). The upload's bytes later go into
// an unnamed file (CreateAnon), published under that name. With hold, the
// folder stays open in the Temp returned, which has no file yet: OpenAnon
// makes its unnamed work file there (publishing re-checks where the
// folder is then), or Close lets it go.
func (v *Volume) FreeName(dir, name, clientIP string, reserve func(string) bool, hold bool) (string, *Temp, error) {
	if v.obj != nil {
		return "", nil, unbuilt("up2k")
	}
	d, err := cleanRel(dir)
	if err != nil {
		return "", nil, err
	}
	if v.outer != nil {
		return "", nil, ErrReadOnly
	}
	if v.Flags().NoSub && d != "." {
		return "", nil, ErrNoSub
	}
	if err := v.checkTarget(d, name); err != nil {
		return "", nil, err
	}
	dirf, fast := v.fastOpen(d, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NONBLOCK)
	if !fast {
		d = v.reach(d)             // links.go
		dirf, _, err = v.mkdirs(d) // never in a state folder (guard.go)
		if err != nil {
			return "", nil, v.writeErr(err, 0)
		}
	}
	defer func() {
		if dirf != nil {
			dirf.Close()
		}
	}()
	free := func(n string) (bool, error) {
		_, err := lstatAt(dirf, n)
		if err == nil {
			return false, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return false, mapErr(err)
		}
		return true, nil
	}
	for i := range 10 {
		cand := name
		if i > 0 {
			cand = v.collisionName(name, clientIP, i-1)
		}
		ok, err := free(cand)
		if err == nil && ok {
			ok, err = free(cand + PartialSuffix)
		}
		if err != nil {
			return "", nil, err
		}
		if ok && reserve(cand) {
			var t *Temp
			if hold {
				t = &Temp{v: v, dir: d, dirf: dirf, anon: true}
				dirf = nil
			}
			return cand, t, nil
		}
	}
	return "", nil, ErrExists
}

// OpenAnon makes the unnamed work file of a Temp that FreeName returned
// holding its folder. ok is false where the system has no unnamed files;
// t is then closed, as it is on an error.
func (t *Temp) OpenAnon() (ok bool, err error) {
	if t.File != nil || t.dirf == nil || t.done {
		return false, nil
	}
	f, err, ok := openAnon(t.dirf, 0o644)
	if !ok || err != nil {
		t.Close()
		if err != nil {
			err = t.v.writeErr(err, 0)
		}
		return ok, err
	}
	t.File = f
	return true, nil
}

// CreateAnon makes an unnamed work file (O_TMPFILE) in the folder dir,
// held open with its folder: nothing of it is on disk by name until it is
// published, and it vanishes when it is closed unpublished or the process
// dies. ok is false where the system has no unnamed files; the caller
// then makes a named work file.
func (v *Volume) CreateAnon(dir string) (t *Temp, ok bool, err error) {
	if v.obj != nil || v.outer != nil {
		return nil, false, nil
	}
	d, err := cleanRel(dir)
	if err != nil {
		return nil, true, err
	}
	// The folder was made by the handshake (FreeName): one that is gone
	// now is not made again (the upload is then over, as one whose work
	// file went with its folder).
	dirf, fast := v.fastOpen(d, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NONBLOCK)
	if !fast {
		d = v.reach(d)
		if dirf, err = v.openDirChecked(d); err != nil {
			return nil, true, err
		}
	}
	f, err, ok := openAnon(dirf, 0o644)
	if !ok || err != nil {
		dirf.Close()
		if err != nil {
			err = v.writeErr(err, 0)
		}
		return nil, ok, err
	}
	return &Temp{File: f, v: v, dir: d, dirf: dirf, anon: true}, true, nil
}

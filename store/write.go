package store

import (
	"context"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"sync"
	"syscall"
	"time"
)

// tempPrefix starts the names of PUT and multipart work files.
const tempPrefix = ".hoard-"

// Temp is a work file in a volume folder, named so that it is never listed
// or served, waiting to be published under its final name.
type Temp struct {
	File *os.File
	v    *Volume
	dir  string // "." or a clean relative folder
	name string // work file name inside dir
	done bool
	made string // topmost folder created for this file; Abort removes it again while empty
	// linked: published by PublishLinked, the work file still a second
	// name of the published file (DropWork removes it).
	linked bool
	// dirf is the folder, open and checked, held from creation to publish
	// by a short-lived upload (Ingest) so that publishing neither opens
	// nor checks it again; nil for work files that may live long (up2k).
	dirf *os.File
	// journaled: published by group commit (gcommit.go): durable by its
	// journal entry, the file not flushed yet.
	journaled bool
	// anon: an unnamed file (CreateAnon, O_TMPFILE), published by linking
	// its descriptor; name is "" and there is never a second name to keep.
	anon bool
	// finished: PublishOptions.Finish was written with the journal entry.
	finished bool
}

// CreateTemp makes the folder dir (and its parents) if needed and creates a
// new, empty work file in it.
func (v *Volume) CreateTemp(dir string) (*Temp, error) {
	return v.createTemp(dir, false, false)
}

// createTemp is CreateTemp; with hold, the Temp keeps its folder open
// until it is published or aborted; with anon (and hold), the work file
// is an unnamed one where the system has them (CreateAnon), which needs
// no removal when it is published or aborted, nor a sweep after a crash.
func (v *Volume) createTemp(dir string, hold, anon bool) (*Temp, error) {
	d, err := cleanRel(dir)
	if err != nil {
		return nil, err
	}
	if v.only != nil {
		return nil, ErrReadOnly
	}
	if v.obj != nil {
		return nil, unbuilt("this way of writing a file")
	}
	if v.Flags().NoSub && v.outerRel(d) != "" {
		return nil, ErrNoSub
	}
	// The folder is made and held open, checked not to be (in) a state
	// folder, and the work file is made in it by descriptor (guard.go).
	// One that is there, reached without a link, is opened in one openat2
	// (fastopen_linux.go), which needs neither reach nor the check.
	dirf, fast := v.fastOpen(d, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NONBLOCK)
	var made string
	if !fast {
		d = v.reach(d) // links.go
		if dirf, made, err = v.mkdirs(d); err != nil {
			return nil, v.writeErr(err, 0)
		}
	}
	defer func() {
		if dirf != nil {
			dirf.Close()
		}
	}()
	if hold && anon {
		f, err, ok := openAnon(dirf, 0o644)
		if err != nil {
			return nil, v.writeErr(err, 0)
		}
		if ok {
			t := &Temp{File: f, v: v, dir: d, made: made, anon: true}
			t.dirf, dirf = dirf, nil
			return t, nil
		}
	}
	for range 10 {
		name := newTempName()
		v.store.tempLive(v, path.Join(d, name), true)
		f, err := openFileAt(dirf, name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			v.store.tempLive(v, path.Join(d, name), false)
		}
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if errors.Is(err, fs.ErrNotExist) && d != "." {
			// An aborted upload removed the folder it had made.
			dirf.Close()
			if dirf, _, err = v.mkdirs(d); err != nil {
				dirf = nil
				return nil, v.writeErr(err, 0)
			}
			continue
		}
		if err != nil {
			return nil, mapErr(err)
		}
		t := &Temp{File: f, v: v, dir: d, name: name, made: made}
		if hold {
			t.dirf, dirf = dirf, nil
		}
		return t, nil
	}
	return nil, errors.New("could not create a work file")
}

// Abort closes and removes the work file. It is a no-op after Publish.
func (t *Temp) Abort() {
	t.releaseDir()
	if t.done {
		return
	}
	t.done = true
	if t.File != nil { // nil: a folder held for an unnamed work file (FreeName)
		t.File.Close()
	}
	if !t.anon { // an unnamed file has nothing to remove
		t.v.root.Remove(path.Join(t.dir, t.name))
		t.v.store.tempLive(t.v, path.Join(t.dir, t.name), false)
	}
	for p := t.dir; t.made != ""; p = path.Dir(p) {
		if t.v.root.Remove(p) != nil || p == t.made {
			break
		}
	}
}

// releaseDir closes the folder a Temp holds, if any.
func (t *Temp) releaseDir() {
	if t.dirf != nil {
		t.dirf.Close()
		t.dirf = nil
	}
}

// PublishOptions control how a finished work file becomes visible.
type PublishOptions struct {
	Replace  bool      // overwrite an existing file of that name; otherwise rename on collision
	Mtime    time.Time // set the file's mtime; zero keeps "now"
	Life     time.Duration
	Uploader string
	ClientIP string
	// Wark and Chunks are the content's up2k identity (wark and 44-character
	// chunk hashes) when the caller already knows it; they ride on the
	// Created event so the index need not hash the file again.
	Wark   string
	Chunks []string
	// Finish, for an up2k upload, is its finishing record: written in the
	// same synced write as a group-committed publish when the journal can
	// (Temp.Finished reports it), else left to the caller.
	Finish *SmallFinish
}

// Publish makes the work file durable and visible under name in its folder:
// fsync, close, link without clobbering (or rename over, with Replace),
// fsync the folder. When name is taken and Replace is off, the file gets
// copyparty's collision suffix. It returns the final path inside the volume.
// On an indexed volume the change is noted in the journal (journal.go)
// while the file is flushed, so it is indexed even after a crash.
func (t *Temp) Publish(name string, opt PublishOptions) (string, fs.FileInfo, error) {
	return t.publish(name, opt, false)
}

func (t *Temp) publish(name string, opt PublishOptions, keep bool) (string, fs.FileInfo, error) {
	if t.done || t.File == nil {
		return "", nil, errors.New("work file already finished")
	}
	if t.anon {
		keep = false // no work file name to keep as a second name
	}
	if err := t.v.checkTarget(t.dir, name); err != nil {
		t.Abort()
		return "", nil, err
	}
	life, err := t.v.lifeFor(opt.Life)
	if err != nil {
		t.Abort()
		return "", nil, err
	}
	// The mtime is set on the open file before its fsync, so the flush
	// that makes the bytes durable makes the mtime durable too.
	mtimeSet := opt.Mtime.IsZero() || setMtime(t.File, opt.Mtime) == nil
	tfi, err := t.File.Stat()
	if err != nil {
		t.Abort()
		return "", nil, mapErr(err)
	}
	now := t.v.store.now()
	ev := Event{Kind: Created, Vol: t.v, Rel: relOf(path.Join(t.dir, name)), Size: tfi.Size(), Mtime: tfi.ModTime(), At: now, Uploader: opt.Uploader, ClientIP: opt.ClientIP, Wark: opt.Wark, Chunks: opt.Chunks}
	if !opt.Mtime.IsZero() {
		ev.Mtime = opt.Mtime
	}
	if !opt.Replace && tfi.Size() <= SmallFile {
		// A small new file: one synced write of its bytes, record and
		// index note, shared with the others finishing now (gcommit.go).
		if rel, fi, err, ok := t.publishSmall(name, opt, ev, tfi, life, now, mtimeSet, keep); ok {
			return rel, fi, err
		}
	}
	// The journal's note is flushed while the file is. A small file
	// shares its flush with the others finishing now (groupsync.go).
	pn := t.v.store.noteAsync(ev)
	var serr error
	if tfi.Size() <= SmallFile {
		serr = t.v.store.syncSmall(t.File, devOf(tfi))
	} else {
		serr = fsyncFile(t.File)
	}
	nid, nerr := pn.wait()
	if serr != nil || nerr != nil {
		t.v.store.forget(t.v, nid)
		t.Abort()
		if serr != nil {
			return "", nil, t.v.writeErr(serr, 0)
		}
		return "", nil, fmt.Errorf("noting the upload for the index: %w", nerr)
	}
	tmp := path.Join(t.dir, t.name)
	var anon *os.File // an unnamed file stays open until it is linked
	if t.anon {
		anon = t.File
	} else if !keep {
		defer t.v.store.tempLive(t.v, tmp, false) // gone by then, published or removed
		err = t.File.Close()
		t.done = true
		if err != nil {
			t.v.root.Remove(tmp)
			t.v.store.forget(t.v, nid)
			return "", nil, t.v.writeErr(err, 0)
		}
	}
	fail := func(err error) (string, fs.FileInfo, error) {
		if keep || t.anon {
			t.Abort()
		} else {
			t.v.root.Remove(tmp)
		}
		t.v.store.forget(t.v, nid)
		return "", nil, err
	}
	if !mtimeSet {
		if t.anon {
			return fail(errors.New("store: could not set the mtime of an unnamed work file"))
		}
		if err := t.v.root.Chtimes(tmp, opt.Mtime, opt.Mtime); err != nil {
			return fail(mapErr(err))
		}
	}
	// The lifetime is recorded before the file appears, so that no crash
	// leaves it published for ever (the record names the file's inode: if
	// the name ends up elsewhere, the record is dropped at its deadline).
	if life > 0 {
		if err := t.v.scheduleExpiry(ev.Rel, tfi, now.Add(life)); err != nil {
			return fail(err)
		}
	}
	final, err := t.v.place(tmp, t.dir, name, opt, keep, t.dirf, anon)
	if err != nil {
		return fail(err)
	}
	if t.anon {
		t.done = true
		if err := t.File.Close(); err != nil {
			return "", nil, t.v.writeErr(err, 0) // published, and flushed
		}
	}
	if opt.Replace {
		t.v.store.lifeReplaced(t.v, final, tfi)
	}
	if keep {
		t.done, t.linked = true, true
	}
	if rel := relOf(final); rel != ev.Rel {
		// Renamed on a collision: note the name it got (while the folder
		// is flushed) and forget the one it was meant to have.
		ev.Rel = rel
		pn = t.v.store.noteAsync(ev)
	} else {
		pn = nil
	}
	if t.dirf != nil {
		err = t.v.syncDirOf(t.dirf, t.dir)
		if !keep {
			t.releaseDir() // kept for DropWork otherwise
		}
	} else {
		err = t.v.syncDir(t.dir)
	}
	if pn != nil {
		id, nerr := pn.wait()
		if nerr == nil {
			t.v.store.forget(t.v, nid)
			nid = id
		} else {
			t.v.store.log.Error("noting a renamed upload for the index failed; a crash before it is indexed loses it from search until a scan", "volume", "/"+t.v.VPath, "path", ev.Rel, "err", nerr)
			nid = 0
		}
	}
	if err != nil {
		return "", nil, err
	}
	fi, err := t.v.root.Stat(final)
	if err != nil {
		return "", nil, mapErr(err)
	}
	if life > 0 && relOf(final) != relOf(path.Join(t.dir, name)) {
		if err := t.v.scheduleExpiry(final, fi, now.Add(life)); err != nil {
			return "", nil, err
		}
	}
	ev.Size, ev.Mtime, ev.Note = fi.Size(), fi.ModTime(), nid
	t.v.store.emit(ev)
	return relOf(final), fi, nil
}

func relOf(p string) string { return strings.TrimPrefix(p, "./") }

// checkTarget validates a final file name in folder dir.
func (v *Volume) checkTarget(dir, name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	if strings.HasSuffix(name, PartialSuffix) {
		return ErrPartialName
	}
	if strings.EqualFold(name, HistName) {
		return ErrReserved
	}
	return nil
}

// lifeFor returns how long an upload lives: the requested life capped to
// the volume's lifetime, or the lifetime itself; 0 for forever.
func (v *Volume) lifeFor(life time.Duration) (time.Duration, error) {
	switch {
	case life < 0:
		return 0, fmt.Errorf("%w: negative life", ErrBadName)
	case life > 0 && v.Flags().Lifetime == 0:
		return 0, ErrNoLifetime
	case life > 0 && life < v.Flags().Lifetime:
		return life, nil
	}
	return v.Flags().Lifetime, nil
}

// placeMu serialises the link-less fallback of place per process.
var placeMu sync.Mutex

// place moves tmp to its final name in dir and returns the final path.
// With keep, tmp stays as a second name of the file (when the file system
// has hard links).
// held, when not nil, is the folder dir already open and checked.
// anon, when not nil, is an unnamed file (CreateAnon) to link in place
// of tmp.
func (v *Volume) place(tmp, dir, name string, opt PublishOptions, keep bool, held, anon *os.File) (string, error) {
	// Every name is made relative to the folder held open and checked
	// (guard.go): a folder swapped for a link between steps cannot send
	// the file elsewhere, into the state folder least of all.
	dirf := held
	if dirf != nil {
		// Held since the upload began: the folder may have been moved
		// meanwhile, out of the volume or into a state folder. Where it
		// is now decides (guard.go).
		if err := v.checkHeld(dirf, dir); err != nil {
			return "", err
		}
	} else {
		var err error
		dirf, _, err = v.openIn(dir, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NONBLOCK)
		if err != nil {
			return "", mapErr(err)
		}
		defer dirf.Close()
	}
	tn := path.Base(tmp)
	fname := name
	final := path.Join(dir, name)
	if opt.Replace {
		// No replay of a group-committed upload may undo the replace
		// (gcommit.go).
		if _, err := v.store.settle(v); err != nil {
			return "", err
		}
		if st, err := lstatAt(dirf, name); err == nil && st.Mode&syscall.S_IFMT == syscall.S_IFDIR {
			return "", ErrIsDir
		}
		if anon != nil {
			// Named first, then renamed over the file.
			t2n := newTempName()
			v.store.tempLive(v, path.Join(dir, t2n), true)
			defer v.store.tempLive(v, path.Join(dir, t2n), false)
			if err := linkAnon(anon, dirf, t2n); err != nil {
				return "", mapErr(err)
			}
			err := renameAt(dirf, t2n, dirf, name, true)
			if err != nil {
				unlinkAt(dirf, t2n, false)
			}
			return final, mapErr(err)
		}
		if keep {
			// Rename a second link over the file, so tmp stays.
			t2n := newTempName()
			t2 := path.Join(dir, t2n)
			v.store.tempLive(v, t2, true)
			defer v.store.tempLive(v, t2, false)
			err := linkAt(dirf, tn, dirf, t2n)
			if err == nil {
				if err = renameAt(dirf, t2n, dirf, name, true); err != nil {
					unlinkAt(dirf, t2n, false)
				}
				return final, mapErr(err)
			}
			if !noLinks(err) {
				return "", mapErr(err)
			}
		}
		return final, mapErr(renameAt(dirf, tn, dirf, name, true))
	}
	for i := 0; ; i++ {
		var err error
		if anon != nil {
			err = linkAnon(anon, dirf, fname)
		} else {
			err = linkAt(dirf, tn, dirf, fname)
		}
		if err == nil {
			if !keep && anon == nil {
				unlinkAt(dirf, tn, false)
			}
			return final, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			if !noLinks(err) || anon != nil {
				return "", mapErr(err)
			}
			// No hard links here (some FUSE and network file systems):
			// check and rename under a lock instead.
			placeMu.Lock()
			_, serr := lstatAt(dirf, fname)
			if errors.Is(serr, fs.ErrNotExist) {
				err = renameAt(dirf, tn, dirf, fname, true)
				placeMu.Unlock()
				return final, mapErr(err)
			}
			placeMu.Unlock()
		}
		if i >= 5 {
			return "", ErrExists
		}
		fname = v.collisionName(name, opt.ClientIP, i)
		final = path.Join(dir, fname)
	}
}

// noLinks reports a link(2) error of a file system without hard links.
func noLinks(err error) bool {
	return errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.ENOTSUP) || errors.Is(err, syscall.EXDEV)
}

// collisionName is copyparty's rename for a taken name:
// <name>-<unixtime.6f>-<8-char client tag>[.<ext>], where ext is the text
// after the last dot (or the whole name) when shorter than 7 characters.
func (v *Volume) collisionName(name, ip string, attempt int) string {
	t := v.store.now().Add(time.Duration(attempt) * time.Microsecond)
	s := name + "-" + NowString(t) + "-" + v.clientTag(ip)
	ext := name
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		ext = name[i+1:]
	}
	if ext != "" && len(ext) < 7 {
		s += "." + ext
	}
	if len(s) > 255 {
		s = s[len(s)-255:]
	}
	return s
}

// writeErr turns ENOSPC into a DiskFullError naming the free space.
func (v *Volume) writeErr(err error, need int64) error {
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		free, _ := v.Free()
		return fmt.Errorf("%w (%v)", &DiskFullError{Free: free, Need: uint64(max(need, 0))}, err)
	}
	return mapErr(err)
}

// Free returns the bytes available to hoard on the volume's file system.
func (v *Volume) Free() (uint64, error) {
	free, _, err := volStatfs(v.Src)
	return free, err
}

// volStatfs reads a volume's free space (tests count and steer it).
var volStatfs = statfs

// CheckSize applies the volume's sz= bounds and df= reserve to an upload of
// n bytes (n < 0: unknown yet; only the reserve is checked for 0 bytes).
// An upload that needs the state folder is refused while that is full.
func (v *Volume) CheckSize(n int64) error {
	if err := v.checkState(); err != nil {
		return err
	}
	f := v.Flags()
	if n >= 0 && f.SzMax > 0 && (n > f.SzMax || n < f.SzMin) {
		return &SizeError{Size: n, Min: f.SzMin, Max: f.SzMax}
	}
	if v.obj != nil {
		return nil // the object store's space is not this disk's
	}
	return v.roomFor(n) // free space less df= and unfinished uploads' claims
}

// IngestOptions describe one upload streamed into a volume (PUT, multipart).
type IngestOptions struct {
	Name     string // final file name inside the folder
	Checksum string // one of Checksums; "" means sha512
	// Encode, when set, wraps the file in a compressor; the checksum and
	// size still cover the bytes as received.
	Encode   func(io.Writer) (io.WriteCloser, error)
	Replace  bool  // overwrite an existing file
	Append   bool  // append to an existing file (created when missing)
	Size     int64 // announced length of body; -1 when unknown
	Life     time.Duration
	Uploader string
	ClientIP string
	Mtime    time.Time // the file's mtime (WebDAV's X-OC-Mtime); zero keeps "now"
}

// IngestResult describes a stored upload.
type IngestResult struct {
	Rel  string // final path inside the volume
	Size int64  // bytes received
	Sum  []byte // checksum of the bytes received; nil with ck=no
	Time time.Time
	Info fs.FileInfo
}

// Ingest streams body into the file opt.Name in folder dir, hashing it as it
// goes, and publishes it atomically. On any error nothing is left behind
// (an append is cut back to the old length).
func (v *Volume) Ingest(ctx context.Context, dir string, body io.Reader, opt IngestOptions) (IngestResult, error) {
	d, err := cleanRel(dir)
	if err != nil {
		return IngestResult{}, err
	}
	if v.only != nil {
		return IngestResult{}, ErrReadOnly
	}
	if v.obj != nil || opt.Append {
		d = v.reach(d) // links.go; createTemp reaches the folder itself when it must
	}
	if err := v.checkTarget(d, opt.Name); err != nil {
		return IngestResult{}, err
	}
	if opt.Checksum == "" {
		opt.Checksum = "sha512"
	}
	h, err := NewChecksum(opt.Checksum)
	if err != nil {
		return IngestResult{}, err
	}
	if err := v.CheckSize(opt.Size); err != nil {
		return IngestResult{}, err
	}
	if _, err := v.lifeFor(opt.Life); err != nil {
		return IngestResult{}, err
	}
	if v.obj != nil {
		return v.ingestObject(ctx, d, body, h, opt) // object.go
	}
	if opt.Append {
		res, err, ok := v.appendTo(ctx, d, body, h, opt)
		if ok {
			return res, err
		}
	}
	t, err := v.createTemp(d, true, true)
	if err != nil {
		return IngestResult{}, err
	}
	defer t.Abort()
	var w io.Writer = t.File
	var enc io.WriteCloser
	if opt.Encode != nil {
		if enc, err = opt.Encode(t.File); err != nil {
			return IngestResult{}, err
		}
		w = enc
	}
	n, err := v.copyIn(ctx, w, t.File, body, h, opt.Size)
	if err == nil && enc != nil {
		err = v.writeErr(enc.Close(), opt.Size)
	}
	if err != nil {
		return IngestResult{}, err
	}
	pub := PublishOptions{Replace: opt.Replace, Life: opt.Life, Uploader: opt.Uploader, ClientIP: opt.ClientIP, Mtime: opt.Mtime}
	var sum []byte
	if h != nil {
		sum = h.Sum(nil)
	}
	if opt.Checksum == "sha512" && opt.Encode == nil && n > 0 && v.store.identify != nil {
		// The file's bytes are exactly the body hashed: a file of one
		// up2k chunk has that digest as its chunk hash (store.Config).
		pub.Wark, pub.Chunks = v.store.identify(sum, n)
		if pub.Wark == "" {
			pub.Chunks = nil
		}
	}
	rel, fi, err := t.Publish(opt.Name, pub)
	if err != nil {
		return IngestResult{}, err
	}
	return IngestResult{Rel: rel, Size: n, Time: v.store.now(), Info: fi, Sum: sum}, nil
}

// appendTo appends body to an existing file. ok is false when the file does
// not exist, so the caller creates it the normal way. Appends to one file
// take turns. Before the first byte is written, the old length is noted in
// the volume's append log (recover.go), so that an append a crash cuts off
// is cut back at the next start as a failed one is at once: an append is
// there in full once acknowledged, and not at all otherwise.
func (v *Volume) appendTo(ctx context.Context, dir string, body io.Reader, h hash.Hash, opt IngestOptions) (res IngestResult, err error, ok bool) {
	name := path.Join(dir, opt.Name)
	f, fi, err := v.openRegular(name, os.O_WRONLY|os.O_APPEND) // never blocks on a fifo
	if errors.Is(err, ErrNotFound) {
		return res, nil, false
	}
	if err != nil { // a state file is ErrNotFound (openRegular, guard.go)
		return res, err, true
	}
	defer f.Close()
	id, _ := idOf(fi)
	defer v.store.lockFile(id)()
	if _, err := v.store.settle(v); err != nil { // gcommit.go
		return res, err, true
	}
	if fi, err = f.Stat(); err != nil { // its length once it is our turn
		return res, mapErr(err), true
	}
	old := fi.Size()
	var alog *appendLog
	var rec uint64
	if b, at := v.store.base(v); b != nil {
		if alog = v.store.appendLogFor(b); alog != nil {
			if rec, err = alog.begin(path.Join(at, name), id, old); err != nil {
				return res, stateErr(fmt.Errorf("noting the append in the state folder: %w", err), v.hist), true
			}
		}
	}
	var w io.Writer = f
	var enc io.WriteCloser
	if opt.Encode != nil {
		if enc, err = opt.Encode(f); err != nil {
			alog.end(rec)
			return res, err, true
		}
		w = enc
	}
	n, err := v.copyIn(ctx, w, nil, body, h, opt.Size)
	if err == nil && enc != nil {
		err = v.writeErr(enc.Close(), opt.Size)
	}
	now := v.store.now()
	ev := Event{Kind: Created, Vol: v, Rel: relOf(name), Size: old + n, Mtime: now, At: now, Uploader: opt.Uploader, ClientIP: opt.ClientIP}
	var nid uint64
	if err == nil {
		// The journal's note is flushed while the file is.
		pn := v.store.noteAsync(ev)
		err = v.writeErr(fsyncFile(f), opt.Size)
		var nerr error
		nid, nerr = pn.wait()
		if err == nil && nerr != nil {
			err = fmt.Errorf("noting the append for the index: %w", nerr)
		}
	}
	if err == nil && alog != nil {
		// Closed in the log only once the bytes are durable; if that
		// fails, the append is undone now rather than at the next start.
		if err = alog.end(rec); err != nil {
			err = fmt.Errorf("noting the append's end in the state folder: %w", err)
		}
		alog = nil
	}
	if err != nil {
		// Leave the file as it was: cut it back and make that durable.
		if terr := f.Truncate(old); terr == nil && f.Sync() == nil {
			alog.end(rec) // cut back: nothing left to undo at start
		}
		v.store.forget(v, nid)
		return res, err, true
	}
	if fi, err = f.Stat(); err != nil {
		return res, mapErr(err), true
	}
	ev.Size, ev.Mtime, ev.Note = fi.Size(), fi.ModTime(), nid
	v.store.emit(ev)
	res = IngestResult{Rel: relOf(name), Size: n, Time: now, Info: fi}
	if h != nil {
		res.Sum = h.Sum(nil)
	}
	return res, nil, true
}

// Usage returns the free and total bytes of the volume's file system.
func (v *Volume) Usage() (free, total uint64, err error) {
	if v.obj != nil {
		return 0, 0, unbuilt("free space")
	}
	return statfs(v.Src)
}

// ClientTag is copyparty's 8-character keyed hash of a client address, as
// used in collision suffixes and nameless upload names.
func (v *Volume) ClientTag(ip string) string { return v.clientTag(ip) }

package store

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// File management: Delete, Move, Copy and Mkdir. Each takes the user and
// the paths as the caller resolved them (Store.Resolve), checks the
// permissions at both ends, refuses what must not happen with an *OpError
// of a Kind, does the change confined to the volumes' folders, makes it
// durable (files and folders fsynced) and tells subscribers with one event
// (one per tree, however large). A thin HTTP or WebDAV handler maps the
// Kind to its status.

// Actor is who asks for a change: the account ("" anonymous), whose
// permissions apply, and the client's address (for unpost and the log).
type Actor struct {
	User string
	IP   string
}

// Loc is a file or folder: a volume and a slash-separated path inside it
// ("" is the volume's top folder), as Store.Resolve returns them.
type Loc struct {
	Vol *Volume
	Rel string
}

// URLPath is the location's URL path, "/" + mount point + path, unescaped.
func (l Loc) URLPath() string {
	if l.Vol == nil {
		return "/" + l.Rel
	}
	return "/" + strings.Trim(path.Join(l.Vol.VPath, l.Rel), "/")
}

// opState is the store's file-management configuration.
type opState struct {
	mu     sync.RWMutex
	lookup UploadLookup  // who uploaded a file, for unpost; nil: unknown
	unpost time.Duration // --unpost; 0: off
}

// DeleteOptions change how Delete decides.
type DeleteOptions struct {
	// Unpost lets a user without the d permission delete a file they
	// uploaded themselves (same account and address), within the
	// store's unpost window (copyparty's --unpost); it needs w there.
	// Folders cannot be unposted.
	Unpost bool
}

// DeleteResult counts what a delete removed.
type DeleteResult struct {
	Files int64 // files and links
	Dirs  int64 // folders, the deleted folder included
}

// DestOptions say what Move and Copy may do at the destination.
type DestOptions struct {
	// Overwrite replaces an existing destination; it needs the d
	// permission there. A file replacing a file is atomic; anything
	// else replacing a folder (or a folder replacing a file) deletes
	// the old one first (WebDAV's rule).
	Overwrite bool
	// Parents makes the destination's missing folders (copyparty's
	// behaviour); without it a missing folder is KindConflict (WebDAV's).
	Parents bool
	// Shallow copies a folder as an empty folder, none of its members
	// (WebDAV's COPY with Depth: 0, RFC 4918 section 9.8.3); a folder
	// already at the destination is kept as it is. A file is copied
	// whole either way. Copy only.
	Shallow bool
}

// DestResult describes a finished Move or Copy.
type DestResult struct {
	Rel      string // the destination's path inside its volume
	Dir      bool   // a folder was moved or copied
	Replaced bool   // an existing destination was replaced
	Files    int64  // files written (copies and cross-device moves)
	Bytes    int64
}

// MkdirOptions change what Mkdir does.
type MkdirOptions struct {
	Parents bool // make missing parent folders too (copyparty); else KindConflict (WebDAV)
}

func refuse(op string, k Kind, format string, args ...any) *OpError {
	return &OpError{Op: op, Kind: k, Msg: fmt.Sprintf(format, args...)}
}

func forbid(op string, who Actor, v *Volume, need Perm, what string) *OpError {
	user := who.User
	if user == "" {
		user = "anonymous"
	}
	return &OpError{Op: op, Kind: KindForbidden, Need: need, Msg: fmt.Sprintf("user %s may not %s in /%s: that needs the %s permission", user, what, v.VPath, need)}
}

// opErr classifies an error of the package's path and file-system layer
// for op; errors that are no refusal (a full disk, an I/O error, a
// cancelled context) pass unchanged.
func opErr(op string, err error) error {
	var oe *OpError
	var df *DiskFullError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &oe) && oe.Op != "", errors.As(err, &df), errors.Is(err, errCrash),
		errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	case errors.Is(err, ErrReserved):
		return &OpError{Op: op, Kind: KindForbidden, Msg: "that name is reserved for the server's state", Err: err}
	case errors.Is(err, ErrNoSub):
		return &OpError{Op: op, Kind: KindForbidden, Msg: "this volume takes files only into its top folder", Err: err}
	case errors.Is(err, ErrPartialName):
		return &OpError{Op: op, Kind: KindInvalid, Msg: ErrPartialName.Msg, Err: err}
	case errors.Is(err, ErrKeyTooLong):
		return &OpError{Op: op, Kind: KindInvalid, Msg: ErrKeyTooLong.Msg, Err: err}
	case errors.Is(err, ErrStoreName):
		return &OpError{Op: op, Kind: KindInvalid, Msg: ErrStoreName.Msg, Err: err}
	case errors.Is(err, ErrBadName):
		return &OpError{Op: op, Kind: KindInvalid, Msg: "invalid file name", Err: err}
	case errors.Is(err, ErrOutside):
		return &OpError{Op: op, Kind: KindForbidden, Msg: "that path leads outside the volume", Err: err}
	case errors.Is(err, ErrNotFound), errors.Is(err, fs.ErrNotExist):
		return &OpError{Op: op, Kind: KindNotFound, Msg: "not found", Err: err}
	case errors.Is(err, ErrExists), errors.Is(err, fs.ErrExist):
		return &OpError{Op: op, Kind: KindExists, Msg: "the destination exists", Err: err}
	case errors.Is(err, ErrNotDir), errors.Is(err, syscall.ENOTDIR):
		return &OpError{Op: op, Kind: KindConflict, Msg: "a file has the name of a folder on the way", Err: err}
	case errors.Is(err, ErrIsDir), errors.Is(err, syscall.EISDIR):
		return &OpError{Op: op, Kind: KindConflict, Msg: "a folder is in the way", Err: err}
	case errors.Is(err, syscall.ENOTEMPTY):
		return &OpError{Op: op, Kind: KindConflict, Msg: "the folder kept changing while it was being changed; try again", Err: err}
	}
	return err
}

// end is one end of an operation: a name in a folder of a volume, the
// folder held open, its path canonical (symbolic links on the way
// resolved, so events and checks name the real place).
type end struct {
	v      *Volume
	dir    *os.File
	dirRel string // canonical path of dir in the volume: "" for the top
	name   string
	rel    string // canonical path of the name: dirRel/name
	top    string // the volume's real folder as read when dir was opened ("" when unknown)
}

// physical is the real path of the end's name (v.physical(e.rel)), with
// the volume's folder as read when the end was opened.
func (e *end) physical() string {
	if e.top == "" {
		return e.v.physical(e.rel)
	}
	return filepath.Join(e.top, filepath.FromSlash(e.rel))
}

func (e *end) close() { e.dir.Close() }

// splitRel splits a cleaned path (not ".") into folder ("." for the top)
// and name.
func splitRel(r string) (dir, name string) {
	i := strings.LastIndexByte(r, '/')
	if i < 0 {
		return ".", r
	}
	return r[:i], r[i+1:]
}

func joinRel(dir, name string) string {
	if dir == "" || dir == "." {
		return name
	}
	return dir + "/" + name
}

// openEnd opens the folder dir (cleaned; "." for the top) of v, to act on
// name in it. The folder is reached through the volume's os.Root, so a
// link on the way that leads out of the volume is refused by the kernel.
func (v *Volume) openEnd(dir, name string) (*end, error) {
	return v.openEndTop(dir, name, "")
}

// openEndTop is openEnd with the volume's real folder already read (top;
// "" reads it): one operation with two ends in one volume reads it once.
func (v *Volume) openEndTop(dir, name, top string) (*end, error) {
	f, err := v.root.OpenFile(dir, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NONBLOCK, 0)
	if r2, ok := v.retry(dir, err); ok { // an absolute link back into the volume (links.go)
		f, err = v.root.OpenFile(r2, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NONBLOCK, 0)
	}
	if err != nil {
		return nil, mapErr(err)
	}
	canon, top, err := v.canonical(f, dir, top)
	if err != nil {
		f.Close()
		return nil, err
	}
	return &end{v: v, dir: f, dirRel: canon, name: name, rel: joinRel(canon, name), top: top}, nil
}

// canonical is the path inside v of the open folder f (given is the path
// it was opened by), symbolic links resolved. A folder reached through a
// link into the state folder is refused as a missing one is (guard.go).
// top is the volume's real folder when the caller has read it ("": it is
// read here); the one used is returned ("" when unknown).
func (v *Volume) canonical(f *os.File, given, top string) (string, string, error) {
	if given == "." {
		given = ""
	}
	real, err := realPath(f)
	if err != nil {
		return given, "", nil // no /proc: the path as given
	}
	if top == "" {
		if top, err = v.realTop(); err != nil {
			return given, "", nil
		}
	}
	rel, err := filepath.Rel(top, real)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return "", "", ErrOutside
	}
	if rel == "." {
		return "", top, nil
	}
	rel = filepath.ToSlash(rel)
	for c := range strings.SplitSeq(rel, "/") {
		if strings.EqualFold(c, HistName) {
			return "", "", ErrNotFound // no oracle for what it holds
		}
	}
	if v.otherVolumes(v.volReal(), real) { // top is a view's own folder
		// Another volume's by URL (its folder lies inside this one's):
		// only a link leads this volume's operations there (guard.go).
		return "", "", ErrNotFound
	}
	return rel, top, nil
}

// realTopReads counts realTop's reads (four syscalls each), for tests.
var realTopReads atomic.Int64

// realTop is the volume's folder as the kernel knows it (links resolved).
func (v *Volume) realTop() (string, error) {
	realTopReads.Add(1)
	f, err := v.root.OpenFile(".", os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return "", err
	}
	defer f.Close()
	p, err := realPath(f)
	if err != nil {
		return v.Src, nil
	}
	return p, nil
}

// physical is the real path of rel (canonical) in v.
func (v *Volume) physical(rel string) string {
	top, err := v.realTop()
	if err != nil {
		top = v.Src
	}
	return filepath.Join(top, filepath.FromSlash(rel))
}

// within reports whether p is base or below it ("/"-separated paths or
// object keys; base may end in "/").
func within(p, base string) bool {
	if p == base {
		return true
	}
	base = strings.TrimSuffix(base, "/")
	return len(p) > len(base) && p[len(base)] == '/' && strings.HasPrefix(p, base)
}

// treeFree refuses a folder of v that holds another volume's folder or a
// state folder: deleting or moving it would pull files out from under
// that volume.
func (s *Store) treeFree(op string, v *Volume, rel string) error {
	base := v.physical(rel)
	for _, w := range s.mounted() {
		if wt, err := w.realTop(); err == nil && within(wt, base) && !(w == v && rel == "") {
			return refuse(op, KindConflict, "another volume's folder (/%s) lies inside it", w.VPath)
		}
		if w.hist != "" {
			h, err := filepath.EvalSymlinks(w.hist)
			if err == nil && within(h, base) {
				return refuse(op, KindConflict, "a volume's state folder lies inside it")
			}
		}
	}
	return nil
}

// mountsInside reports whether other volumes are mounted at or below the
// URL path of rel in v (so that the folder, or part of it, is shadowed by
// them in the URL space).
func (s *Store) mountsInside(v *Volume, rel string) bool {
	p := strings.Trim(path.Join(v.VPath, rel), "/")
	for _, w := range *s.served.Load() {
		if w != v && (w.VPath == p || strings.HasPrefix(w.VPath, p+"/")) {
			return true
		}
	}
	return false
}

// stagePrefix starts the hidden names under which copies are assembled.
// It is not tempPrefix: listings sweep old .hoard-*.PARTIAL files, and a
// staged copy carries its source's (old) mtime before it is published.
// Staged copies are journalled instead, and the next start removes what a
// crash left.
const stagePrefix = ".hoardop-"

// stageName is a fresh name for a staged copy: never listed, served or
// indexed (*.PARTIAL).
func stageName() string {
	var b [9]byte
	rand.Read(b[:])
	return stagePrefix + base64.RawURLEncoding.EncodeToString(b[:]) + PartialSuffix
}

// makeParents makes the folder dir (cleaned) of v and its missing parents,
// each made durable in its own parent.
func (v *Volume) makeParents(dir string) error {
	if dir == "." {
		return nil
	}
	dir = v.reach(dir) // through an absolute link back into the volume (links.go)
	// Made by descriptor from a checked folder: never in a state folder
	// (guard.go).
	f, made, err := v.mkdirs(dir)
	if err != nil {
		return v.writeErr(err, 0)
	}
	f.Close()
	for p := dir; made != ""; p = path.Dir(p) {
		if err := v.syncDir(path.Dir(p)); err != nil {
			return err
		}
		if p == made {
			break
		}
	}
	return nil
}

// openDest opens the folder of a destination dst (already cleaned and
// checked), making it first with parents.
// top is as for openEndTop.
func (v *Volume) openDest(op, dir, name string, parents bool, top string) (*end, error) {
	de, err := v.openEndTop(dir, name, top)
	if errors.Is(err, ErrNotFound) && parents {
		if err := v.makeParents(dir); err != nil {
			return nil, opErr(op, err)
		}
		de, err = v.openEndTop(dir, name, top)
	}
	if errors.Is(err, ErrNotFound) {
		return nil, &OpError{Op: op, Kind: KindConflict, Msg: "the destination's folder does not exist", Err: err}
	}
	return de, opErr(op, err)
}

// splitDest checks a destination path: its folder as cleanRel gives it
// and a name that may be created (not .hist, not *.PARTIAL). top is true
// for the volume's own folder.
func (v *Volume) splitDest(rel string) (dir, name string, top bool, err error) {
	rel = strings.Trim(rel, "/")
	if rel == "" || rel == "." {
		return ".", "", true, nil
	}
	dir, name = splitRel(rel)
	if dir == "." && strings.Contains(rel, "/") {
		return "", "", false, ErrBadName // "./name"
	}
	if dir, err = cleanRel(dir); err != nil {
		return "", "", false, err
	}
	if err := v.checkTarget(dir, name); err != nil {
		return "", "", false, err
	}
	if v.Flags().NoSub && dir != "." {
		return "", "", false, ErrNoSub
	}
	return dir, name, false, nil
}

// Delete deletes the file or folder at (a folder with everything in it).
// It needs the d permission, or for the uploader's own recent upload with
// opt.Unpost, w (see DeleteOptions). A tree is deleted as it is walked, in
// constant memory; links in it are removed, never followed. Refused: a
// volume's top folder, the state folder, a folder holding another volume
// (mounted below it, or its folder on disk). When a tree delete fails half
// way, what was deleted stays deleted and subscribers are told (a Removed
// tree event) so they look again.
func (s *Store) Delete(ctx context.Context, who Actor, at Loc, opt DeleteOptions) (DeleteResult, error) {
	after, err := s.settle(at.Vol) // no replay may bring it back (gcommit.go)
	if err != nil {
		return DeleteResult{}, opErr("delete", err)
	}
	res, err := s.del(ctx, who, at, opt)
	return res, settled(err, after)
}

// settled is err, or when the change succeeded the error of settling
// again after it (gcommit.go): then the change is made but not yet safe
// from a replay, and the client is told.
func settled(err error, after func() error) error {
	if err != nil {
		return err
	}
	if err := after(); err != nil {
		return fmt.Errorf("the change was made, but making it durable failed: %w", err)
	}
	return nil
}

// DeleteMany deletes each location in turn as Delete does, stopping at
// the first error; it returns what was deleted until then.
func (s *Store) DeleteMany(ctx context.Context, who Actor, ats []Loc, opt DeleteOptions) (res DeleteResult, err error) {
	var vols []*Volume
	for _, at := range ats {
		vols = append(vols, at.Vol)
	}
	after, err := s.settle(vols...) // gcommit.go
	if err != nil {
		return DeleteResult{}, opErr("delete", err)
	}
	defer func() { err = settled(err, after) }()
	var total DeleteResult
	for _, at := range ats {
		r, err := s.del(ctx, who, at, opt)
		total.Files += r.Files
		total.Dirs += r.Dirs
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

func (s *Store) del(ctx context.Context, who Actor, at Loc, opt DeleteOptions) (DeleteResult, error) {
	const op = "delete"
	v := at.Vol
	if v == nil {
		return DeleteResult{}, refuse(op, KindForbidden, "no volume is mounted at %s", at.URLPath())
	}
	unpost := false
	if !v.Perms(who.User).Has(PermDelete) {
		if !opt.Unpost || !v.Perms(who.User).Has(PermWrite) {
			// Unpost needs w: refused before anything is looked at, so
			// that the answer tells nothing of what exists.
			return DeleteResult{}, forbid(op, who, v, PermDelete, "delete")
		}
		if err := s.unpostOn(); err != nil {
			return DeleteResult{}, err
		}
		unpost = true
	}
	res, err := s.delIn(ctx, who, v, at.Rel, unpost)
	if unpost && err != nil && !v.Perms(who.User).Has(PermRead) && !errors.Is(err, errOwnUpload) {
		if k := KindOf(err); k == KindNotFound || k == KindInvalid || k == KindConflict || k == KindForbidden {
			// An unposter who may not read learns nothing of what is
			// there that is not their own recent upload: a missing
			// name, a folder, someone else's file get one answer.
			return res, &OpError{Op: op, Kind: KindForbidden, Need: PermDelete, Msg: "you cannot delete this: not uploaded by (You)"}
		}
	}
	return res, err
}

// delIn is del of rel in v, the permission decided (unpost: as its
// uploader).
func (s *Store) delIn(ctx context.Context, who Actor, v *Volume, rel string, unpost bool) (DeleteResult, error) {
	const op = "delete"
	at := Loc{v, rel}
	r, err := cleanRel(strings.Trim(at.Rel, "/"))
	if err != nil {
		return DeleteResult{}, opErr(op, err)
	}
	if r == "." {
		return DeleteResult{}, refuse(op, KindInvalid, "a volume's top folder cannot be deleted")
	}
	if v.obj != nil {
		return s.deleteObject(ctx, who, v, r, unpost) // object.go
	}
	e, err := v.openEnd(splitRel(r))
	if err != nil {
		return DeleteResult{}, opErr(op, err)
	}
	defer e.close()
	st, err := lstatAt(e.dir, e.name)
	if err != nil {
		return DeleteResult{}, opErr(op, err)
	}
	isDir := isDirStat(&st)
	if unpost {
		if isDir {
			return DeleteResult{}, refuse(op, KindInvalid, "cannot unpost folders")
		}
		if err := s.checkUnpost(who, v, e.rel, &st); err != nil {
			return DeleteResult{}, err
		}
	}
	now := s.now()
	if !isDir {
		if err := unlinkAt(e.dir, e.name, false); err != nil {
			return DeleteResult{}, opErr(op, err)
		}
		serr := v.syncDir(dotIfEmpty(e.dirRel))
		s.lifeRemoved(v, e.rel, false)
		s.emit(Event{Kind: Removed, Vol: v, Rel: e.rel, Size: st.Size, At: now, Uploader: who.User, ClientIP: who.IP})
		s.log.Info("deleted", "volume", "/"+v.VPath, "path", e.rel, "user", who.User, "ip", who.IP, "unpost", unpost)
		return DeleteResult{Files: 1}, serr
	}
	if s.mountsInside(v, e.rel) {
		return DeleteResult{}, refuse(op, KindConflict, "other volumes are mounted inside this folder")
	}
	if err := s.treeFree(op, v, e.rel); err != nil {
		return DeleteResult{}, err
	}
	var ts treeStats
	err = removeTree(ctx, e.dir, e.name, &ts)
	if errors.Is(err, errCrash) {
		return DeleteResult{}, err
	}
	if serr := v.syncDir(dotIfEmpty(e.dirRel)); err == nil {
		err = serr
	}
	if ts.Files > 0 || ts.Dirs > 0 || err == nil {
		s.lifeRemoved(v, e.rel, true)
		s.emit(Event{Kind: Removed, Tree: true, Vol: v, Rel: e.rel, At: now, Uploader: who.User, ClientIP: who.IP})
	}
	s.log.Info("deleted a folder", "volume", "/"+v.VPath, "path", e.rel, "files", ts.Files, "folders", ts.Dirs, "user", who.User, "ip", who.IP, "err", err)
	return DeleteResult{Files: ts.Files, Dirs: ts.Dirs}, opErr(op, err)
}

func dotIfEmpty(rel string) string {
	if rel == "" {
		return "."
	}
	return rel
}

// Mkdir makes the folder at. It needs the w permission. The folder's
// parent must exist unless opt.Parents is set.
func (s *Store) Mkdir(ctx context.Context, who Actor, at Loc, opt MkdirOptions) (string, error) {
	const op = "mkdir"
	v := at.Vol
	if v == nil {
		return "", refuse(op, KindForbidden, "no volume is mounted at %s", at.URLPath())
	}
	if !v.Perms(who.User).Has(PermWrite) {
		return "", forbid(op, who, v, PermWrite, "make folders")
	}
	if v.obj != nil {
		return s.mkdirObject(ctx, who, v, at.Rel, opt) // object.go
	}
	dir, name, top, err := v.splitDest(at.Rel)
	if err != nil {
		return "", opErr(op, err)
	}
	if top {
		return "", refuse(op, KindExists, "that folder exists already")
	}
	if v.Flags().NoSub {
		return "", opErr(op, ErrNoSub)
	}
	de, err := v.openDest(op, dir, name, opt.Parents, "")
	if err != nil {
		return "", err
	}
	defer de.close()
	if err := mkdirAt(de.dir, name, 0o755); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return "", &OpError{Op: op, Kind: KindExists, Msg: "that folder exists already", Err: err}
		}
		return "", opErr(op, v.writeErr(err, 0))
	}
	if err := v.syncDir(dotIfEmpty(de.dirRel)); err != nil {
		return "", err
	}
	s.emit(Event{Kind: MadeDir, Vol: v, Rel: de.rel, At: s.now(), Uploader: who.User, ClientIP: who.IP})
	s.log.Info("made a folder", "volume", "/"+v.VPath, "path", de.rel, "user", who.User, "ip", who.IP)
	return de.rel, nil
}

// Move moves or renames the file or folder src to dst, which must not
// exist unless opt.Overwrite is set and the user holds d there. It needs
// m at the source and w at the destination. On one file system the move
// is one atomic rename (renameat2 with RENAME_NOREPLACE, so a name taken
// meanwhile is never clobbered). Across file systems it is copy → fsync →
// publish → folder fsync → delete the source, recorded in a journal in the
// destination volume's state folder: a crash leaves the source whole or
// the destination whole (then the next start finishes deleting the
// source), never neither, and a half-copied destination is removed at the
// next start. Refused: a volume's top folder, the state folder, a folder
// into itself, a folder holding other volumes, source and destination the
// same.
func (s *Store) Move(ctx context.Context, who Actor, src, dst Loc, opt DestOptions) (DestResult, error) {
	after, err := s.settle(src.Vol, dst.Vol) // gcommit.go
	if err != nil {
		return DestResult{}, opErr("move", err)
	}
	res, err := s.transfer(ctx, "move", who, src, dst, opt)
	return res, settled(err, after)
}

// Copy copies the file or folder src to dst (a whole tree, in constant
// memory), cloning file blocks where the file system can (FICLONE) and
// streaming them otherwise; mtimes are kept. It needs r at the source and
// w at the destination (and d to overwrite). A copied tree is assembled
// under a hidden name and published whole by one rename, so it appears
// complete or not at all; a crash leaves no half tree behind after the
// next start. Work files of uploads in progress are not copied.
func (s *Store) Copy(ctx context.Context, who Actor, src, dst Loc, opt DestOptions) (res DestResult, err error) {
	after, err := s.settle(dst.Vol) // it may replace files (gcommit.go)
	if err != nil {
		return DestResult{}, opErr("copy", err)
	}
	defer func() { err = settled(err, after) }()
	if opt.Shallow {
		if res, done, err := s.shallowCopy(ctx, who, src, dst, opt); done {
			return res, err
		}
	}
	return s.transfer(ctx, "copy", who, src, dst, opt)
}

// shallowCopy is Copy of a folder with opt.Shallow: an empty folder at dst.
// done is false when src is no folder (the caller copies it whole).
func (s *Store) shallowCopy(ctx context.Context, who Actor, src, dst Loc, opt DestOptions) (res DestResult, done bool, err error) {
	const op = "copy"
	if src.Vol == nil {
		return DestResult{}, true, refuse(op, KindForbidden, "no volume is mounted at %s", src.URLPath())
	}
	if fi, err := src.Vol.Stat(src.Rel); err != nil || !fi.IsDir() {
		return DestResult{}, false, nil
	}
	if !src.Vol.Perms(who.User).Has(PermRead) {
		return DestResult{}, true, forbid(op, who, src.Vol, PermRead, "read files")
	}
	res = DestResult{Dir: true}
	if dst.Vol != nil {
		if !dst.Vol.Perms(who.User).Has(PermWrite) {
			// Before anything there is looked at: whoever may not write
			// learns nothing of what exists there.
			return DestResult{}, true, forbid(op, who, dst.Vol, PermWrite, "write files")
		}
		if dfi, err := dst.Vol.Stat(dst.Rel); err == nil {
			if !opt.Overwrite {
				return res, true, refuse(op, KindExists, "the destination exists")
			}
			if !dst.Vol.Perms(who.User).Has(PermDelete) {
				return res, true, forbid(op, who, dst.Vol, PermDelete, "replace files")
			}
			if dfi.IsDir() {
				return DestResult{Dir: true, Replaced: true}, true, nil // the folder is there; no members are copied
			}
			if _, err := s.Delete(ctx, who, dst, DeleteOptions{}); err != nil {
				return res, true, err
			}
			res.Replaced = true
		}
	}
	_, err = s.Mkdir(ctx, who, dst, MkdirOptions{Parents: opt.Parents})
	return res, true, err
}

func (s *Store) transfer(ctx context.Context, op string, who Actor, src, dst Loc, opt DestOptions) (DestResult, error) {
	move := op == "move"
	sv, dv := src.Vol, dst.Vol
	switch {
	case sv == nil:
		return DestResult{}, refuse(op, KindForbidden, "no volume is mounted at %s", src.URLPath())
	case dv == nil:
		return DestResult{}, refuse(op, KindForbidden, "no volume is mounted at %s", dst.URLPath())
	}
	if move && !sv.Perms(who.User).Has(PermMove) {
		return DestResult{}, forbid(op, who, sv, PermMove, "move files")
	}
	if !move && !sv.Perms(who.User).Has(PermRead) {
		return DestResult{}, forbid(op, who, sv, PermRead, "read files")
	}
	if !dv.Perms(who.User).Has(PermWrite) {
		return DestResult{}, forbid(op, who, dv, PermWrite, "write files")
	}
	if sv.obj != nil || dv.obj != nil { // after the permissions, as on disk
		return s.transferObject(ctx, op, who, src, dst, opt) // objmanage.go
	}
	sr, err := cleanRel(strings.Trim(src.Rel, "/"))
	if err != nil {
		return DestResult{}, opErr(op, err)
	}
	if sr == "." {
		return DestResult{}, refuse(op, KindInvalid, "a volume's top folder cannot be %s", map[bool]string{true: "moved", false: "copied"}[move])
	}
	ddir, dname, dtop, err := dv.splitDest(dst.Rel)
	if err != nil {
		return DestResult{}, opErr(op, err)
	}
	if dtop {
		if opt.Overwrite {
			return DestResult{}, refuse(op, KindInvalid, "a volume's top folder cannot be replaced")
		}
		return DestResult{}, refuse(op, KindExists, "the destination exists (it is a volume's top folder)")
	}
	se, err := sv.openEnd(splitRel(sr))
	if err != nil {
		return DestResult{}, opErr(op, err)
	}
	defer se.close()
	sst, err := lstatAt(se.dir, se.name)
	if err != nil {
		return DestResult{}, opErr(op, err)
	}
	isDir := isDirStat(&sst)
	if !isDir && !isRegStat(&sst) && !isLinkStat(&sst) {
		return DestResult{}, refuse(op, KindInvalid, "only files, folders and links can be %s", map[bool]string{true: "moved", false: "copied"}[move])
	}
	if isDir && dv.Flags().NoSub {
		return DestResult{}, opErr(op, ErrNoSub)
	}
	if isDir {
		// A move would pull another volume's files out from under it; a
		// copy would put them (or a folder a mount hides, whose files
		// have no URL) where that volume's permissions no longer guard
		// them.
		if s.mountsInside(sv, se.rel) {
			return DestResult{}, refuse(op, KindConflict, "other volumes are mounted inside this folder")
		}
		if err := s.treeFree(op, sv, se.rel); err != nil {
			return DestResult{}, err
		}
	}
	top := "" // the volume's real folder, read once for both ends in one volume
	if dv == sv {
		top = se.top
	}
	de, err := dv.openDest(op, ddir, dname, opt.Parents, top)
	if err != nil {
		return DestResult{}, err
	}
	defer de.close()
	sp, dp := se.physical(), de.physical()
	if sp == dp {
		return DestResult{}, refuse(op, KindInvalid, "the source and the destination are the same")
	}
	if isDir && within(dp, sp) {
		return DestResult{}, refuse(op, KindInvalid, "a folder cannot be %s into itself", map[bool]string{true: "moved", false: "copied"}[move])
	}
	res := DestResult{Rel: de.rel, Dir: isDir}
	now := s.now()
	// A destination that exists is replaced only when asked, with d.
	replaceFile := false
	var clear *unix.Stat_t // an existing destination to delete before publishing
	if dst, err := lstatAt(de.dir, dname); err == nil {
		if !opt.Overwrite {
			return DestResult{}, refuse(op, KindExists, "the destination exists")
		}
		if !dv.Perms(who.User).Has(PermDelete) {
			return DestResult{}, forbid(op, who, dv, PermDelete, "replace files")
		}
		if within(sp, dp) {
			return DestResult{}, refuse(op, KindInvalid, "the destination holds the source, so it cannot be replaced by it")
		}
		res.Replaced = true
		if !isDir && !isDirStat(&dst) {
			replaceFile = true // one atomic rename replaces it
		} else {
			clear = &dst
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return DestResult{}, opErr(op, err)
	}
	if move {
		var err error = syscall.EXDEV // tests: as if across file systems
		if !testNoRename && (clear == nil || sameDevice(se.dir, de.dir)) {
			if clear != nil {
				if err := s.removeDest(ctx, op, who, de, clear); err != nil {
					return DestResult{}, err
				}
				clear = nil
			}
			err = renameAt(se.dir, se.name, de.dir, dname, replaceFile)
		}
		if err == nil {
			serr := dv.syncDir(dotIfEmpty(de.dirRel))
			if se.dirRel != de.dirRel || sv != dv {
				if e2 := sv.syncDir(dotIfEmpty(se.dirRel)); serr == nil {
					serr = e2
				}
			}
			if replaceFile {
				s.lifeRemoved(dv, de.rel, false)
				s.emit(Event{Kind: Removed, Vol: dv, Rel: de.rel, At: now, Uploader: who.User, ClientIP: who.IP})
			}
			s.lifeMoved(sv, se.rel, dv, de.rel, isDir)
			s.emit(Event{Kind: Moved, Tree: isDir, FromVol: sv, From: se.rel, Vol: dv, Rel: de.rel, Size: sst.Size, At: now, Uploader: who.User, ClientIP: who.IP})
			s.log.Info("moved", "from", Loc{sv, se.rel}.URLPath(), "to", Loc{dv, de.rel}.URLPath(), "user", who.User, "ip", who.IP)
			return res, serr
		}
		if !errors.Is(err, syscall.EXDEV) {
			return DestResult{}, opErr(op, err)
		}
	}
	return s.copyOver(ctx, op, who, se, &sst, de, replaceFile, clear, res)
}

// sameDevice reports whether two open folders are on one file system.
func sameDevice(a, b *os.File) bool {
	var sa, sb unix.Stat_t
	return unix.Fstat(fdOf(a), &sa) == nil && unix.Fstat(fdOf(b), &sb) == nil && sa.Dev == sb.Dev
}

// testNoRename (tests) makes Move take the cross-device path.
var testNoRename bool

// removeDest deletes an existing destination that is about to be replaced
// by something a rename cannot swap in atomically.
func (s *Store) removeDest(ctx context.Context, op string, who Actor, de *end, st *unix.Stat_t) error {
	v := de.v
	if !isDirStat(st) {
		if err := unlinkAt(de.dir, de.name, false); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return opErr(op, err)
		}
		s.lifeRemoved(v, de.rel, false)
		s.emit(Event{Kind: Removed, Vol: v, Rel: de.rel, At: s.now(), Uploader: who.User, ClientIP: who.IP})
		return nil
	}
	if s.mountsInside(v, de.rel) {
		return refuse(op, KindConflict, "other volumes are mounted inside the destination")
	}
	if err := s.treeFree(op, v, de.rel); err != nil {
		return err
	}
	var ts treeStats
	err := removeTree(ctx, de.dir, de.name, &ts)
	if errors.Is(err, errCrash) {
		return err
	}
	s.lifeRemoved(v, de.rel, true)
	s.emit(Event{Kind: Removed, Tree: true, Vol: v, Rel: de.rel, At: s.now(), Uploader: who.User, ClientIP: who.IP})
	return opErr(op, err)
}

// copyOver copies se to de through a hidden work name and publishes it;
// for a move it then deletes the source (a cross-device move).
// An existing destination that a rename cannot replace atomically (clear)
// is deleted once the copy is staged, just before it is published.
func (s *Store) copyOver(ctx context.Context, op string, who Actor, se *end, sst *unix.Stat_t, de *end, replace bool, clear *unix.Stat_t, res DestResult) (_ DestResult, err error) {
	move := op == "move"
	sv, dv := se.v, de.v
	isDir := isDirStat(sst)
	stage := stageName()
	if dv.hist == "" {
		return DestResult{}, refuse(op, KindConflict, "the destination volume has no state folder, which a copy or a move to another file system needs")
	}
	jr := &opRecord{Op: op, SrcVol: sv.Src, Src: se.rel, DstVol: dv.Src, DstDir: de.dirRel, Stage: stage, Name: de.name, Tree: isDir, Phase: phaseStaging}
	if err := jr.save(dv); err != nil {
		return DestResult{}, err
	}
	if err := hook("journal"); err != nil {
		return DestResult{}, err
	}
	published := false
	defer func() {
		if published || errors.Is(err, errCrash) {
			return
		}
		// Failed before publishing: the source is untouched; take the
		// half-made copy away again.
		var ts treeStats
		if isDir {
			removeTree(context.WithoutCancel(ctx), de.dir, stage, &ts)
		} else {
			unlinkAt(de.dir, stage, false)
		}
		jr.drop()
	}()
	var ts treeStats
	start := time.Now()
	switch {
	case isDir:
		if err := mkdirAt(de.dir, stage, uint32(sst.Mode&0o777|0o700)); err != nil {
			return DestResult{}, opErr(op, dv.writeErr(err, 0))
		}
		sd, err := openDirAt(se.dir, se.name)
		if err != nil {
			return DestResult{}, opErr(op, err)
		}
		defer sd.Close()
		dd, err := openDirAt(de.dir, stage)
		if err != nil {
			return DestResult{}, opErr(op, err)
		}
		defer dd.Close()
		if err := copyProps(dd, sd); err != nil { // davprops.go
			return DestResult{}, opErr(op, dv.writeErr(err, 0))
		}
		if err := dv.copyTree(ctx, sd, dd, &ts, move); err != nil {
			if errors.Is(err, errVanished) {
				return DestResult{}, &OpError{Op: op, Kind: KindConflict, Msg: "the folder changed while it was being moved; nothing was moved, try again", Err: err}
			}
			return DestResult{}, opErr(op, err)
		}
		// One flush of the destination's file system makes every copied
		// file and folder durable before the tree is published.
		if err := syncFS(dd); err != nil {
			return DestResult{}, dv.writeErr(err, 0)
		}
	case isLinkStat(sst):
		target, err := readlinkAt(se.dir, se.name)
		if err == nil {
			err = symlinkAt(target, de.dir, stage)
		}
		if err != nil {
			return DestResult{}, opErr(op, dv.writeErr(err, 0))
		}
		ts.Files = 1
	default:
		n, err := dv.copyFileAt(ctx, se.dir, se.name, de.dir, stage, true)
		if err != nil {
			return DestResult{}, opErr(op, err)
		}
		ts.Files, ts.Bytes = 1, n
	}
	if err := hook("staged"); err != nil {
		return DestResult{}, err
	}
	if clear != nil {
		if err := s.removeDest(ctx, op, who, de, clear); err != nil {
			return DestResult{}, err
		}
	}
	if err := renameAt(de.dir, stage, de.dir, de.name, replace); err != nil {
		return DestResult{}, opErr(op, err)
	}
	published = true
	if err := dv.syncDir(dotIfEmpty(de.dirRel)); err != nil {
		return DestResult{}, err
	}
	if err := hook("published"); err != nil {
		return DestResult{}, err
	}
	now := s.now()
	res.Files, res.Bytes = ts.Files, ts.Bytes
	if replace {
		s.lifeRemoved(dv, de.rel, false)
		s.emit(Event{Kind: Removed, Vol: dv, Rel: de.rel, At: now, Uploader: who.User, ClientIP: who.IP})
	}
	if !move {
		jr.drop()
		s.emit(Event{Kind: Copied, Tree: isDir, FromVol: sv, From: se.rel, Vol: dv, Rel: de.rel, Size: ts.Bytes, At: now, Uploader: who.User, ClientIP: who.IP})
		s.log.Info("copied", "from", Loc{sv, se.rel}.URLPath(), "to", Loc{dv, de.rel}.URLPath(), "files", ts.Files, "bytes", ts.Bytes, "took", time.Since(start).Round(time.Millisecond), "user", who.User, "ip", who.IP)
		return res, nil
	}
	// The destination is whole and durable: from here a crash finishes
	// the move at the next start (the journal says so).
	jr.Phase = phasePublished
	if err := jr.save(dv); err != nil {
		return res, err
	}
	if err := hook("marked"); err != nil {
		return res, err
	}
	if cur, err := lstatAt(se.dir, se.name); err != nil || cur.Ino != sst.Ino || cur.Dev != sst.Dev {
		// Renamed or replaced meanwhile (by another move): what was
		// copied stays at both places rather than deleting something else.
		jr.drop()
		s.emit(Event{Kind: Copied, Tree: isDir, FromVol: sv, From: se.rel, Vol: dv, Rel: de.rel, Size: ts.Bytes, At: now, Uploader: who.User, ClientIP: who.IP})
		return res, refuse(op, KindConflict, "the source was moved or replaced meanwhile; it was copied, not moved")
	}
	s.lifeMoved(sv, se.rel, dv, de.rel, isDir)
	s.emit(Event{Kind: Moved, Tree: isDir, FromVol: sv, From: se.rel, Vol: dv, Rel: de.rel, Size: ts.Bytes, At: now, Uploader: who.User, ClientIP: who.IP})
	kept, err := removeMoved(ctx, se.dir, se.name, de.dir, de.name)
	if errors.Is(err, errCrash) {
		return res, err
	}
	if serr := sv.syncDir(dotIfEmpty(se.dirRel)); err == nil {
		err = serr
	}
	if err == nil {
		err = hook("source-gone")
		if errors.Is(err, errCrash) {
			return res, err
		}
	}
	if err == nil {
		jr.drop()
	}
	s.log.Info("moved across file systems", "from", Loc{sv, se.rel}.URLPath(), "to", Loc{dv, de.rel}.URLPath(), "files", ts.Files, "bytes", ts.Bytes, "kept", kept, "took", time.Since(start).Round(time.Millisecond), "user", who.User, "ip", who.IP, "err", err)
	if err != nil {
		return res, &OpError{Op: op, Kind: KindConflict, Msg: "the destination is complete, but the source could not be deleted entirely", Err: err}
	}
	if kept > 0 {
		return res, refuse(op, KindConflict, "the destination is complete, but %d files at the source changed during the move and were kept", kept)
	}
	return res, nil
}

package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Move and copy between an object-store volume and a volume on disk
// stream the bytes through hoard, as a move across file systems does on
// disk, with the same order: the destination is made whole first, the
// source is deleted after, one file at a time and only while it is still
// what was copied.
//
//   - Object store → disk: the copy is assembled under a hidden work name
//     in the destination folder (journalled as a copy on disk is, so a
//     crash leaves nothing half-made after the next start), fsynced and
//     published by one no-clobber rename; a move then deletes the source
//     objects (dropMoved). A crash after the publish leaves the file at
//     both places, never at neither.
//   - Disk → object store: each file is streamed into its object,
//     no-clobber, then a move deletes the source files one by one while
//     each is still the file copied (same inode, size and mtime), and
//     then the folders it emptied. During the copies a failure leaves the
//     source whole and part of the destination (delete it and ask
//     again). Symbolic links have no object form: a copy takes a link's
//     file as a download would, a move leaves links where they are (and
//     says it kept them); links to folders are not followed.

// transferMixed is Move and Copy between an object-store volume and a
// volume on disk; the caller checked permissions and the destination's
// name.
func (s *Store) transferMixed(ctx context.Context, op string, who Actor, sv *Volume, sr string, dv *Volume, ddir, dname string, opt DestOptions) (DestResult, error) {
	if sv.obj != nil {
		return s.objectToDisk(ctx, op, who, sv, sr, dv, ddir, dname, opt)
	}
	return s.diskToObject(ctx, op, who, sv, sr, dv, ddir, dname, opt)
}

// objectToDisk moves or copies the file or folder sr of the object-store
// volume sv to dname in ddir of the volume on disk dv.
func (s *Store) objectToDisk(ctx context.Context, op string, who Actor, sv *Volume, sr string, dv *Volume, ddir, dname string, opt DestOptions) (res DestResult, err error) {
	move := op == "move"
	sfi, err := s.objSource(ctx, op, sv, sr, dv)
	if err != nil {
		return DestResult{}, err
	}
	isDir := sfi.IsDir()
	de, err := dv.openDest(op, ddir, dname, opt.Parents, "")
	if err != nil {
		return DestResult{}, err
	}
	defer de.close()
	res = DestResult{Rel: de.rel, Dir: isDir}
	replace := false
	var clear *unix.Stat_t
	if st, err := lstatAt(de.dir, dname); err == nil {
		if !opt.Overwrite {
			return DestResult{}, refuse(op, KindExists, "the destination exists")
		}
		if !dv.Perms(who.User).Has(PermDelete) {
			return DestResult{}, forbid(op, who, dv, PermDelete, "replace files")
		}
		res.Replaced = true
		if !isDir && !isDirStat(&st) {
			replace = true
		} else {
			clear = &st
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return DestResult{}, opErr(op, err)
	}
	if dv.hist == "" {
		return DestResult{}, refuse(op, KindConflict, "the destination volume has no state folder, which a copy or a move from object storage needs")
	}
	stage := stageName()
	// Journalled as a copy whatever op is: the source is in the bucket,
	// and a start-up must never delete anything on disk in its name.
	jr := &opRecord{Op: "copy", SrcVol: sv.Src, Src: sr, DstVol: dv.Src, DstDir: de.dirRel, Stage: stage, Name: dname, Tree: isDir, Phase: phaseStaging}
	if err := jr.save(dv); err != nil {
		return DestResult{}, err
	}
	published := false
	defer func() {
		if published {
			return
		}
		var ts treeStats
		if isDir {
			removeTree(context.WithoutCancel(ctx), de.dir, stage, &ts)
		} else {
			unlinkAt(de.dir, stage, false)
		}
		jr.drop()
	}()
	start := time.Now()
	var moved []movedKey
	if isDir {
		moved, err = dv.objTreeToDisk(ctx, sv, sr, de.dir, stage, &res)
	} else {
		oi := sfi.(objectFileInfo).oi
		err = dv.objToFile(ctx, sv, oi, de.dir, stage)
		res.Files, res.Bytes = 1, oi.Size
		moved = []movedKey{{oi.Key, oi.ETag}}
	}
	if err != nil {
		return DestResult{}, opErr(op, err)
	}
	if clear != nil {
		if err := s.removeDest(ctx, op, who, de, clear); err != nil {
			return DestResult{}, err
		}
	}
	if err := renameAt(de.dir, stage, de.dir, dname, replace); err != nil {
		return DestResult{}, opErr(op, err)
	}
	published = true
	jr.drop()
	if err := dv.syncDir(dotIfEmpty(de.dirRel)); err != nil {
		return res, err
	}
	now := s.now()
	if replace {
		s.lifeRemoved(dv, de.rel, false)
		s.emit(Event{Kind: Removed, Vol: dv, Rel: de.rel, At: now, Uploader: who.User, ClientIP: who.IP})
	}
	if move {
		err = s.dropMoved(ctx, op, sv, sr, moved)
	}
	kind := Copied
	if move && err == nil {
		kind = Moved
	}
	s.emit(Event{Kind: kind, Tree: isDir, FromVol: sv, From: sr, Vol: dv, Rel: de.rel, Size: res.Bytes, At: now, Uploader: who.User, ClientIP: who.IP})
	s.log.Info(map[bool]string{true: "moved", false: "copied"}[move], "from", Loc{sv, sr}.URLPath(), "to", Loc{dv, de.rel}.URLPath(), "files", res.Files, "bytes", res.Bytes, "took", time.Since(start).Round(time.Millisecond), "user", who.User, "ip", who.IP, "err", err)
	return res, err
}

// objToFile writes the object oi of sv as the new file name in dir of v
// (which must not exist), with the object's time as its mtime, fsynced.
func (v *Volume) objToFile(ctx context.Context, sv *Volume, oi ObjectInfo, dir *os.File, name string) error {
	if err := v.roomFor(oi.Size); err != nil {
		return err
	}
	rc, err := sv.obj.Open(ctx, oi)
	if err != nil {
		return err
	}
	defer rc.Close()
	f, err := openFileAt(dir, name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return v.writeErr(err, oi.Size)
	}
	defer f.Close()
	for done := int64(0); done < oi.Size; {
		if err := ctx.Err(); err != nil {
			return err
		}
		n, err := io.CopyN(f, rc, min(copyStep, oi.Size-done))
		done += n
		if err != nil {
			if errors.Is(err, io.EOF) {
				return fmt.Errorf("%w: %s ended at %d of %d bytes", ErrNotFound, oi.Key, done, oi.Size)
			}
			return v.writeErr(err, oi.Size-done)
		}
	}
	mt := oi.ModTime
	if s, err := strconv.ParseInt(oi.Meta["hoard-lmod"], 10, 64); err == nil && s > 0 {
		mt = time.Unix(s, 0) // the uploader's time, when it came with the upload
	}
	setMtime(f, mt)
	if err := f.Sync(); err != nil {
		return v.writeErr(err, 0)
	}
	return v.writeErr(f.Close(), 0)
}

// objTreeToDisk writes every object below the folder sr of sv into a new
// folder stage in dir of v, folders made as keys need them, and flushes
// the file system once. Keys whose names a disk volume would not take
// (state folders, work files, bad names) stay behind.
func (v *Volume) objTreeToDisk(ctx context.Context, sv *Volume, sr string, dir *os.File, stage string, res *DestResult) ([]movedKey, error) {
	if err := mkdirAt(dir, stage, 0o755); err != nil {
		return nil, v.writeErr(err, 0)
	}
	top, err := openDirAt(dir, stage)
	if err != nil {
		return nil, err
	}
	defer top.Close()
	sp := sv.key(sr) + "/"
	var moved []movedKey
	var cur *os.File // the folder of the last file, held while keys stay in it
	curRel := ""
	defer func() {
		if cur != nil {
			cur.Close()
		}
	}()
	err = sv.obj.Walk(ctx, sp, func(li ObjectInfo) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		rel := strings.TrimSuffix(strings.TrimPrefix(li.Key, sp), "/")
		if rel != "" {
			if c, err := cleanRel(rel); err != nil || c != rel || strings.HasSuffix(rel, PartialSuffix) {
				return nil
			}
		}
		d, name := path.Dir(rel), path.Base(rel)
		if strings.HasSuffix(li.Key, "/") {
			d, name = rel, ""
		}
		if cur == nil || curRel != d {
			if cur != nil {
				cur.Close()
				cur = nil
			}
			f, err := mkdirsAt(top, d)
			if err != nil {
				return v.writeErr(err, 0)
			}
			cur, curRel = f, d
		}
		if name != "" {
			oi, err := sv.obj.Stat(ctx, li.Key)
			if errors.Is(err, ErrNotFound) {
				return nil // deleted meanwhile
			}
			if err != nil {
				return err
			}
			if err := v.objToFile(ctx, sv, oi, cur, name); err != nil {
				return err
			}
			res.Files++
			res.Bytes += oi.Size
			li = oi
		}
		moved = append(moved, movedKey{li.Key, li.ETag})
		return nil
	})
	if err != nil {
		return nil, err
	}
	return moved, syncFS(top)
}

// mkdirsAt makes the folders of rel ("." or "" for top itself) below the
// open folder top as needed and opens the last.
func mkdirsAt(top *os.File, rel string) (*os.File, error) {
	cur, err := openDirAt(top, ".")
	if err != nil {
		return nil, err
	}
	if rel == "." || rel == "" {
		return cur, nil
	}
	for c := range strings.SplitSeq(rel, "/") {
		if err := mkdirAt(cur, c, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			cur.Close()
			return nil, err
		}
		next, err := openDirAt(cur, c)
		cur.Close()
		if err != nil {
			return nil, err
		}
		cur = next
	}
	return cur, nil
}

// diskFile is a file a move to object storage copied: where it was, and
// what it was, so that only that very file is deleted after.
type diskFile struct {
	rel   string
	ino   uint64
	size  int64
	mtime time.Time
}

// diskToObject moves or copies the file or folder sr of the volume on
// disk sv to dname in ddir of the object-store volume dv.
func (s *Store) diskToObject(ctx context.Context, op string, who Actor, sv *Volume, sr string, dv *Volume, ddir, dname string, opt DestOptions) (DestResult, error) {
	move := op == "move"
	se, err := sv.openEnd(splitRel(sr))
	if err != nil {
		return DestResult{}, opErr(op, err)
	}
	lst, err := lstatAt(se.dir, se.name)
	se.close()
	if err != nil {
		return DestResult{}, opErr(op, err)
	}
	if isLinkStat(&lst) && move {
		// Moving a link moves the link, which no object can be; taking
		// its target instead would delete what the link points at.
		return DestResult{}, refuse(op, KindInvalid, "a symbolic link cannot be moved to object storage")
	}
	sfi, err := sv.Stat(sr)
	if err != nil {
		return DestResult{}, opErr(op, err)
	}
	isDir := sfi.IsDir()
	if !isDir && !sfi.Mode().IsRegular() {
		return DestResult{}, refuse(op, KindInvalid, "only files and folders can be %s to object storage", map[bool]string{true: "moved", false: "copied"}[move])
	}
	if isDir && dv.Flags().NoSub {
		return DestResult{}, opErr(op, ErrNoSub)
	}
	if isDir { // a copy too: see transfer
		if s.mountsInside(sv, sr) {
			return DestResult{}, refuse(op, KindConflict, "other volumes are mounted inside this folder")
		}
		if err := s.treeFree(op, sv, sr); err != nil {
			return DestResult{}, err
		}
	}
	drel := joinRel(ddir, dname)
	if err := dv.objNameOK(drel, isDir); err != nil {
		return DestResult{}, opErr(op, err)
	}
	if err := dv.objDestFolder(ctx, op, ddir, opt.Parents); err != nil {
		return DestResult{}, err
	}
	res := DestResult{Rel: drel, Dir: isDir}
	var replace bool
	res.Replaced, replace, err = s.objClearDest(ctx, op, who, dv, drel, isDir, opt.Overwrite, nil)
	if err != nil {
		return DestResult{}, err
	}
	start := time.Now()
	var copied []diskFile
	kept := 0
	if isDir {
		err = dv.diskTreeToObjects(ctx, sv, sr, drel, move, &res, &copied, &kept)
	} else {
		var df diskFile
		df, err = dv.diskFileToObject(ctx, sv, sr, drel, replace)
		if err == nil {
			res.Files, res.Bytes = 1, df.size
			copied = append(copied, df)
		}
	}
	if err != nil {
		if errors.Is(err, ErrExists) {
			err = &OpError{Op: op, Kind: KindExists, Msg: "the destination was taken meanwhile", Err: err}
		} else if res.Files > 0 {
			err = &OpError{Op: op, Kind: KindConflict, Msg: fmt.Sprintf("the folder was copied only in part (%d files); the source is whole, the part at the destination can be deleted and the %s asked again", res.Files, op), Err: err}
		}
		s.objTransferred(who, sv, sr, dv, drel, isDir, false, false, res, err)
		return res, opErr(op, err)
	}
	if move {
		err = s.dropDiskMoved(ctx, op, sv, sr, isDir, copied, kept)
	}
	s.objTransferred(who, sv, sr, dv, drel, isDir, move, replace, res, err)
	s.log.Info(map[bool]string{true: "moved", false: "copied"}[move], "from", Loc{sv, sr}.URLPath(), "to", Loc{dv, drel}.URLPath(), "files", res.Files, "bytes", res.Bytes, "took", time.Since(start).Round(time.Millisecond), "user", who.User, "ip", who.IP, "err", err)
	return res, err
}

// diskFileToObject streams the regular file rel of the volume on disk sv
// (a link inside the volume is followed, as a download follows it) into
// the object drel of v.
func (v *Volume) diskFileToObject(ctx context.Context, sv *Volume, rel, drel string, replace bool) (diskFile, error) {
	f, fi, err := sv.Open(rel)
	if err != nil {
		return diskFile{}, err
	}
	defer f.Close()
	if err := v.CheckSize(fi.Size()); err != nil {
		return diskFile{}, err
	}
	if err := v.objNameOK(drel, false); err != nil {
		return diskFile{}, err
	}
	_, ino, _ := FileID(fi)
	df := diskFile{rel: rel, ino: ino, size: fi.Size(), mtime: fi.ModTime()}
	put := ObjectPut{NoClobber: !replace, Meta: map[string]string{"hoard-lmod": strconv.FormatInt(fi.ModTime().Unix(), 10)}}
	if fi.Size() > 0 && fi.Size() <= 64<<20 {
		put.Size = fi.Size() // one PUT; larger ones stream in parts
	}
	r := io.Reader(&io.LimitedReader{R: f, N: fi.Size()})
	if fi.Size() == 0 {
		r = strings.NewReader("")
	}
	if _, err := v.obj.Put(ctx, v.key(drel), r, put); err != nil {
		return diskFile{}, err
	}
	return df, nil
}

// diskTreeToObjects copies the folder sr of sv, and everything below it,
// to the folder drel of v, folder by folder (a marker object for each, so
// empty ones stay). A move does not take links (they have no object
// form); kept counts them.
func (v *Volume) diskTreeToObjects(ctx context.Context, sv *Volume, sr, drel string, move bool, res *DestResult, copied *[]diskFile, kept *int) error {
	if err := v.objNameOK(drel, true); err != nil {
		return err
	}
	if _, err := v.obj.Put(ctx, v.key(drel)+"/", strings.NewReader(""), ObjectPut{NoClobber: true}); err != nil && !errors.Is(err, ErrExists) {
		return err
	}
	ents, err := sv.List(ctx, sr, ListOptions{Dots: true})
	if err != nil {
		return err
	}
	for _, e := range ents {
		if err := ctx.Err(); err != nil {
			return err
		}
		src, dst := path.Join(sr, e.Name), path.Join(drel, e.Name)
		switch {
		case e.Link && (move || e.Dir):
			*kept++ // no object form; a folder link is never followed
		case e.Dir:
			if err := v.diskTreeToObjects(ctx, sv, src, dst, move, res, copied, kept); err != nil {
				return err
			}
		case e.Mode.IsRegular():
			df, err := v.diskFileToObject(ctx, sv, src, dst, false)
			if errors.Is(err, ErrNotFound) {
				continue // gone since the listing
			}
			if err != nil {
				return err
			}
			res.Files++
			res.Bytes += df.size
			if move {
				*copied = append(*copied, df)
			}
		}
	}
	return nil
}

// dropDiskMoved deletes the files a move to object storage copied, each
// only while it is still the file copied, then (a folder) the folders it
// emptied, deepest first; what changed or could not go stays, and the
// move says so.
func (s *Store) dropDiskMoved(ctx context.Context, op string, sv *Volume, sr string, isDir bool, files []diskFile, kept int) error {
	var firstErr error
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			firstErr = err
			break
		}
		e, err := sv.openEnd(splitRel(f.rel))
		if err != nil {
			kept++
			continue
		}
		st, err := lstatAt(e.dir, e.name)
		mt := time.Unix(int64(st.Mtim.Sec), int64(st.Mtim.Nsec))
		if err != nil || !isRegStat(&st) || st.Ino != f.ino || st.Size != f.size || !mt.Equal(f.mtime) {
			kept++
			e.close()
			continue
		}
		if err := unlinkAt(e.dir, e.name, false); err != nil && !errors.Is(err, fs.ErrNotExist) {
			kept++
			if firstErr == nil {
				firstErr = err
			}
		}
		sv.syncDir(dotIfEmpty(e.dirRel))
		s.lifeRemoved(sv, e.rel, false)
		e.close()
	}
	if isDir && firstErr == nil {
		kept += sv.removeEmptyDirs(ctx, sr)
	}
	if firstErr != nil {
		return &OpError{Op: op, Kind: KindConflict, Msg: "the destination is complete, but the source could not be deleted entirely", Err: firstErr}
	}
	if kept > 0 {
		return refuse(op, KindConflict, "the destination is complete, but %d entries at the source changed during the move, or have no form in object storage (links), and were kept", kept)
	}
	return nil
}

// removeEmptyDirs removes the folder rel of v and every folder below it
// that is empty, deepest first; it returns how many could not go (not
// empty: something was kept or added).
func (v *Volume) removeEmptyDirs(ctx context.Context, rel string) int {
	ents, err := v.List(ctx, rel, ListOptions{Dots: true})
	if err != nil {
		return 1
	}
	left := 0
	for _, e := range ents {
		if e.Dir && !e.Link {
			left += v.removeEmptyDirs(ctx, path.Join(rel, e.Name))
		}
	}
	e, err := v.openEnd(splitRel(rel))
	if err != nil {
		return left + 1
	}
	defer e.close()
	if err := unlinkAt(e.dir, e.name, true); err != nil {
		if errors.Is(err, syscall.ENOTEMPTY) || errors.Is(err, syscall.EEXIST) {
			return left
		}
		return left + 1
	}
	v.syncDir(dotIfEmpty(e.dirRel))
	return left
}

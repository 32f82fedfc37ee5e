package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"time"
)

// Move and copy on object-store volumes (docs/s3.md, "Move and copy").
// The rules and statuses are those of manage.go; what differs is how the
// bytes travel: between two object-store volumes by server-side copies
// (ObjectStore.Copy: no byte passes through hoard, object metadata
// travels with the copy), a folder key by key.
//
// A folder is copied whole before anything of it is deleted (a move
// deletes its source keys only once every one of them is at the
// destination, and each only while it is still the version copied), so a
// failure or a crash half-way loses nothing:
//   - during the copies: the source is whole; the destination holds part
//     of it (S3 has no rename to publish a tree at once). Deleting that
//     part and asking again finishes the job.
//   - during the deletes: the destination is whole; the source keeps the
//     keys not deleted yet. Moving again (with overwrite) or deleting the
//     rest finishes the job.
// The keys copied and their ETags are held in memory until the deletes
// (about 100 bytes a file), so that a key uploaded or replaced at the
// source meanwhile is never deleted unseen.

// sameBucket reports whether two object-store volumes keep their objects
// in one bucket (so their keys can overlap).
func sameBucket(a, b *Volume) bool {
	ba, _, _ := strings.Cut(a.Flags().S3, "/")
	bb, _, _ := strings.Cut(b.Flags().S3, "/")
	return ba == bb
}

// objTreeFree is treeFree for the folder r (cleaned) of the object-store
// volume v: it refuses a folder whose keys hold those of another volume
// (one on a nested prefix of the same bucket), which deleting, moving or
// replacing the folder would pull out from under that volume, as a
// volume's folder inside a folder on disk is.
func (s *Store) objTreeFree(op string, v *Volume, r string) error {
	if w := s.objVolumesBelow(v, v.key(r)+"/"); len(w) > 0 {
		return refuse(op, KindConflict, "another volume's folder (/%s) lies inside it", w[0].VPath)
	}
	return nil
}

// objVolumesBelow returns the mounted object-store volumes other than v
// whose key prefix lies at or below prefix in v's bucket.
func (s *Store) objVolumesBelow(v *Volume, prefix string) []*Volume {
	var out []*Volume
	for _, w := range s.mounted() {
		if w != v && w.obj != nil && w.objPre != "" && sameBucket(w, v) && strings.HasPrefix(w.objPre, prefix) {
			out = append(out, w)
		}
	}
	return out
}

// transferObject is Move and Copy where an end is on an object store;
// the caller checked the permissions at both ends.
func (s *Store) transferObject(ctx context.Context, op string, who Actor, src, dst Loc, opt DestOptions) (DestResult, error) {
	move := op == "move"
	sv, dv := src.Vol, dst.Vol
	verb := map[bool]string{true: "moved", false: "copied"}[move]
	sr, err := cleanRel(strings.Trim(src.Rel, "/"))
	if err != nil {
		return DestResult{}, opErr(op, err)
	}
	if sr == "." {
		return DestResult{}, refuse(op, KindInvalid, "a volume's top folder cannot be %s", verb)
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
	if sv.obj == nil || dv.obj == nil {
		return s.transferMixed(ctx, op, who, sv, sr, dv, ddir, dname, opt) // objmixed.go
	}
	drel := joinRel(ddir, dname)
	sfi, err := s.objSource(ctx, op, sv, sr, dv)
	if err != nil {
		return DestResult{}, err
	}
	isDir := sfi.IsDir()
	if err := dv.objNameOK(drel, isDir); err != nil {
		return DestResult{}, opErr(op, err)
	}
	if err := dv.objDestFolder(ctx, op, ddir, opt.Parents); err != nil {
		return DestResult{}, err
	}
	sk, dk := sv.key(sr), dv.key(drel)
	same := sameBucket(sv, dv)
	if same && sk == dk {
		return DestResult{}, refuse(op, KindInvalid, "the source and the destination are the same")
	}
	if same && isDir && within(dk, sk) {
		return DestResult{}, refuse(op, KindInvalid, "a folder cannot be %s into itself", verb)
	}
	res := DestResult{Rel: drel, Dir: isDir}
	var replaceFile bool
	res.Replaced, replaceFile, err = s.objClearDest(ctx, op, who, dv, drel, isDir, opt.Overwrite, func() error {
		if same && within(sk, dk) {
			return refuse(op, KindInvalid, "the destination holds the source, so it cannot be replaced by it")
		}
		return nil
	})
	if err != nil {
		return DestResult{}, err
	}
	start := time.Now()
	if isDir {
		res, err = s.transferObjectTree(ctx, op, sv, sr, dv, drel, res)
	} else {
		res, err = s.transferObjectFile(ctx, op, sv, sr, sfi.(objectFileInfo).oi, dv, drel, replaceFile, res)
	}
	s.log.Info(verb, "from", Loc{sv, sr}.URLPath(), "to", Loc{dv, drel}.URLPath(), "files", res.Files, "bytes", res.Bytes, "took", time.Since(start).Round(time.Millisecond), "user", who.User, "ip", who.IP, "err", err)
	s.objTransferred(who, sv, sr, dv, drel, isDir, move, replaceFile, res, err)
	return res, err
}

// objClearDest applies a move or copy's rules to what sits at drel of the
// object-store volume dv: nothing there is fine; something there needs
// overwrite, the right to delete and whatever check says (nil: nothing
// more). A file replaced by a file is left for the copy, which replaces it
// in one step (replaceFile); anything else there — a folder, or a file
// where a folder goes — is deleted first, as on disk.
func (s *Store) objClearDest(ctx context.Context, op string, who Actor, dv *Volume, drel string, isDir, overwrite bool, check func() error) (replaced, replaceFile bool, err error) {
	dfi, err := dv.objStat(ctx, drel)
	if errors.Is(err, ErrNotFound) {
		return false, false, nil
	}
	if err != nil {
		return false, false, opErr(op, err)
	}
	if !overwrite {
		return false, false, refuse(op, KindExists, "the destination exists")
	}
	if !dv.Perms(who.User).Has(PermDelete) {
		return false, false, forbid(op, who, dv, PermDelete, "replace files")
	}
	if check != nil {
		if err := check(); err != nil {
			return false, false, err
		}
	}
	if !isDir && !dfi.IsDir() {
		return true, true, nil
	}
	if dfi.IsDir() {
		if _, err := s.deleteObjectTree(ctx, who, dv, drel); err != nil {
			return false, false, err
		}
	} else if err := dv.obj.Delete(ctx, dv.key(drel)); err != nil {
		return false, false, opErr(op, err)
	} else {
		dv.objRemoved(who, drel, false) // objidx.go
	}
	return true, false, nil
}

// objTransferred tells subscribers (the index) what a move or copy on
// object-store volumes did: a move whose source is gone entirely is a
// move; one that stopped with the destination whole or in part is a
// copy of what arrived (the source's leftovers are found by a rescan).
func (s *Store) objTransferred(who Actor, sv *Volume, sr string, dv *Volume, drel string, isDir, move, replaced bool, res DestResult, err error) {
	if res.Files == 0 && !isDir || err != nil && res.Files == 0 {
		return
	}
	now := s.now()
	if replaced {
		s.emit(Event{Kind: Removed, Vol: dv, Rel: drel, At: now, Uploader: who.User, ClientIP: who.IP})
	}
	kind := Copied
	if move && err == nil {
		kind = Moved
	}
	s.emit(Event{Kind: kind, Tree: isDir, FromVol: sv, From: sr, Vol: dv, Rel: drel, Size: res.Bytes, At: now, Uploader: who.User, ClientIP: who.IP})
}

// objDestFolder checks the folder dir (cleaned) of an object-store
// volume that a move, copy or upload puts something in: no file on the
// way (ErrNotDir), and without parents it must exist already (folders
// need no marker: a key below one makes it).
func (v *Volume) objDestFolder(ctx context.Context, op, dir string, parents bool) error {
	if err := v.objParents(ctx, dir); err != nil {
		return opErr(op, err)
	}
	if dir == "." || parents {
		return nil
	}
	ok, err := v.objFolder(ctx, dir)
	if err != nil {
		return opErr(op, err)
	}
	if !ok {
		return &OpError{Op: op, Kind: KindConflict, Msg: "the destination's folder does not exist", Err: ErrNotFound}
	}
	return nil
}

// transferObjectFile copies (and for a move then deletes) one object.
func (s *Store) transferObjectFile(ctx context.Context, op string, sv *Volume, sr string, oi ObjectInfo, dv *Volume, drel string, replace bool, res DestResult) (DestResult, error) {
	err := dv.objWhere(ctx, drel, oi.Meta) // objwhere.go: the content is found at its new place
	if err == nil {
		_, err = dv.obj.Copy(ctx, dv.key(drel), sv.obj, oi, ObjectPut{NoClobber: !replace, Meta: copyMeta(op, oi)})
	}
	switch {
	case errors.Is(err, ErrExists):
		return DestResult{}, &OpError{Op: op, Kind: KindExists, Msg: "the destination was taken meanwhile; nothing was changed", Err: err}
	case errors.Is(err, ErrNotFound):
		return DestResult{}, &OpError{Op: op, Kind: KindConflict, Msg: "the source changed while it was being copied; nothing was changed, try again", Err: err}
	case err != nil:
		return DestResult{}, opErr(op, err)
	}
	res.Files, res.Bytes = 1, oi.Size
	if op != "move" {
		return res, nil
	}
	if err := dv.objLifeMoved(ctx, drel, oi); err != nil { // objlife.go
		return res, &OpError{Op: op, Kind: KindConflict, Msg: "the file was copied, not moved: its lifetime could not be recorded at the destination", Err: err}
	}
	return res, s.dropMoved(ctx, op, sv, sr, []movedKey{{oi.Key, oi.ETag}})
}

// movedKey is a source key a move copied, at the version copied.
type movedKey struct{ key, etag string }

// dropMoved deletes the source keys of a move once their copies are
// whole, each only while it is still the version copied; a key replaced
// meanwhile is kept (it was copied, not moved). A folder the move
// emptied keeps existing as on disk (a marker object).
func (s *Store) dropMoved(ctx context.Context, op string, sv *Volume, sr string, keys []movedKey) error {
	kept := 0
	for _, k := range keys {
		if err := ctx.Err(); err != nil {
			return &OpError{Op: op, Kind: KindConflict, Msg: "the destination is complete, but the source could not be deleted entirely", Err: err}
		}
		cur, err := sv.obj.Stat(ctx, k.key)
		if strings.HasSuffix(k.key, "/") { // a folder marker: no content to lose
			err, cur.ETag = nil, k.etag
		}
		switch {
		case errors.Is(err, ErrNotFound):
			continue
		case err != nil:
			return &OpError{Op: op, Kind: KindConflict, Msg: "the destination is complete, but the source could not be deleted entirely", Err: err}
		case cur.ETag != k.etag:
			kept++
			continue
		}
		if err := sv.obj.Delete(ctx, k.key); err != nil {
			return &OpError{Op: op, Kind: KindConflict, Msg: "the destination is complete, but the source could not be deleted entirely", Err: err}
		}
	}
	if err := sv.keepFolder(ctx, path.Dir(sr)); err != nil {
		s.log.Warn("a folder a move emptied could not be kept", "volume", "/"+sv.VPath, "path", path.Dir(sr), "err", err)
	}
	if kept > 0 {
		return refuse(op, KindConflict, "the destination is complete, but %d files at the source changed during the move and were kept", kept)
	}
	return nil
}

// keepFolder writes the marker of folder d (cleaned) when no key lies
// below it any more, so that a folder a move emptied stays, as on disk.
func (v *Volume) keepFolder(ctx context.Context, d string) error {
	if d == "." {
		return nil
	}
	ok, err := v.objFolder(ctx, d)
	if err != nil || ok {
		return err
	}
	_, err = v.obj.Put(ctx, v.key(d)+"/", strings.NewReader(""), ObjectPut{NoClobber: true})
	if errors.Is(err, ErrExists) {
		return nil
	}
	return err
}

// transferObjectTree copies every key below the folder sr of sv to drel
// of dv, one by one in key order, each no-clobber; a move then deletes
// the source keys (dropMoved). The state area (.hist below, another
// volume's on a nested prefix) is not the folder's and stays.
func (s *Store) transferObjectTree(ctx context.Context, op string, sv *Volume, sr string, dv *Volume, drel string, res DestResult) (DestResult, error) {
	move := op == "move"
	sp, dp := sv.key(sr)+"/", dv.key(drel)+"/"
	var moved []movedKey
	marker := false
	err := sv.obj.Walk(ctx, sp, func(li ObjectInfo) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		rel := strings.TrimPrefix(li.Key, sp)
		if _, err := cleanRel(strings.TrimSuffix(rel, "/")); errors.Is(err, ErrReserved) {
			return nil
		}
		if strings.HasSuffix(li.Key, "/") {
			marker = marker || rel == ""
			if _, err := dv.obj.Put(ctx, dp+rel, strings.NewReader(""), ObjectPut{NoClobber: true}); err != nil && !errors.Is(err, ErrExists) {
				return err
			}
			if move {
				moved = append(moved, movedKey{li.Key, li.ETag})
			}
			return nil
		}
		oi, err := sv.obj.Stat(ctx, li.Key) // its metadata, which travels
		if errors.Is(err, ErrNotFound) {
			return nil // deleted meanwhile
		}
		if err != nil {
			return err
		}
		if err := dv.objWhere(ctx, joinRel(drel, rel), oi.Meta); err != nil { // objwhere.go
			return err
		}
		if _, err := dv.obj.Copy(ctx, dp+rel, sv.obj, oi, ObjectPut{NoClobber: true, Meta: copyMeta(op, oi)}); err != nil {
			if errors.Is(err, ErrExists) {
				return &OpError{Op: op, Kind: KindConflict, Msg: fmt.Sprintf("%s was taken at the destination meanwhile", rel), Err: err}
			}
			return err
		}
		if move {
			if err := dv.objLifeMoved(ctx, joinRel(drel, rel), oi); err != nil { // objlife.go
				return err
			}
		}
		res.Files++
		res.Bytes += oi.Size
		if move {
			moved = append(moved, movedKey{oi.Key, oi.ETag})
		}
		return nil
	})
	if err == nil && !marker && res.Files == 0 {
		// Only state keys below: the folder itself, as a marker.
		_, err = dv.obj.Put(ctx, strings.TrimSuffix(dp, "/")+"/", strings.NewReader(""), ObjectPut{NoClobber: true})
		if errors.Is(err, ErrExists) {
			err = nil
		}
	}
	if err != nil {
		var oe *OpError
		if errors.As(err, &oe) {
			return res, err
		}
		if errors.Is(err, ErrObjectStoreDown) || errors.Is(err, context.Canceled) {
			return res, err
		}
		return res, &OpError{Op: op, Kind: KindConflict, Msg: fmt.Sprintf("the folder was %s only in part (%d files); the source is whole, the part at the destination can be deleted and the %s asked again", map[bool]string{true: "moved", false: "copied"}[move], res.Files, op), Err: err}
	}
	if !move {
		return res, nil
	}
	return res, s.dropMoved(ctx, op, sv, sr, moved)
}

// copyMeta is the metadata a copy of oi gets: all of it for a move (the
// same file), less its lifetime for a copy (a new file, as on disk);
// nil keeps the source's.
func copyMeta(op string, oi ObjectInfo) map[string]string {
	if _, ok := oi.Meta["hoard-expires"]; op == "move" || !ok {
		return nil
	}
	return withoutLife(oi.Meta)
}

// objSource looks at the source sr of the object-store volume sv of a
// move or copy (op) to dv, with the checks every destination shares.
func (s *Store) objSource(ctx context.Context, op string, sv *Volume, sr string, dv *Volume) (fs.FileInfo, error) {
	sfi, err := sv.objStat(ctx, sr)
	if err != nil {
		return nil, opErr(op, err)
	}
	if sfi.IsDir() && dv.Flags().NoSub {
		return nil, opErr(op, ErrNoSub)
	}
	if sfi.IsDir() && s.mountsInside(sv, sr) { // a copy too: see transfer
		return nil, refuse(op, KindConflict, "other volumes are mounted inside this folder")
	}
	if sfi.IsDir() && op == "move" {
		if err := s.objTreeFree(op, sv, sr); err != nil {
			return nil, err
		}
	}
	return sfi, nil
}

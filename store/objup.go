package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"time"
)

// up2k on an object-store volume (docs/s3.md, "up2k on S3") keeps each
// session in the bucket, so that any node can take any chunk and a node
// may die at any instant. up2k owns the rules; these are the object
// operations it needs, confined to the volume's session area: the keys
// PREFIX/.hist/up2k/…, below the state folder's name, which no request
// path can reach (cleanRel refuses .hist at any depth, and listings
// leave it out).

// upArea is the session area below the volume's prefix.
const upArea = HistName + "/up2k/"

// upKey is the object key of name inside the session area. name is
// up2k's (a wark and fixed parts, URL-safe base64), never a client's.
func (v *Volume) upKey(name string) (string, error) {
	if v.obj == nil {
		return "", errors.New("store: session objects on a volume on disk")
	}
	if name == "" || strings.Contains(name, "..") || strings.HasPrefix(name, "/") {
		return "", fmt.Errorf("store: bad session object name %q", name)
	}
	return v.objPre + upArea + name, nil
}

// UpPut stores the session object name from r, of exactly size bytes
// when size > 0. With noClobber it fails with ErrExists when the name is
// taken. An error from r aborts it: nothing is stored.
func (v *Volume) UpPut(ctx context.Context, name string, r io.Reader, size int64, noClobber bool) (ObjectInfo, error) {
	k, err := v.upKey(name)
	if err != nil {
		return ObjectInfo{}, err
	}
	return v.obj.Put(ctx, k, r, ObjectPut{NoClobber: noClobber, Size: size})
}

// UpGet reads the session object name whole; it may have at most max
// bytes. ErrNotFound (wrapped) when there is none.
func (v *Volume) UpGet(ctx context.Context, name string, max int64) ([]byte, ObjectInfo, error) {
	k, err := v.upKey(name)
	if err != nil {
		return nil, ObjectInfo{}, err
	}
	for attempt := 0; ; attempt++ {
		oi, err := v.obj.Stat(ctx, k)
		if err != nil {
			return nil, ObjectInfo{}, err
		}
		if oi.Size > max {
			return nil, ObjectInfo{}, fmt.Errorf("store: session object %s has %d bytes, more than %d", name, oi.Size, max)
		}
		rc, err := v.obj.Open(ctx, oi)
		if err != nil {
			return nil, ObjectInfo{}, err
		}
		b, err := io.ReadAll(io.LimitReader(rc, max+1))
		rc.Close()
		if errors.Is(err, ErrNotFound) && attempt < 4 {
			// Rewritten (another post recording its upload, a publish's
			// touch) between the stat and the read: the object is there,
			// read the new version. Not "no such session".
			continue
		}
		if err != nil {
			return nil, ObjectInfo{}, err
		}
		return b, oi, nil
	}
}

// UpJoin stores the session object dst as the session objects parts
// joined in order (replacing dst; server-side where S3 allows it).
func (v *Volume) UpJoin(ctx context.Context, dst string, parts []string) error {
	k, err := v.upKey(dst)
	if err != nil {
		return err
	}
	srcs := make([]ObjectInfo, len(parts))
	for i, p := range parts {
		pk, err := v.upKey(p)
		if err != nil {
			return err
		}
		if srcs[i], err = v.obj.Stat(ctx, pk); err != nil {
			return err
		}
	}
	_, err = v.obj.Compose(ctx, k, srcs, ObjectPut{})
	return err
}

// UpHas reports whether the session object name exists.
func (v *Volume) UpHas(ctx context.Context, name string) (bool, error) {
	k, err := v.upKey(name)
	if err != nil {
		return false, err
	}
	_, err = v.obj.Stat(ctx, k)
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// UpWalk calls fn with every session object whose name begins with
// prefix, in name order; oi.Key is the object's name in the area.
func (v *Volume) UpWalk(ctx context.Context, prefix string, fn func(oi ObjectInfo) error) error {
	if v.obj == nil {
		return errors.New("store: session objects on a volume on disk")
	}
	base := v.objPre + upArea
	return v.obj.Walk(ctx, base+prefix, func(oi ObjectInfo) error {
		oi.Key = strings.TrimPrefix(oi.Key, base)
		return fn(oi)
	})
}

// UpDelete removes the session object name; a missing one is no error.
func (v *Volume) UpDelete(ctx context.Context, name string) error {
	k, err := v.upKey(name)
	if err != nil {
		return err
	}
	return v.obj.Delete(ctx, k)
}

// UpPublish says how UpCompose publishes an upload.
type UpPublish struct {
	Replace bool              // overwrite a file at the name (else no-clobber)
	Meta    map[string]string // x-amz-meta-*; the uploader's are added
	User    string
	IP      string
	Life    time.Duration // the upload's own lifetime; 0: the volume's (objlife.go)
	// Check wraps the reader of part i where its bytes pass through
	// hoard (see ObjectPut.Check).
	Check func(i int, r io.Reader) io.Reader
	// Chunks are the upload's chunk hashes: stored beside the file
	// (objidx.go) before it is published, for other nodes' indexes.
	Chunks []string
}

// UpCompose publishes the file rel (cleaned by the caller, as UpFreeName
// gave it) as the session objects parts joined in order. Without
// Replace it never overwrites: a name taken meanwhile is ErrExists
// (wrapped) and nothing is stored.
func (v *Volume) UpCompose(ctx context.Context, rel string, parts []string, opt UpPublish) (ObjectInfo, error) {
	r, err := cleanRel(rel)
	if err != nil || r == "." {
		return ObjectInfo{}, fmt.Errorf("store: publish at %q: %w", rel, ErrBadName)
	}
	srcs := make([]ObjectInfo, len(parts))
	for i, p := range parts {
		k, err := v.upKey(p)
		if err != nil {
			return ObjectInfo{}, err
		}
		if srcs[i], err = v.obj.Stat(ctx, k); err != nil {
			return ObjectInfo{}, err
		}
	}
	meta := map[string]string{"hoard-uploader": opt.User, "hoard-ip": opt.IP, "hoard-at": v.store.now().UTC().Format(time.RFC3339Nano)}
	for k, val := range opt.Meta {
		meta[k] = val
	}
	if err := v.objLife(ctx, r, opt.Life, meta); err != nil { // objlife.go
		return ObjectInfo{}, err
	}
	wark := meta["hoard-wark"]
	if len(opt.Chunks) > 0 {
		if err := v.PutChunkHashes(ctx, wark, opt.Chunks); err != nil { // objidx.go
			return ObjectInfo{}, err
		}
	}
	if err := v.objWhere(ctx, r, meta); err != nil { // objwhere.go
		return ObjectInfo{}, err
	}
	put := ObjectPut{NoClobber: !opt.Replace, Meta: meta, Check: opt.Check}
	var oi ObjectInfo
	if len(srcs) == 0 {
		oi, err = v.obj.Put(ctx, v.key(r), strings.NewReader(""), put) // an empty file
	} else {
		oi, err = v.obj.Compose(ctx, v.key(r), srcs, put)
	}
	if err != nil {
		return ObjectInfo{}, err
	}
	v.store.log.Info("stored", "volume", "/"+v.VPath, "key", oi.Key, "bytes", oi.Size, "via", "up2k")
	at, _ := time.Parse(time.RFC3339Nano, meta["hoard-at"])
	v.objCreated(r, oi, at, opt.User, opt.IP, wark, opt.Chunks) // objidx.go
	return oi, nil
}

// ErrNoCopy: UpCopy cannot copy that source (empty, or no longer of
// that content).
var ErrNoCopy = errors.New("store: no server-side copy of that object")

// UpCopy publishes the file rel as a server-side copy of the file src of
// the same volume (an upload's content found published elsewhere), with
// the uploader's metadata and opt.Meta in place of src's: no byte passes
// through hoard, whatever the size. Without Replace a taken name is
// ErrExists (wrapped). ErrNotFound when src is gone, or changed while it
// was copied (nothing is written); ErrNoCopy when it is empty or its
// metadata names another wark than opt.Meta.
func (v *Volume) UpCopy(ctx context.Context, rel, src string, opt UpPublish) (ObjectInfo, error) {
	r, err := cleanRel(rel)
	if err != nil || r == "." {
		return ObjectInfo{}, fmt.Errorf("store: publish at %q: %w", rel, ErrBadName)
	}
	s, err := cleanRel(src)
	if err != nil || s == "." || v.obj == nil {
		return ObjectInfo{}, fmt.Errorf("store: copy of %q: %w", src, ErrBadName)
	}
	soi, err := v.obj.Stat(ctx, v.key(s))
	if err != nil {
		return ObjectInfo{}, err
	}
	if soi.Meta["hoard-wark"] != opt.Meta["hoard-wark"] || soi.Size == 0 {
		return ObjectInfo{}, fmt.Errorf("store: copy of %q (%d bytes): %w", src, soi.Size, ErrNoCopy)
	}
	meta := map[string]string{"hoard-uploader": opt.User, "hoard-ip": opt.IP, "hoard-at": v.store.now().UTC().Format(time.RFC3339Nano)}
	for k, val := range opt.Meta {
		meta[k] = val
	}
	if err := v.objLife(ctx, r, opt.Life, meta); err != nil { // objlife.go
		return ObjectInfo{}, err
	}
	if err := v.objWhere(ctx, r, meta); err != nil { // objwhere.go
		return ObjectInfo{}, err
	}
	// A server-side copy of any size (UploadPartCopy in ranges of at
	// most 5 GiB), completed only while the source is the version
	// stat saw (ErrNotFound else).
	oi, err := v.obj.Copy(ctx, v.key(r), v.obj, soi, ObjectPut{NoClobber: !opt.Replace, Meta: meta})
	if err != nil {
		return ObjectInfo{}, err
	}
	v.store.log.Info("stored", "volume", "/"+v.VPath, "key", oi.Key, "bytes", oi.Size, "via", "up2k copy")
	return oi, nil
}

// UpAbort aborts the unfinished multipart uploads of the file rel begun
// before before: what a node that died while publishing it left.
func (v *Volume) UpAbort(ctx context.Context, rel string, before time.Time) error {
	r, err := cleanRel(rel)
	if err != nil || r == "." || v.obj == nil {
		return fmt.Errorf("store: abort at %q: bad path", rel)
	}
	return v.obj.AbortUploads(ctx, v.key(r), before)
}

// UpStat describes the file rel of an object-store volume with its
// metadata: ErrNotFound (wrapped) when there is none, ErrIsDir for a
// folder.
func (v *Volume) UpStat(ctx context.Context, rel string) (ObjectInfo, error) {
	r, err := cleanRel(rel)
	if err != nil {
		return ObjectInfo{}, err
	}
	if v.obj == nil {
		return ObjectInfo{}, errors.New("store: UpStat on a volume on disk")
	}
	fi, err := v.objStat(ctx, r)
	if err != nil {
		return ObjectInfo{}, err
	}
	if fi.IsDir() {
		return ObjectInfo{}, ErrIsDir
	}
	return fi.(objectFileInfo).oi, nil
}

// UpFreeName chooses the name an upload of name into the folder dir of
// an object-store volume gets, as a PUT does: name when free (or, with
// replace, when a file is there), else a collision name. It checks the
// folder as Ingest does (no-sub volumes, a file in the way). With hold
// set (up2k's holds of names for their sessions: objname.go), a
// candidate must also be held by the caller (hold false: another upload
// holds it, so it is taken); a name held is looked at once more, and let
// go with unhold when a file took it meanwhile, so that a publish that
// let its hold go just before is seen.
func (v *Volume) UpFreeName(ctx context.Context, dir, name, ip string, replace bool, hold func(name string) (bool, error), unhold func(name string)) (string, error) {
	d, err := cleanRel(dir)
	if err != nil {
		return "", err
	}
	if err := checkName(name); err != nil || strings.EqualFold(name, HistName) || strings.HasSuffix(name, PartialSuffix) {
		return "", ErrBadName
	}
	if v.Flags().NoSub && d != "." {
		return "", ErrNoSub
	}
	if d != "." {
		if err := v.objNameOK(d, true); err != nil {
			return "", err
		}
	}
	if err := v.objParents(ctx, d); err != nil {
		return "", err
	}
	free := func(try string) (bool, error) {
		fi, err := v.objStat(ctx, path.Join(d, try))
		if errors.Is(err, ErrNotFound) || err == nil && replace && try == name && !fi.IsDir() {
			return true, nil
		}
		return false, err
	}
	try := name
	for attempt := 0; ; attempt++ {
		if err := v.objNameOK(path.Join(d, try), false); err != nil {
			return "", err
		}
		ok, err := free(try)
		if err != nil {
			return "", err
		}
		if ok && hold != nil {
			if ok, err = hold(try); err != nil {
				return "", err
			}
			if ok {
				if ok, err = free(try); !ok {
					unhold(try)
				}
				if err != nil {
					return "", err
				}
			}
		}
		if ok {
			return try, nil
		}
		if attempt >= 20 {
			return "", &Error{Kind: KindConflict, Msg: "could not find a free name for the upload"}
		}
		try = v.collisionName(name, ip, attempt)
	}
}

// An up2k upload on an object-store volume may go straight into its
// file's multipart upload (docs/s3.md, "up2k on S3"): runs of chunks are
// put as parts by whichever node takes them, and the finishing node
// completes the upload with those parts and parts composed of staged
// session objects. Nothing is visible at the name until then.

// ErrNoDirect: the upload cannot go into its file's multipart upload
// (it has a lifetime, whose deadline is fixed when it is published):
// stage its chunks instead.
var ErrNoDirect = errors.New("store: this upload is staged, not put into parts")

// upMeta is the metadata an upload publishes with.
func (v *Volume) upMeta(opt UpPublish) map[string]string {
	meta := map[string]string{"hoard-uploader": opt.User, "hoard-ip": opt.IP, "hoard-at": v.store.now().UTC().Format(time.RFC3339Nano)}
	for k, val := range opt.Meta {
		meta[k] = val
	}
	return meta
}

// upFileKey is the key of the file rel of an object-store volume.
func (v *Volume) upFileKey(rel string) (string, error) {
	r, err := cleanRel(rel)
	if err != nil || r == "." || v.obj == nil {
		return "", fmt.Errorf("store: upload at %q: %w", rel, ErrBadName)
	}
	return v.key(r), nil
}

// UpBegin begins the multipart upload of the file rel, carrying the
// upload's metadata (its time is now: S3 sets metadata when an upload
// begins). ErrNoDirect when the upload has a lifetime.
func (v *Volume) UpBegin(ctx context.Context, rel string, opt UpPublish) (string, error) {
	k, err := v.upFileKey(rel)
	if err != nil {
		return "", err
	}
	if life, err := v.lifeFor(opt.Life); err != nil || life > 0 {
		return "", ErrNoDirect
	}
	return v.obj.NewUpload(ctx, k, v.upMeta(opt))
}

// UpPart streams exactly size bytes of r into part n of the upload id of
// the file rel; an error from r stores nothing.
func (v *Volume) UpPart(ctx context.Context, rel, id string, n int, r io.Reader, size int64) (ObjectPart, error) {
	k, err := v.upFileKey(rel)
	if err != nil {
		return ObjectPart{}, err
	}
	return v.obj.PutPart(ctx, k, id, n, r, size)
}

// UpParts lists the parts of the upload id of the file rel; ErrNotFound
// (wrapped) when the upload is gone.
func (v *Volume) UpParts(ctx context.Context, rel, id string) ([]ObjectPart, error) {
	k, err := v.upFileKey(rel)
	if err != nil {
		return nil, err
	}
	return v.obj.Parts(ctx, k, id)
}

// UpAbortUpload aborts the upload id of the file rel.
func (v *Volume) UpAbortUpload(ctx context.Context, rel, id string) error {
	k, err := v.upFileKey(rel)
	if err != nil {
		return err
	}
	return v.obj.AbortUpload(ctx, k, id)
}

// UpSlot is one part of the file UpFinish publishes: Part, a part
// already there, or (Srcs set) the session objects Srcs joined in order
// into part Number, each through Check where it passes through hoard.
type UpSlot struct {
	Part   ObjectPart
	Number int
	Srcs   []string
	Check  func(i int, r io.Reader) io.Reader
}

// UpFinish publishes the file rel by completing its upload id with
// slots, in order: no-clobber unless opt.Replace (a name taken meanwhile
// is ErrExists, wrapped, and the upload stays as it was). A part that
// changed or an upload that is gone is ErrNotFound (wrapped).
func (v *Volume) UpFinish(ctx context.Context, rel, id string, slots []UpSlot, opt UpPublish) (ObjectInfo, error) {
	k, err := v.upFileKey(rel)
	if err != nil {
		return ObjectInfo{}, err
	}
	r, _ := cleanRel(rel)
	wark := opt.Meta["hoard-wark"]
	if len(opt.Chunks) > 0 {
		if err := v.PutChunkHashes(ctx, wark, opt.Chunks); err != nil { // objidx.go
			return ObjectInfo{}, err
		}
	}
	if err := v.objWhere(ctx, r, opt.Meta); err != nil { // objwhere.go
		return ObjectInfo{}, err
	}
	parts := make([]ObjectPart, 0, len(slots))
	for _, s := range slots {
		if len(s.Srcs) == 0 {
			parts = append(parts, s.Part)
			continue
		}
		srcs := make([]ObjectInfo, len(s.Srcs))
		for i, name := range s.Srcs {
			sk, err := v.upKey(name)
			if err != nil {
				return ObjectInfo{}, err
			}
			if srcs[i], err = v.obj.Stat(ctx, sk); err != nil {
				return ObjectInfo{}, err
			}
		}
		p, err := v.obj.ComposePart(ctx, k, id, s.Number, srcs, s.Check)
		if err != nil {
			return ObjectInfo{}, err
		}
		parts = append(parts, p)
	}
	oi, err := v.obj.Complete(ctx, k, id, parts, ObjectPut{NoClobber: !opt.Replace})
	if err != nil {
		return ObjectInfo{}, err
	}
	v.store.log.Info("stored", "volume", "/"+v.VPath, "key", oi.Key, "bytes", oi.Size, "via", "up2k parts")
	at, _ := time.Parse(time.RFC3339Nano, oi.Meta["hoard-at"])
	v.objCreated(r, oi, at, oi.Meta["hoard-uploader"], oi.Meta["hoard-ip"], wark, opt.Chunks) // objidx.go
	return oi, nil
}

// UpPutIf replaces the session object name with b while it is still the
// version etag (If-Match): ErrExists (wrapped) when another node changed
// it meanwhile.
func (v *Volume) UpPutIf(ctx context.Context, name string, b []byte, etag string) error {
	k, err := v.upKey(name)
	if err != nil {
		return err
	}
	_, err = v.obj.Put(ctx, k, bytes.NewReader(b), ObjectPut{Size: int64(len(b)), IfMatch: etag})
	return err
}

// UpUploads calls fn with every unfinished multipart upload below the
// volume's prefix: rel is its key's path in the volume (".hist/…" for
// the state folder's). The sweep of orphaned uploads (up2k) reads it.
func (v *Volume) UpUploads(ctx context.Context, fn func(rel string, u ObjectUpload) error) error {
	if v.obj == nil {
		return errors.New("store: UpUploads on a volume on disk")
	}
	pre := v.key(".")
	// Another volume's prefix inside this one's (s3=b/pre/sub beside
	// s3=b/pre) holds that volume's uploads: its sessions, not this
	// volume's, say which are orphans, so they are not this sweep's to
	// judge (it would abort a live upload that this volume's sessions do
	// not name).
	var nested []*Volume
	if v.store != nil {
		nested = v.store.objVolumesBelow(v, pre)
	}
	return v.obj.Uploads(ctx, pre, func(u ObjectUpload) error {
		rel, ok := strings.CutPrefix(u.Key, pre)
		if !ok || rel == "" {
			return nil
		}
		for _, w := range nested {
			if w.objPre != pre && strings.HasPrefix(u.Key, w.objPre) { // (one on the same prefix is this volume again)
				return nil
			}
		}
		return fn(rel, u)
	})
}

// UpListedParts lists the parts of u (from UpUploads).
func (v *Volume) UpListedParts(ctx context.Context, u ObjectUpload) ([]ObjectPart, error) {
	if v.obj == nil || !strings.HasPrefix(u.Key, v.key(".")) {
		return nil, fmt.Errorf("store: upload of %q: %w", u.Key, ErrOutside)
	}
	return v.obj.Parts(ctx, u.Key, u.ID)
}

// UpAbortListed aborts u (from UpUploads); one gone already is no error.
func (v *Volume) UpAbortListed(ctx context.Context, u ObjectUpload) error {
	if v.obj == nil || !strings.HasPrefix(u.Key, v.key(".")) || u.ID == "" {
		return fmt.Errorf("store: abort of %q: %w", u.Key, ErrOutside)
	}
	return v.obj.AbortUpload(ctx, u.Key, u.ID)
}

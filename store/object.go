package store

import (
	"context"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"path"
	"strconv"
	"strings"
	"time"
)

// A volume with the flag s3=BUCKET[/PREFIX] keeps its files as objects in
// an S3-compatible object store (docs/s3.md); its folder on disk holds
// only state. store does not speak S3: it declares the ObjectStore it
// needs, package s3 implements it with minio-go, and main wires them
// (Config.Objects). Local volumes never reach this file: their bytes stay
// behind os.Root, and their downloads on the sendfile path.
//
// What is built on such a volume: Stat, OpenObject (GET, HEAD, ranges),
// List and Each (listings), Ingest (PUT, multipart, append: objappend.go),
// Delete (files and folders, unpost: objunpost.go), Mkdir (a marker
// object), Move and Copy (objmanage.go, objmixed.go), shares
// (objshare.go), lifetimes (objlife.go), and the session objects up2k
// keeps in the bucket (objup.go). Every other operation that would touch
// the volume's bytes answers ErrObjectsUnbuilt (501) before it touches
// anything.

// ObjectInfo describes one object, or in a listing one common prefix (Dir).
type ObjectInfo struct {
	Key     string // the full key; a Dir's ends in "/"
	Size    int64
	ETag    string // as the store gives it, without quotes
	ModTime time.Time
	Dir     bool
	Meta    map[string]string // user metadata (x-amz-meta-*), lower-case keys
}

// ObjectPut says how Put stores an object.
type ObjectPut struct {
	// NoClobber fails the put with ErrExists when the key is taken when
	// it completes (If-None-Match: *); else the object is replaced.
	NoClobber bool
	Meta      map[string]string
	// Size, when above 0, is the exact length of the body: one streamed
	// PUT (no multipart upload, no part buffer). The ObjectInfo such a
	// Put returns has the store's ETag but the node's clock as ModTime
	// (no HEAD follows it).
	Size int64
	// Check, for Compose, wraps the reader of source i where its bytes
	// pass through hoard; an error from the wrapper fails the compose.
	Check func(i int, r io.Reader) io.Reader
	// IfMatch, for Compose and Copy, completes the write only while key
	// is still the object of this ETag (If-Match; ErrExists when not):
	// an append that raced another never loses it.
	IfMatch string
}

// ObjectStore is the object store of one volume: a bucket, keys as given.
// Its errors are ErrNotFound (wrapped) for a missing key, ErrExists for a
// NoClobber put that lost, ErrObjectStoreDown (wrapped) when the store
// cannot be reached or fails, and anything else for the log.
type ObjectStore interface {
	// Stat describes the object key.
	Stat(ctx context.Context, key string) (ObjectInfo, error)
	// Open reads the object oi (from Stat) as Stat saw it: the reader
	// fetches lazily, by a ranged GET from the offset it is at, and fails
	// if the object changed meanwhile. The caller closes it.
	Open(ctx context.Context, oi ObjectInfo) (io.ReadSeekCloser, error)
	// Put streams r into key (a multipart upload for a large or unknown
	// size; nothing is buffered whole). An error from r aborts the
	// upload: nothing becomes visible.
	Put(ctx context.Context, key string, r io.Reader, opt ObjectPut) (ObjectInfo, error)
	// List calls fn with each object and common prefix directly below
	// prefix (delimiter "/"), in key order, page by page. An error from
	// fn stops it and is returned.
	List(ctx context.Context, prefix string, fn func(ObjectInfo) error) error
	// Walk calls fn with every object below prefix, at any depth, in key
	// order, page by page. An error from fn stops it and is returned.
	Walk(ctx context.Context, prefix string, fn func(ObjectInfo) error) error
	// Delete removes the object key; a missing key is no error.
	Delete(ctx context.Context, key string) error
	// Compose writes dst as the objects srcs (from Stat or Walk) joined
	// in order, by one multipart upload completed no-clobber when
	// opt.NoClobber (ErrExists when dst was taken); sources that pass
	// through hoard pass through opt.Check. A failure aborts the upload:
	// nothing becomes visible.
	Compose(ctx context.Context, dst string, srcs []ObjectInfo, opt ObjectPut) (ObjectInfo, error)
	// AbortUploads aborts the unfinished multipart uploads of key begun
	// before before.
	AbortUploads(ctx context.Context, key string, before time.Time) error
	// Uploads calls fn with every unfinished multipart upload of a key
	// below prefix, at any depth. An error from fn stops it.
	Uploads(ctx context.Context, prefix string, fn func(ObjectUpload) error) error
	// Copy writes dst as a server-side copy of src (from Stat, with its
	// Meta) of the store from (this one, or another bucket of the same
	// object store): no byte passes through hoard. The copy carries
	// src.Meta unless opt.Meta is set; NoClobber and IfMatch as for
	// Compose. A source no longer the version src describes is
	// ErrNotFound (nothing written).
	Copy(ctx context.Context, dst string, from ObjectStore, src ObjectInfo, opt ObjectPut) (ObjectInfo, error)

	// A multipart upload driven by the caller (up2k on S3 puts runs of
	// chunks straight into parts of the file; docs/s3.md): begun with
	// the object's metadata, parts put or composed in any order and on
	// any node, listed, then completed or aborted by its id.

	// NewUpload begins a multipart upload of key carrying meta.
	NewUpload(ctx context.Context, key string, meta map[string]string) (string, error)
	// PutPart streams exactly size bytes of r into part n (1–10,000) of
	// the upload id of key; an error from r aborts the part (it is not
	// stored). A missing upload is ErrNotFound.
	PutPart(ctx context.Context, key, id string, n int, r io.Reader, size int64) (ObjectPart, error)
	// ComposePart writes part n as the objects srcs joined in order: one
	// source is copied server-side, several pass through hoard, each
	// through check when set.
	ComposePart(ctx context.Context, key, id string, n int, srcs []ObjectInfo, check func(i int, r io.Reader) io.Reader) (ObjectPart, error)
	// Parts lists the parts of the upload id of key, by number. A missing
	// upload is ErrNotFound.
	Parts(ctx context.Context, key, id string) ([]ObjectPart, error)
	// Complete joins parts (ascending numbers) into key, with
	// opt.NoClobber and opt.IfMatch as for Compose. A part that is not
	// the one listed (replaced meanwhile) fails it; so does a missing
	// upload (ErrNotFound: completed or aborted by another).
	Complete(ctx context.Context, key, id string, parts []ObjectPart, opt ObjectPut) (ObjectInfo, error)
	// AbortUpload aborts the upload id of key; a missing one is no error.
	AbortUpload(ctx context.Context, key, id string) error
}

// ObjectUpload is an unfinished multipart upload: its key, its id and
// when it was begun (the store's clock).
type ObjectUpload struct {
	Key, ID   string
	Initiated time.Time
}

// ObjectPart is one part of a multipart upload.
type ObjectPart struct {
	Number  int
	Size    int64
	ETag    string
	ModTime time.Time
}

// ErrObjectStoreDown is an object store that cannot be reached or that
// failed: 503, come back in a few seconds. Nothing was changed.
var ErrObjectStoreDown = &Error{Kind: KindUnavailable, Msg: "the object store is unavailable; try again shortly", RetryAfter: 5 * time.Second}

// ErrObjectsUnbuilt is an operation not built yet for volumes on object
// storage (501).
var ErrObjectsUnbuilt = &Error{Kind: KindNotImplemented, Msg: "this is not built yet for volumes on object storage (S3)"}

// unbuilt is ErrObjectsUnbuilt naming what.
func unbuilt(what string) error {
	return &Error{Kind: KindNotImplemented, Msg: what + " is not built yet for volumes on object storage (S3)", is: ErrObjectsUnbuilt}
}

// Remote reports whether the volume's files are objects in an object store.
func (v *Volume) Remote() bool { return v.obj != nil }

// ParseS3Target splits the volume flag value BUCKET[/PREFIX]. The bucket
// follows S3's naming rules; each prefix component follows the volume's
// name rules (no "..", no state folder, no work-file suffix).
func ParseS3Target(s string) (bucket, prefix string, err error) {
	bucket, prefix, _ = strings.Cut(s, "/")
	if n := len(bucket); n < 3 || n > 63 {
		return "", "", errors.New("s3=BUCKET[/PREFIX]: a bucket name has 3 to 63 characters")
	}
	for i := 0; i < len(bucket); i++ {
		c := bucket[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '.') {
			return "", "", errors.New("s3=BUCKET[/PREFIX]: a bucket name has lower-case letters, digits, '-' and '.' only")
		}
	}
	if b0, bn := bucket[0], bucket[len(bucket)-1]; b0 == '-' || b0 == '.' || bn == '-' || bn == '.' || strings.Contains(bucket, "..") {
		return "", "", errors.New("s3=BUCKET[/PREFIX]: a bucket name begins and ends with a letter or digit")
	}
	prefix = strings.Trim(prefix, "/")
	if prefix == "" {
		return bucket, "", nil
	}
	if _, err := cleanRel(prefix); err != nil || strings.Contains(prefix, "//") {
		return "", "", fmt.Errorf("s3=BUCKET[/PREFIX]: bad prefix %q", prefix)
	}
	return bucket, prefix, nil
}

// mountObjects connects v to its object store and refuses volume flags
// whose rules need a local file system or an index of the bucket.
func (v *Volume) mountObjects(cfg Config, flags *Flags) error {
	_, prefix, err := ParseS3Target(flags.S3)
	if err != nil {
		return err
	}
	if err := checkObjectFlags(*flags); err != nil {
		return err
	}
	if cfg.Objects == nil {
		return errors.New("s3=: this server was built without an object store client")
	}
	if v.obj, err = cfg.Objects(flags.S3); err != nil {
		return err
	}
	if prefix != "" {
		prefix += "/"
	}
	v.objPre = prefix
	v.objSec = &objSecret{name: prefix + HistName + "/secret"}
	return nil
}

// checkObjectFlags refuses the flags whose rules need a local file
// system or an index of the bucket (at mount and at a reload). None is
// left: nodupe and dedup read where a content lies from the bucket
// (objwhere.go); dedup's hard links are server-side copies there.
func checkObjectFlags(f Flags) error {
	return nil
}

// objTimeout bounds an object-store call made where no request context
// reaches (Stat).
const objTimeout = 30 * time.Second

func objCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), objTimeout)
}

// key is the object key of the volume path r (cleaned; "." the top).
func (v *Volume) key(r string) string {
	if r == "." {
		return v.objPre
	}
	return v.objPre + r
}

// keyFits says whether the volume path r (cleaned; dir: as a folder
// marker, "r/") has an object key S3 takes: ErrKeyTooLong when not. A
// name checks out component by component (checkName), but S3 bounds the
// whole key, prefix included.
func (v *Volume) keyFits(r string, dir bool) error {
	n := len(v.key(r))
	if dir {
		n++
	}
	if n > MaxObjectKey {
		return ErrKeyTooLong
	}
	return nil
}

// storeDirSuffix is how MinIO keeps a folder marker ("a/" is stored as
// "a__XLDIR__"): a key with a component ending in it is an alias of a
// marker there. An upload named so would land in the marker (listed as a
// folder, not as the file), and anything below it would be left out of
// every listing (hidden from listings, archives, the index and folder
// deletes, yet served by its URL).
const storeDirSuffix = "__XLDIR__"

// objNameOK is keyFits for a path a write is about to create, which also
// may not be one an object store takes for something else: ErrStoreName
// for a component ending in storeDirSuffix.
func (v *Volume) objNameOK(r string, dir bool) error {
	if err := v.keyFits(r, dir); err != nil {
		return err
	}
	for c := range strings.SplitSeq(r, "/") {
		if strings.HasSuffix(c, storeDirSuffix) {
			return ErrStoreName
		}
	}
	return nil
}

// objectFileInfo is an object as fs.FileInfo; Sys is its ObjectInfo.
type objectFileInfo struct{ oi ObjectInfo }

func (o objectFileInfo) Name() string       { return path.Base(strings.TrimSuffix(o.oi.Key, "/")) }
func (o objectFileInfo) Size() int64        { return o.oi.Size }
func (o objectFileInfo) ModTime() time.Time { return lmodTime(o.oi) }
func (o objectFileInfo) IsDir() bool        { return o.oi.Dir }
func (o objectFileInfo) Sys() any           { return o.oi }
func (o objectFileInfo) Mode() fs.FileMode {
	if o.oi.Dir {
		return fs.ModeDir | 0o755
	}
	return 0o644
}

// lmodTime is the time hoard shows for an object (listings, archives,
// Last-Modified): the uploader's mtime when its metadata has one
// (hoard-lmod: up2k, a copy from disk), as a file on disk has the mtime
// its upload set; else its LastModified. The index keeps LastModified,
// which is what tells it an object changed.
func lmodTime(oi ObjectInfo) time.Time {
	if l, err := strconv.ParseInt(oi.Meta["hoard-lmod"], 10, 64); err == nil && l > 0 && l < 1<<36 {
		return time.Unix(l, 0)
	}
	return oi.ModTime
}

// ObjectFileInfo is the object oi as an fs.FileInfo (as OpenObject
// gives it): what FileKey and the listings take.
func ObjectFileInfo(oi ObjectInfo) fs.FileInfo { return objectFileInfo{oi} }

// ObjectOf returns the object behind fi when fi came from an object-store
// volume.
func ObjectOf(fi fs.FileInfo) (ObjectInfo, bool) {
	o, ok := fi.(objectFileInfo)
	return o.oi, ok
}

// objStat describes the volume path r (cleaned): an object, or a folder
// when keys lie below it. ErrNotFound when neither; ErrNotDir when a
// parent is an object.
func (v *Volume) objStat(ctx context.Context, r string) (fs.FileInfo, error) {
	if r == "." {
		return objectFileInfo{ObjectInfo{Key: v.objPre, Dir: true}}, nil
	}
	if !v.objInView(r) || v.keyFits(r, false) != nil { // objshare.go; no object has a longer key
		return nil, ErrNotFound
	}
	oi, err := v.obj.Stat(ctx, v.key(r))
	if err == nil {
		return objectFileInfo{oi}, nil
	}
	if !errors.Is(err, ErrNotFound) || v.only != nil {
		return nil, err
	}
	dir, err := v.objFolder(ctx, r)
	switch {
	case err != nil:
		return nil, err
	case dir:
		return objectFileInfo{ObjectInfo{Key: v.key(r) + "/", Dir: true}}, nil
	}
	return nil, ErrNotFound
}

// errStop ends a List early.
var errStop = errors.New("stop")

// objFolder reports whether r (cleaned, not ".") is a folder: a key lies
// below it (a folder marker "r/" included).
func (v *Volume) objFolder(ctx context.Context, r string) (bool, error) {
	if v.keyFits(r, true) != nil {
		return false, nil // nothing lies below a key no object can have
	}
	found := false
	err := v.obj.List(ctx, v.key(r)+"/", func(ObjectInfo) error {
		found = true
		return errStop
	})
	if err != nil && !errors.Is(err, errStop) {
		return false, err
	}
	return found, nil
}

// OpenObject opens the file at rel of an object-store volume for reading:
// its reader fetches lazily (a ranged GET from where it is sought), and
// reads only the version described by fi. Folders give ErrIsDir. The
// caller closes the reader.
func (v *Volume) OpenObject(ctx context.Context, rel string) (io.ReadSeekCloser, fs.FileInfo, error) {
	if v.obj == nil {
		return nil, nil, errors.New("OpenObject on a volume on disk")
	}
	r, err := cleanRel(rel)
	if err != nil {
		return nil, nil, err
	}
	fi, err := v.objStat(ctx, r)
	if err != nil {
		return nil, nil, err
	}
	if fi.IsDir() {
		return nil, nil, ErrIsDir
	}
	oi := fi.(objectFileInfo).oi
	rc, err := v.obj.Open(ctx, oi)
	if err != nil {
		return nil, nil, err
	}
	return rc, fi, nil
}

// eachObject is Each for an object-store volume: the entries directly
// below r (cleaned), in key order, with the names a local listing leaves
// out left out here too (state folder, work files, names not addressable
// by URL, dot files unless opt.Dots).
func (v *Volume) eachObject(ctx context.Context, r string, opt ListOptions, fn func(Entry) error) error {
	if v.only != nil && r != "." {
		return ErrNotFound // a view of files has no folders
	}
	if v.keyFits(r, true) != nil {
		return ErrNotFound
	}
	prefix := v.key(r)
	if r != "." {
		prefix += "/"
	}
	seen := false
	err := v.obj.List(ctx, prefix, func(oi ObjectInfo) error {
		seen = true
		name := strings.TrimSuffix(strings.TrimPrefix(oi.Key, prefix), "/")
		switch {
		case name == "": // the folder's own marker
			return nil
		case checkName(name) != nil, strings.EqualFold(name, HistName), strings.HasSuffix(name, PartialSuffix):
			return nil
		case !opt.Dots && strings.HasPrefix(name, "."):
			return nil
		case v.only != nil && (oi.Dir || !v.objInView(name)): // a view of files (objshare.go)
			return nil
		}
		e := Entry{Name: name, Dir: oi.Dir, Size: oi.Size, Mtime: lmodTime(oi), Mode: 0o644}
		if oi.Dir {
			e.Size, e.Mode = 0, fs.ModeDir|0o755
		}
		return fn(e)
	})
	if err != nil || seen || r == "." {
		return err
	}
	fi, err := v.objStat(ctx, r)
	switch {
	case err != nil:
		return err
	case !fi.IsDir():
		return ErrNotDir
	}
	return nil
}

// objWalkParents refuses a path whose parent folder is an object (a
// file): on disk that is ErrNotDir, and here it must be too, or the new
// key would hide below a file.
func (v *Volume) objParents(ctx context.Context, d string) error {
	if d == "." {
		return nil
	}
	p := ""
	for c := range strings.SplitSeq(d, "/") {
		p = path.Join(p, c)
		if v.keyFits(p, false) != nil {
			return nil // no object has this key, nor a longer one
		}
		_, err := v.obj.Stat(ctx, v.key(p))
		if err == nil {
			return ErrNotDir
		}
		if !errors.Is(err, ErrNotFound) {
			return err
		}
	}
	return nil
}

// ingestObject is Ingest for an object-store volume: the body streams
// through the checksum (and compressor) into the object store; the name
// is chosen no-clobber as on disk (collision suffixes), and published
// with If-None-Match so a name another node took meanwhile is never
// overwritten.
func (v *Volume) ingestObject(ctx context.Context, d string, body io.Reader, h hash.Hash, opt IngestOptions) (IngestResult, error) {
	if v.Flags().NoSub && d != "." {
		return IngestResult{}, ErrNoSub
	}
	if d != "." {
		if err := v.objNameOK(d, true); err != nil {
			return IngestResult{}, err
		}
	}
	if err := v.objParents(ctx, d); err != nil {
		return IngestResult{}, err
	}
	if opt.Append {
		if res, ok, err := v.appendObject(ctx, d, body, h, opt); ok { // objappend.go
			return res, err
		}
	}
	name := opt.Name
	for attempt := 0; ; attempt++ {
		rel := path.Join(d, name)
		fi, err := v.objStat(ctx, rel)
		if errors.Is(err, ErrNotFound) || err == nil && opt.Replace && !fi.IsDir() {
			break
		}
		if err != nil {
			return IngestResult{}, err
		}
		if attempt >= 20 {
			return IngestResult{}, &Error{Kind: KindConflict, Msg: "could not find a free name for the upload"}
		}
		name = v.collisionName(opt.Name, opt.ClientIP, attempt)
	}
	rel := path.Join(d, name)
	if err := v.objNameOK(rel, false); err != nil {
		return IngestResult{}, err
	}
	now := v.store.now()
	sr := &sizedReader{r: body, h: h, min: v.Flags().SzMin, max: v.Flags().SzMax, want: opt.Size}
	var src io.Reader = sr
	if opt.Encode != nil {
		pr, pw := io.Pipe()
		defer pr.Close()
		go func() {
			enc, err := opt.Encode(pw)
			if err == nil {
				_, err = io.Copy(enc, sr)
				if cerr := enc.Close(); err == nil {
					err = cerr
				}
			}
			pw.CloseWithError(err)
		}()
		src = pr
	}
	meta := map[string]string{"hoard-uploader": opt.Uploader, "hoard-ip": opt.ClientIP, "hoard-at": now.UTC().Format(time.RFC3339Nano)}
	if err := v.objLife(ctx, rel, opt.Life, meta); err != nil { // objlife.go
		return IngestResult{}, err
	}
	oi, err := v.obj.Put(ctx, v.key(rel), src, ObjectPut{NoClobber: !opt.Replace, Meta: meta})
	if sr.err != nil { // the body's own fault wins: the put was aborted for it
		return IngestResult{}, sr.err
	}
	if errors.Is(err, ErrExists) {
		return IngestResult{}, &Error{Kind: KindConflict, Msg: "another upload took the name " + name + " meanwhile; nothing was stored, try again", Err: err}
	}
	if err != nil {
		return IngestResult{}, err
	}
	v.objCreated(rel, oi, now, opt.Uploader, opt.ClientIP, "", nil) // objidx.go
	res := IngestResult{Rel: rel, Size: sr.n, Time: now, Info: objectFileInfo{oi}}
	if h != nil {
		res.Sum = h.Sum(nil)
	}
	v.store.log.Info("stored", "volume", "/"+v.VPath, "key", oi.Key, "bytes", sr.n)
	return res, nil
}

// sizedReader counts and hashes a body as it is read, and fails the read
// (so the object store aborts the upload) when it breaks the volume's sz=
// bounds or ends short of the announced size.
type sizedReader struct {
	r        io.Reader
	h        hash.Hash
	min, max int64 // sz= bounds; max 0: none
	want     int64 // announced size; -1 unknown
	n        int64
	err      error // the body's fault, once failed
}

func (s *sizedReader) Read(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	if s.want >= 0 && int64(len(p)) > s.want-s.n+1 {
		p = p[:s.want-s.n+1] // one byte past the announced end is enough to notice
	}
	n, err := s.r.Read(p)
	s.n += int64(n)
	if s.h != nil && n > 0 {
		s.h.Write(p[:n])
	}
	switch {
	case s.max > 0 && s.n > s.max:
		s.err = &SizeError{Size: s.n, Min: s.min, Max: s.max}
	case s.want >= 0 && s.n > s.want:
		s.err = fmt.Errorf("%w: more than the %d bytes announced", ErrShortBody, s.want)
	case errors.Is(err, io.EOF) && s.want >= 0 && s.n < s.want:
		s.err = fmt.Errorf("%w: got %d of %d bytes", ErrShortBody, s.n, s.want)
	case errors.Is(err, io.EOF) && s.max > 0 && s.n < s.min:
		s.err = &SizeError{Size: s.n, Min: s.min, Max: s.max}
	case err != nil && !errors.Is(err, io.EOF):
		s.err = fmt.Errorf("%w: after %d bytes: %w", ErrShortBody, s.n, err)
	}
	if s.err != nil {
		return 0, s.err
	}
	return n, err
}

// deleteObject is Delete of one file of an object-store volume; folders
// (many keys) are not built yet.
func (s *Store) deleteObject(ctx context.Context, who Actor, v *Volume, r string, unpost bool) (DeleteResult, error) {
	const op = "delete"
	fi, err := v.objStat(ctx, r)
	if err != nil {
		return DeleteResult{}, opErr(op, err)
	}
	if unpost {
		if fi.IsDir() {
			return DeleteResult{}, refuse(op, KindInvalid, "cannot unpost folders")
		}
		if err := s.checkUnpostObject(who, v, fi.(objectFileInfo).oi); err != nil { // objunpost.go
			return DeleteResult{}, err
		}
	}
	if fi.IsDir() {
		return s.deleteObjectTree(ctx, who, v, r)
	}
	if err := v.obj.Delete(ctx, v.key(r)); err != nil {
		return DeleteResult{}, opErr(op, err)
	}
	v.objRemoved(who, r, false) // objidx.go
	s.log.Info("deleted", "volume", "/"+v.VPath, "path", r, "user", who.User, "ip", who.IP)
	return DeleteResult{Files: 1}, nil
}

// mkdirObject is Mkdir on an object-store volume, as S3 tools do it: an
// empty marker object "rel/". Folders above it need none (a key below a
// prefix makes the prefix a folder); without opt.Parents the parent must
// exist already, as on disk.
func (s *Store) mkdirObject(ctx context.Context, who Actor, v *Volume, rel string, opt MkdirOptions) (string, error) {
	const op = "mkdir"
	r, err := cleanRel(strings.Trim(rel, "/"))
	if err != nil {
		return "", opErr(op, err)
	}
	if r == "." {
		return "", refuse(op, KindExists, "that folder exists already")
	}
	if v.Flags().NoSub {
		return "", opErr(op, ErrNoSub)
	}
	if err := v.objNameOK(r, true); err != nil {
		return "", opErr(op, err)
	}
	dir := path.Dir(r)
	if err := v.objParents(ctx, dir); err != nil {
		return "", opErr(op, err)
	}
	if !opt.Parents && dir != "." {
		ok, err := v.objFolder(ctx, dir)
		if err != nil {
			return "", opErr(op, err)
		}
		if !ok {
			return "", refuse(op, KindConflict, "the folder to make it in does not exist")
		}
	}
	if _, err := v.objStat(ctx, r); err == nil {
		return "", refuse(op, KindExists, "that folder exists already")
	} else if !errors.Is(err, ErrNotFound) {
		return "", opErr(op, err)
	}
	if _, err := v.obj.Put(ctx, v.key(r)+"/", strings.NewReader(""), ObjectPut{NoClobber: true}); err != nil {
		if errors.Is(err, ErrExists) {
			return "", refuse(op, KindExists, "that folder exists already")
		}
		return "", opErr(op, err)
	}
	s.log.Info("made a folder", "volume", "/"+v.VPath, "path", r, "user", who.User, "ip", who.IP)
	return r, nil
}

// deleteObjectTree deletes the folder r (cleaned) of an object-store
// volume: every key below it, markers included. Like a folder tree on
// disk it goes key by key; an error stops it with what was deleted
// reported, and the rest is still there to delete again.
func (s *Store) deleteObjectTree(ctx context.Context, who Actor, v *Volume, r string) (DeleteResult, error) {
	const op = "delete"
	if s.mountsInside(v, r) {
		return DeleteResult{}, refuse(op, KindConflict, "other volumes are mounted inside this folder")
	}
	if err := s.objTreeFree(op, v, r); err != nil { // objmanage.go
		return DeleteResult{}, err
	}
	var res DeleteResult
	dirs := map[string]bool{r: true}
	prefix := v.key(r) + "/"
	err := v.obj.Walk(ctx, prefix, func(oi ObjectInfo) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		rel := strings.TrimSuffix(strings.TrimPrefix(oi.Key, prefix), "/")
		if _, err := cleanRel(rel); errors.Is(err, ErrReserved) {
			// A state folder below (another volume's on a nested prefix,
			// with its up2k sessions): not this folder's files.
			return nil
		}
		for d := path.Dir(rel); d != "."; d = path.Dir(d) {
			dirs[d] = true
		}
		if strings.HasSuffix(oi.Key, "/") {
			if rel != "" {
				dirs[rel] = true
			}
		} else {
			res.Files++
		}
		return v.obj.Delete(ctx, oi.Key)
	})
	res.Dirs = int64(len(dirs))
	v.objRemoved(who, r, true) // objidx.go: also after a stop half-way
	s.log.Info("deleted a folder", "volume", "/"+v.VPath, "path", r, "files", res.Files, "folders", res.Dirs, "user", who.User, "ip", who.IP, "err", err)
	return res, opErr(op, err)
}

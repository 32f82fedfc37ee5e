package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"hash"
	"io"
	"path"
	"time"
)

// Append (?apnd) on an object-store volume. S3 has no append: the file
// is rewritten as the old object followed by the new bytes, and the
// rewrite completes only while the object is still the one it began
// from (If-Match on its ETag), so two appends at once never lose one —
// the loser tries again on top of the winner's result, or is refused
// with nothing changed.
//
// The body is first stored as an object of its own in the state area
// (PREFIX/.hist/apnd/, which no request reaches); then the file is
// composed of the old object and that one by one multipart upload
// completed with If-Match, and a lost race composes again on top of what
// the winner left, up to apndTries times (then 409, nothing changed). (A single PUT with If-Match is
// no such guarantee: MinIO checks it before the body arrives, and two
// appends at once were both acknowledged with one lost.)
//
//   - An old object of 5 MiB or more (S3's smallest part but the last)
//     is copied server-side (UploadPartCopy): its bytes never pass
//     through hoard.
//   - A smaller one and the body are streamed through hoard into one
//     part (so at most 4 GiB can be appended at once to such a file).
//
// Cost: the body is written twice inside the store, plus about seven
// requests. The staged object is deleted after; a crash in between
// leaves it in the state area (never listed; the sweep deletes it after
// a day, objlife.go).
//
// The appended object carries the appender's metadata (uploader, address,
// time), as on disk the index then takes the appender for its uploader.

// apndTries bounds the compositions of one append that lose a race;
// between them it waits a random while, longer each time, so that many
// appends at once spread out rather than collide again.
const apndTries = 12

// minComposePart is S3's smallest part but the last; maxStreamedAppend
// is the most a compose streamed through hoard takes with such an old
// object (its one part stays below S3's 5 GiB).
const (
	minComposePart    = 5 << 20
	maxStreamedAppend = 4 << 30
)

// apndArea is where the bodies of appends are staged, below the prefix.
const apndArea = HistName + "/apnd/"

// appendObject appends body to the object opt.Name in folder d (checked
// by the caller). ok is false when there is no such object: the caller
// uploads it as a new file.
func (v *Volume) appendObject(ctx context.Context, d string, body io.Reader, h hash.Hash, opt IngestOptions) (res IngestResult, ok bool, err error) {
	rel := path.Join(d, opt.Name)
	fi, err := v.objStat(ctx, rel)
	switch {
	case errors.Is(err, ErrNotFound):
		return res, false, nil
	case err != nil:
		return res, true, err
	case fi.IsDir():
		return res, true, ErrIsDir
	}
	cur := fi.(objectFileInfo).oi
	now := v.store.now()
	meta := map[string]string{"hoard-uploader": opt.Uploader, "hoard-ip": opt.ClientIP, "hoard-at": now.UTC().Format(time.RFC3339Nano)}
	if at, ok := cur.Meta["hoard-expires"]; ok {
		meta["hoard-expires"] = at // the same file: its lifetime holds (objlife.go)
	}
	sr := &sizedReader{r: body, h: h, min: v.Flags().SzMin, max: v.Flags().SzMax, want: opt.Size}
	src, stop := encoded(sr, opt.Encode)
	defer stop()
	raced := func(err error) error {
		return &Error{Kind: KindConflict, Msg: "the file changed while it was being appended to (another append?); nothing was appended, try again", Err: err}
	}
	var b [12]byte
	rand.Read(b[:])
	o, _ := v.Outer()
	stage := o.objPre + apndArea + hex.EncodeToString(b[:])
	staged, err := v.obj.Put(ctx, stage, src, ObjectPut{NoClobber: true})
	if sr.err != nil {
		return res, true, sr.err
	}
	if err != nil {
		return res, true, err
	}
	defer v.obj.Delete(context.WithoutCancel(ctx), stage)
	var oi ObjectInfo
	for try := 1; ; try++ {
		if cur.Size < minComposePart && staged.Size > maxStreamedAppend {
			return res, true, unbuilt("appending more than 4 GiB at once to a file under 5 MiB")
		}
		oi, err = v.obj.Compose(ctx, cur.Key, []ObjectInfo{cur, staged}, ObjectPut{IfMatch: cur.ETag, Meta: meta})
		if err == nil {
			break
		}
		lost := errors.Is(err, ErrExists) || errors.Is(err, ErrNotFound)
		if !lost {
			return res, true, err
		}
		if try == apndTries {
			return res, true, raced(err)
		}
		// Another append (or a replace) won: append to what it left.
		var jitter [1]byte
		rand.Read(jitter[:])
		select {
		case <-time.After(time.Duration(try) * time.Duration(jitter[0]) * 200 * time.Microsecond):
		case <-ctx.Done():
			return res, true, ctx.Err()
		}
		if cur, err = v.obj.Stat(ctx, cur.Key); err != nil {
			if errors.Is(err, ErrNotFound) {
				return res, true, raced(err)
			}
			return res, true, err
		}
	}
	v.store.log.Info("appended", "volume", "/"+v.VPath, "key", oi.Key, "bytes", sr.n)
	v.store.emit(Event{Kind: Created, Vol: v, Rel: rel, Size: oi.Size, Mtime: oi.ModTime, At: now, Uploader: opt.Uploader, ClientIP: opt.ClientIP})
	res = IngestResult{Rel: rel, Size: sr.n, Time: now, Info: objectFileInfo{oi}}
	if h != nil {
		res.Sum = h.Sum(nil)
	}
	return res, true, nil
}

// encoded is r through the compressor enc when there is one (a pipe fed
// by a goroutine); stop ends that goroutine.
func encoded(r io.Reader, enc func(io.Writer) (io.WriteCloser, error)) (io.Reader, func()) {
	if enc == nil {
		return r, func() {}
	}
	pr, pw := io.Pipe()
	go func() {
		e, err := enc(pw)
		if err == nil {
			_, err = io.Copy(e, r)
			if cerr := e.Close(); err == nil {
				err = cerr
			}
		}
		pw.CloseWithError(err)
	}()
	return pr, func() { pr.Close() }
}

package media

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"hoard/store"
)

// On a volume on object storage (docs/s3.md) the source is an object.
// An image is decoded straight from it by ranged GETs (its header, then
// the picture: two GETs, no copy). FFmpeg (video and audio thumbnails,
// waveforms, transcodes) gets a copy of the object in the state folder's
// thumbnail work area, made inside the job (so at most one per worker),
// removed when the job ends, and swept at start after a crash: FFmpeg
// needs a seekable file (an MP4's index may be at its end, -ss seeks),
// and letting it fetch the object itself would mean opening its http
// protocol, and a signed URL, to files it parses. The copy is bounded by
// MaxObjectCopy; a larger object gets the icon (a thumbnail) or a clear
// refusal (a transcode). The cache is keyed by the object's ETag, so a
// replaced object gets a new thumbnail.

// errObjectTooLarge is an object over Config.MaxObjectCopy that FFmpeg
// would need a copy of.
var errObjectTooLarge = &store.Error{Kind: store.KindUnsupported, Msg: "the file is too large to convert from object storage"}

// defaultObjectCopy is MaxObjectCopy's default.
const defaultObjectCopy = 2 << 30

// etagOf is the ETag of an object's FileInfo, "" for a file on disk.
func etagOf(fi fs.FileInfo) string {
	if oi, ok := store.ObjectOf(fi); ok {
		return oi.ETag
	}
	return ""
}

// openObject opens the object of j for conversion: with direct, a
// reader by ranged GETs (src nil); else a copy in the cache's work area.
// done releases what it opened.
func (s *Service) openObject(ctx context.Context, j *job, direct bool) (src *os.File, rs io.ReadSeeker, fi fs.FileInfo, done func(), err error) {
	rc, fi, err := j.rq.Vol.OpenObject(ctx, j.rq.Rel)
	if err != nil {
		if errors.Is(err, store.ErrIsDir) {
			err = cannot("a folder")
		}
		return nil, nil, nil, nil, err
	}
	if etagOf(fi) != etagOf(j.rq.Info) {
		rc.Close()
		return nil, nil, nil, nil, errChangedWhile
	}
	if direct {
		return nil, rc, fi, func() { rc.Close() }, nil
	}
	defer rc.Close()
	max := s.cfg.MaxObjectCopy
	if max <= 0 {
		max = defaultObjectCopy
	}
	if fi.Size() > max {
		if j.rq.Params.Kind == KindThumb {
			return nil, nil, nil, nil, cannot("%d bytes: over the %d bytes copied from object storage for FFmpeg", fi.Size(), max)
		}
		return nil, nil, nil, nil, fmt.Errorf("%w (%d bytes; at most %d)", errObjectTooLarge, fi.Size(), max)
	}
	f, name, err := j.c.create()
	if err != nil {
		return nil, nil, nil, nil, err
	}
	release := func() { f.Close(); j.c.remove(name) }
	n, err := io.Copy(f, io.LimitReader(rc, fi.Size()+1))
	if err == nil && n != fi.Size() {
		err = fmt.Errorf("%w: the object had %d bytes, not %d", errChangedWhile, n, fi.Size())
	}
	if err == nil {
		_, err = f.Seek(0, io.SeekStart)
	}
	if err != nil {
		release()
		return nil, nil, nil, nil, err
	}
	return f, f, fi, release, nil
}

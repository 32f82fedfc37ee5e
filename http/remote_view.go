package http

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"time"

	"hoard/store"
)

// objectView is fileView for an object of a volume on object storage
// (docs/s3.md): the same modifiers, in the same order, reading the object
// by ranged GETs (store.ObjectReader) where a local file is read at
// offsets.
func (s *Server) objectView(q *req, body *store.ObjectReader, fi fs.FileInfo) error {
	switch {
	case has(q.query, "tail"):
		return s.objectTail(q, body, fi)
	case has(q.query, "zls"):
		return zlsOf(q, body, fi.Size())
	case has(q.query, "zget"):
		return zgetOf(q, body, fi.Size())
	}
	if done, err := viewPage(q, body, fi); done {
		return err
	}
	delete(q.query, "v") // nothing to render: the object itself
	if _, err := body.Seek(0, io.SeekStart); err != nil {
		return err
	}
	return s.serveObject(q, body, fi)
}

// tailKeep is how many of the last bytes sent an object tail keeps, to
// tell an object that grew (hoard's append writes the old bytes and the
// new ones as a new version) from one replaced by other, longer content.
const tailKeep = 4 << 10

// objectTail is ?tail of an object. Objects do not grow in place: a new
// version replaces the old one. So the object is sent from the start
// offset to its end, then its key is looked at every tailRestat (a HEAD):
// a version of the same ETag is unchanged; a longer one whose bytes
// before the old end are those sent is taken as grown, and its new
// bytes follow (by a ranged GET of that version); anything else — gone,
// shorter, as long with other bytes, longer with other bytes — ends the
// stream, as a delete, truncation or replacement of a file on disk
// does. A store that cannot be reached ends it too (the client may come
// back with ?tail=OFFSET).
func (s *Server) objectTail(q *req, body *store.ObjectReader, fi fs.FileInfo) error {
	start, ctx, w, end, err := s.tailBegin(q, fi.Size())
	if err != nil || w == nil {
		return err
	}
	defer end()
	oi, _ := store.ObjectOf(fi)
	etag, size := oi.ETag, fi.Size()
	buf := make([]byte, tailBufSize)
	pos := start
	var last []byte // the last bytes sent, at most tailKeep
	cur := body
	defer func() {
		if cur != body {
			cur.Close()
		}
	}()
	for {
		for pos < size && ctx.Err() == nil {
			n, err := cur.ReadAt(buf[:min(int64(len(buf)), size-pos)], pos)
			if n > 0 {
				if _, werr := w.Write(buf[:n]); werr != nil {
					return nil // the client left
				}
				pos += int64(n)
				last = append(last, buf[:n]...)
				last = last[max(0, len(last)-tailKeep):]
			}
			if err != nil && !errors.Is(err, io.EOF) || n == 0 {
				return nil // the version went, or the store failed
			}
		}
		w.rc.Flush()
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(tailRestat):
		}
		st, err := q.vol.ObjectStat(ctx, q.rel)
		if err != nil {
			return nil // deleted, or the store is down
		}
		if st.ETag == etag {
			continue
		}
		if st.Size <= pos {
			return nil // truncated or replaced
		}
		next, nfi, err := q.vol.OpenObjectAt(ctx, q.rel)
		if err != nil {
			return nil
		}
		nsize := nfi.Size()
		was := make([]byte, len(last))
		if nsize <= pos {
			next.Close()
			return nil
		}
		if n, err := next.ReadAt(was, pos-int64(len(last))); n != len(was) || !bytes.Equal(was, last) {
			_ = err
			next.Close()
			return nil // other content, not grown
		}
		if cur != body {
			cur.Close()
		}
		noi, _ := store.ObjectOf(nfi)
		cur, etag, size = next, noi.ETag, nsize
	}
}

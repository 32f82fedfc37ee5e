package http

import (
	"errors"
	"io"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"sync"

	"hoard/store"
)

// getObject serves GET and HEAD on a volume whose files are objects in an
// object store (store's flag s3=, docs/s3.md): files by ranged reads of
// the object, with its ETag and LastModified as validators, and folder
// listings, folder archives (streamed from the objects: arch/objects.go),
// thumbnails and transcodes (?th, media/object.go), ?txt and the file
// views (?tail, ?zls, ?zget, ?v: remote_view.go).
func (s *Server) getObject(q *req) error {
	body, fi, err := q.vol.OpenObjectAt(q.r.Context(), q.rel)
	if errors.Is(err, store.ErrIsDir) {
		if has(q.query, "th") {
			return s.folderThumb(q)
		}
		if wantsArchive(q) {
			return s.archive(q, nil) // streamed from the objects (arch/objects.go)
		}
		return s.folder(q)
	}
	if err != nil {
		if errors.Is(err, store.ErrNotDir) || errors.Is(err, store.ErrOutside) {
			err = store.ErrNotFound
		}
		if errors.Is(err, store.ErrNotFound) && !q.share && len(s.st.MountsBelow(q.parts)) > 0 {
			return s.virtualFolder(q)
		}
		if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrReserved) {
			return errorf(http.StatusNotFound, "not found: /%s", strings.Join(q.parts, "/"))
		}
		return err
	}
	defer body.Close()
	if has(q.query, "th") {
		return s.thumb(q, fi) // media reads the object itself (media/object.go)
	}
	return s.serveObject(q, body, fi)
}

// getObjectByURL is getByURL on an object-store volume: what g (and h)
// grant without r, the file at the exact URL and with h a folder's
// index.html. done is false when there is no such thing to serve. Under
// volume flag fk the file's key is checked as on disk (getByURL).
func (s *Server) getObjectByURL(q *req) (done bool, err error) {
	ctx := q.r.Context()
	body, fi, err := q.vol.OpenObjectAt(ctx, q.rel)
	if errors.Is(err, store.ErrIsDir) && q.perm.Has(store.PermHTML) && !has(q.query, "th") && !has(q.query, "ls") && !has(q.query, "tree") {
		rel := path.Join(q.rel, "index.html")
		body, fi, err = q.vol.OpenObjectAt(ctx, rel)
		if err == nil && !q.slash && q.keyOK(rel, fi) {
			body.Close()
			http.Redirect(q.w, q.r, q.loc+"/"+escapePath(strings.Join(q.parts, "/"))+"/", http.StatusMovedPermanently)
			return true, nil
		}
		if err == nil {
			q.rel, q.parts = rel, append(q.parts, "index.html")
		}
	}
	if store.KindOf(err) == store.KindUnavailable {
		return true, err // the store is down: say so, whatever is there
	}
	if err != nil {
		return false, nil
	}
	defer body.Close()
	if !q.keyOK(q.rel, fi) {
		return false, nil
	}
	if has(q.query, "th") {
		return true, s.thumb(q, fi)
	}
	return true, s.serveObject(q, body, fi)
}

// serveObject sends one object, as serveFile sends a file.
func (s *Server) serveObject(q *req, body *store.ObjectReader, fi fs.FileInfo) error {
	if !q.perm.Any(store.PermRead|store.PermGet) || !q.keyOK(q.rel, fi) {
		return q.denyRead()
	}
	if fileView(q.query) != nil {
		return s.objectView(q, body, fi) // remote_view.go
	}
	oi, _ := store.ObjectOf(fi)
	name := path.Base("/" + q.rel)
	ct, pol, err := q.fileType(name)
	if err != nil {
		return err
	}
	if t, ok := q.query["txt"]; ok {
		tct, enc, err := txtType(t[0], body, fi.Size())
		if err != nil {
			return err
		}
		if enc != nil {
			return s.txtTranscode(q, body, tct, enc)
		}
		ct, pol = tct, policyOf(tct, false)
	}
	disp := "inline"
	if dl, ok := q.query["dl"]; ok {
		disp = "attachment"
		if dl[0] != "" {
			name = path.Base("/" + strings.ReplaceAll(dl[0], "\\", "/"))
		}
	}
	h := q.w.Header()
	h.Set("Content-Disposition", contentDisposition(pol.apply(h, ct, disp), name))
	if oi.ETag != "" {
		h.Set("ETag", `"`+oi.ETag+`"`)
	}
	h.Set("Accept-Ranges", "bytes")
	h.Set("Cache-Control", "no-cache")
	if rg := q.r.Header.Get("Range"); strings.Count(rg, ",") >= s.maxRanges || fi.Size() == 0 {
		q.r.Header.Del("Range") // as serveFile
	}
	if q.r.Method == http.MethodGet {
		defer s.download()()
		if fi.Size() >= dlsMin {
			q.w.dl = s.dls.start(q, fi.Size(), "")
			defer s.dls.done(q.w.dl)
		}
	}
	http.ServeContent(objWriter{q.w}, q.r, "", fi.ModTime(), body)
	return nil
}

// objWriter sends an object's bytes in large writes. Without it net/http
// copies a body that is not a file 32 KiB at a time (a read from the
// store's connection and a write to the client's, each a system call),
// which held a large GET from the object store to a fraction of what the
// store gives a direct client.
type objWriter struct{ *respWriter }

var objCopyBufs = sync.Pool{New: func() any { b := make([]byte, 1<<20); return &b }}

func (w objWriter) ReadFrom(r io.Reader) (int64, error) {
	bp := objCopyBufs.Get().(*[]byte)
	defer objCopyBufs.Put(bp)
	return io.CopyBuffer(struct{ io.Writer }{w.respWriter}, r, *bp)
}

package http

import (
	"errors"
	"net/http"
	"path"
	"strings"

	"hoard/store"
)

// getObject serves GET and HEAD on a volume whose files are objects in an
// object store (store's flag s3=, docs/s3.md): files by ranged reads of
// the object, with its ETag and LastModified as validators, and folder
// listings. What is not built for such volumes yet (archives,
// thumbnails, file views) is store.ErrObjectsUnbuilt (501), answered
// before anything is read.
func (s *Server) getObject(q *req) error {
	notYet := wantsArchive(q) || has(q.query, "th") || has(q.query, "txt") || fileView(q.query) != nil
	body, fi, err := q.vol.OpenObject(q.r.Context(), q.rel)
	if errors.Is(err, store.ErrIsDir) {
		if notYet {
			return store.ErrObjectsUnbuilt
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
	if notYet {
		return store.ErrObjectsUnbuilt
	}
	oi, _ := store.ObjectOf(fi)
	name := path.Base("/" + q.rel)
	ct, pol, err := q.fileType(name)
	if err != nil {
		return err
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
	http.ServeContent(q.w, q.r, "", fi.ModTime(), body)
	return nil
}

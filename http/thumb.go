package http

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"path"
	"strings"

	"hoard/media"
	"hoard/store"
)

// thumb answers ?th: a thumbnail, waveform or transcode of the file,
// from media's cache or made now. The response says how in
// X-Hoard-Thumb: cached, made, shared (joined an identical request's job)
// or icon (the file cannot be thumbnailed).
func (s *Server) thumb(q *req, fi fs.FileInfo) error {
	if !q.perm.Any(store.PermRead|store.PermGet) || !q.keyOK(q.rel, fi) {
		return q.denyRead()
	}
	p, err := parseTh(q)
	if err != nil {
		return err
	}
	if s.media == nil {
		return errNoThumbs
	}
	name := path.Base("/" + q.rel)
	res, err := s.media.Get(q.r.Context(), media.Request{Vol: q.vol, Rel: q.rel, Info: fi, Params: p})
	switch {
	case err != nil && p.Kind == media.KindThumb && store.KindOf(err) == store.KindInternal:
		// A failed conversion (ffmpeg error or timeout) gets the icon,
		// as a file that cannot be thumbnailed does; the log has why.
		s.log.Info("thumbnail failed", "id", q.id, "path", q.r.URL.Path, "err", err)
		res = &media.Result{Icon: true, Reason: "conversion failed"}
	case err != nil:
		return err
	}
	defer res.Close()
	h := q.w.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-cache")
	if res.Icon {
		h.Set("X-Hoard-Thumb", "icon")
		h.Set("Content-Type", "image/svg+xml")
		h.Set("Content-Security-Policy", "sandbox")
		body := media.Icon(name)
		h.Set("Content-Length", itoa(len(body)))
		q.w.WriteHeader(http.StatusOK)
		if q.r.Method != http.MethodHead {
			q.w.Write(body)
		}
		return nil
	}
	h.Set("X-Hoard-Thumb", string(res.How))
	h.Set("Content-Type", res.Format.ContentType())
	h.Set("Content-Disposition", contentDisposition("inline", strings.TrimSuffix(name, path.Ext(name))+"."+res.Format.Ext()))
	if res.Stream != nil {
		// Still being written: send it as it grows, chunked. The first
		// bytes are awaited before the status goes out, so a conversion
		// that fails at once gets a proper error; a later error cuts the
		// response (see fail).
		buf := make([]byte, 32<<10)
		n, err := io.ReadAtLeast(res.Stream, buf, 1)
		if err != nil && err != io.EOF {
			if q.r.Context().Err() != nil {
				return q.r.Context().Err()
			}
			return &store.Error{Kind: store.KindInternal, Msg: "transcoding " + name + " failed", Err: err}
		}
		q.w.WriteHeader(http.StatusOK)
		if q.r.Method == http.MethodHead {
			return nil
		}
		if _, err := q.w.Write(buf[:n]); err != nil {
			return err
		}
		if _, err := io.Copy(writerOnly{q.w}, res.Stream); err != nil {
			if q.r.Context().Err() != nil {
				return q.r.Context().Err() // the client left
			}
			return err
		}
		return nil
	}
	cfi, err := res.File.Stat()
	if err != nil {
		return err
	}
	h.Set("ETag", etag(cfi))
	h.Set("Accept-Ranges", "bytes")
	http.ServeContent(q.w, q.r, "", res.ModTime, &sizedFile{File: res.File, size: res.Size})
	return nil
}

// folderCovers are the names a folder's ?th looks for, in order
// (copyparty's --th-covers).
var folderCovers = []string{"folder.png", "folder.jpg", "cover.png", "cover.jpg"}

// folderThumb answers ?th on a folder: the thumbnail of its cover picture
// when it has one, else a folder icon.
func (s *Server) folderThumb(q *req) error {
	if !q.perm.Has(store.PermRead) {
		return q.denyRead()
	}
	for _, c := range folderCovers {
		rel := path.Join(q.rel, c)
		if fi, err := q.vol.Stat(rel); err == nil && fi.Mode().IsRegular() {
			q.rel = rel
			return s.thumb(q, fi)
		}
	}
	if _, err := parseTh(q); err != nil {
		return err
	}
	h := q.w.Header()
	h.Set("X-Hoard-Thumb", "icon")
	h.Set("Content-Type", "image/svg+xml")
	h.Set("Content-Security-Policy", "sandbox")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-cache")
	body := media.Icon("folder.folder")
	h.Set("Content-Length", itoa(len(body)))
	q.w.WriteHeader(http.StatusOK)
	if q.r.Method != http.MethodHead {
		q.w.Write(body)
	}
	return nil
}

func itoa(n int) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			return string(b[i:])
		}
	}
}

// errNoThumbs: this server was started without the media service.
var errNoThumbs = &store.Error{Kind: store.KindDisabled, Msg: "thumbnails are not enabled on this server"}

// parseTh decodes ?th, naming the parameter in its error.
func parseTh(q *req) (media.Params, error) {
	p, err := media.ParseTh(q.query.Get("th"))
	var pe *media.ParamError
	if errors.As(err, &pe) {
		return p, &httpError{code: http.StatusBadRequest, msg: fmt.Sprintf("bad ?th value %q: %s", pe.Value, pe.Why), err: err}
	}
	return p, err
}

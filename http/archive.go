package http

import (
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"hoard/arch"
	"hoard/media"
	"hoard/store"
)

// wantsArchive reports whether the query asks for an archive (?tar, ?zip).
func wantsArchive(q *req) bool { return has(q.query, "tar") || has(q.query, "zip") }

// archive answers GET /<folder>/?tar[=fmt] and ?zip[=fmt] (sel == nil:
// the whole folder, wrapped in a folder of its name) and POST selections
// (sel: names relative to the folder, no wrapper). Everything is resolved
// and checked before the first byte goes out; after that, a failure cuts
// the transfer (fail panics with http.ErrAbortHandler once headers are
// sent), so a client never takes an incomplete archive for a whole one.
func (s *Server) archive(q *req, sel []string) error {
	// A folder of URLs only (no volume has it, volumes are mounted below
	// it) is archived as the volumes below it that the user may read.
	virtual := q.vol == nil
	if !virtual {
		if err := q.need(store.PermRead, "download archives"); err != nil {
			return err
		}
	}
	f, err := archiveFormat(q)
	if err != nil {
		return err
	}
	if f.Mod != "" && s.media == nil {
		return errorf(http.StatusNotImplemented, "archive modifier %s needs the media support, not built yet", f.Mod)
	}
	if !virtual {
		fi, err := q.vol.Stat(q.rel)
		switch {
		case errors.Is(err, store.ErrNotFound) && len(s.st.MountsBelow(q.parts)) > 0:
			virtual = true
		case err != nil:
			return err
		case !fi.IsDir():
			return errorf(http.StatusBadRequest, "?tar and ?zip apply to folders; /%s is a file", strings.Join(q.parts, "/"))
		}
	}
	if virtual {
		if err := s.needMountRead(q); err != nil {
			return err
		}
	}
	if f.Heavy() {
		select {
		case s.archSem <- struct{}{}:
			defer func() { <-s.archSem }()
		default:
			q.w.Header().Set("Retry-After", "5")
			return errorf(http.StatusServiceUnavailable, "every core is compressing an archive already (--arch-mt %d); retry shortly", cap(s.archSem))
		}
	}

	ctx := q.r.Context()
	wk := &arch.Walker{Vol: q.vol, Dots: q.perm.Has(store.PermDot) && !has(q.query, "nodot"), Mounts: arch.MountsOf(s.st, q.user, q.share, has(q.query, "nodot"))}
	if virtual {
		wk.Vol, wk.Dots = nil, false // no volume, no . permission here (copyparty's rule)
	}
	base, prefix := s.archiveBase(q), ""
	if sel == nil {
		prefix = strings.TrimLeft(base, ".")
		if prefix == "" || len(q.parts) == 0 {
			prefix = "top"
		}
		prefix += "/"
		if virtual {
			err = wk.AddMounts(ctx, strings.Join(q.parts, "/"), prefix)
		} else {
			err = wk.AddFolder(ctx, q.rel, prefix)
		}
		if err != nil {
			return err
		}
	} else {
		base = "sel-" + base
		sc := arch.Scope{Store: s.st, Vol: q.vol, Rel: q.rel, Parts: q.parts, Share: q.share, User: q.user, NoDot: has(q.query, "nodot")}
		if err := wk.Select(ctx, sc, sel); err != nil {
			return err
		}
	}
	if ef, ok := wk.ErrorsFile(prefix, time.Now()); ok {
		wk.Files = append(wk.Files, ef)
		s.log.Warn("archive: some files could not be read", "id", q.id, "path", q.r.URL.Path, "problems", len(wk.Errs))
	}

	h := q.w.Header()
	h.Set("Content-Type", f.ContentType())
	h.Set("Content-Disposition", contentDisposition("attachment", base+"."+f.Ext()))
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	if f.Sized() {
		n, err := arch.Size(f, wk.Files)
		if err != nil {
			return err
		}
		h.Set("Content-Length", strconv.FormatInt(n, 10))
	}
	q.w.WriteHeader(http.StatusOK)
	if q.r.Method == http.MethodHead {
		return nil
	}
	// Headers go out now: net/http's ReadFrom then skips its sniffing copy
	// and the first large body goes by sendfile(2) from its start.
	http.NewResponseController(q.w).Flush()
	q.w.dl = s.dls.start(q, 0, " :"+f.Ext()) // listed by ?dls
	defer s.dls.done(q.w.dl)
	defer s.download()()
	start := time.Now()
	if err := arch.Write(ctx, q.w, f, wk.Files, archOptions(s.media)); err != nil {
		return err
	}
	s.log.Debug("archive sent", "id", q.id, "path", q.r.URL.Path, "format", f.Ext(), "files", len(wk.Files), "bytes", q.w.n, "dur", time.Since(start))
	return nil
}

// needMountRead checks, for a folder of URLs only, that the user may read
// a volume mounted below it.
func (s *Server) needMountRead(q *req) error {
	url := strings.Join(q.parts, "/")
	below := false
	for _, v := range s.st.Volumes() {
		if url == "" && v.VPath != "" || strings.HasPrefix(v.VPath, url+"/") {
			below = true
			if v.Perms(q.user).Has(store.PermRead) {
				return nil
			}
		}
	}
	switch {
	case !below:
		return errorf(http.StatusNotFound, "not found: /%s", url)
	case q.user == "":
		return errUnauthorized
	}
	return errorf(http.StatusForbidden, "user %s may read no volume below /%s", q.user, url)
}

// archiveFormat reads ?tar= or ?zip= and the modifier keys; of several
// modifiers the last in copyparty's order (opus, mp3, w, j, p) wins.
func archiveFormat(q *req) (arch.Format, error) {
	var f arch.Format
	var err error
	if v, ok := q.query["tar"]; ok {
		f, err = arch.ParseTar(v[0])
	} else {
		f, err = arch.ParseZip(q.query.Get("zip"))
	}
	if err != nil {
		return f, err
	}
	for _, m := range []string{"opus", "mp3", "w", "j", "p"} {
		if has(q.query, m) {
			f.Mod = m
		}
	}
	return f, nil
}

// archiveBase is the archive's file name without extension: the folder's
// name, or the host's at the top of the server (copyparty's rule).
func (s *Server) archiveBase(q *req) string {
	if len(q.parts) > 0 {
		return q.parts[len(q.parts)-1]
	}
	host := q.host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	if host == "" {
		return "top"
	}
	return host
}

// maxSelection bounds a selection body (copyparty's limit on its files
// field): a larger one is 413 and no archive.
const maxSelection = 1 << 20

// archivePost reads a selection, as the spec's JSON array of names or as
// copyparty's multipart form (act=zip, then files: one URL-quoted name a
// line), and answers with the archive of those entries.
func (s *Server) archivePost(q *req) error {
	if q.vol == nil {
		if err := s.needMountRead(q); err != nil {
			return err
		}
	} else if err := q.need(store.PermRead, "download archives"); err != nil {
		return err
	}
	var names []string
	var err error
	ct := strings.ToLower(q.r.Header.Get("Content-Type"))
	if strings.HasPrefix(ct, "multipart/form-data") {
		names, err = selectionForm(q)
	} else {
		names, err = selectionJSON(q)
	}
	if err != nil {
		return err
	}
	if len(names) == 0 {
		return errorf(http.StatusBadRequest, "the selection is empty")
	}
	return s.archive(q, names)
}

// readLimited reads one field of a selection form (at most maxSelection
// bytes).
func readLimited(r io.Reader) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxSelection+1))
	if err != nil {
		if err := bodyErr(err, "the selection", maxSelection); isHTTPError(err) {
			return nil, err
		}
		return nil, errorf(http.StatusBadRequest, "reading the selection: %v", err)
	}
	if len(b) > maxSelection {
		return nil, tooBig("the selection", maxSelection)
	}
	return b, nil
}

func selectionJSON(q *req) ([]string, error) {
	body, err := q.readWhole(maxSelection, "the selection")
	if err != nil {
		return nil, err
	}
	var names []string
	if err := json.Unmarshal(body, &names); err != nil || names == nil {
		return nil, errorf(http.StatusBadRequest, "the selection must be a JSON array of strings (names relative to the folder)")
	}
	return names, nil
}

func selectionForm(q *req) ([]string, error) {
	// The whole form is bounded like a JSON selection (its fields, not
	// only each one), and read within one deadline.
	q.r.Body = http.MaxBytesReader(q.w, q.r.Body, maxSelection+64<<10)
	lift := q.wholeBody()
	mr, err := q.r.MultipartReader()
	if err != nil {
		return nil, errorf(http.StatusBadRequest, "bad multipart body: %v", err)
	}
	var names []string
	first, seen := true, false
	for {
		p, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if err := bodyErr(err, "the selection", maxSelection); isHTTPError(err) {
				return nil, err
			}
			return nil, errorf(http.StatusBadRequest, "bad multipart body: %v", err)
		}
		v, err := readLimited(p)
		if err != nil {
			return nil, err
		}
		switch {
		case first && (p.FormName() != "act" || string(v) != "zip"):
			return nil, errorf(http.StatusBadRequest, `a selection form starts with the field act=zip`)
		case p.FormName() == "files":
			seen = true
			for _, line := range strings.Split(string(v), "\n") {
				line = strings.TrimSuffix(line, "\r")
				if line == "" {
					continue
				}
				name, err := url.PathUnescape(line)
				if err != nil {
					return nil, errorf(http.StatusBadRequest, "bad URL quoting in the selection: %q", line)
				}
				names = append(names, name)
			}
		}
		first = false
	}
	lift()
	if !seen {
		return nil, errorf(http.StatusBadRequest, `the selection form has no "files" field`)
	}
	return names, nil
}

// archOptions serves the archive modifiers (opus, mp3, j, w, p) through
// the media service, when there is one.
func archOptions(m *media.Service) arch.Options {
	if m == nil {
		return arch.Options{}
	}
	return arch.Options{Transform: m.Transform}
}

package http

import (
	"errors"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path"
	"strconv"
	"strings"
	"time"

	"hoard/store"
)

// get serves GET and HEAD: files, folder listings, trees. The path is
// resolved once: the opened file is what gets served.
func (s *Server) get(q *req) error {
	if q.vol == nil {
		return s.virtualFolder(q)
	}
	if !q.perm.Has(store.PermRead) {
		return s.getBlind(q)
	}
	if q.vol.Remote() {
		return s.getObject(q) // remote.go
	}
	f, fi, err := q.vol.Open(q.rel)
	if errors.Is(err, store.ErrIsDir) {
		if _, ok := q.query["th"]; ok {
			return s.folderThumb(q)
		}
		if wantsArchive(q) {
			return s.archive(q, nil)
		}
		return s.folder(q)
	}
	if err != nil {
		if errors.Is(err, store.ErrNotDir) || errors.Is(err, store.ErrOutside) {
			err = store.ErrNotFound
		}
		if errors.Is(err, store.ErrNotFound) && !q.share && len(s.st.MountsBelow(q.parts)) > 0 {
			return s.virtualFolder(q) // a folder on the way to a mount
		}
		if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrReserved) {
			return errorf(http.StatusNotFound, "not found: /%s", strings.Join(q.parts, "/"))
		}
		return err
	}
	defer f.Close()
	if _, ok := q.query["th"]; ok {
		return s.thumb(q, fi)
	}
	return s.serveFile(q, f, fi)
}

// getBlind answers a GET or HEAD by someone who may not read here (no r):
// what exists is none of their business, so no answer may depend on it.
// What the other permissions grant: g a regular file by its exact URL
// (with its key, under fk), h also a folder's index.html, w an upload page
// and an empty listing at any folder URL, whether or not the folder exists
// yet (an upload makes it). Everything else, archives and thumbnails
// included, gets q.denyRead, whatever is or is not there.
func (s *Server) getBlind(q *req) error {
	if q.perm.Has(store.PermGet) && !wantsArchive(q) {
		if done, err := s.getByURL(q); done {
			return err
		}
	}
	if q.perm.Has(store.PermWrite) && !wantsArchive(q) && !has(q.query, "th") {
		mounts := !q.share && len(s.st.MountsBelow(q.parts)) > 0 // by the mount table, not the disk
		if q.rel == "" || q.slash || has(q.query, "ls") || has(q.query, "tree") || mounts {
			return s.folder(q) // lists nothing of the volume without r
		}
	}
	return q.denyRead()
}

// getByURL serves what g (and h) grant without r: the regular file at the
// exact URL, with its key under fk, and with h a folder's index.html.
// done is false when there is no such thing to serve; the caller then
// answers as if nothing were there.
func (s *Server) getByURL(q *req) (done bool, err error) {
	if q.vol.Remote() {
		return s.getObjectByURL(q) // remote.go
	}
	f, fi, err := q.vol.Open(q.rel)
	rel := q.rel
	if errors.Is(err, store.ErrIsDir) && q.perm.Has(store.PermHTML) && !has(q.query, "th") && !has(q.query, "ls") && !has(q.query, "tree") {
		rel = path.Join(q.rel, "index.html")
		f, fi, err = q.vol.Open(rel)
		if err == nil && q.keyOK(rel, fi) && !q.slash {
			f.Close()
			http.Redirect(q.w, q.r, q.loc+"/"+escapePath(strings.Join(q.parts, "/"))+"/", http.StatusMovedPermanently)
			return true, nil
		}
	}
	if err != nil {
		return false, nil
	}
	defer f.Close()
	if !q.keyOK(rel, fi) {
		return false, nil
	}
	if rel != q.rel {
		q.rel, q.parts = rel, append(q.parts, "index.html")
	}
	if has(q.query, "th") {
		return true, s.thumb(q, fi)
	}
	return true, s.serveFile(q, f, fi)
}

// keyOK reports whether the request carries the file key that a user
// without r needs under volume flag fk (always true without fk).
func (q *req) keyOK(rel string, fi fs.FileInfo) bool {
	return q.vol.KeyOK(q.perm, rel, fi, q.query.Get("k"))
}

// denyRead is the one answer to someone who may not read here: the same
// status and message whatever is, or is not, at the path.
func (q *req) denyRead() error {
	switch {
	case q.share:
		return errorf(http.StatusForbidden, "this share does not let you read /%s", strings.Join(q.parts, "/"))
	case q.user == "":
		return errUnauthorized
	}
	return errorf(http.StatusForbidden, "user %s may not read /%s", q.user, strings.Join(q.parts, "/"))
}

// serveFile sends one open file. The body leaves through http.ServeContent
// with the *os.File itself, which net/http sends with sendfile(2).
func (s *Server) serveFile(q *req, f *os.File, fi fs.FileInfo) error {
	if !q.perm.Any(store.PermRead|store.PermGet) || !q.keyOK(q.rel, fi) {
		return q.denyRead()
	}
	query := q.query
	if view := fileView(query); view != nil {
		return view(s, q, f, fi)
	}
	name := path.Base("/" + q.rel)
	h := q.w.Header()
	ct, pol, err := q.fileType(name)
	if err != nil {
		return err
	}
	if t, ok := query["txt"]; ok {
		tct, enc, err := txtType(t[0], f, fi.Size())
		if err != nil {
			return err
		}
		if enc != nil {
			return s.txtTranscode(q, f, tct, enc)
		}
		ct, pol = tct, policyOf(tct, false)
	}
	disp := "inline"
	if dl, ok := query["dl"]; ok {
		disp = "attachment"
		if dl[0] != "" {
			name = path.Base("/" + strings.ReplaceAll(dl[0], "\\", "/"))
		}
	}
	disp = pol.applyRest(h, disp)
	h["Cache-Control"] = hvNoCache
	if rg := q.r.Header.Get("Range"); strings.Count(rg, ",") >= s.maxRanges || fi.Size() == 0 {
		// Too many ranges: the whole file instead. An empty file has no
		// byte to range over (net/http would send "bytes 0--1/0").
		q.r.Header.Del("Range")
	}
	start, n, code, plain := plainRange(q.r, fi.Size())
	// A corked body is read in with pread; anything else is sent from
	// the file's offset (sendfile).
	pread := q.fconn != nil && n <= corkBody
	if plain && start != 0 && !pread && q.r.Method == http.MethodGet {
		if _, err := f.Seek(start, io.SeekStart); err != nil {
			plain = false
		}
	}
	v := &q.hv
	v.set(h, "Content-Type", ct)
	if !plain {
		h.Set("Content-Disposition", contentDisposition(disp, name))
		h.Set("ETag", etag(fi))
		h["Accept-Ranges"] = hvBytes
	}
	var w http.ResponseWriter = q.w
	fc := q.fconn
	if q.r.Method == http.MethodGet {
		defer s.download()()
		q.hf = headerFlusher{q.w, fc}
		w = &q.hf
		if fi.Size() >= dlsMin {
			q.w.dl = s.dls.start(q, fi.Size(), "")
			defer s.dls.done(q.w.dl)
		}
		if fc != nil {
			defer fc.uncork() // also when ServeContent panics
		}
	}
	if plain {
		servePlain(w, q.r, f, v, &q.pb, fi, disp, name, start, n, code, pread) // getplain.go
	} else {
		http.ServeContent(w, q.r, "", fi.ModTime(), &sizedFile{File: f, size: fi.Size()})
	}
	if fc != nil {
		// An error closed the connection; net/http finds out on its own,
		// as it does when a body's write fails.
		fc.uncork()
	}
	return nil
}

// fileType is the Content-Type of the file name, or the one ?mime= asks
// for, and how a body of that type must be sent.
func (q *req) fileType(name string) (string, bodyPolicy, error) {
	m, ok := q.query["mime"]
	if !ok {
		ct := contentType(name)
		return ct, typePolicy(ct), nil
	}
	ct, ok := parseMime(m[0])
	if !ok {
		return "", bodyPolicy{}, errorf(http.StatusBadRequest, "bad mime= value %q", m[0])
	}
	return ct, policyOf(ct, true), nil
}

// sizedFile answers http.ServeContent's size probe (seek to the end and
// back) from the Stat it already has, saving two lseek calls a request.
// Every other seek is real. It still is a syscall.Conn, which is what
// net's sendfile path looks for, so bodies still leave by sendfile(2).
type sizedFile struct {
	*os.File
	size  int64
	moved bool // the position may be other than 0
}

func (f *sizedFile) Seek(off int64, whence int) (int64, error) {
	switch {
	case off == 0 && whence == io.SeekEnd && !f.moved:
		f.moved = true // logically at the end now; the next seek decides
		return f.size, nil
	case off == 0 && whence == io.SeekStart && f.moved:
		f.moved = false // the real position never left 0
		return 0, nil
	}
	f.moved = true
	return f.File.Seek(off, whence)
}

// headerFlusher sends the headers the moment the status is set. Then
// net/http's ReadFrom skips its 512-byte sniffing copy (a read and a write
// of its own) and sendfile(2) sends the whole body from the page-aligned
// start of the file, which is measurably faster on large files.
// A small body's head is also corked (cork.go): it leaves with the body.
type headerFlusher struct {
	*respWriter
	fc *framingConn // nil: no corking
}

// corkBody is the largest body whose head is corked, and which is read
// and sent in one write with it: 64 KiB, the size of a range a client
// typically asks for (11% less server CPU per 64 KiB range than a head
// write and a sendfile, measured). Bigger bodies keep sendfile.
const corkBody = 64 << 10

func (h headerFlusher) WriteHeader(code int) {
	h.respWriter.WriteHeader(code)
	if code == http.StatusOK || code == http.StatusPartialContent {
		if h.fc != nil {
			if cl := h.Header()["Content-Length"]; len(cl) == 1 {
				if n, err := strconv.ParseInt(cl[0], 10, 64); err == nil && n <= corkBody {
					h.fc.corkFor(n)
				}
			}
		}
		http.NewResponseController(h.respWriter).Flush()
	}
}

// etag is a strong validator from the file's identity: inode, size and
// mtime in nanoseconds.
func etag(fi fs.FileInfo) string {
	return etagOf(inode(fi), fi.Size(), fi.ModTime())
}

// etagOf is the ETag of a file with inode number ino, size and mtime.
func etagOf(ino uint64, size int64, mtime time.Time) string {
	// Three base-36 numbers of at most 13 digits, two dashes, two
	// quotes; the string is the one allocation.
	var a [48]byte
	return string(appendETag(a[:0], ino, size, mtime))
}

// appendETag appends the ETag of etagOf to b.
func appendETag(b []byte, ino uint64, size int64, mtime time.Time) []byte {
	b = append(b, '"')
	b = strconv.AppendUint(b, ino, 36)
	b = append(b, '-')
	b = strconv.AppendInt(b, size, 36)
	b = append(b, '-')
	b = strconv.AppendInt(b, mtime.UnixNano(), 36)
	return append(b, '"')
}

// contentDisposition builds `<disp>; filename="<ascii>"; filename*=UTF-8”<pct>`
// in one allocation.
func contentDisposition(disp, name string) string {
	var a [512]byte // on the stack: the string is the one allocation (up to a long name)
	return string(appendContentDisposition(a[:0], disp, name))
}

// appendContentDisposition appends contentDisposition's text to b.
func appendContentDisposition(b []byte, disp, name string) []byte {
	b = append(b, disp...)
	b = append(b, `; filename="`...)
	for _, r := range name {
		if r >= 0x20 && r < 0x7f && r != '"' && r != '\\' && r != '%' {
			b = append(b, byte(r))
		} else {
			b = append(b, '_')
		}
	}
	b = append(b, `"; filename*=UTF-8''`...)
	const hex = "0123456789ABCDEF"
	for i := 0; i < len(name); i++ { // RFC 8187: attr-char as is, every other byte %XX
		if c := name[i]; 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("!#$&+-.^_`|~", c) >= 0 {
			b = append(b, c)
		} else {
			b = append(b, '%', hex[c>>4], hex[c&15])
		}
	}
	return b
}

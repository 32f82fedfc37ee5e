package http

import (
	"io"
	"io/fs"
	"net/http"
	"os"
	"strconv"
	"time"
)

// The plain download. Most GETs of a file carry no validator to check
// (no If-* header) and no range or one simple range ("bytes=a-b",
// "bytes=a-", "bytes=-n") that lies in the file. For those, http.ServeContent
// does little but set five headers (each a canonicalized key, a new
// []string and a new string: a fifth of a small GET's allocations) and
// seek. plainRange recognizes exactly those requests; serveFile then
// answers them itself with the same status, headers and body as
// ServeContent, from one string and one array of header values. Every
// other request (a validator, several ranges, a range that does not lie
// in the file, anything odd in the Range header) goes to ServeContent as
// before. The property test (getplain_test.go) holds the two to the same
// answer.

// unixEpoch is the mtime net/http does not send as Last-Modified.
var unixEpoch = time.Unix(0, 0)

// plainRange reports whether r is a plain download of a file of size
// bytes and, if so, the bytes to send: from start, n of them, with status
// 200 or 206 (a single range that lies in the file).
func plainRange(r *http.Request, size int64) (start, n int64, code int, ok bool) {
	h := r.Header
	for _, k := range [...]string{"If-Match", "If-None-Match", "If-Modified-Since", "If-Unmodified-Since", "If-Range"} {
		if _, has := h[k]; has {
			return 0, 0, 0, false
		}
	}
	rg, has := h["Range"]
	if !has {
		return 0, size, http.StatusOK, true
	}
	if len(rg) != 1 {
		return 0, 0, 0, false
	}
	start, n, ok = parsePlainRange(rg[0], size)
	return start, n, http.StatusPartialContent, ok
}

// parsePlainRange parses "bytes=a-b", "bytes=a-" or "bytes=-n" (plain
// decimal digits, nothing else) that lies in a file of size bytes, as
// net/http would: an end past the file is cut to it, a suffix longer than
// the file is the whole file. ok is false for everything else, including
// what net/http would answer 416 or ignore.
func parsePlainRange(s string, size int64) (start, n int64, ok bool) {
	const p = "bytes="
	if len(s) <= len(p) || s[:len(p)] != p || size <= 0 {
		return 0, 0, false
	}
	s = s[len(p):]
	i := 0
	for i < len(s) && s[i] != '-' {
		i++
	}
	if i == len(s) {
		return 0, 0, false
	}
	a, b := s[:i], s[i+1:]
	if a == "" { // a suffix: the last b bytes
		k, ok := digits(b)
		if !ok || k == 0 {
			return 0, 0, false
		}
		k = min(k, size)
		return size - k, k, true
	}
	x, ok := digits(a)
	if !ok || x >= size {
		return 0, 0, false
	}
	if b == "" {
		return x, size - x, true
	}
	y, ok := digits(b)
	if !ok || y < x {
		return 0, 0, false
	}
	y = min(y, size-1)
	return x, y - x + 1, true
}

// digits parses 1 to 18 ASCII digits (no sign, no blank).
func digits(s string) (int64, bool) {
	if s == "" || len(s) > 18 {
		return 0, false
	}
	var v int64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	return v, true
}

// hvals holds a request's header values (X-Request-Id and a download's):
// one allocation for all of them, or none, inside req.
type hvals struct {
	a [7]string
	n int
}

// set sets h[k] (k canonical) to s, a one-element slice of v's array.
func (v *hvals) set(h http.Header, k, s string) {
	if v.n == len(v.a) {
		h[k] = []string{s} // never with the headers above; still right
		return
	}
	v.a[v.n] = s
	h[k] = v.a[v.n : v.n+1 : v.n+1]
	v.n++
}

// plainBody is what a plain download's body is read through: the file
// from start (pread for a body that is read in with its head, so no
// seek; the file itself, at start, for sendfile), n bytes, in one
// allocation.
type plainBody struct {
	lr io.LimitedReader
	at fileAt
}

// fileAt reads f from off on with pread.
type fileAt struct {
	f   *os.File
	off int64
}

func (r *fileAt) Read(p []byte) (int, error) {
	n, err := r.f.ReadAt(p, r.off)
	r.off += int64(n)
	return n, err
}

// servePlain answers a plain download (plainRange) of f, described by
// fi: status code, n bytes from start. The caller has set every header
// but ETag, Content-Disposition (disp for the file name), Last-Modified,
// Content-Length and Content-Range. With pread the body is read from
// start with pread (a corked body, cork.go: no seek); else the caller has
// put the file's offset at start (for sendfile, which sends from there).
func servePlain(w http.ResponseWriter, r *http.Request, f *os.File, v *hvals, body *plainBody, fi fs.FileInfo, disp, name string, start, n int64, code int, pread bool) {
	h := w.Header()
	size, mtime := fi.Size(), fi.ModTime()
	// All the values in one string: etag, disposition, last-modified,
	// length, range.
	var a [512]byte
	b := appendETag(a[:0], inode(fi), size, mtime)
	e := len(b)
	b = appendContentDisposition(b, disp, name)
	d := len(b)
	lm := !mtime.IsZero() && !mtime.Equal(unixEpoch) // as net/http
	if lm {
		b = mtime.UTC().AppendFormat(b, http.TimeFormat)
	}
	m := len(b)
	b = strconv.AppendInt(b, n, 10)
	k := len(b)
	if code == http.StatusPartialContent {
		b = append(b, "bytes "...)
		b = strconv.AppendInt(b, start, 10)
		b = append(b, '-')
		b = strconv.AppendInt(b, start+n-1, 10)
		b = append(b, '/')
		b = strconv.AppendInt(b, size, 10)
	}
	all := string(b)
	v.set(h, "Etag", all[:e])
	v.set(h, "Content-Disposition", all[e:d])
	if lm {
		v.set(h, "Last-Modified", all[d:m])
	}
	if code == http.StatusPartialContent {
		v.set(h, "Content-Range", all[k:])
	}
	v.set(h, "Content-Length", all[m:k])
	h["Accept-Ranges"] = hvBytes
	w.WriteHeader(code)
	if r.Method == http.MethodHead || n == 0 {
		return
	}
	*body = plainBody{lr: io.LimitedReader{R: f, N: n}}
	if start != 0 && pread {
		body.at = fileAt{f: f, off: start}
		body.lr.R = &body.at
	}
	io.Copy(w, &body.lr)
}

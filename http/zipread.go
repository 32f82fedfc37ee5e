package http

import (
	"archive/zip"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Limits of ?zls and ?zget. A zip is read in place (archive/zip over the
// open *os.File, an io.ReaderAt); nothing is ever extracted to disk.
const (
	zipMaxName    = 4096    // bytes of a member name
	zgetMaxSize   = 4 << 30 // bytes of one member's output
	zgetMaxRatio  = 200     // uncompressed / compressed above this is a bomb…
	zgetRatioFrom = 1 << 20 // …once the member is larger than this
)

// zlsMaxMembers is how many members ?zls lists; more are counted in the
// X-Truncated header (a variable so tests can lower it).
var zlsMaxMembers = 100_000

// zlsEntry is one member in a ?zls listing: copyparty's "fn" plus sizes,
// time and the folder flag.
type zlsEntry struct {
	Fn  string `json:"fn"`
	Sz  uint64 `json:"sz"`
	Csz uint64 `json:"csz"`
	Ts  int64  `json:"ts"`
	Dir bool   `json:"dir"`
}

// openZip reads the central directory of f.
func openZip(f *os.File, fi fs.FileInfo) (*zip.Reader, error) {
	zr, err := zip.NewReader(f, fi.Size())
	if err != nil && !errors.Is(err, zip.ErrInsecurePath) {
		return nil, &httpError{code: http.StatusBadRequest, msg: "not a valid zip file", err: err}
	}
	return zr, nil
}

// zls lists the members of a zip as JSON, in central-directory order.
func (s *Server) zls(q *req, f *os.File, fi fs.FileInfo) error {
	zr, err := openZip(f, fi)
	if err != nil {
		return err
	}
	out := make([]zlsEntry, 0, min(len(zr.File), zlsMaxMembers))
	for _, m := range zr.File {
		if len(out) == zlsMaxMembers {
			q.w.Header().Set("X-Truncated", strconv.Itoa(len(zr.File)-zlsMaxMembers))
			break
		}
		if len(m.Name) > zipMaxName || !utf8.ValidString(m.Name) {
			continue // not addressable by ?zget
		}
		out = append(out, zlsEntry{Fn: m.Name, Sz: m.UncompressedSize64, Csz: m.CompressedSize64, Ts: m.Modified.Unix(), Dir: strings.HasSuffix(m.Name, "/")})
	}
	return sendJSON(q, out)
}

// sendJSON sends v as a 200 JSON body.
func sendJSON(q *req, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	h := q.w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-cache")
	h.Set("Content-Length", strconv.Itoa(len(b)+1))
	q.w.WriteHeader(http.StatusOK)
	if q.r.Method != http.MethodHead {
		q.w.Write(append(b, '\n'))
	}
	return nil
}

// checkMemberName refuses the member names ?zget will not look up: empty,
// too long, not UTF-8, control characters, or names that would escape a
// folder if extracted (absolute, "..", backslashes).
func checkMemberName(name string) error {
	switch {
	case name == "":
		return errorf(http.StatusBadRequest, "zget= needs a member name")
	case len(name) > zipMaxName:
		return errorf(http.StatusBadRequest, "zget=: member name longer than %d bytes", zipMaxName)
	case !utf8.ValidString(name):
		return errorf(http.StatusBadRequest, "zget=: member name is not UTF-8")
	case strings.ContainsAny(name, "\\\x00"), strings.HasPrefix(name, "/"):
		return errorf(http.StatusBadRequest, "zget=%q: unsafe member name", name)
	}
	for c := range strings.SplitSeq(name, "/") {
		if c == ".." {
			return errorf(http.StatusBadRequest, "zget=%q: unsafe member name", name)
		}
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f {
			return errorf(http.StatusBadRequest, "zget=: member name contains a control character")
		}
	}
	return nil
}

// zget streams one member of a zip, decompressed.
func (s *Server) zget(q *req, f *os.File, fi fs.FileInfo) error {
	name := q.query.Get("zget")
	if err := checkMemberName(name); err != nil {
		return err
	}
	zr, err := openZip(f, fi)
	if err != nil {
		return err
	}
	var m *zip.File
	for _, zf := range zr.File {
		if zf.Name == name {
			m = zf
			break
		}
	}
	switch {
	case m == nil:
		return errorf(http.StatusNotFound, "no member %q in this zip", name)
	case strings.HasSuffix(m.Name, "/") || m.Mode().IsDir():
		return errorf(http.StatusBadRequest, "zget=%q is a folder", name)
	case m.UncompressedSize64 > zgetMaxSize:
		return errorf(http.StatusBadRequest, "zget=%q: member larger than %d bytes", name, int64(zgetMaxSize))
	case m.UncompressedSize64 > zgetRatioFrom && m.UncompressedSize64 > zgetMaxRatio*max(m.CompressedSize64, 1):
		return errorf(http.StatusBadRequest, "zget=%q: compression ratio above %d: refusing a likely zip bomb", name, zgetMaxRatio)
	}
	off, err := m.DataOffset()
	if err != nil || off < 0 || uint64(off)+m.CompressedSize64 > uint64(fi.Size()) {
		return &httpError{code: http.StatusBadRequest, msg: "zget: member data lies outside the zip (truncated or corrupt)", err: err}
	}
	rc, err := m.Open()
	if err != nil {
		return &httpError{code: http.StatusBadRequest, msg: "zget: cannot read that member (unsupported method or corrupt)", err: err}
	}
	defer rc.Close()
	h := q.w.Header()
	ct := contentType(path.Base(m.Name))
	disp := policyOf(ct, false).apply(h, ct, "inline")
	h.Set("Content-Disposition", contentDisposition(disp, path.Base(m.Name)))
	h.Set("Cache-Control", "no-cache")
	h.Set("Content-Length", strconv.FormatUint(m.UncompressedSize64, 10))
	if q.r.Method == http.MethodHead {
		q.w.WriteHeader(http.StatusOK)
		return nil
	}
	// The reader stops at the declared size and fails on a checksum or
	// length mismatch, which it only knows at the end: the last piece is
	// held back until then, so a bad member is never a complete response.
	q.w.WriteHeader(http.StatusOK)
	n, err := copyHoldLast(writerOnly{q.w}, io.LimitReader(rc, int64(m.UncompressedSize64)+1))
	if err == nil && uint64(n) != m.UncompressedSize64 {
		err = errors.New("zget: member size differs from its header")
	}
	return err
}

// copyHoldLast copies r to w, always keeping the latest piece read until
// the next read succeeds: on a read error the held piece is dropped.
func copyHoldLast(w io.Writer, r io.Reader) (int64, error) {
	a, b := make([]byte, 64<<10), make([]byte, 64<<10)
	held := 0
	var total int64
	for {
		n, err := r.Read(b)
		if err != nil && err != io.EOF {
			return total, err
		}
		if n > 0 || err == io.EOF {
			if held > 0 {
				if _, werr := w.Write(a[:held]); werr != nil {
					return total, werr
				}
				total += int64(held)
			}
			a, b, held = b, a, n
		}
		if err == io.EOF {
			if held > 0 {
				if _, werr := w.Write(a[:held]); werr != nil {
					return total, werr
				}
				total += int64(held)
			}
			return total, nil
		}
	}
}

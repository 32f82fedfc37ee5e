package http

import (
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path"
	"strconv"

	"hoard/arch"
)

// zlsEntry is one member in a ?zls listing: copyparty's "fn" plus sizes,
// time and the folder flag.
type zlsEntry struct {
	Fn  string `json:"fn"`
	Sz  uint64 `json:"sz"`
	Csz uint64 `json:"csz"`
	Ts  int64  `json:"ts"`
	Dir bool   `json:"dir"`
}

// zls lists the members of a zip as JSON, in central-directory order.
func (s *Server) zls(q *req, f *os.File, fi fs.FileInfo) error { return zlsOf(q, f, fi.Size()) }

// zlsOf is zls of any zip that can be read at offsets (an object too).
func zlsOf(q *req, f io.ReaderAt, size int64) error {
	list, more, err := arch.ZipList(f, size)
	if err != nil {
		return err
	}
	if more > 0 {
		q.w.Header().Set("X-Truncated", strconv.Itoa(more))
	}
	out := make([]zlsEntry, len(list))
	for i, m := range list {
		out[i] = zlsEntry{Fn: m.Name, Sz: m.Size, Csz: m.CSize, Ts: m.Mod.Unix(), Dir: m.Dir}
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

// zget streams one member of a zip, decompressed.
func (s *Server) zget(q *req, f *os.File, fi fs.FileInfo) error { return zgetOf(q, f, fi.Size()) }

// zgetOf is zget of any zip that can be read at offsets (an object too).
func zgetOf(q *req, f io.ReaderAt, size int64) error {
	m, err := arch.OpenZipMember(f, size, q.query.Get("zget"))
	if err != nil {
		return err
	}
	defer m.Close()
	h := q.w.Header()
	ct := contentType(path.Base(m.Name))
	disp := policyOf(ct, false).apply(h, ct, "inline")
	h.Set("Content-Disposition", contentDisposition(disp, path.Base(m.Name)))
	h.Set("Cache-Control", "no-cache")
	h.Set("Content-Length", strconv.FormatUint(m.Size, 10))
	q.w.WriteHeader(http.StatusOK)
	if q.r.Method == http.MethodHead {
		return nil
	}
	_, err = m.WriteTo(writerOnly{q.w})
	return err
}

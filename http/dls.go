package http

import (
	"io"
	"net/http"
	"path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"hoard/store"
)

// dlsMin is the smallest file download ?dls shows (copyparty's 4 MiB):
// smaller ones are over before anyone could look, and skipping them keeps
// the registry off the small-file path entirely.
var dlsMin int64 = 4 << 20

// dlsChunk is how much of a tracked download goes to sendfile(2) per
// ReadFrom call, so the bytes sent can be read while it runs.
const dlsChunk = 8 << 20

// download is one transfer in progress.
type download struct {
	vol   *store.Volume
	path  string // URL path
	conn  string // client ip:port
	user  string
	start time.Time
	size  int64 // 0 when unknown (?tail)
	sent  atomic.Int64
}

// dlRegistry holds the transfers in progress.
type dlRegistry struct {
	mu  sync.Mutex
	all map[*download]struct{}
}

// start registers a transfer of the request's path; label (e.g. " :tar")
// is appended to the path shown.
func (r *dlRegistry) start(q *req, size int64, label string) *download {
	p := "/" + strings.Join(q.parts, "/")
	if q.share {
		p = "/" + path.Join(q.vol.VPath, q.rel) // the file's own URL, not the share's key
	}
	d := &download{vol: q.vol, path: p + label, conn: q.conn(), user: q.user, start: time.Now(), size: size}
	r.mu.Lock()
	if r.all == nil {
		r.all = map[*download]struct{}{}
	}
	r.all[d] = struct{}{}
	r.mu.Unlock()
	return d
}

func (r *dlRegistry) done(d *download) {
	r.mu.Lock()
	delete(r.all, d)
	r.mu.Unlock()
}

func (r *dlRegistry) list() []*download {
	r.mu.Lock()
	out := make([]*download, 0, len(r.all))
	for d := range r.all {
		out = append(out, d)
	}
	r.mu.Unlock()
	slices.SortFunc(out, func(a, b *download) int { return a.start.Compare(b.start) })
	return out
}

// countedReadFrom sends src through rf in dlsChunk pieces, adding each
// piece to d.sent. A *io.LimitedReader (what http.ServeContent hands over)
// is split into LimitedReaders over the same *os.File, so every piece
// still goes out by sendfile(2).
func countedReadFrom(rf io.ReaderFrom, src io.Reader, d *download) (int64, error) {
	lr, ok := src.(*io.LimitedReader)
	if !ok {
		n, err := rf.ReadFrom(src)
		d.sent.Add(n)
		return n, err
	}
	var total int64
	for lr.N > 0 {
		piece := &io.LimitedReader{R: lr.R, N: min(lr.N, dlsChunk)}
		want := piece.N
		n, err := rf.ReadFrom(piece)
		lr.N -= n
		total += n
		d.sent.Add(n)
		if err != nil {
			return total, err
		}
		if n < want {
			break // the source ended early
		}
	}
	return total, nil
}

// dlsRow is one ?dls record (copyparty's fields plus rate and duration).
type dlsRow struct {
	T0    int64   `json:"t0"`
	T1    int64   `json:"t1"`
	Sent  int64   `json:"sent"`
	Size  int64   `json:"size"`
	Path  string  `json:"path"`
	Conn  string  `json:"conn"`
	Uname string  `json:"uname"`
	Rate  float64 `json:"rate"` // bytes per second since the start
	Dur   float64 `json:"dur"`  // seconds since the start
}

// dls lists the downloads in progress. Admins only (permission a on some
// volume), and each sees the downloads of the volumes it administers only
// (a download of a folder of URLs above several volumes: of all of them);
// a path is shown only to those who may also read its volume.
func (s *Server) dlsPage(q *req) error {
	if err := s.needAdmin(q); err != nil {
		return err
	}
	now := time.Now()
	rows := []dlsRow{}
	for _, d := range s.dls.list() {
		vol := d.vol
		if vol != nil {
			vol, _ = vol.Outer() // a share's view: its volume
		}
		if !s.adminOf(q, vol) {
			continue
		}
		dur := now.Sub(d.start).Seconds()
		sent := d.sent.Load()
		row := dlsRow{T0: d.start.Unix(), T1: now.Unix(), Sent: sent, Size: d.size, Path: d.path, Conn: d.conn, Uname: d.user, Dur: dur}
		if dur > 0 {
			row.Rate = float64(sent) / dur
		}
		if vol == nil || !vol.Perms(q.user).Has(store.PermRead) {
			row.Path = ""
		}
		if row.Uname == "" {
			row.Uname = "*"
		}
		rows = append(rows, row)
	}
	return sendJSON(q, rows)
}

// adminOf reports whether the user is an admin of v, or, for v nil (a
// folder of URLs above volumes), of every volume.
func (s *Server) adminOf(q *req, v *store.Volume) bool {
	if v != nil {
		return v.Perms(q.user).Has(store.PermAdmin)
	}
	for _, v := range s.st.Volumes() {
		if !v.Perms(q.user).Has(store.PermAdmin) {
			return false
		}
	}
	return true
}

// needAdmin checks that the user is an admin (permission a) of at least
// one volume: the entry check of ?ru and ?dls, which then show each admin
// only what lies in the volumes it administers.
func (s *Server) needAdmin(q *req) error {
	for _, v := range s.st.Volumes() {
		if v.Perms(q.user).Has(store.PermAdmin) {
			return nil
		}
	}
	if q.user == "" {
		return errUnauthorized
	}
	return errorf(http.StatusForbidden, "user %s is not an admin", q.user)
}

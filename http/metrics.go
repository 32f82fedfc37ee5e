package http

import (
	"io"
	"net/http"
	"strings"
	"time"

	"hoard/store"
)

// Observer hears about every request and upload, for the metrics. main
// wires one in with --stats; this room does not import the metrics
// library. Its methods must be quick and safe for concurrent use.
type Observer interface {
	// Request is one finished request: its route (one of Routes), its
	// status, the body bytes read and the bytes sent.
	Request(route string, status int, in, out int64, d time.Duration)
	// Upload is an upload by PUT or multipart (kind "put", "multipart")
	// starting (+1) or ending (-1); done says it was stored.
	Upload(kind string, delta int, done bool)
}

// MetricsHandler serves the metrics page to a user who administers vols
// (at least one): series of other volumes are left out.
type MetricsHandler interface {
	ServeMetrics(w http.ResponseWriter, r *http.Request, vols []*store.Volume)
}

// Routes are the route labels of Observer.Request: a small fixed set,
// never a path, so the series stay few.
var Routes = []string{"get", "list", "archive", "thumb", "tail", "admin", "put", "multipart", "up2k_handshake", "up2k_chunk", "search", "share", "manage", "metrics", "ui", "options", "dav", "other"}

// routeOf is the request's route label: what a handler set in q.route,
// else what the method, modifiers and body type say.
func routeOf(q *req) string {
	if q.route != "" {
		return q.route
	}
	r := q.r
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		switch {
		case has(q.query, "th"):
			return "thumb"
		case wantsArchive(q):
			return "archive"
		case has(q.query, "tail"):
			return "tail"
		case globalView(q.query) != nil:
			return "admin"
		case has(q.query, "ls"), has(q.query, "tree"), q.slash:
			return "list"
		}
		return "get"
	case http.MethodPut:
		return "put"
	case http.MethodOptions:
		return "options"
	case "PROPFIND", "PROPPATCH", "MKCOL", "COPY", "MOVE", "LOCK", "UNLOCK", http.MethodDelete:
		return "dav" // dav.go
	case http.MethodPost:
		ct := strings.ToLower(r.Header.Get("Content-Type"))
		switch {
		case has(q.query, "share"):
			return "share"
		case has(q.query, "delete"), has(q.query, "move"), has(q.query, "copy"):
			return "manage"
		case wantsArchive(q):
			return "archive"
		case strings.HasPrefix(ct, "multipart/form-data"):
			return "multipart"
		case strings.HasPrefix(ct, "application/octet-stream"):
			return "up2k_chunk"
		case strings.Contains(ct, "application/json"), strings.HasPrefix(ct, "text/plain"):
			return "up2k_handshake" // search sets its own
		}
	}
	return "other"
}

// countedBody counts the request body bytes read.
type countedBody struct {
	io.ReadCloser
	n int64
}

func (b *countedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n += int64(n)
	return n, err
}

// upload tells the observer an upload of kind starts; the function it
// returns tells it the upload ended, stored when ok.
func (s *Server) upload(kind string) func(ok bool) {
	if s.obs == nil {
		return func(bool) {}
	}
	s.obs.Upload(kind, 1, false)
	return func(ok bool) { s.obs.Upload(kind, -1, ok) }
}

// download counts a download in flight; call the function it returns
// when it ends.
func (s *Server) download() func() {
	s.active.Add(1)
	return func() { s.active.Add(-1) }
}

// ActiveDownloads is how many downloads (files, archives, ?tail) are
// being sent.
func (s *Server) ActiveDownloads() int64 { return s.active.Load() }

// metricsPage serves /.cpr/metrics (copyparty's path): with --stats, to
// admins (permission a) of some volume, each seeing the series of the
// volumes it administers and the server's own; without --stats, 404.
func (s *Server) metricsPage(q *req) error {
	q.route = "metrics"
	if s.metrics == nil {
		return errorf(http.StatusNotFound, "metrics are off; start hoard with --stats")
	}
	if q.r.Method != http.MethodGet && q.r.Method != http.MethodHead {
		q.w.Header().Set("Allow", "GET, HEAD")
		return errorf(http.StatusMethodNotAllowed, "metrics are read with GET")
	}
	if err := s.needAdmin(q); err != nil {
		return err
	}
	var vols []*store.Volume
	for _, v := range s.st.Volumes() {
		if v.Perms(q.user).Has(store.PermAdmin) {
			vols = append(vols, v)
		}
	}
	s.metrics.ServeMetrics(q.w, q.r, vols)
	return nil
}

package http

import (
	"crypto/rand"
	"encoding/base64"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"hoard/idx"
	"hoard/media"
	"hoard/store"
	"hoard/up2k"
)

// Config is what the HTTP layer needs.
type Config struct {
	Store  *store.Store
	Logger *slog.Logger // nil: slog.Default()
	// MaxRanges caps the ranges of one multi-range request; a request with
	// more is answered with the whole file. Default 16.
	MaxRanges int
	// Up2k runs resumable uploads; nil answers them with 501.
	Up2k *up2k.Manager
	// Index answers searches; nil (or no indexed volume) answers them
	// with 500 saying how to enable indexing.
	Index *idx.Indexer
	// SrchHits is the default number of search hits (200); SrchMax caps
	// what a client may ask for (10000).
	SrchHits, SrchMax int
	// Media makes ?th thumbnails and transcodes; nil answers them with 500.
	Media *media.Service
	// ArchMT caps the archives compressing at once with xz, bz2 or gz
	// level 6+ (more get 503); 0 means the number of cores.
	ArchMT int
	// Text, tail, recent uploads and shares (text.go, tail.go, recent.go,
	// share.go): see ExtraConfig.
	Extra ExtraConfig
	// Proxy: trusted reverse proxies and their prefix (proxy.go).
	Proxy ProxyConfig
	// DAV switches WebDAV (dav.go).
	DAV DAVConfig
	// Observer hears every request and upload (metrics.go); nil: none.
	Observer Observer
	// Metrics serves /.cpr/metrics; nil (no --stats) answers it 404.
	Metrics MetricsHandler
	// Access takes the access lines (accesslog.go), when Logger is
	// enabled at info; nil: they go through Logger.
	Access *AccessLog
	// RecvLowat sets the receive low-water mark of a connection's socket
	// (SO_RCVLOWAT: a read waits until n bytes are there), or fails when
	// the connection has none it can set; nil: never (body.go, lowat).
	RecvLowat func(c net.Conn, n int) error
}

// Server is hoard's http.Handler.
type Server struct {
	st        *store.Store
	log       *slog.Logger
	maxRanges int
	fails     *failTracker
	cop       *http.CrossOriginProtection
	up        *up2k.Manager
	idx       *idx.Indexer
	srchHits  int
	srchMax   int
	media     *media.Service
	idPrefix  string        // random per process, so request IDs differ across restarts
	reqs      atomic.Uint64 // request counter for IDs
	extra                   // ?tail, ?dls, ?ups, ?ru, shares (extra.go)

	archSem chan struct{} // slots for CPU-heavy archives
	proxy   ProxyConfig
	dav     DAVConfig // WebDAV (dav.go)

	obs     Observer       // nil: no metrics
	metrics MetricsHandler // nil: no /.cpr/metrics
	active  atomic.Int64   // downloads being sent (metrics.go)
	access  *AccessLog     // nil: access lines through log

	recvLowat func(c net.Conn, n int) error // Config.RecvLowat
}

// New returns the handler for cfg.
func New(cfg Config) *Server {
	s := &Server{st: cfg.Store, log: cfg.Logger, maxRanges: cfg.MaxRanges, cop: http.NewCrossOriginProtection(), up: cfg.Up2k, idx: cfg.Index, srchHits: cfg.SrchHits, srchMax: cfg.SrchMax, media: cfg.Media, recvLowat: cfg.RecvLowat}
	s.fails = newFailTracker(s.st.PasswordKey)
	if s.log == nil {
		s.log = slog.Default()
	}
	s.log = s.log.With("pkg", "http")
	var b [3]byte
	rand.Read(b[:])
	s.idPrefix = base64.RawURLEncoding.EncodeToString(b[:]) + "-"
	if s.maxRanges <= 0 {
		s.maxRanges = 16
	}
	if s.srchHits <= 0 {
		s.srchHits = 200
	}
	if s.srchMax < s.srchHits {
		s.srchMax = max(s.srchHits, 10000)
	}
	if cfg.ArchMT <= 0 {
		cfg.ArchMT = runtime.NumCPU()
	}
	s.archSem = make(chan struct{}, cfg.ArchMT)
	s.proxy = cfg.Proxy
	s.dav = cfg.DAV
	s.obs, s.metrics = cfg.Observer, cfg.Metrics
	s.access = cfg.Access
	if s.proxy.Header == "" {
		s.proxy.Header = "X-Forwarded-For"
	}
	s.initExtra(cfg)
	return s
}

// req is one request after its path and credentials were checked.
type req struct {
	w      *respWriter
	r      *http.Request
	query  url.Values // r.URL.Query(), parsed once
	id     string
	parts  []string // decoded path components
	slash  bool     // the URL path ended in "/"
	vol    *store.Volume
	rel    string     // path inside vol
	perm   store.Perm // user's permissions in vol
	user   string     // "" is anonymous
	ip     string     // the client's address: the TCP peer's, or a trusted proxy's word (proxy.go)
	scheme string     // http or https, as the client sees it
	host   string     // the Host the client sees
	loc    string     // --rp-loc prefix of every URL emitted
	// viaProxy: ip came from a trusted proxy\'s header, not the TCP peer.
	viaProxy bool
	share    bool // inside a share: q.vol is confined to the shared folder, no mounts
	// shareOut: inside a password share opened by its login cookie, the
	// share's URL path (its page offers to log out there); else "".
	shareOut string
	// shr is the share a request inside one was let through by, and
	// shrPerm what it granted then (Server.stillAllowed); nil outside.
	shr     *store.Share
	shrPerm store.Perm
	route   string       // the metrics' route label, when a handler knows better than routeOf
	fconn   *framingConn // the HTTP/1 connection, for corking (cork.go); nil: none

	// Room for what a download makes, in the one allocation of req.
	rw respWriter    // w
	hv hvals         // a download's header values (getplain.go)
	hf headerFlusher // a GET's writer (get.go)
	pb plainBody     // a plain download's body (getplain.go)
}

func (s *Server) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	fc, _ := r.Context().Value(framingKey{}).(*framingConn)
	if msg := framingError(r, fc); msg != "" {
		// Framing a proxy could read otherwise (framing.go): refuse it
		// and close the connection, so nothing after it is taken for a
		// request.
		s.log.Debug("request refused for its framing", "method", r.Method, "path", r.URL.Path, "ip", s.peerIP(r), "why", msg)
		h := rw.Header()
		h.Set("Connection", "close")
		h.Set("Content-Type", "text/plain; charset=utf-8")
		h.Set("X-Content-Type-Options", "nosniff")
		rw.WriteHeader(http.StatusBadRequest)
		io.WriteString(rw, msg+"\n")
		return
	}
	start := time.Now()
	var query url.Values // nil for none: it is only read
	if r.URL.RawQuery != "" {
		query = r.URL.Query()
	}
	q := &req{r: r, query: query, id: s.idPrefix + strconv.FormatUint(s.reqs.Add(1), 36), loc: s.proxy.Loc, fconn: fc}
	q.rw.ResponseWriter = rw
	w := &q.rw
	q.w = w
	s.decodeProxy(q)
	if r.ContentLength != 0 && r.Body != nil && r.Body != http.NoBody {
		// A body must keep arriving (the server has no global read
		// timeout): its readers move this deadline on (idleReader) or
		// lift it once read (wholeBody). It bounds a body no handler
		// reads too, which net/http discards, up to 256 KiB, before it
		// answers: a client that stops sending one held the connection
		// for ever.
		q.setReadDeadline(start.Add(bodyIdle))
	}
	var body *countedBody
	if s.obs != nil && r.Body != nil && r.Body != http.NoBody {
		body = &countedBody{ReadCloser: r.Body}
		r.Body = body
	}
	// Every endpoint returns an error instead of writing one; fail maps it
	// through statusOf.
	err := s.route(q)
	if err != nil && s.fail(q, err) {
		// The client went away (or half-closed and its request was cut
		// short by that) before an answer: close the connection without
		// one, never net/http's default 200 for a request that did not
		// succeed. Logged as 499 first.
		defer func() { panic(http.ErrAbortHandler) }()
		if w.status == 0 {
			w.status = statusCanceled
		}
	}
	st := w.status
	if st == 0 {
		st = http.StatusOK
	}
	if s.obs != nil {
		var in int64
		if body != nil {
			in = body.n
		}
		s.obs.Request(routeOf(q), st, in, w.n, time.Since(start))
	}
	if !s.log.Enabled(r.Context(), slog.LevelInfo) {
		return
	}
	if s.access != nil {
		now := time.Now()
		s.access.write(&access{t: now, id: q.id, ip: q.ip, user: q.user, method: r.Method, u: r.URL, status: st, bytes: w.n, dur: now.Sub(start)})
	} else {
		s.log.LogAttrs(r.Context(), slog.LevelInfo, "access", slog.String("id", q.id), slog.String("ip", q.ip), slog.String("user", q.user), slog.String("method", r.Method), slog.String("path", logPath(r.URL)), slog.Int("status", st), slog.Int64("bytes", w.n), slog.Duration("dur", time.Since(start)))
	}
}

func (s *Server) route(q *req) error {
	w, r := q.w, q.r
	q.hv.set(w.Header(), "X-Request-Id", q.id)
	parts, slash, err := parsePath(stripLoc(r.URL.Path, q.loc))
	if err != nil {
		return err
	}
	q.parts, q.slash = parts, slash
	if len(parts) > 0 && parts[0] == ".cpr" && !(len(parts) == 2 && parts[1] == "metrics") {
		q.route = "ui"
		return s.asset(q) // the UI's files: public, before any credentials
	}
	if s.shares != nil && len(parts) > 0 && parts[0] == s.shrName {
		q.route = "share"
		return s.shareRoute(q)
	}
	if err := s.authenticate(q); err != nil {
		return err
	}
	if len(parts) == 2 && parts[0] == ".cpr" && parts[1] == "metrics" {
		return s.metricsPage(q)
	}
	q.vol, q.rel = s.st.Resolve(parts)
	if q.vol != nil {
		q.perm = q.vol.Perms(q.user)
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		if view := globalView(q.query); view != nil {
			return view(s, q)
		}
		return s.get(q)
	case http.MethodPut:
		return s.put(q)
	case http.MethodPost:
		return s.post(q)
	case http.MethodOptions:
		return s.davOptions(q)
	}
	if isDAVMethod(r.Method) {
		return s.davRoute(q)
	}
	w.Header().Set("Allow", "GET, HEAD, PUT, POST, OPTIONS")
	return errorf(http.StatusMethodNotAllowed, "method %s is not supported", r.Method)
}

// stillAllowed reports whether what let q read still holds: a stream that
// outlasts the request's checks (?tail) asks before sending what was
// written since. Inside a share: the share is still live (not deleted,
// expired, nor dropped with its folder) and still grants read
// (shareStillAllowed). Elsewhere: the URL still leads to the request's
// volume (a reload did not unmount or replace it), and the user still has
// the read (or g) permission there that the request had.
func (s *Server) stillAllowed(q *req) bool {
	if q.share {
		return q.shr != nil && s.shareStillAllowed(*q.shr, q.shrPerm)
	}
	v, _ := s.st.Resolve(q.parts)
	return v == q.vol && v != nil && v.Perms(q.user).Has(q.perm&(store.PermRead|store.PermGet))
}

func (s *Server) post(q *req) error {
	if has(q.query, "share") {
		return s.postShare(q) // whatever the type: curl -d sends a form type
	}
	switch { // file management (manage.go), whatever the type
	case has(q.query, "delete"):
		return s.postDelete(q)
	case has(q.query, "move"):
		return s.postTransfer(q, "move")
	case has(q.query, "copy"):
		return s.postTransfer(q, "copy")
	}
	if wantsArchive(q) {
		return s.archivePost(q)
	}
	ct := strings.ToLower(q.r.Header.Get("Content-Type"))
	switch {
	case strings.HasPrefix(ct, "multipart/form-data"):
		return s.multipart(q)
	case strings.Contains(ct, "application/json"), strings.HasPrefix(ct, "text/plain"), strings.Contains(ct, "application/xml"):
		return s.postJSON(q)
	case strings.HasPrefix(ct, "application/octet-stream"):
		if v := q.r.Header.Get(up2k.OneShotHeader); v != "" {
			return s.postOneShot(q, v)
		}
		return s.postChunk(q)
	case strings.HasPrefix(ct, "application/x-www-form-urlencoded"):
		return s.urlencoded(q) // act=mkdir, or a note answered like a GET
	}
	return errorf(http.StatusUnsupportedMediaType, "don't know how to handle POST(%s)", ct)
}

// need checks that the user has at least one permission of p here:
// anonymous users are asked to log in (401), known users are refused (403),
// and so are a share's visitors (no login gives them more).
func (q *req) need(p store.Perm, what string) error {
	if q.perm.Any(p) {
		return nil
	}
	if q.share {
		return errorf(http.StatusForbidden, "this share does not let you %s in /%s", what, strings.Join(q.parts, "/"))
	}
	if q.user == "" {
		return errUnauthorized
	}
	return errorf(http.StatusForbidden, "user %s may not %s in /%s", q.user, what, strings.Join(q.parts, "/"))
}

// needUpload checks that a volume covers the path and that the user may
// write there, for every kind of upload.
func (q *req) needUpload() error {
	if q.vol == nil {
		return errorf(http.StatusForbidden, "no volume is mounted at /%s", strings.Join(q.parts, "/"))
	}
	return q.need(store.PermWrite, "upload")
}

// fail writes err as the response if nothing was sent yet, and logs it.
// It reports true when the client went away: nothing is sent, and the
// caller closes the connection.
func (s *Server) fail(q *req, err error) bool {
	code, msg := statusOf(err)
	switch {
	case code == statusCanceled && q.r.Context().Err() != nil:
		s.log.Debug("client went away", "id", q.id, "path", q.r.URL.Path, "err", err)
		return true
	case code == statusCanceled:
		// A context ended inside the server (a deadline of its own, its
		// shutdown) while the client still waits: that is no reason to
		// drop the connection unanswered. The client is told to try
		// again, and the log says where it came from.
		code, msg = http.StatusServiceUnavailable, "the server stopped this request before it finished (a deadline or shutdown inside it); try again"
		s.log.Error("request failed", "id", q.id, "method", q.r.Method, "path", q.r.URL.Path, "status", code, "err", err)
	case code == http.StatusServiceUnavailable, code == http.StatusInsufficientStorage:
		// Load shedding and a full state folder are logged where they are
		// decided, once per interval, not once per request.
		s.log.Debug("request refused", "id", q.id, "method", q.r.Method, "path", q.r.URL.Path, "status", code, "err", err)
	case code >= 500:
		s.log.Error("request failed", "id", q.id, "method", q.r.Method, "path", q.r.URL.Path, "status", code, "err", err)
	default:
		s.log.Debug("request refused", "id", q.id, "method", q.r.Method, "path", q.r.URL.Path, "status", code, "err", err)
	}
	if q.w.wrote {
		// Headers already went out: cut the response so the client sees
		// an incomplete transfer rather than a silently wrong body.
		panic(http.ErrAbortHandler)
	}
	h := q.w.Header()
	for _, k := range []string{"Content-Disposition", "Content-Security-Policy", "ETag", "Last-Modified", "Content-Encoding", "Location"} {
		h.Del(k)
	}
	if ra := retryAfter(err); ra != "" {
		h.Set("Retry-After", ra)
	}
	if (code == http.StatusUnauthorized || code == http.StatusForbidden) && !q.share && isNavigation(q.r) {
		// A person in a browser gets the login form, not the
		// browser's own password prompt (copyparty's way).
		writeLoginPage(q, code, msg)
		return false
	}
	if code == http.StatusUnauthorized {
		h.Set("WWW-Authenticate", `Basic realm="hoard", charset="UTF-8"`)
	}
	if (code == http.StatusServiceUnavailable || code == http.StatusTooManyRequests || code == http.StatusInsufficientStorage) && h.Get("Retry-After") == "" {
		h.Set("Retry-After", "5")
	}
	if q.r.Body != nil && q.r.ContentLength != 0 && (q.r.Method == http.MethodPut || q.r.Method == http.MethodPost) {
		// The body was not (fully) read; don't let the rest of it be
		// taken for the next request.
		h.Set("Connection", "close")
	}
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	q.w.WriteHeader(code)
	io.WriteString(q.w, msg+"\n")
	return false
}

// peerIP is the client's address for a request refused before decoding.
func (s *Server) peerIP(r *http.Request) string {
	ip, _ := forwardedFor(r.RemoteAddr, r.Header.Values(s.proxy.Header), s.proxy.Trusted)
	return ip
}

// respWriter records the status and byte count for the log. It forwards
// ReadFrom so that file bodies still reach sendfile(2), and Unwrap so that
// http.ResponseController still reaches the connection.
type respWriter struct {
	http.ResponseWriter
	status int
	n      int64
	wrote  bool
	dl     *download // counts the bytes of a download ?dls shows
}

func (w *respWriter) WriteHeader(code int) {
	if !w.wrote && code >= 200 {
		w.status, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *respWriter) Write(p []byte) (int, error) {
	if !w.wrote {
		w.status, w.wrote = http.StatusOK, true
	}
	n, err := w.ResponseWriter.Write(p)
	w.n += int64(n)
	if w.dl != nil {
		w.dl.sent.Add(int64(n))
	}
	return n, err
}

// ReadFrom hands the source to the underlying writer's ReadFrom, which for
// net/http's response sends an *os.File with sendfile(2).
func (w *respWriter) ReadFrom(src io.Reader) (int64, error) {
	if !w.wrote {
		w.status, w.wrote = http.StatusOK, true
	}
	var n int64
	var err error
	if rf, ok := w.ResponseWriter.(io.ReaderFrom); ok && w.dl != nil {
		n, err = countedReadFrom(rf, src, w.dl)
	} else if ok {
		n, err = rf.ReadFrom(src)
	} else {
		n, err = io.Copy(writerOnly{w.ResponseWriter}, src)
	}
	w.n += n
	return n, err
}

func (w *respWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// writerOnly hides ReadFrom so io.Copy does not loop back into it.
type writerOnly struct{ io.Writer }

// Interface guards.
var (
	_ io.ReaderFrom       = (*respWriter)(nil)
	_ http.ResponseWriter = (*respWriter)(nil)
)

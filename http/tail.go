package http

import (
	"context"
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

// Tail settings and their defaults.
const (
	defTailMax  = 16                     // concurrent ?tail streams
	tailPoll    = 200 * time.Millisecond // longest wait between reads (without inotify: every wait)
	tailRestat  = time.Second            // how often the path is checked for a replacement
	tailBufSize = 64 << 10
)

// tail streams a growing file: everything from the start offset, then new
// bytes as they are written, with chunked encoding. It ends when the
// client leaves, the file is deleted, replaced (another inode at the path)
// or truncated, after Config.TailTime, or when the server shuts down.
func (s *Server) tail(q *req, f *os.File, fi fs.FileInfo) error {
	start, ctx, w, end, err := s.tailBegin(q, fi.Size())
	if err != nil || w == nil {
		return err
	}
	defer end()

	wait := store.WatchFile(f, tailPoll)
	defer wait.Close()
	buf := make([]byte, tailBufSize)
	pos := start
	ino := inode(fi)
	nextStat := time.Now().Add(tailRestat)
	for {
		if !s.stillAllowed(q) {
			// The share was deleted or expired, or a reload took the
			// permission away: what was written since is not theirs.
			return nil
		}
		// Send everything there is.
		for ctx.Err() == nil {
			n, err := f.ReadAt(buf, pos)
			if n > 0 {
				if _, werr := w.Write(buf[:n]); werr != nil {
					return nil // the client left
				}
				pos += int64(n)
			}
			if err != nil {
				if !errors.Is(err, io.EOF) {
					return nil
				}
				break
			}
		}
		w.rc.Flush()
		if ctx.Err() != nil {
			return nil
		}
		// Is the file still the one at the path, and still growing?
		if ev := wait.Changed(); ev || time.Now().After(nextStat) {
			nextStat = time.Now().Add(tailRestat)
			cur, err := f.Stat()
			if err != nil || store.Links(cur) == 0 || cur.Size() < pos {
				return nil // deleted or truncated
			}
			pi, err := q.vol.Stat(q.rel)
			if err != nil || inode(pi) != ino {
				return nil // deleted or replaced
			}
		}
		if !wait.Wait(ctx) {
			return nil
		}
	}
}

// tailBegin starts a ?tail answer of a file of size bytes: the start
// offset, a stream slot (503 when all are taken), the headers sent. w is
// nil when nothing more is to be sent (HEAD); else end releases what it
// took, and ctx ends with the client, --tail-time or shutdown.
func (s *Server) tailBegin(q *req, size int64) (start int64, ctx context.Context, w *tailWriter, end func(), err error) {
	start, err = tailStart(q.query.Get("tail"), size)
	if err != nil {
		return 0, nil, nil, nil, err
	}
	if n := s.tails.Add(1); n > int64(s.tailMax) {
		s.tails.Add(-1)
		q.w.Header().Set("Retry-After", "5")
		return 0, nil, nil, nil, errorf(http.StatusServiceUnavailable, "too many ?tail streams (%d); retry later", s.tailMax)
	}
	client := store.ClientKey(q.ip)
	s.tailMu.Lock()
	mine := s.tailsOf[client]
	if mine >= tailPerClient(s.tailMax) {
		s.tailMu.Unlock()
		s.tails.Add(-1)
		q.w.Header().Set("Retry-After", "5")
		return 0, nil, nil, nil, errorf(http.StatusTooManyRequests, "this address has %d ?tail streams open already; close one first", mine)
	}
	s.tailsOf[client] = mine + 1
	s.tailMu.Unlock()
	untrack := func() {
		s.tailMu.Lock()
		if s.tailsOf[client]--; s.tailsOf[client] <= 0 {
			delete(s.tailsOf, client)
		}
		s.tailMu.Unlock()
	}
	ends := []func(){func() { s.tails.Add(-1) }, untrack}
	release := func() {
		for i := len(ends) - 1; i >= 0; i-- {
			ends[i]()
		}
	}
	name := path.Base("/" + q.rel)
	ct, pol, err := q.fileType(name)
	if err != nil {
		release()
		return 0, nil, nil, nil, err
	}
	if t, ok := q.query["txt"]; ok {
		_, cs, err := txtEncoding(t[0])
		if err != nil {
			release()
			return 0, nil, nil, nil, err
		}
		ct = "text/plain; charset=" + cs
		pol = policyOf(ct, false)
	}
	h := q.w.Header()
	if disp := pol.apply(h, ct, "inline"); disp != "inline" {
		h.Set("Content-Disposition", contentDisposition(disp, name))
	}
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	if q.r.Method == http.MethodHead {
		release()
		q.w.WriteHeader(http.StatusOK)
		return 0, nil, nil, nil, nil
	}
	ctx, cancel := context.WithCancel(q.r.Context())
	ends = append(ends, cancel)
	if s.tailTime > 0 {
		var cancel2 context.CancelFunc
		ctx, cancel2 = context.WithTimeout(ctx, s.tailTime)
		ends = append(ends, cancel2)
	}
	stop := context.AfterFunc(s.closing, cancel)
	ends = append(ends, func() { stop() })

	dl := s.dls.start(q, 0, "")
	ends = append(ends, func() { s.dls.done(dl) }, s.download())
	w = &tailWriter{rw: q.w, rc: http.NewResponseController(q.w), dl: dl}
	w.rw.WriteHeader(http.StatusOK)
	w.rc.Flush()
	return start, ctx, w, release, nil
}

// tailPerClient is how many of max ?tail streams one client address (an
// IPv6 /64) may hold, so that one client cannot take them all and keep
// them (streams last as long as --tail-tmax, by default for ever).
func tailPerClient(max int) int { return (max + 3) / 4 }

// tailStart turns the value of ?tail into a byte offset: empty is the
// start, N ≥ 0 is byte N (at most the current size), -N is N bytes before
// the end (clamped to the start).
func tailStart(v string, size int64) (int64, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, errorf(http.StatusBadRequest, "tail=%q: want an integer byte offset", v)
	}
	if strings.HasPrefix(v, "-") {
		if n == -1<<63 {
			return 0, errorf(http.StatusBadRequest, "tail=%q: offset out of range", v)
		}
		return max(0, size+n), nil
	}
	if n > size {
		return 0, errorf(http.StatusRequestedRangeNotSatisfiable, "tail=%d is past the end of the file (%d bytes)", n, size)
	}
	return n, nil
}

// tailWriter counts what a tail sent, for ?dls.
type tailWriter struct {
	rw http.ResponseWriter
	rc *http.ResponseController
	dl *download
}

func (w *tailWriter) Write(p []byte) (int, error) {
	n, err := w.rw.Write(p)
	w.dl.sent.Add(int64(n))
	return n, err
}

package http

import (
	"errors"
	"io"
	"net"
	"net/http"
	"time"
)

// bodyIdle is how long an upload may go without a single byte arriving
// before the connection is dropped. The server has no global read timeout
// (it would cut multi-gigabyte uploads), so each upload body pushes its own
// read deadline forward as data flows. (A variable for tests.)
var bodyIdle = 2 * time.Minute

// setReadDeadline sets the read deadline of q's connection (an HTTP/2
// stream's with --h2), as http.ResponseController would, without its
// allocations on the HTTP/1 connection every request has.
func (q *req) setReadDeadline(t time.Time) {
	switch {
	case q.fconn != nil:
		q.fconn.SetReadDeadline(t)
	case q.r.ProtoMajor == 2:
		http.NewResponseController(q.w).SetReadDeadline(t)
	}
}

// readWhole reads a small body that is read whole before anything is done
// (a handshake, a selection, a form, an XML body): at most limit bytes
// (more: 413, naming what), all of them within bodyIdle of the head
// (wholeBody: 408).
func (q *req) readWhole(limit int64, what string) ([]byte, error) {
	if q.r.Body == nil || q.r.Body == http.NoBody {
		return nil, nil
	}
	if q.r.ContentLength > limit {
		return nil, tooBig(what, limit)
	}
	lift := q.wholeBody()
	b, err := io.ReadAll(io.LimitReader(q.r.Body, limit+1))
	if err != nil {
		return nil, bodyErr(err, what, limit)
	}
	if int64(len(b)) > limit {
		return nil, tooBig(what, limit)
	}
	lift()
	return b, nil
}

// wholeBody starts the one deadline of a body read whole: all of it must
// arrive within bodyIdle of the head, so that a body trickled a byte at a
// time ends too, not only one that stops (the server has no global read
// timeout). lift ends it, once the body is read: the work may then take
// long (a handshake copying a big file), and an expired deadline would
// cancel it through net/http's background read. It stays on a body cut
// short: net/http reads on to its end.
func (q *req) wholeBody() (lift func()) {
	q.setReadDeadline(time.Now().Add(bodyIdle))
	return func() { q.setReadDeadline(time.Time{}) }
}

// bodyErr is the answer to err from reading a body read whole: 413 past
// its limit (an http.MaxBytesReader's), 408 past its deadline (wholeBody);
// any other error as it is.
func bodyErr(err error, what string, limit int64) error {
	var mb *http.MaxBytesError
	switch {
	case errors.As(err, &mb):
		return tooBig(what, limit)
	case isTimeout(err):
		return errorf(http.StatusRequestTimeout, "%s did not arrive within %v of the request's head", what, bodyIdle)
	}
	return err
}

// isTimeout reports whether err is a read deadline that passed (the
// connection's: os.ErrDeadlineExceeded, seen as a net.Error).
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// isHTTPError reports whether err is an answer already (an *httpError).
func isHTTPError(err error) bool {
	var he *httpError
	return errors.As(err, &he)
}

func tooBig(what string, limit int64) error {
	return errorf(http.StatusRequestEntityTooLarge, "%s may be at most %d bytes", what, limit)
}

// idleReader extends the connection's read deadline while a body is read.
type idleReader struct {
	r    io.Reader
	rc   *http.ResponseController
	next time.Time
	done bool // the body ended: no deadline any more
}

func newIdleReader(q *req, r io.Reader) io.Reader {
	return &idleReader{r: r, rc: http.NewResponseController(q.w)}
}

func (d *idleReader) Read(p []byte) (int, error) {
	if now := time.Now(); !d.done && now.After(d.next) {
		d.rc.SetReadDeadline(now.Add(bodyIdle))
		d.next = now.Add(time.Second)
	}
	n, err := d.r.Read(p)
	if err == io.EOF && !d.done {
		// All of it arrived: net/http now reads on in the background
		// (for the client leaving), and a deadline that expires while the
		// upload is still being finished would cancel it.
		d.rc.SetReadDeadline(time.Time{})
		d.done = true
	}
	return n, err
}

// A big body from a fast sender arrives in many small pieces when the
// server reads faster than the sender writes (a browser's 1 GiB drop
// came in reads of 30-50 KiB): each read wakes the connection's
// goroutine, and the wake-ups cost more CPU than the bytes. While a
// chunk post's body arrives fast, lowat raises the socket's receive
// low-water mark so that a read waits for lowatMark bytes; the mark is
// kept below the bytes still to come (net/http may hold up to 4 KiB of
// them in its buffer), goes back to 1 before the body's last bytes and
// when the reader is done (the next request's head must wake the
// connection), and is given up for good when the sender slows down (a
// read that waits over lowatSlow), so that the idle deadline still
// means "nothing arrived" for a slow sender.
const (
	lowatMark  = 256 << 10 // the mark while a body arrives fast
	lowatSlack = 64 << 10  // kept between the mark and the bytes still to come
	lowatFast  = 1 << 20   // bytes that must arrive within lowatSlow before the mark is set
	lowatSlow  = time.Second
)

// lowatReader reads a body of left bytes, setting the mark with set.
type lowatReader struct {
	r     io.Reader
	set   func(n int) error // nil: never
	left  int64             // body bytes not yet returned
	got   int64
	mark  int // the mark set now (1: the socket's default)
	start time.Time
	last  time.Time
	off   bool // given up: slow sender, or no socket to set
}

// lowat returns q's body reader for a body of n bytes, which raises the
// mark of q's connection while it arrives fast; done must be called
// before the handler returns.
func (s *Server) lowat(q *req, r io.Reader, n int64) *lowatReader {
	l := &lowatReader{r: r, left: n, mark: 1, off: true}
	fc, _ := q.r.Context().Value(framingKey{}).(*framingConn)
	if s.recvLowat == nil || fc == nil || n < lowatFast+lowatMark+lowatSlack {
		return l
	}
	c := fc.Conn
	l.set = func(n int) error { return s.recvLowat(c, n) }
	l.off = false
	return l
}

func (l *lowatReader) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	l.left -= int64(n)
	l.got += int64(n)
	if l.off {
		return n, err
	}
	now := time.Now()
	if l.start.IsZero() {
		l.start = now
	}
	switch {
	case l.mark > 1 && now.Sub(l.last) > lowatSlow:
		l.lower()
		l.off = true // the sender slowed down: reads take what comes
	case l.mark > 1 && (err != nil || l.left < int64(l.mark)+lowatSlack):
		l.lower() // the end is near: its last bytes must wake the read
	case l.mark == 1 && err == nil && l.got >= lowatFast && l.left >= lowatMark+lowatSlack:
		if now.Sub(l.start) > lowatSlow {
			l.off = true // not fast: never
			break
		}
		if l.set(lowatMark) != nil {
			l.off = true
			break
		}
		l.mark = lowatMark
	}
	l.last = now
	return n, err
}

// lower puts the mark back to 1 (or gives up when it cannot).
func (l *lowatReader) lower() {
	if l.set(1) != nil {
		l.off = true // nothing better to do; the connection is closed after an error
	}
	l.mark = 1
}

// done puts the mark back to 1 when the body was not read to its end.
func (l *lowatReader) done() {
	if l.mark > 1 {
		l.lower()
	}
}

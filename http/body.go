package http

import (
	"io"
	"net/http"
	"time"
)

// bodyIdle is how long an upload may go without a single byte arriving
// before the connection is dropped. The server has no global read timeout
// (it would cut multi-gigabyte uploads), so each upload body pushes its own
// read deadline forward as data flows.
const bodyIdle = 2 * time.Minute

// idleReader extends the connection's read deadline while a body is read.
type idleReader struct {
	r    io.Reader
	rc   *http.ResponseController
	next time.Time
}

func newIdleReader(q *req, r io.Reader) io.Reader {
	return &idleReader{r: r, rc: http.NewResponseController(q.w)}
}

func (d *idleReader) Read(p []byte) (int, error) {
	if now := time.Now(); now.After(d.next) {
		d.rc.SetReadDeadline(now.Add(bodyIdle))
		d.next = now.Add(time.Second)
	}
	return d.r.Read(p)
}

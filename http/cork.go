package http

import (
	"errors"
	"io"
	"sync"
)

// One small download, one write, one TCP segment. net/http sends a
// file's response in two pieces: the head (a write from its own buffer)
// and then the body (by sendfile(2) from the file). On a fast link each
// piece costs a trip through the TCP stack of both ends, and for a small
// file the head's trip costs as much as the body's: measured under load,
// a fifth of the server's CPU per 4 KiB GET went into the head's write.
// While a download with a small body (corkBody, get.go) is corked, the
// connection holds what net/http writes (the head); when net/http hands
// it the body (ReadFrom, an io.LimitedReader over the file), the body is
// read in after the head and both go out in one write. For a few KiB a
// read and a write also cost less than sendfile, which splices through a
// pipe of its own; bigger bodies keep sendfile. Whatever is still held
// when the download ends (a head without a body) is written then.
// Nothing changes in what is sent, or in what order.
//
// Corking is for an HTTP/1 connection's own goroutine (the handler's), the
// only one that writes to it; h2 connections are never framingConns.

// corkMax bounds what a corked connection holds (a head and a body of
// up to corkBody): more is written at once.
const corkMax = corkBody + 16<<10

// corkSmall is the buffer of a corked body of up to corkSmallBody (a
// small file's): a head and the body fit, and 32 connections fetching
// small files hold 32 of these, not 32 buffers of corkMax (2.5 MiB of
// peak RSS, issue 19). A head longer than the room left is written at
// once, the body then as if uncorked: slower, never wrong.
const (
	corkSmall     = 16 << 10
	corkSmallBody = corkSmall - 4<<10
)

// corkBufs and corkSmallBufs are the buffers of corked connections, taken
// while corked: an idle connection holds none.
var (
	corkBufs      = sync.Pool{New: func() any { b := make([]byte, 0, corkMax); return &b }}
	corkSmallBufs = sync.Pool{New: func() any { b := make([]byte, 0, corkSmall); return &b }}
)

// cork is a framingConn's corking state.
type cork struct {
	on   bool
	bufp *[]byte // buf's, from corkBufs or corkSmallBufs while corked
	buf  []byte  // held writes
}

// cork starts holding c's writes (see above), with room for a body of
// up to corkBody.
func (c *framingConn) cork() { c.corkFor(corkBody) }

// corkFor starts holding c's writes, with room for a head and a body of
// n bytes (n at most corkBody).
func (c *framingConn) corkFor(n int64) {
	c.ck.on = true
	if c.ck.bufp == nil {
		if n <= corkSmallBody {
			c.ck.bufp = corkSmallBufs.Get().(*[]byte)
		} else {
			c.ck.bufp = corkBufs.Get().(*[]byte)
		}
		c.ck.buf = (*c.ck.bufp)[:0]
	}
}

// uncork writes what c holds and stops holding. An error means the
// connection is unusable: it is closed, so that nothing later is sent
// after a partial response.
func (c *framingConn) uncork() error {
	c.ck.on = false
	var err error
	if len(c.ck.buf) > 0 {
		err = c.flushHeld()
	}
	if c.ck.bufp != nil {
		switch cap(c.ck.buf) {
		case corkMax:
			*c.ck.bufp = c.ck.buf[:0]
			corkBufs.Put(c.ck.bufp)
		case corkSmall:
			*c.ck.bufp = c.ck.buf[:0]
			corkSmallBufs.Put(c.ck.bufp)
		}
		c.ck.bufp, c.ck.buf = nil, nil
	}
	return err
}

// Write holds p while corked (up to the buffer's size), else writes it.
func (c *framingConn) Write(p []byte) (int, error) {
	if !c.ck.on {
		return c.Conn.Write(p)
	}
	if len(c.ck.buf)+len(p) <= cap(c.ck.buf) {
		c.ck.buf = append(c.ck.buf, p...)
		return len(p), nil
	}
	if err := c.flushHeld(); err != nil {
		return 0, err
	}
	return c.Conn.Write(p)
}

// ReadFrom sends r through the connection's ReadFrom (sendfile for a
// file) after what is held, or, while corked, reads a body small enough
// to be held after the head and writes both at once.
func (c *framingConn) ReadFrom(r io.Reader) (int64, error) {
	if lr, ok := r.(*io.LimitedReader); ok && c.ck.on && len(c.ck.buf) > 0 && lr.N > 0 && lr.N <= int64(cap(c.ck.buf)-len(c.ck.buf)) {
		h := len(c.ck.buf)
		k, rerr := io.ReadFull(lr, c.ck.buf[h:h+int(lr.N)])
		c.ck.buf = c.ck.buf[:h+k]
		if err := c.flushHeld(); err != nil {
			return 0, err
		}
		if errors.Is(rerr, io.EOF) || errors.Is(rerr, io.ErrUnexpectedEOF) {
			rerr = nil // the file shrank: a short body, as sendfile sends it
		}
		return int64(k), rerr
	}
	if len(c.ck.buf) > 0 {
		if err := c.flushHeld(); err != nil {
			return 0, err
		}
	}
	if rf, ok := c.Conn.(io.ReaderFrom); ok {
		return rf.ReadFrom(r)
	}
	return io.Copy(writerOnly{c.Conn}, r)
}

// flushHeld writes the held bytes. On error the connection is closed.
func (c *framingConn) flushHeld() error {
	buf := c.ck.buf
	c.ck.buf = c.ck.buf[:0]
	if _, err := c.Conn.Write(buf); err != nil {
		c.Conn.Close()
		return err
	}
	return nil
}

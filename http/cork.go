package http

import (
	"errors"
	"io"
	"net"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// One download, one TCP segment. net/http sends a file's response in two
// pieces: the head (a write from its own buffer) and then the body (by
// sendfile(2) from the file). On a fast link each piece costs a trip
// through the TCP stack of both ends, and for a small file the head's
// trip costs as much as the body's: measured under load, a fifth of the
// server's CPU per 4 KiB GET went into the head's write. While a download
// is corked, the connection keeps what net/http writes (the head) and
// hands it to the kernel with MSG_MORE just before the body's sendfile,
// so both leave in one segment; whatever is still held when the download
// ends is written then. Nothing changes in what is sent, or in what order.
//
// Corking is for an HTTP/1 connection's own goroutine (the handler's), the
// only one that writes to it; h2 connections are never framingConns.

// corkMax bounds what a corked connection holds (a head and a body of
// up to corkBody): more is written at once.
const corkMax = 48 << 10

// corkBufs are the buffers of corked connections, taken while corked: an
// idle connection holds none.
var corkBufs = sync.Pool{New: func() any { b := make([]byte, 0, corkMax); return &b }}

// cork is a framingConn's corking state.
type cork struct {
	on   bool
	bufp *[]byte         // buf's, from corkBufs while corked
	buf  []byte          // held writes
	rc   syscall.RawConn // the TCP socket's, for MSG_MORE; nil under TLS
	rcOK bool            // rc was looked up
	// sendMore's arguments and results (a closure made once per
	// connection, not per download).
	p    []byte
	n    int
	err  error
	send func(fd uintptr) bool
}

// cork starts holding c's writes (see above).
func (c *framingConn) cork() {
	c.ck.on = true
	if c.ck.bufp == nil {
		c.ck.bufp = corkBufs.Get().(*[]byte)
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
		_, err = c.flushHeld(false)
	}
	if c.ck.bufp != nil {
		if cap(c.ck.buf) == corkMax {
			*c.ck.bufp = c.ck.buf[:0]
			corkBufs.Put(c.ck.bufp)
		}
		c.ck.bufp, c.ck.buf = nil, nil
	}
	return err
}

// Write holds p while corked (up to corkMax), else writes it.
func (c *framingConn) Write(p []byte) (int, error) {
	if !c.ck.on {
		return c.Conn.Write(p)
	}
	if len(c.ck.buf)+len(p) <= corkMax {
		c.ck.buf = append(c.ck.buf, p...)
		return len(p), nil
	}
	if _, err := c.flushHeld(false); err != nil {
		return 0, err
	}
	return c.Conn.Write(p)
}

// ReadFrom sends r through the connection's ReadFrom (sendfile for a
// file), after what is held, which goes out with MSG_MORE: with the
// first of the body's bytes. A body small enough to be held too (net/http
// hands a file's body as an io.LimitedReader) is read after the head and
// both go in one write: for a few KiB a read and a write cost less than
// a send and a sendfile (which splices through a pipe of its own).
func (c *framingConn) ReadFrom(r io.Reader) (int64, error) {
	if lr, ok := r.(*io.LimitedReader); ok && c.ck.on && len(c.ck.buf) > 0 && lr.N > 0 && lr.N <= int64(corkMax-len(c.ck.buf)) {
		h := len(c.ck.buf)
		k, rerr := io.ReadFull(lr, c.ck.buf[h:h+int(lr.N)])
		c.ck.buf = c.ck.buf[:h+k]
		if _, err := c.flushHeld(false); err != nil {
			return 0, err
		}
		if errors.Is(rerr, io.EOF) || errors.Is(rerr, io.ErrUnexpectedEOF) {
			rerr = nil // the file shrank: a short body, as sendfile sends it
		}
		return int64(k), rerr
	}
	more := false
	if len(c.ck.buf) > 0 {
		var err error
		if more, err = c.flushHeld(true); err != nil {
			return 0, err
		}
	}
	var n int64
	var err error
	if rf, ok := c.Conn.(io.ReaderFrom); ok {
		n, err = rf.ReadFrom(r)
	} else {
		n, err = io.Copy(writerOnly{c.Conn}, r)
	}
	if more && n == 0 {
		// Nothing followed the held bytes (an empty or shrunk file):
		// push them now rather than leave them waiting for the next
		// response. Setting TCP_NODELAY pushes what is queued.
		c.ck.rc.Control(func(fd uintptr) { unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_NODELAY, 1) })
	}
	return n, err
}

// flushHeld writes the held bytes. With more, a TCP socket gets them
// with MSG_MORE (reported by the bool): the kernel keeps them for the
// next send. On error the connection is closed.
func (c *framingConn) flushHeld(more bool) (bool, error) {
	buf := c.ck.buf
	c.ck.buf = c.ck.buf[:0]
	var err error
	usedMore := false
	if more && c.rawConn() != nil {
		usedMore = true
		err = c.sendMore(buf)
	} else {
		_, err = c.Conn.Write(buf)
	}
	if err != nil {
		c.Conn.Close()
		return false, err
	}
	return usedMore, nil
}

// rawConn is the TCP socket's RawConn, or nil when c is not over one.
func (c *framingConn) rawConn() syscall.RawConn {
	if !c.ck.rcOK {
		c.ck.rcOK = true
		if tc, ok := c.Conn.(*net.TCPConn); ok {
			if rc, err := tc.SyscallConn(); err == nil {
				c.ck.rc = rc
				c.ck.send = c.sendMoreFD
			}
		}
	}
	return c.ck.rc
}

// sendMore sends all of p with MSG_MORE, waiting (in the poller) while
// the socket's buffer is full.
func (c *framingConn) sendMore(p []byte) error {
	for len(p) > 0 {
		c.ck.p, c.ck.n, c.ck.err = p, 0, nil
		if err := c.ck.rc.Write(c.ck.send); err != nil {
			return err
		}
		if c.ck.err != nil {
			return &net.OpError{Op: "write", Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: c.ck.err}
		}
		p = p[c.ck.n:]
	}
	c.ck.p = nil
	return nil
}

// sendMoreFD is one send(2) of c.ck.p with MSG_MORE; false asks the
// poller to wait until the socket can take more.
func (c *framingConn) sendMoreFD(fd uintptr) bool {
	for {
		n, err := unix.SendmsgN(int(fd), c.ck.p, nil, nil, unix.MSG_MORE|unix.MSG_NOSIGNAL)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.EAGAIN):
			return false
		}
		c.ck.n, c.ck.err = n, err
		return true
	}
}

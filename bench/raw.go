package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"sync"
	"time"
)

// rawPool is a minimal HTTP/1.1 keep-alive GET client for the
// request-heavy scenarios (get-small, range): one connection per worker,
// one request at a time, the body counted and dropped. net/http's client
// costs about as much CPU per small request as the server does, which on a
// 2-core machine would make the harness the limit; this one costs a few
// syscalls and no allocations per request. It understands Content-Length
// bodies only (what a file server sends for files and ranges).
type rawPool struct {
	addr, host string
	tls        bool // https: each connection speaks TLS (benchTLS)
	mu         sync.Mutex
	conns      map[int]*rawConn
}

type rawConn struct {
	c    net.Conn
	br   *bufio.Reader
	req  []byte
	stop func() bool
}

func newRawPool(base string) (*rawPool, error) {
	u, err := url.Parse(base)
	if err != nil {
		return nil, err
	}
	return &rawPool{addr: u.Host, host: u.Host, tls: u.Scheme == "https", conns: map[int]*rawConn{}}, nil
}

func (p *rawPool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for w, c := range p.conns {
		c.stop()
		c.c.Close()
		delete(p.conns, w)
	}
}

func (p *rawPool) conn(ctx context.Context, w int) (*rawConn, error) {
	p.mu.Lock()
	rc := p.conns[w]
	p.mu.Unlock()
	if rc != nil {
		return rc, nil
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", p.addr)
	if err != nil {
		return nil, err
	}
	if p.tls {
		tc := tls.Client(c, benchTLS())
		if err := tc.HandshakeContext(ctx); err != nil {
			c.Close()
			return nil, err
		}
		c = tc
	}
	rc = &rawConn{c: c, br: bufio.NewReaderSize(c, 64<<10)}
	rc.stop = context.AfterFunc(ctx, func() { c.SetDeadline(time.Now()) })
	p.mu.Lock()
	p.conns[w] = rc
	p.mu.Unlock()
	return rc, nil
}

func (p *rawPool) drop(w int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if rc := p.conns[w]; rc != nil {
		rc.stop()
		rc.c.Close()
		delete(p.conns, w)
	}
}

// get sends GET path (with extra header lines, each ending in \r\n) on
// worker w's connection and wants status want and a body of n bytes.
func (p *rawPool) get(ctx context.Context, w int, path, extra string, want int, n int64, moved interface{ Add(int64) int64 }) error {
	rc, err := p.conn(ctx, w)
	if err != nil {
		return err
	}
	rc.req = append(rc.req[:0], "GET "...)
	rc.req = append(rc.req, path...)
	rc.req = append(rc.req, " HTTP/1.1\r\nHost: "...)
	rc.req = append(rc.req, p.host...)
	rc.req = append(rc.req, "\r\nUser-Agent: hoard-bench\r\n"...)
	rc.req = append(rc.req, extra...)
	rc.req = append(rc.req, "\r\n"...)
	if _, err := rc.c.Write(rc.req); err != nil {
		p.drop(w)
		return err
	}
	code, cl, closeAfter, err := readHead(rc.br)
	if err != nil {
		p.drop(w)
		return fmt.Errorf("GET %s: %w", path, err)
	}
	if cl < 0 {
		p.drop(w)
		return fmt.Errorf("GET %s: %d answer without Content-Length", path, code)
	}
	if code != want {
		b := make([]byte, min(cl, 300))
		io.ReadFull(rc.br, b)
		p.drop(w)
		return fmt.Errorf("GET %s: status %d (want %d): %s", path, code, want, clipBytes(b))
	}
	if n >= 0 && cl != n {
		p.drop(w)
		return fmt.Errorf("GET %s: Content-Length %d, want %d", path, cl, n)
	}
	for left := cl; left > 0; {
		k, err := rc.br.Discard(int(min(left, 1<<20)))
		left -= int64(k)
		moved.Add(int64(k))
		if err != nil {
			p.drop(w)
			return fmt.Errorf("GET %s: body: %w", path, err)
		}
	}
	if closeAfter {
		p.drop(w)
	}
	return nil
}

// readHead reads a status line and headers: the status, Content-Length
// (-1 if absent or the body is chunked) and whether the server closes.
func readHead(br *bufio.Reader) (code int, cl int64, closeAfter bool, err error) {
	line, err := br.ReadSlice('\n')
	if err != nil {
		return 0, -1, false, err
	}
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) {
		return 0, -1, false, fmt.Errorf("bad status line %q", clipBytes(line))
	}
	code, err = strconv.Atoi(string(line[9:12]))
	if err != nil {
		return 0, -1, false, fmt.Errorf("bad status line %q", clipBytes(line))
	}
	closeAfter = bytes.HasPrefix(line, []byte("HTTP/1.0"))
	cl = -1
	for {
		line, err = br.ReadSlice('\n')
		if err != nil {
			return 0, -1, false, err
		}
		h := bytes.TrimRight(line, "\r\n")
		if len(h) == 0 {
			return code, cl, closeAfter, nil
		}
		k, v, ok := bytes.Cut(h, []byte(":"))
		if !ok {
			continue
		}
		v = bytes.TrimSpace(v)
		switch {
		case bytes.EqualFold(k, []byte("Content-Length")):
			if cl, err = strconv.ParseInt(string(v), 10, 64); err != nil {
				return 0, -1, false, fmt.Errorf("bad Content-Length %q", v)
			}
		case bytes.EqualFold(k, []byte("Transfer-Encoding")):
			cl = -1
			return code, -1, true, nil
		case bytes.EqualFold(k, []byte("Connection")):
			if bytes.EqualFold(v, []byte("close")) {
				closeAfter = true
			} else if bytes.EqualFold(v, []byte("keep-alive")) {
				closeAfter = false
			}
		}
	}
}

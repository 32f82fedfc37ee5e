package http

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"strings"
	"sync"
)

// Request framing checks that net/http cannot make for us.
//
// net/http reads a request with both Transfer-Encoding: chunked and
// Content-Length by the chunked coding alone and deletes the
// Content-Length header before a handler sees the request (RFC 9112
// §6.1 allows that, but requires the connection to be closed after the
// response); it joins obs-folded header lines (a folded Transfer-Encoding
// included), and ignores Transfer-Encoding in an HTTP/1.0 request and
// frames it by Content-Length. A proxy in front that frames such a
// request differently then sends a request of its own inside the body of
// another: request smuggling. None of these shapes is visible to a
// handler, so FramingListener watches the bytes of each connection: a
// framer follows the requests' framing exactly as net/http does (head up
// to the empty line, then Content-Length bytes or chunks and trailers)
// and notes each request head's method, target and whether its framing
// is ambiguous. ServeHTTP answers such a request with 400 and closes the
// connection. Shapes net/http refuses on its own (two different
// Content-Lengths: 400; a transfer coding other than chunked: 501) it
// also closes the connection after.

// FramingListener wraps ln so that every connection's request framing is
// watched; use it with FramingContext as the http.Server's ConnContext.
func FramingListener(ln net.Listener) net.Listener { return framingListener{ln} }

// FramingContext is the http.Server's ConnContext for FramingListener's
// connections: it hands the connection's framer to the handler.
func FramingContext(ctx context.Context, c net.Conn) context.Context {
	if fc, ok := c.(*framingConn); ok {
		return context.WithValue(ctx, framingKey{}, fc)
	}
	return ctx
}

type framingKey struct{}

type framingListener struct{ net.Listener }

func (l framingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &framingConn{Conn: c}, nil
}

// framingConn feeds what the server reads to its framer. It forwards
// ReadFrom, so that net/http's response still hands an *os.File to the
// TCP connection's ReadFrom (sendfile(2)), and CloseWrite, which
// net/http uses to close a connection gracefully.
type framingConn struct {
	net.Conn
	mu sync.Mutex
	fr framer
	ck cork // cork.go
}

func (c *framingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.mu.Lock()
		c.fr.feed(p[:n])
		c.mu.Unlock()
	}
	return n, err
}

func (c *framingConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// NetConn returns the connection below (a *tls.Conn under TLS), as
// tls.Conn's NetConn does.
func (c *framingConn) NetConn() net.Conn { return c.Conn }

// next returns the head of the request the server is about to handle.
func (c *framingConn) next() (head, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.fr.pop()
}

// framingError is why the request r, read from fc, must be refused for
// its framing, or "" when it is fine (or fc is nil: r was not read from a
// FramingListener).
func framingError(r *http.Request, fc *framingConn) string {
	if fc == nil {
		return ""
	}
	h, ok := fc.next()
	switch {
	case !ok:
		return "the request's framing could not be followed"
	case h.method != r.Method || h.target != r.RequestURI:
		return "the request's framing could not be followed"
	}
	return h.bad
}

// head is one request head as the framer saw it.
type head struct {
	method, target string
	bad            string // why its framing is ambiguous; "" if it is not
}

// framer states.
const (
	frHead      = iota // reading a request head
	frBody             // n bytes of body left
	frChunkLine        // reading a chunk-size line
	frChunkData        // n bytes of chunk data left
	frChunkEnd         // reading the CRLF after chunk data
	frTrailer          // reading trailer lines up to an empty one
	frDone             // stopped: a refused request, or net/http closes here
)

// Limits past which net/http has given up on the connection already.
const (
	frMaxHead = 1 << 20 // net/http: MaxHeaderBytes (64 KiB here) + 4 KiB
	frMaxLine = 4096    // net/http: a chunk-size line, a trailer line
)

// framer follows HTTP/1.x request framing over a connection's bytes as
// net/http's server reads them. It is a plain state machine with no I/O;
// feed it the bytes in any pieces.
type framer struct {
	state int
	n     uint64  // bytes left in frBody and frChunkData
	buf   []byte  // the head, or the current line, being read
	heads []head  // heads read and not yet claimed by a handler
	head1 [1]head // heads' room for the usual one (no allocation a request)
	lost  bool    // stopped without a refused head: net/http closes here
}

// push queues h for a handler.
func (f *framer) push(h head) {
	if f.heads == nil {
		f.heads = f.head1[:0]
	}
	f.heads = append(f.heads, h)
}

// pop returns the oldest head not yet claimed.
func (f *framer) pop() (head, bool) {
	if len(f.heads) == 0 {
		return head{}, false
	}
	h := f.heads[0]
	f.heads = f.heads[1:]
	if len(f.heads) == 0 {
		// Let a long keep-alive connection's slice go; the next head
		// goes to head1 again.
		f.heads = f.head1[:0]
	}
	return h, true
}

func (f *framer) stop() {
	f.state, f.lost, f.buf = frDone, true, nil
}

func (f *framer) feed(p []byte) {
	for len(p) > 0 {
		switch f.state {
		case frDone:
			return
		case frBody, frChunkData:
			k := uint64(len(p))
			if k > f.n {
				k = f.n
			}
			f.n -= k
			p = p[k:]
			if f.n == 0 {
				if f.state == frBody {
					f.state = frHead
				} else {
					f.state = frChunkEnd
				}
			}
		case frChunkEnd:
			f.buf = append(f.buf, p[0])
			p = p[1:]
			if len(f.buf) == 2 {
				if string(f.buf) != "\r\n" {
					f.stop() // net/http: malformed chunked encoding
					continue
				}
				f.buf, f.state = f.buf[:0], frChunkLine
			}
		default: // line-based states
			i := bytes.IndexByte(p, '\n')
			if i < 0 {
				f.buf = append(f.buf, p...)
				p = nil
			} else {
				f.buf = append(f.buf, p[:i+1]...)
				p = p[i+1:]
			}
			if f.state == frHead && len(f.buf) > frMaxHead || f.state != frHead && len(f.buf) > frMaxLine+2 {
				f.stop()
				continue
			}
			if i >= 0 {
				f.line()
			}
		}
	}
}

// line handles the complete line (head: the head so far) at the end of
// f.buf.
func (f *framer) line() {
	switch f.state {
	case frHead:
		b := f.buf
		if !bytes.HasSuffix(b, []byte("\n\n")) && !bytes.HasSuffix(b, []byte("\n\r\n")) && string(b) != "\n" && string(b) != "\r\n" {
			return // the head goes on
		}
		f.headDone()
	case frChunkLine:
		// net/http: the line ends in CRLF, no other CR; extensions after
		// ';' are dropped, trailing blanks too; the size is hex, at most
		// 16 digits.
		l := f.buf
		f.buf = f.buf[:0]
		if len(l) < 2 || l[len(l)-2] != '\r' || bytes.IndexByte(l, '\r') != len(l)-2 || len(l)-2 >= frMaxLine {
			f.stop()
			return
		}
		l = l[:len(l)-2]
		l = bytes.TrimRight(l, " \t")
		l, _, _ = bytes.Cut(l, []byte(";"))
		n, ok := parseHex(l)
		if !ok {
			f.stop()
			return
		}
		if n == 0 {
			f.state = frTrailer
			return
		}
		f.n, f.state = n, frChunkData
	case frTrailer:
		// Trailer lines up to an empty one (net/http's MIME header
		// reader: LF or CRLF endings).
		l := f.buf
		f.buf = f.buf[:0]
		if string(l) == "\n" || string(l) == "\r\n" {
			f.state = frHead
		}
	}
}

func parseHex(b []byte) (uint64, bool) {
	if len(b) == 0 || len(b) > 16 {
		return 0, false
	}
	var n uint64
	for _, c := range b {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		n = n<<4 | uint64(c)
	}
	return n, true
}

// headDone parses the complete head in f.buf and sets up its body. Only
// the request line becomes a string (its method and target are kept);
// the header lines are read in place.
func (f *framer) headDone() {
	raw := f.buf
	f.buf = f.buf[:0]
	// next cuts the first line (without its \n and a \r before it) off
	// rest; every line of a complete head ends in \n.
	next := func(rest []byte) (line, after []byte) {
		k := bytes.IndexByte(rest, '\n')
		line, after = rest[:k], rest[k+1:]
		if len(line) > 0 && line[len(line)-1] == '\r' {
			line = line[:len(line)-1]
		}
		return line, after
	}
	first, rest := next(raw)
	if len(rest) == 0 {
		f.stop() // net/http: an empty request line is a bad request
		return
	}
	reqLine := string(first)
	method, tail, ok1 := strings.Cut(reqLine, " ")
	target, proto, ok2 := strings.Cut(tail, " ")
	major, minor, ok3 := http.ParseHTTPVersion(proto)
	if !ok1 || !ok2 || !ok3 || major != 1 {
		f.stop() // net/http refuses the request and closes
		return
	}
	h := head{method: method, target: target}
	var te, cl []string
	for {
		var l []byte
		l, rest = next(rest)
		if len(rest) == 0 {
			break // l is the empty line that ends the head
		}
		if len(l) > 0 && (l[0] == ' ' || l[0] == '\t') {
			h.bad = "obsolete line folding (a header line starting with a space or tab) is not accepted"
			continue
		}
		c := bytes.IndexByte(l, ':')
		if c < 0 {
			f.stop() // net/http: malformed header
			return
		}
		name := l[:c]
		switch {
		case asciiEqualFoldBytes(name, "Transfer-Encoding"):
			te = append(te, string(bytes.Trim(l[c+1:], " \t")))
		case asciiEqualFoldBytes(name, "Content-Length"):
			cl = append(cl, string(bytes.Trim(l[c+1:], " \t")))
		}
	}
	switch {
	case h.bad != "":
	case len(te) > 0 && len(cl) > 0:
		h.bad = "a request may not have both Transfer-Encoding and Content-Length"
	case len(te) > 0 && minor == 0:
		h.bad = "Transfer-Encoding is not allowed in an HTTP/1.0 request"
	}
	if h.bad != "" {
		// Refused, and the connection closes after the answer: nothing
		// after this head is ever a request.
		f.push(h)
		f.state, f.buf = frDone, nil
		return
	}
	switch {
	case len(te) > 0:
		if len(te) != 1 || !asciiEqualFold(te[0], "chunked") {
			f.stop() // net/http: 501, and closes
			return
		}
		f.push(h)
		f.state = frChunkLine
	case len(cl) > 0:
		n, ok := parseDecimal(strings.Trim(cl[0], " \t\r\n"))
		for _, v := range cl[1:] {
			ok = ok && strings.Trim(v, " \t\r\n") == strings.Trim(cl[0], " \t\r\n")
		}
		if !ok {
			f.stop() // net/http: 400, and closes
			return
		}
		f.push(h)
		if n > 0 {
			f.n, f.state = n, frBody
		}
	default:
		f.push(h)
	}
}

// parseDecimal is net/http's Content-Length syntax (strconv.ParseUint
// with base 10 and 63 bits): digits only, leading zeros allowed.
func parseDecimal(s string) (uint64, bool) {
	if s == "" {
		return 0, false
	}
	var n uint64
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		if n > (1<<63-1)/10 {
			return 0, false
		}
		n = n*10 + uint64(s[i]-'0')
		if n > 1<<63-1 {
			return 0, false
		}
	}
	return n, true
}

// asciiEqualFoldBytes is asciiEqualFold of a []byte and a string.
func asciiEqualFoldBytes(a []byte, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// asciiEqualFold is strings.EqualFold for ASCII only (header names are
// tokens; net/http refuses any other byte in them).
func asciiEqualFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

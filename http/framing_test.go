package http

import (
	"bufio"
	"bytes"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// goHeads reads stream as net/http's server does (http.ReadRequest, then
// the whole body) and returns the heads of the requests it would handle,
// up to the first one it refuses or whose body it cannot read.
func goHeads(stream []byte) []head {
	br := bufio.NewReader(bytes.NewReader(stream))
	var out []head
	for {
		req, err := http.ReadRequest(br)
		if err != nil || req.ProtoMajor != 1 {
			return out
		}
		out = append(out, head{method: req.Method, target: req.RequestURI})
		if _, err := io.Copy(io.Discard, req.Body); err != nil {
			return out
		}
	}
}

// frame feeds stream to a framer in pieces cut at random points.
func frame(stream []byte, r *rand.Rand) *framer {
	f := &framer{}
	for len(stream) > 0 {
		n := 1 + r.IntN(len(stream))
		if r.IntN(3) == 0 {
			n = min(n, 1+r.IntN(4))
		}
		f.feed(stream[:n])
		stream = stream[n:]
	}
	return f
}

// agree checks that the framer saw every request net/http would handle,
// in order, up to the first one it refuses (after which the connection
// closes).
func agree(t *testing.T, stream []byte, r *rand.Rand) {
	t.Helper()
	want := goHeads(stream)
	f := frame(stream, r)
	for k, w := range want {
		if k >= len(f.heads) {
			t.Fatalf("stream %q: net/http reads request %d (%s %s), the framer has %d heads (lost %v)", stream, k, w.method, w.target, len(f.heads), f.lost)
		}
		g := f.heads[k]
		if g.method != w.method || g.target != w.target {
			t.Fatalf("stream %q: request %d: framer %s %s, net/http %s %s", stream, k, g.method, g.target, w.method, w.target)
		}
		if g.bad != "" {
			return
		}
	}
}

// framingCases are streams with what the framer must say of each head.
var framingCases = []struct {
	name   string
	stream string
	heads  []head
	lost   bool
}{
	{"plain keep-alive", "GET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /b HTTP/1.1\r\nHost: x\r\n\r\n",
		[]head{{"GET", "/a", ""}, {"GET", "/b", ""}}, false},
	{"content-length body", "PUT /a HTTP/1.1\r\nHost: x\r\nContent-Length: 6\r\n\r\nGET /xGET /b HTTP/1.1\r\n\r\n",
		[]head{{"PUT", "/a", ""}, {"GET", "/b", ""}}, false},
	{"chunked with extension and trailer", "POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: Chunked\r\n\r\n3;x=\"y\"\r\nGET\r\n10 \r\n0123456789abcdef\r\n0\r\nX-T: 1\r\n\r\nGET /b HTTP/1.1\r\n\r\n",
		[]head{{"POST", "/a", ""}, {"GET", "/b", ""}}, false},
	{"bare LF head", "PUT /a HTTP/1.1\nHost: x\nContent-Length: 2\n\nabGET /b HTTP/1.1\n\n",
		[]head{{"PUT", "/a", ""}, {"GET", "/b", ""}}, false},
	{"same content-length twice", "PUT /a HTTP/1.1\r\nContent-Length: 2\r\nContent-Length:  2\r\n\r\nabGET /b HTTP/1.1\r\n\r\n",
		[]head{{"PUT", "/a", ""}, {"GET", "/b", ""}}, false},
	{"transfer-encoding and content-length", "POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\n\r\n",
		[]head{{"POST", "/a", "a request may not have both Transfer-Encoding and Content-Length"}}, false},
	{"folded transfer-encoding", "POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding:\r\n chunked\r\n\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\n\r\n",
		[]head{{"POST", "/a", "obsolete line folding (a header line starting with a space or tab) is not accepted"}}, false},
	{"folded other header", "GET /a HTTP/1.1\r\nHost: x\r\nX-A: a\r\n\tb\r\n\r\nGET /b HTTP/1.1\r\n\r\n",
		[]head{{"GET", "/a", "obsolete line folding (a header line starting with a space or tab) is not accepted"}}, false},
	{"transfer-encoding in HTTP/1.0", "POST /a HTTP/1.0\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\n\r\n",
		[]head{{"POST", "/a", "Transfer-Encoding is not allowed in an HTTP/1.0 request"}}, false},
	{"different content-lengths", "PUT /a HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab", nil, true},
	{"unknown coding", "PUT /a HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", nil, true},
	{"two transfer-encodings", "PUT /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", nil, true},
	{"chunk line with bare LF", "PUT /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n2\nab\r\n0\r\n\r\n", []head{{"PUT", "/a", ""}}, true},
	{"HTTP/2 request line", "GET / HTTP/2.0\r\n\r\n", nil, true},
	{"empty request line", "\r\nGET / HTTP/1.1\r\n\r\n", nil, true},
}

func TestFramer(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, c := range framingCases {
		t.Run(c.name, func(t *testing.T) {
			for range 20 {
				f := frame([]byte(c.stream), r)
				if len(f.heads) != len(c.heads) || f.lost != c.lost {
					t.Fatalf("heads %+v lost %v, want %+v lost %v", f.heads, f.lost, c.heads, c.lost)
				}
				for i := range c.heads {
					if f.heads[i] != c.heads[i] {
						t.Fatalf("head %d = %+v, want %+v", i, f.heads[i], c.heads[i])
					}
				}
			}
			agree(t, []byte(c.stream), r)
		})
	}
}

// genStream builds a pipeline of requests from r: bodies by
// Content-Length or chunks (sizes, extensions, trailers), CRLF or bare
// LF heads, odd but valid header spellings, and now and then one of the
// ambiguous shapes or a broken piece.
func genStream(r *rand.Rand) []byte {
	var b bytes.Buffer
	eol := func() string {
		if r.IntN(5) == 0 {
			return "\n"
		}
		return "\r\n"
	}
	for range 1 + r.IntN(5) {
		method := []string{"GET", "PUT", "POST", "OPTIONS", "HEAD"}[r.IntN(5)]
		target := "/" + strconv.Itoa(r.IntN(1000))
		if r.IntN(10) == 0 {
			target = "*"
		}
		proto := []string{"HTTP/1.1", "HTTP/1.1", "HTTP/1.0", "HTTP/1.5"}[r.IntN(4)]
		e := eol()
		b.WriteString(method + " " + target + " " + proto + e)
		b.WriteString("Host: x" + e)
		body := make([]byte, r.IntN(40))
		for i := range body {
			body[i] = "GET /\r\n0:"[r.IntN(9)]
		}
		chunked := r.IntN(2) == 0
		te := []string{"chunked", "Chunked", "CHUNKED", " chunked "}[r.IntN(4)]
		switch r.IntN(12) {
		case 0:
			b.WriteString("Transfer-Encoding: " + te + e + "Content-Length: " + strconv.Itoa(len(body)) + e)
		case 1:
			b.WriteString("X-Fold: a" + e + " b" + e)
		case 2:
			b.WriteString("Content-Length: 1" + e + "Content-Length: 2" + e)
		case 3:
			b.WriteString("content-length: 00" + strconv.Itoa(len(body)) + e)
			chunked = false
		}
		if chunked {
			b.WriteString("transfer-encoding:" + te + e + e)
			rest := body
			for len(rest) > 0 {
				n := 1 + r.IntN(len(rest))
				ext := []string{"", ";a", ";a=b", ";a=\"b;c\"", " "}[r.IntN(5)]
				hex := strconv.FormatInt(int64(n), 16)
				if r.IntN(2) == 0 {
					hex = strings.ToUpper(hex)
				}
				if r.IntN(4) == 0 {
					hex = "0" + hex
				}
				b.WriteString(hex + ext + "\r\n")
				b.Write(rest[:n])
				b.WriteString("\r\n")
				rest = rest[n:]
			}
			b.WriteString("0\r\n")
			if r.IntN(3) == 0 {
				b.WriteString("X-Trailer: 1" + eol())
			}
			b.WriteString(eol())
		} else {
			b.WriteString("Content-Length: " + strconv.Itoa(len(body)) + e + e)
			b.Write(body)
		}
	}
	out := b.Bytes()
	if r.IntN(8) == 0 && len(out) > 0 { // a damaged byte somewhere
		out[r.IntN(len(out))] = "\r\n :;0 a"[r.IntN(8)]
	}
	return out
}

// TestFramerAgreesProperty: on many generated pipelines, the framer sees
// the same requests as net/http, cut into pieces anywhere.
func TestFramerAgreesProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for range 20000 {
		agree(t, genStream(r), r)
	}
}

// FuzzFramer: for any bytes, the framer sees the requests net/http
// reads, whatever pieces they arrive in, and never panics.
func FuzzFramer(f *testing.F) {
	for _, c := range framingCases {
		f.Add([]byte(c.stream), uint64(1))
	}
	r := rand.New(rand.NewPCG(3, 4))
	for range 30 {
		f.Add(genStream(r), r.Uint64())
	}
	f.Fuzz(func(t *testing.T, stream []byte, seed uint64) {
		agree(t, stream, rand.New(rand.NewPCG(seed, 0)))
	})
}

// readFromRecorder is a connection whose ReadFrom notes its source.
type readFromRecorder struct {
	net.Conn
	src io.Reader
}

func (c *readFromRecorder) ReadFrom(r io.Reader) (int64, error) {
	c.src = r
	return io.Copy(io.Discard, r)
}

// TestFramingConnSendfile: the wrapped connection hands the very source
// it is given (an *os.File: sendfile) to the TCP connection's ReadFrom.
func TestFramingConnSendfile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	inner := &readFromRecorder{}
	var c net.Conn = &framingConn{Conn: inner}
	rf, ok := c.(io.ReaderFrom)
	if !ok {
		t.Fatal("framingConn is no io.ReaderFrom")
	}
	lr := &io.LimitedReader{R: f, N: 4}
	if n, err := rf.ReadFrom(lr); n != 4 || err != nil {
		t.Fatalf("ReadFrom = %d, %v", n, err)
	}
	if inner.src != lr {
		t.Fatalf("the inner ReadFrom got %T, want the caller's source", inner.src)
	}
	if _, ok := c.(interface{ CloseWrite() error }); !ok {
		t.Fatal("framingConn has no CloseWrite")
	}
}

// writeRecorder is a net.Conn that records its writes, one by one.
type writeRecorder struct {
	net.Conn
	writes [][]byte
}

func (c *writeRecorder) Write(p []byte) (int, error) {
	c.writes = append(c.writes, bytes.Clone(p))
	return len(p), nil
}

// TestCorkOrder: a corked connection holds writes up to corkMax and
// sends them, in order and whole, when it must: before a write that would
// pass the bound, before a body by ReadFrom, and when uncorked.
func TestCorkOrder(t *testing.T) {
	inner := &writeRecorder{}
	c := &framingConn{Conn: inner}
	c.cork()
	c.Write([]byte("a"))
	c.Write([]byte("b"))
	if len(inner.writes) != 0 {
		t.Fatalf("corked writes went out: %q", inner.writes)
	}
	big := bytes.Repeat([]byte("x"), corkMax)
	c.Write(big) // a+b+big > corkMax: a+b first, then big
	if len(inner.writes) != 2 || string(inner.writes[0]) != "ab" || !bytes.Equal(inner.writes[1], big) {
		t.Fatalf("writes %d, first %q", len(inner.writes), inner.writes[0])
	}
	c.Write([]byte("head"))
	if n, err := c.ReadFrom(strings.NewReader("body")); n != 4 || err != nil {
		t.Fatalf("ReadFrom = %d, %v", n, err)
	}
	if got := inner.writes[2:]; len(got) != 2 || string(got[0]) != "head" || string(got[1]) != "body" {
		t.Fatalf("writes after the head: %q", got)
	}
	c.Write([]byte("tail"))
	if err := c.uncork(); err != nil || len(inner.writes) != 5 || string(inner.writes[4]) != "tail" {
		t.Fatalf("uncork: %v, writes %q", err, inner.writes)
	}
	c.Write([]byte("free"))
	if len(inner.writes) != 6 {
		t.Fatal("an uncorked write was held")
	}
}

// TestCorkShortBody: a small body whose file shrank after its size was
// taken (the head already promises the old length) goes out short, after
// its head, in one write; net/http then closes the connection, as it does
// when sendfile comes up short.
func TestCorkShortBody(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, bytes.Repeat([]byte("z"), 4096), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := os.Truncate(p, 100); err != nil {
		t.Fatal(err)
	}
	inner := &writeRecorder{}
	c := &framingConn{Conn: inner}
	c.cork()
	c.Write([]byte("head\r\n\r\n"))
	n, err := c.ReadFrom(&io.LimitedReader{R: f, N: 4096})
	if n != 100 || err != nil {
		t.Fatalf("ReadFrom = %d, %v; want 100, nil", n, err)
	}
	if len(inner.writes) != 1 || string(inner.writes[0]) != "head\r\n\r\n"+strings.Repeat("z", 100) {
		t.Fatalf("writes: %d", len(inner.writes))
	}
	if err := c.uncork(); err != nil || len(inner.writes) != 1 {
		t.Fatalf("uncork: %v, %d writes", err, len(inner.writes))
	}
}

// TestCorkSmall: a small body is corked in a small buffer (corkSmall, not
// corkMax: issue 19's peak RSS) and still leaves with its head in one
// write; a head too long for the small buffer goes out alone, then the
// body, in order and whole.
func TestCorkSmall(t *testing.T) {
	body := bytes.Repeat([]byte("b"), 4096)
	for _, head := range []string{"head\r\n\r\n", strings.Repeat("h", corkSmall-100)} {
		inner := &writeRecorder{}
		c := &framingConn{Conn: inner}
		c.corkFor(int64(len(body)))
		if cap(c.ck.buf) != corkSmall {
			t.Fatalf("a 4 KiB body's cork buffer holds %d bytes, want %d", cap(c.ck.buf), corkSmall)
		}
		c.Write([]byte(head))
		if n, err := c.ReadFrom(&io.LimitedReader{R: bytes.NewReader(body), N: int64(len(body))}); n != int64(len(body)) || err != nil {
			t.Fatalf("ReadFrom = %d, %v", n, err)
		}
		if err := c.uncork(); err != nil {
			t.Fatal(err)
		}
		var all []byte
		for _, w := range inner.writes {
			all = append(all, w...)
		}
		if string(all) != head+string(body) {
			t.Fatalf("head %d bytes: sent %d bytes, not the head and the body", len(head), len(all))
		}
		if len(head) < 100 && len(inner.writes) != 1 {
			t.Fatalf("a short head and a 4 KiB body went out in %d writes, want 1", len(inner.writes))
		}
	}
	c := &framingConn{Conn: &writeRecorder{}}
	c.corkFor(corkBody)
	if cap(c.ck.buf) != corkMax {
		t.Fatalf("a 64 KiB body's cork buffer holds %d bytes, want %d", cap(c.ck.buf), corkMax)
	}
	c.uncork()
}

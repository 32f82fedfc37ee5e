package main

// TLS on the same ports as plain HTTP (copyparty's way): the first byte a
// client sends decides. A TLS handshake starts with a handshake record
// (0x16); an HTTP request starts with a method's letter.
//
// Layering, bottom up: the TCP listener; muxListener, which peeks the
// first byte of each connection (MSG_PEEK, so a plain connection is handed
// on untouched, *net.TCPConn and all, and keeps sendfile) and runs the TLS
// handshake; then http's FramingListener, which must see the decrypted
// stream; then the http.Server. Because the server sees a framing
// connection rather than a *tls.Conn, it cannot fill in r.TLS itself:
// tlsConnContext and withTLSState do that. Connections that negotiated h2
// (only with --h2) skip the framing layer (it follows HTTP/1 framing) and
// reach the server as the *tls.Conn, which serves them with its own HTTP/2.

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	srvhttp "hoard/http"
)

// sniffTimeout bounds how long a new connection may stay silent before its
// first byte, and how long its TLS handshake may take.
const sniffTimeout = 10 * time.Second

// certCheckEvery is how often the certificate files are stat'ed for a
// renewal (at a handshake; nothing runs between handshakes).
const certCheckEvery = time.Second

// tlsSetup is the TLS configuration of the listeners; nil serves plain
// HTTP only.
type tlsSetup struct {
	cfg        *tls.Config
	plain, tls bool // which the listeners accept
	h2         bool
	log        *slog.Logger
	timeout    time.Duration
}

// newTLSSetup checks the TLS flags and loads the certificate. It returns
// nil when TLS is off.
func newTLSSetup(o *prodOptions, log *slog.Logger) (*tlsSetup, error) {
	switch {
	case o.httpOnly && o.httpsOnly:
		return nil, errors.New("--http-only and --https-only exclude each other")
	case o.httpsOnly && o.cert == "":
		return nil, errors.New("--https-only needs --cert")
	case o.key != "" && o.cert == "":
		return nil, errors.New("--key needs --cert")
	case o.h2 && o.cert == "":
		return nil, errors.New("--h2 needs --cert (HTTP/2 is offered over TLS only)")
	case o.cert == "" || o.httpOnly:
		return nil, nil
	}
	r, err := newCertReloader(o.cert, o.key, log)
	if err != nil {
		return nil, err
	}
	protos := []string{"http/1.1"}
	if o.h2 {
		protos = []string{"h2", "http/1.1"}
	}
	return &tlsSetup{
		cfg: &tls.Config{
			MinVersion:     tls.VersionTLS12,
			NextProtos:     protos,
			GetCertificate: r.get,
		},
		plain: !o.httpsOnly, tls: true, h2: o.h2, log: log, timeout: sniffTimeout,
	}, nil
}

// schemes are the URL schemes the listeners answer, for the "listening on"
// lines.
func (t *tlsSetup) schemes() []string {
	switch {
	case t == nil:
		return []string{"http"}
	case !t.plain:
		return []string{"https"}
	}
	return []string{"http", "https"}
}

// wrap returns the listeners to serve for ln: the framing listener over
// ln, or, with TLS, over the mux, and the mux's h2 listener with --h2.
func (t *tlsSetup) wrap(ln net.Listener) []net.Listener {
	if t == nil {
		return []net.Listener{srvhttp.FramingListener(ln)}
	}
	m := newMuxListener(ln, t)
	out := []net.Listener{srvhttp.FramingListener(m.http1())}
	if t.h2 {
		out = append(out, m.http2())
	}
	return out
}

// tlsStateKey holds a TLS connection's state in its context.
type tlsStateKey struct{}

// tlsConnContext is the http.Server's ConnContext: framing's, plus the TLS
// state of a connection that came through the framing layer over TLS.
func tlsConnContext(ctx context.Context, c net.Conn) context.Context {
	ctx = srvhttp.FramingContext(ctx, c)
	for range 4 {
		if tc, ok := c.(*tls.Conn); ok {
			cs := tc.ConnectionState() // the handshake is done (muxListener)
			return context.WithValue(ctx, tlsStateKey{}, &cs)
		}
		u, ok := c.(interface{ NetConn() net.Conn })
		if !ok {
			break
		}
		c = u.NetConn()
	}
	return ctx
}

// withTLSState sets r.TLS on requests that came over TLS through the
// framing layer, so handlers see TLS where net/http would have shown it.
func withTLSState(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS == nil {
			if cs, ok := r.Context().Value(tlsStateKey{}).(*tls.ConnectionState); ok {
				c := *cs
				r.TLS = &c
			}
		}
		h.ServeHTTP(w, r)
	})
}

// muxListener accepts connections on ln and sorts them by their first
// byte: plain HTTP, TLS (handshaken here), TLS that chose h2. Sorting runs
// on a goroutine per connection, bounded by sniffTimeout, so a silent
// client never holds up the others.
type muxListener struct {
	ln  net.Listener
	t   *tlsSetup
	h1  chan net.Conn
	h2  chan net.Conn
	end chan struct{} // closed when the listener stops
	err error         // why it stopped; set before end closes

	closeOnce sync.Once
	stopOnce  sync.Once
}

func newMuxListener(ln net.Listener, t *tlsSetup) *muxListener {
	m := &muxListener{ln: ln, t: t, h1: make(chan net.Conn), h2: make(chan net.Conn), end: make(chan struct{})}
	go m.acceptLoop()
	return m
}

func (m *muxListener) stop(err error) {
	m.stopOnce.Do(func() {
		m.err = err
		close(m.end)
	})
}

func (m *muxListener) acceptLoop() {
	var backoff time.Duration
	for {
		c, err := m.ln.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || isTransientAccept(err) {
				// Out of file descriptors and the like: wait as net/http does.
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				m.t.log.Warn("accept failed; retrying", "err", err, "in", backoff)
				select {
				case <-time.After(backoff):
					continue
				case <-m.end:
					return
				}
			}
			m.stop(err)
			return
		}
		backoff = 0
		go m.sort(c)
	}
}

// sort reads nothing: it peeks the first byte, handshakes TLS, and hands
// the connection to the listener that serves its kind.
func (m *muxListener) sort(c net.Conn) {
	c.SetDeadline(time.Now().Add(m.t.timeout))
	first, c, err := peekFirst(c)
	if err != nil {
		c.Close()
		return
	}
	if first != 0x16 {
		if !m.t.plain {
			refusePlain(c)
			return
		}
		c.SetDeadline(time.Time{})
		m.deliver(m.h1, c)
		return
	}
	tc := tls.Server(c, m.t.cfg)
	ctx, cancel := context.WithTimeout(context.Background(), m.t.timeout)
	err = tc.HandshakeContext(ctx)
	cancel()
	if err != nil {
		m.t.log.Debug("TLS handshake failed", "client", c.RemoteAddr().String(), "err", err)
		c.Close()
		return
	}
	c.SetDeadline(time.Time{})
	if tc.ConnectionState().NegotiatedProtocol == "h2" {
		m.deliver(m.h2, tc)
		return
	}
	m.deliver(m.h1, tc)
}

func (m *muxListener) deliver(ch chan net.Conn, c net.Conn) {
	select {
	case ch <- c:
	case <-m.end:
		c.Close()
	}
}

// refusePlain answers a plain HTTP client of an --https-only server with
// a short 400 and closes the connection.
func refusePlain(c net.Conn) {
	defer c.Close()
	const msg = "this server speaks HTTPS only; use an https:// URL\n"
	c.SetDeadline(time.Now().Add(2 * time.Second))
	fmt.Fprintf(c, "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(msg), msg)
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
	// Read what the client sent, so that closing does not reset the
	// connection before it read the answer.
	io.Copy(io.Discard, io.LimitReader(c, 64<<10))
}

func (m *muxListener) accept(ch chan net.Conn) (net.Conn, error) {
	select {
	case c := <-ch:
		return c, nil
	case <-m.end:
		return nil, m.err
	}
}

// Close stops accepting; connections still being sorted are closed.
func (m *muxListener) Close() error {
	var err error
	m.closeOnce.Do(func() {
		m.stop(net.ErrClosed)
		err = m.ln.Close()
	})
	return err
}

func (m *muxListener) http1() net.Listener { return muxPort{m, m.h1} }
func (m *muxListener) http2() net.Listener { return muxPort{m, m.h2} }

// muxPort is one of a muxListener's outputs. Closing either closes both
// (the http.Server closes each it serves).
type muxPort struct {
	m  *muxListener
	ch chan net.Conn
}

func (p muxPort) Accept() (net.Conn, error) { return p.m.accept(p.ch) }
func (p muxPort) Close() error              { return p.m.Close() }
func (p muxPort) Addr() net.Addr            { return p.m.ln.Addr() }

// peekedConn replays the byte read to sort a connection where it could not
// be peeked in place (a connection that is not a socket). It forwards
// ReadFrom and CloseWrite as framing's connection does.
type peekedConn struct {
	net.Conn
	first []byte
}

func (c *peekedConn) Read(p []byte) (int, error) {
	if len(c.first) > 0 {
		n := copy(p, c.first)
		c.first = c.first[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}

func (c *peekedConn) ReadFrom(r io.Reader) (int64, error) {
	if rf, ok := c.Conn.(io.ReaderFrom); ok {
		return rf.ReadFrom(r)
	}
	return io.Copy(struct{ io.Writer }{c.Conn}, r)
}

func (c *peekedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// peekFirstRead reads the first byte and returns a connection that
// replays it.
func peekFirstRead(c net.Conn) (byte, net.Conn, error) {
	var b [1]byte
	if _, err := io.ReadFull(c, b[:]); err != nil {
		return 0, c, err
	}
	return b[0], &peekedConn{Conn: c, first: b[:]}, nil
}

// certReloader serves the certificate in --cert (and --key) and loads it
// again when one of the files changes. A change that does not load keeps
// the certificate being served and is logged once.
type certReloader struct {
	certPath, keyPath string
	log               *slog.Logger
	now               func() time.Time
	every             time.Duration

	cur atomic.Pointer[tls.Certificate]

	mu      sync.Mutex // held while checking
	checked time.Time
	stamp   [2]fs.FileInfo // of the files cur came from
	bad     [2]fs.FileInfo // of the files last found broken (logged)
}

func newCertReloader(certPath, keyPath string, log *slog.Logger) (*certReloader, error) {
	r := &certReloader{certPath: certPath, keyPath: keyPath, log: log, now: time.Now, every: certCheckEvery}
	cert, stamp, err := r.load()
	if err != nil {
		return nil, err
	}
	r.cur.Store(cert)
	r.stamp, r.checked = stamp, r.now()
	r.describe("TLS certificate loaded", cert)
	return r, nil
}

// get is the tls.Config's GetCertificate.
func (r *certReloader) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	if r.mu.TryLock() { // another handshake checking: serve what there is
		if r.now().Sub(r.checked) >= r.every {
			r.checked = r.now()
			r.check()
		}
		r.mu.Unlock()
	}
	return r.cur.Load(), nil
}

func (r *certReloader) paths() []string {
	if r.keyPath == "" {
		return []string{r.certPath}
	}
	return []string{r.certPath, r.keyPath}
}

// check reloads the certificate when a file changed since it was loaded.
func (r *certReloader) check() {
	var now [2]fs.FileInfo
	for i, p := range r.paths() {
		fi, err := os.Stat(p)
		if err != nil {
			now[i] = nil
		} else {
			now[i] = fi
		}
	}
	if sameStamps(now, r.stamp) || sameStamps(now, r.bad) {
		return
	}
	cert, stamp, err := r.load()
	if err != nil {
		r.bad = now
		r.log.Warn("the changed TLS certificate does not load; still serving the previous one", "err", err)
		return
	}
	r.cur.Store(cert)
	r.stamp, r.bad = stamp, [2]fs.FileInfo{}
	r.describe("TLS certificate reloaded", cert)
}

func sameStamps(a, b [2]fs.FileInfo) bool {
	for i := range a {
		switch {
		case a[i] == nil && b[i] == nil:
		case a[i] == nil || b[i] == nil:
			return false
		case !os.SameFile(a[i], b[i]) || !a[i].ModTime().Equal(b[i].ModTime()) || a[i].Size() != b[i].Size():
			return false
		}
	}
	return true
}

// load reads the certificate chain and key, and the files' stamps as they
// were before reading (a change during the read is seen at the next check).
func (r *certReloader) load() (*tls.Certificate, [2]fs.FileInfo, error) {
	var stamp [2]fs.FileInfo
	var data [2][]byte
	for i, p := range r.paths() {
		f, err := os.Open(p)
		if err != nil {
			return nil, stamp, fmt.Errorf("TLS certificate: %w", err)
		}
		fi, err := f.Stat()
		if err == nil {
			stamp[i] = fi
			data[i], err = io.ReadAll(io.LimitReader(f, 1<<20))
		}
		f.Close()
		if err != nil {
			return nil, stamp, fmt.Errorf("TLS certificate: %s: %w", p, err)
		}
	}
	keyPEM := data[0]
	if r.keyPath != "" {
		keyPEM = data[1]
	}
	if !bytes.Contains(keyPEM, []byte("PRIVATE KEY-----")) {
		where := r.certPath
		if r.keyPath != "" {
			where = r.keyPath
		}
		return nil, stamp, fmt.Errorf("TLS certificate: %s holds no private key (PEM \"PRIVATE KEY\" block); give it with the certificate or with --key", where)
	}
	cert, err := tls.X509KeyPair(data[0], keyPEM)
	if err != nil {
		return nil, stamp, fmt.Errorf("TLS certificate %s: %w", strings.Join(r.paths(), " + "), err)
	}
	if cert.Leaf == nil {
		if cert.Leaf, err = x509.ParseCertificate(cert.Certificate[0]); err != nil {
			return nil, stamp, fmt.Errorf("TLS certificate %s: %w", r.certPath, err)
		}
	}
	return &cert, stamp, nil
}

func (r *certReloader) describe(msg string, c *tls.Certificate) {
	l := c.Leaf
	names := append(append([]string{}, l.DNSNames...), func() (s []string) {
		for _, ip := range l.IPAddresses {
			s = append(s, ip.String())
		}
		return
	}()...)
	r.log.Info(msg, "subject", l.Subject.String(), "names", strings.Join(names, ","), "not_after", l.NotAfter.UTC().Format(time.RFC3339))
	if now := r.now(); now.After(l.NotAfter) || now.Before(l.NotBefore) {
		r.log.Warn("the TLS certificate is not valid now", "not_before", l.NotBefore.UTC().Format(time.RFC3339), "not_after", l.NotAfter.UTC().Format(time.RFC3339))
	}
}

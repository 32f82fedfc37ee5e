package main

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"log/slog"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// writeCert writes a self-signed certificate with serial n (and its key)
// to name.
func writeCert(t *testing.T, name string, n int64) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(n), Subject: pkix.Name{CommonName: "t"}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), DNSNames: []string{"localhost"}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalPKCS8PrivateKey(key)
	data := append(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder})...)
	if err := os.WriteFile(name+".tmp", data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(name+".tmp", name); err != nil {
		t.Fatal(err)
	}
}

type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestCertReloader: a changed file is loaded at the first handshake after
// the check interval, not before; a broken one keeps the old certificate
// and is logged once; a fixed one is loaded again.
func TestCertReloader(t *testing.T) {
	name := filepath.Join(t.TempDir(), "cert.pem")
	writeCert(t, name, 1)
	var logs logBuf
	r, err := newCertReloader(name, "", slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	r.now = func() time.Time { return now }
	serial := func() int64 {
		c, _ := r.get(nil)
		return c.Leaf.SerialNumber.Int64()
	}
	if serial() != 1 {
		t.Fatal("serial != 1")
	}
	writeCert(t, name, 2)
	if serial() != 1 {
		t.Fatal("reloaded before the check interval")
	}
	now = now.Add(r.every)
	if serial() != 2 {
		t.Fatal("not reloaded after the interval")
	}
	if err := os.WriteFile(name, []byte("broken"), 0o600); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		now = now.Add(r.every)
		if serial() != 2 {
			t.Fatal("a broken file replaced the certificate")
		}
	}
	if n := strings.Count(logs.String(), "does not load"); n != 1 {
		t.Fatalf("%d warnings, want 1:\n%s", n, logs.String())
	}
	writeCert(t, name, 3)
	now = now.Add(r.every)
	if serial() != 3 {
		t.Fatal("the fixed file was not loaded")
	}
}

func testSetup(t *testing.T, plain bool) *tlsSetup {
	name := filepath.Join(t.TempDir(), "cert.pem")
	writeCert(t, name, 1)
	ts, err := newTLSSetup(&prodOptions{cert: name, httpsOnly: !plain}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ts.timeout = 300 * time.Millisecond
	return ts
}

// TestMuxPlainUnwrapped: with TLS on, a plain connection reaches the
// server as the very *net.TCPConn (its ReadFrom is sendfile), with its
// first byte still to be read; a TLS one arrives handshaken.
func TestMuxPlainUnwrapped(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m := newMuxListener(ln, testSetup(t, true))
	defer m.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "GET / HTTP/1.1\r\n")
	sc, err := m.http1().Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	if _, ok := sc.(*net.TCPConn); !ok {
		t.Fatalf("plain connection delivered as %T, want *net.TCPConn", sc)
	}
	buf := make([]byte, 3)
	if _, err := io.ReadFull(sc, buf); err != nil || string(buf) != "GET" {
		t.Fatalf("read %q, %v; want GET", buf, err)
	}

	go func() {
		tc, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2", "http/1.1"}})
		if err == nil {
			io.WriteString(tc, "x")
			defer tc.Close()
			time.Sleep(time.Second)
		}
	}()
	sc2, err := m.http1().Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer sc2.Close()
	tc, ok := sc2.(*tls.Conn)
	if !ok || !tc.ConnectionState().HandshakeComplete || tc.ConnectionState().NegotiatedProtocol != "http/1.1" {
		t.Fatalf("TLS connection delivered as %T (%+v)", sc2, ok)
	}
}

// TestMuxSilent: a silent connection does not hold up the next one and
// is closed after the timeout.
func TestMuxSilent(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m := newMuxListener(ln, testSetup(t, true))
	defer m.Close()
	silent, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "G")
	done := make(chan net.Conn, 1)
	go func() {
		sc, _ := m.http1().Accept()
		done <- sc
	}()
	select {
	case sc := <-done:
		sc.Close()
	case <-time.After(5 * time.Second):
		t.Fatal("a silent connection held up the next")
	}
	silent.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := silent.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("silent connection: %v, want EOF (closed by the server)", err)
	}
}

// TestMuxHTTPSOnly: a plain client of --https-only gets a 400 naming
// HTTPS and a closed connection.
func TestMuxHTTPSOnly(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m := newMuxListener(ln, testSetup(t, false))
	defer m.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	b, _ := io.ReadAll(c)
	if !strings.HasPrefix(string(b), "HTTP/1.1 400 ") || !strings.Contains(string(b), "HTTPS only") {
		t.Fatalf("got %q", b)
	}
}

// TestMuxClose: Accept ends with net.ErrClosed after Close, on both ports.
func TestMuxClose(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m := newMuxListener(ln, testSetup(t, true))
	errs := make(chan error, 2)
	for _, p := range []net.Listener{m.http1(), m.http2()} {
		go func() {
			_, err := p.Accept()
			errs <- err
		}()
	}
	m.http2().Close()
	for range 2 {
		select {
		case err := <-errs:
			if !errors.Is(err, net.ErrClosed) {
				t.Errorf("Accept after Close: %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("Accept did not return after Close")
		}
	}
	if err := m.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

type readFromRec struct {
	net.Conn
	src io.Reader
}

func (r *readFromRec) ReadFrom(src io.Reader) (int64, error) { r.src = src; return 0, nil }

// TestPeekedConn: the replaying wrapper gives the byte back first and
// forwards ReadFrom (sendfile) and CloseWrite.
func TestPeekedConn(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	go func() { io.WriteString(b, "HEAD"); b.Close() }()
	first, c, err := peekFirst(a) // a pipe is no socket: read and replayed
	if err != nil || first != 'H' {
		t.Fatalf("%q %v", first, err)
	}
	all, _ := io.ReadAll(c)
	if string(all) != "HEAD" {
		t.Fatalf("read %q after the peek, want HEAD", all)
	}
	rec := &readFromRec{}
	pc := &peekedConn{Conn: rec}
	src := strings.NewReader("x")
	pc.ReadFrom(src)
	if rec.src != src {
		t.Fatal("ReadFrom not forwarded")
	}
}

func TestTLSFlagErrors(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, tc := range []struct {
		o    prodOptions
		want string
	}{
		{prodOptions{httpsOnly: true}, "needs --cert"},
		{prodOptions{h2: true}, "--h2 needs --cert"},
		{prodOptions{key: "k"}, "--key needs --cert"},
		{prodOptions{cert: "c", httpOnly: true, httpsOnly: true}, "exclude"},
		{prodOptions{cert: filepath.Join(t.TempDir(), "none")}, "none"},
	} {
		if _, err := newTLSSetup(&tc.o, log); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.o, err, tc.want)
		}
	}
	if ts, err := newTLSSetup(&prodOptions{}, log); ts != nil || err != nil {
		t.Errorf("no flags: %v %v", ts, err)
	}
	if got := (*tlsSetup)(nil).schemes(); len(got) != 1 || got[0] != "http" {
		t.Errorf("schemes without TLS: %v", got)
	}
}

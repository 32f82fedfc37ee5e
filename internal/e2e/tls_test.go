package e2e

// TLS on the same port as plain HTTP (--cert), --https-only, --http-only,
// --h2, certificate reloading, and clients over it: Go's, curl, u2c.py.

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// tlsCert writes a self-signed certificate for 127.0.0.1 with the given
// serial number to certFile (chain and key in one PEM, or the key in
// keyFile when that is set) and returns a pool that trusts it.
func tlsCert(t *testing.T, certFile, keyFile string, serial int64) *x509.CertPool {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(serial),
		Subject:               pkix.Name{CommonName: "hoard test"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:              []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder})
	if keyFile == "" {
		writeAtomic(t, certFile, append(certPEM, keyPEM...))
	} else {
		writeAtomic(t, certFile, certPEM)
		writeAtomic(t, keyFile, keyPEM)
	}
	pool := x509.NewCertPool()
	c, _ := x509.ParseCertificate(der)
	pool.AddCert(c)
	return pool
}

func writeAtomic(t *testing.T, name string, data []byte) {
	t.Helper()
	tmp := name + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, name); err != nil {
		t.Fatal(err)
	}
}

// tlsClient trusts pool and opens a new connection for every request.
func tlsClient(pool *x509.CertPool, h2 bool) *http.Client {
	return &http.Client{
		Timeout: 60 * time.Second,
		Transport: &http.Transport{
			TLSClientConfig:   &tls.Config{RootCAs: pool},
			ForceAttemptHTTP2: h2,
			DisableKeepAlives: true,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

func tlsDo(t *testing.T, c *http.Client, method, url string, body []byte, hdr ...string) (*http.Response, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hdr {
		k, v, _ := strings.Cut(h, ":")
		req.Header.Set(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

func httpsURL(s *server) string { return strings.Replace(s.URL, "http://", "https://", 1) }

// servedSerial is the serial number of the certificate a new TLS
// connection to s is served.
func servedSerial(t *testing.T, s *server) int64 {
	t.Helper()
	c, err := tls.Dial("tcp", strings.TrimPrefix(httpsURL(s), "https://"), &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.ConnectionState().PeerCertificates[0].SerialNumber.Int64()
}

// TestTLSSamePort: plain HTTP and HTTPS on one port; HTTP/1.1 unless --h2;
// URLs in replies say https; a cleared cookie is Secure under TLS only.
func TestTLSSamePort(t *testing.T) {
	t.Parallel()
	dir, cdir := t.TempDir(), t.TempDir()
	writeFile(t, dir, "f.txt", []byte("F-CONTENT"))
	certFile := filepath.Join(cdir, "cert.pem")
	pool := tlsCert(t, certFile, "", 1)
	s := start(t, "--cert", certFile, "-a", "u:pw1", "-v", dir+"::rw,u")
	if !strings.Contains(s.logs.String(), "TLS certificate loaded") {
		t.Errorf("no log line about the certificate:\n%s", s.logs)
	}
	hc := tlsClient(pool, true)
	for _, base := range []string{s.URL, httpsURL(s)} {
		c := client
		if strings.HasPrefix(base, "https") {
			c = hc
		}
		resp, body := tlsDo(t, c, "GET", base+"/f.txt", nil, "PW: pw1")
		wantStatus(t, resp, body, 200)
		if string(body) != "F-CONTENT" {
			t.Fatalf("%s: body %q", base, body)
		}
		if want := strings.HasPrefix(base, "https"); (resp.TLS != nil) != want {
			t.Errorf("%s: TLS %v, want %v", base, resp.TLS != nil, want)
		}
		if resp.Proto != "HTTP/1.1" {
			t.Errorf("%s: protocol %s, want HTTP/1.1 (no --h2)", base, resp.Proto)
		}
		// The reply to an upload names the file's URL with the scheme used.
		resp, body = tlsDo(t, c, "PUT", base+"/up.txt", []byte("UP"), "PW: pw1")
		wantStatus(t, resp, body, 201)
		if !strings.Contains(string(body), "\n"+base+"/up") || !strings.HasPrefix(resp.Header.Get("Location"), base+"/up") {
			t.Errorf("%s: PUT reply %q, Location %q; want URLs under %s", base, body, resp.Header.Get("Location"), base)
		}
		resp, body = tlsDo(t, c, "GET", base+"/f.txt", nil, "Cookie: cppwd=stale-pw")
		setc := resp.Header.Get("Set-Cookie")
		if !strings.Contains(setc, "cppwd=") {
			t.Fatalf("%s: a stale cookie is not cleared: %q (%d %s)", base, setc, resp.StatusCode, body)
		}
		if got, want := strings.Contains(setc, "; Secure"), strings.HasPrefix(base, "https"); got != want {
			t.Errorf("%s: Set-Cookie %q: Secure %v, want %v", base, setc, got, want)
		}
	}
	// A large download over TLS arrives intact.
	big := randomBytes(8<<20 + 5)
	writeFile(t, dir, "big.bin", big)
	resp, body := tlsDo(t, hc, "GET", httpsURL(s)+"/big.bin", nil, "PW: pw1")
	wantStatus(t, resp, body, 200)
	if !bytes.Equal(body, big) {
		t.Fatalf("big.bin over TLS: %d bytes, not the file", len(body))
	}
	resp, body = tlsDo(t, hc, "GET", httpsURL(s)+"/big.bin", nil, "PW: pw1", "Range: bytes=1000-1999")
	wantStatus(t, resp, body, 206)
	if !bytes.Equal(body, big[1000:2000]) {
		t.Fatal("a range over TLS is not the file's")
	}

	// curl speaks both on the same port.
	if _, err := exec.LookPath("curl"); err == nil {
		for _, base := range []string{s.URL, httpsURL(s)} {
			out, err := exec.Command("curl", "-sS", "--fail", "--cacert", certFile, "-H", "PW: pw1", base+"/f.txt").CombinedOutput()
			if err != nil || string(out) != "F-CONTENT" {
				t.Errorf("curl %s: %v %q", base, err, out)
			}
		}
		out, err := exec.Command("curl", "-sS", "--fail", "--cacert", certFile, "-H", "PW: pw1", "-T", certFile, httpsURL(s)+"/curl.pem").CombinedOutput()
		if err != nil || !strings.Contains(string(out), "\n"+httpsURL(s)+"/curl.pem") {
			t.Errorf("curl upload over https: %v %q", err, out)
		}
		if !bytes.Equal(readFile(t, filepath.Join(dir, "curl.pem")), readFile(t, certFile)) {
			t.Error("curl's upload over https is not the file")
		}
	} else {
		t.Log("curl is not installed; skipping the curl part")
	}
}

// TestTLSH2: --h2 offers HTTP/2 over TLS; plain HTTP stays HTTP/1.1.
func TestTLSH2(t *testing.T) {
	t.Parallel()
	dir, cdir := t.TempDir(), t.TempDir()
	writeFile(t, dir, "f.txt", []byte("F-CONTENT"))
	certFile := filepath.Join(cdir, "cert.pem")
	pool := tlsCert(t, certFile, "", 1)
	s := start(t, "--cert", certFile, "--h2", "-v", dir+"::rw")
	hc := tlsClient(pool, true)
	resp, body := tlsDo(t, hc, "GET", httpsURL(s)+"/f.txt", nil)
	wantStatus(t, resp, body, 200)
	if resp.Proto != "HTTP/2.0" || string(body) != "F-CONTENT" {
		t.Fatalf("with --h2: %s %q, want HTTP/2.0 and the file", resp.Proto, body)
	}
	resp, body = tlsDo(t, hc, "PUT", httpsURL(s)+"/h2.txt", []byte("H2"))
	wantStatus(t, resp, body, 201)
	if !fileHolds(dir, "h2.txt", "H2") {
		t.Fatal("PUT over HTTP/2 did not store the file")
	}
	resp, body = tlsDo(t, client, "GET", s.URL+"/f.txt", nil)
	wantStatus(t, resp, body, 200)
}

// TestTLSOnlyModes: --https-only refuses plain HTTP; --http-only serves
// no TLS although a certificate is given.
func TestTLSOnlyModes(t *testing.T) {
	t.Parallel()
	dir, cdir := t.TempDir(), t.TempDir()
	writeFile(t, dir, "f.txt", []byte("F-CONTENT"))
	certFile, keyFile := filepath.Join(cdir, "cert.pem"), filepath.Join(cdir, "key.pem")
	pool := tlsCert(t, certFile, keyFile, 1) // key in its own file: --key

	s := start(t, "--cert", certFile, "--key", keyFile, "--https-only", "-v", dir+"::r")
	if !strings.HasPrefix(s.URL, "https://") {
		t.Fatalf("--https-only announced %s, want an https URL", s.URL)
	}
	resp, body := tlsDo(t, tlsClient(pool, false), "GET", s.URL+"/f.txt", nil)
	wantStatus(t, resp, body, 200)
	plain := strings.Replace(s.URL, "https://", "http://", 1)
	resp, body = tlsDo(t, client, "GET", plain+"/f.txt", nil)
	if resp.StatusCode != 400 || strings.Contains(string(body), "F-CONTENT") || !strings.Contains(string(body), "HTTPS only") {
		t.Fatalf("plain HTTP to --https-only: %d %q, want 400 saying HTTPS only", resp.StatusCode, body)
	}

	s2 := start(t, "--cert", certFile, "--key", keyFile, "--http-only", "-v", dir+"::r")
	resp, body = tlsDo(t, client, "GET", s2.URL+"/f.txt", nil)
	wantStatus(t, resp, body, 200)
	if _, err := tlsClient(pool, false).Get(httpsURL(s2) + "/f.txt"); err == nil {
		t.Fatal("--http-only answered over TLS")
	}
	if strings.Contains(s2.logs.String(), "TLS certificate loaded") {
		t.Error("--http-only loaded the certificate")
	}
}

// TestTLSCertReload: a certificate replaced on disk (renamed over, or
// rewritten in place) is served without a restart; a broken one keeps the
// last good one and is reported once.
func TestTLSCertReload(t *testing.T) {
	t.Parallel()
	dir, cdir := t.TempDir(), t.TempDir()
	certFile := filepath.Join(cdir, "cert.pem")
	tlsCert(t, certFile, "", 1)
	s := start(t, "--cert", certFile, "-v", dir+"::r")
	if n := servedSerial(t, s); n != 1 {
		t.Fatalf("serial %d, want 1", n)
	}
	waitSerial := func(want int64) {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for servedSerial(t, s) != want {
			if time.Now().After(deadline) {
				t.Fatalf("the new certificate (serial %d) is not served\n%s", want, s.logs)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	tlsCert(t, certFile, "", 2) // renamed over the old file
	waitSerial(2)
	// Rewritten in place (same inode).
	other := filepath.Join(cdir, "other.pem")
	tlsCert(t, other, "", 3)
	if err := os.WriteFile(certFile, readFile(t, other), 0o600); err != nil {
		t.Fatal(err)
	}
	waitSerial(3)
	// A broken file: the old certificate stays, one warning.
	if err := os.WriteFile(certFile, []byte("-----BEGIN CERTIFICATE-----\ngarbage\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		if n := servedSerial(t, s); n != 3 {
			t.Fatalf("after a broken certificate, serial %d is served, want 3 (the last good)", n)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if n := strings.Count(s.logs.String(), "does not load"); n != 1 {
		t.Fatalf("%d warnings about the broken certificate, want 1:\n%s", n, s.logs)
	}
	tlsCert(t, certFile, "", 4)
	waitSerial(4)
}

// TestTLSSilentClient: a client that connects and says nothing holds up
// nobody, and is dropped after a while.
func TestTLSSilentClient(t *testing.T) {
	t.Parallel()
	dir, cdir := t.TempDir(), t.TempDir()
	writeFile(t, dir, "f.txt", []byte("F"))
	certFile := filepath.Join(cdir, "cert.pem")
	pool := tlsCert(t, certFile, "", 1)
	s := start(t, "--cert", certFile, "-v", dir+"::r")
	var silent []net.Conn
	for range 20 {
		c, err := net.Dial("tcp", strings.TrimPrefix(s.URL, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		silent = append(silent, c)
	}
	start := time.Now()
	for _, base := range []string{s.URL, httpsURL(s)} {
		c := client
		if strings.HasPrefix(base, "https") {
			c = tlsClient(pool, false)
		}
		resp, body := tlsDo(t, c, "GET", base+"/f.txt", nil)
		wantStatus(t, resp, body, 200)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("requests beside silent connections took %v", d)
	}
	silent[0].SetReadDeadline(time.Now().Add(30 * time.Second))
	n, err := silent[0].Read(make([]byte, 1))
	if err == nil || time.Since(start) > 25*time.Second {
		t.Fatalf("the silent connection: read %d, %v after %v; want it closed by the server", n, err, time.Since(start))
	}
}

// TestTLSU2C: copyparty's u2c.py uploads over HTTPS, verifying the
// certificate.
func TestTLSU2C(t *testing.T) {
	u2cNeed(t)
	t.Parallel()
	vol, src, cdir := t.TempDir(), t.TempDir(), t.TempDir()
	writeFile(t, src, "tree/big.bin", randomBytes(12<<20+77))
	writeFile(t, src, "tree/a.txt", []byte("hello\n"))
	certFile := filepath.Join(cdir, "cert.pem")
	tlsCert(t, certFile, "", 1)
	// u2c wants the certificate alone.
	caFile := filepath.Join(cdir, "ca.pem")
	b := readFile(t, certFile)
	writeFile(t, cdir, "ca.pem", b[:bytes.Index(b, []byte("-----BEGIN PRIVATE KEY"))])
	s := start(t, "--cert", certFile, "-a", "u:pw", "-v", vol+"::rw,u")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out, err := u2cRun(t, ctx, "-te", caFile, "-a", "pw", httpsURL(s)+"/up/", filepath.Join(src, "tree"))
	if err != nil {
		t.Fatalf("u2c over https: %v\n%s\nserver log:\n%s", err, out, s.logs)
	}
	if n := u2cSameTree(t, filepath.Join(src, "tree"), filepath.Join(vol, "up", "tree")); n != 2 {
		t.Fatalf("%d files compared, want 2", n)
	}
	// And with the check off (-td), as against a self-signed certificate.
	writeFile(t, src, "tree2/c.bin", randomBytes(3<<20))
	out, err = u2cRun(t, ctx, "-td", "-a", "pw", httpsURL(s)+"/up/", filepath.Join(src, "tree2"))
	if err != nil {
		t.Fatalf("u2c -td over https: %v\n%s", err, out)
	}
	if n := u2cSameTree(t, filepath.Join(src, "tree2"), filepath.Join(vol, "up", "tree2")); n != 1 {
		t.Fatalf("%d files compared, want 1", n)
	}
}

// TestTLSBadCert: a certificate that does not load, or bad TLS flags, stop
// the start with status 2 and a message.
func TestTLSBadCert(t *testing.T) {
	t.Parallel()
	dir, cdir := t.TempDir(), t.TempDir()
	certOnly, keyFile := filepath.Join(cdir, "c.pem"), filepath.Join(cdir, "k.pem")
	tlsCert(t, certOnly, keyFile, 1)
	garbage := writeFile(t, cdir, "garbage.pem", []byte("not a certificate"))
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{name: "missing file", args: []string{"--cert", filepath.Join(cdir, "nope.pem")}, want: "nope.pem"},
		{name: "no key", args: []string{"--cert", certOnly}, want: "no private key"},
		{name: "garbage", args: []string{"--cert", garbage}, want: "garbage.pem"},
		{name: "https-only without cert", args: []string{"--https-only"}, want: "--https-only needs --cert"},
		{name: "both only flags", args: []string{"--cert", certOnly, "--key", keyFile, "--https-only", "--http-only"}, want: "exclude each other"},
		{name: "key without cert", args: []string{"--key", keyFile}, want: "--key needs --cert"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runHoard(t, append(tc.args, "-v", dir+"::r")...)
			if code != 2 || !strings.Contains(stderr, tc.want) {
				t.Fatalf("exit %d, stderr %q; want 2 and %q", code, stderr, tc.want)
			}
		})
	}
}

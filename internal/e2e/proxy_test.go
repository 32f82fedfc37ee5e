package e2e

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestReverseProxyTrusted: hoard behind a trusted proxy at /files. The
// forwarded address is the client for ?ru and ?ups, the forwarded scheme
// and the prefix are in every URL it hands back, and those URLs lead back
// to the files through the prefix.
func TestReverseProxyTrusted(t *testing.T) {
	dir := t.TempDir()
	s := start(t, "-a", "boss:bpw", "-v", dir+"::rw,*:A,boss", "-e2dsa", "--xff-src", "127.0.0.0/8", "--rp-loc", "/files/")
	fwd := []string{"X-Forwarded-For: 6.6.6.6, 203.0.113.9", "X-Forwarded-Proto: https"}
	host := strings.TrimPrefix(s.URL, "http://")

	// PUT through the prefix: the reply and Location carry scheme and prefix.
	resp, body := s.do(t, "PUT", "/files/a.txt", []byte("hello"), fwd...)
	wantStatus(t, resp, body, 201)
	want := "https://" + host + "/files/a.txt"
	if loc := resp.Header.Get("Location"); loc != want {
		t.Fatalf("Location %q, want %q", loc, want)
	}
	if !strings.Contains(string(body), want) {
		t.Fatalf("PUT reply %q lacks %q", body, want)
	}
	// The URL leads back to the file through the prefix.
	resp, body = s.do(t, "GET", "/files/a.txt", nil)
	wantStatus(t, resp, body, 200)
	if string(body) != "hello" {
		t.Fatalf("GET through prefix: %q", body)
	}

	// Multipart with ?j: its url carries them too.
	mp, ct := multipartFiles(t, [2]string{"b.txt", "bee"})
	resp, body = s.do(t, "POST", "/files/?j", mp, append(fwd, ct)...)
	wantStatus(t, resp, body, 201)
	if !strings.Contains(string(body), "https://"+host+"/files/b.txt") {
		t.Fatalf("multipart reply lacks the prefixed URL: %s", body)
	}

	// up2k: purl carries the prefix (u2c posts its chunks there), and
	// the chunks posted to it land.
	uf := newUp2kFile(randomBytes(3000))
	rep := up2kUpload(t, s, "/files/", "u.bin", uf, time.Now().Unix(), 1, fwd...)
	if rep.Purl != "/files/" {
		t.Fatalf("purl %q, want /files/", rep.Purl)
	}
	wantFile(t, dir, "u.bin", uf.data)

	// ?ru: the forwarded client (right-most), not the proxy nor the
	// address the client made up.
	resp, body = s.do(t, "GET", "/files/?ru&j", nil, "PW: bpw")
	wantStatus(t, resp, body, 200)
	var ru ruBody
	if err := json.Unmarshal(body, &ru); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	if len(ru.Ups) != 3 {
		t.Fatalf("?ru: %s", body)
	}
	for _, u := range ru.Ups {
		if u.IP != "203.0.113.9" {
			t.Fatalf("?ru names %q, want the forwarded 203.0.113.9: %s", u.IP, body)
		}
		if !strings.HasPrefix(u.Vp, "/files/") {
			t.Fatalf("?ru vp %q lacks the prefix", u.Vp)
		}
	}
	// ?ups: only the same forwarded client sees its uploads.
	if got := upsPaths(t, s, "", fwd...); len(got) != 3 || !strings.HasPrefix(got[0], "/files/") {
		t.Fatalf("?ups from the forwarded client: %v", got)
	}
	if got := upsPaths(t, s, "", "X-Forwarded-For: 198.51.100.7"); len(got) != 0 {
		t.Fatalf("?ups from another forwarded client: %v", got)
	}

	// Search hrefs carry the prefix, and lead back.
	var hits struct {
		Hits []struct{ RP, Href string } `json:"hits"`
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		resp, body = s.do(t, "POST", "/files/?srch", []byte(`{"q":"a.txt"}`), "Content-Type: application/json")
		wantStatus(t, resp, body, 200)
		json.Unmarshal(body, &hits)
		if len(hits.Hits) > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if len(hits.Hits) != 1 || hits.Hits[0].Href != "/files/a.txt" || hits.Hits[0].RP != "files/a.txt" {
		t.Fatalf("search hits: %s", body)
	}

	// A folder without its slash is redirected inside the prefix.
	resp, body = s.do(t, "PUT", "/files/sub/c.txt", []byte("c"))
	wantStatus(t, resp, body, 201)
	resp, _ = s.do(t, "GET", "/files/sub", nil)
	if resp.StatusCode != 301 || resp.Header.Get("Location") != "/files/sub/" {
		t.Fatalf("redirect: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}

	// A share link carries the prefix and leads back to the file.
	sp := makeShare(t, s, "bpw", map[string]any{"k": "pk", "vp": []string{"/sub/"}, "pw": "", "exp": "60", "perms": []string{"read"}}, 201)
	if sp != "/files/shr/pk/" {
		t.Fatalf("share link path %q, want /files/shr/pk/", sp)
	}
	resp, body = s.do(t, "GET", sp+"c.txt", nil)
	wantStatus(t, resp, body, 200)

	// The access log names the forwarded client.
	waitLog(t, s, "ip=203.0.113.9")
}

// TestReverseProxyUntrusted: the same headers from a peer outside
// --xff-src are ignored: the TCP peer is the client and the scheme stays
// http.
func TestReverseProxyUntrusted(t *testing.T) {
	dir := t.TempDir()
	s := start(t, "-a", "boss:bpw", "-v", dir+"::rw,*:A,boss", "--xff-src", "10.0.0.0/8", "--rp-loc", "/files")
	host := strings.TrimPrefix(s.URL, "http://")
	resp, body := s.do(t, "PUT", "/a.txt", []byte("x"), "X-Forwarded-For: 203.0.113.9", "X-Forwarded-Proto: https", "X-Forwarded-Host: evil.example")
	wantStatus(t, resp, body, 201)
	if loc := resp.Header.Get("Location"); loc != "http://"+host+"/files/a.txt" {
		t.Fatalf("Location %q", loc)
	}
	resp, body = s.do(t, "GET", "/?ru&j", nil, "PW: bpw")
	wantStatus(t, resp, body, 200)
	var ru ruBody
	json.Unmarshal(body, &ru)
	if len(ru.Ups) != 1 || ru.Ups[0].IP != "127.0.0.1" {
		t.Fatalf("?ru from an untrusted proxy: %s", body)
	}
	// The wrong-password slowdown keys on the peer too; and the warning
	// names it.
	resp, body = s.do(t, "GET", "/", nil, "PW: nope", "X-Forwarded-For: 203.0.113.9")
	wantStatus(t, resp, body, 401)
	logs := waitLog(t, s, `msg="wrong password"`)
	if !strings.Contains(logs, `level=WARN msg="wrong password"`) || strings.Contains(logs, "203.0.113.9") {
		t.Fatalf("log:\n%s", logs)
	}
}

// TestAccessLogNoPassword: every request gets an info access line with
// the query, and no way of sending a password puts it in the log.
func TestAccessLogNoPassword(t *testing.T) {
	dir := t.TempDir()
	s := start(t, "-a", "boss:Sekr1tPass", "-v", dir+"::rw,boss")
	for _, c := range []struct {
		path string
		hdr  []string
	}{
		{"/?ls&pw=Sekr1tPass", nil},
		{"/?ls&PW=Sekr1tPass", nil},
		{"/?ls&p%77=Sekr1tPass", nil},
		{"/?ls&pw=Sekr1tPassWrong", nil},
		{"/?ls", []string{"PW: Sekr1tPass"}},
		{"/?ls", []string{basicAuth("boss:Sekr1tPass")}},
		{"/?ls", []string{basicAuth("boss:Sekr1tPassWrong")}},
		{"/?ls", []string{"Cookie: cppwd=Sekr1tPass"}},
		{"/?ls&pw=" + url.QueryEscape("Sekr1t Pass&x"), nil},
	} {
		s.do(t, "GET", c.path, nil, c.hdr...)
	}
	s.do(t, "GET", "/?ls&k=v", nil, "PW: Sekr1tPass")
	logs := waitLog(t, s, `path="/?ls&k=v"`)
	if strings.Contains(logs, "Sekr1t") || strings.Contains(logs, strings.Fields(basicAuth("boss:Sekr1tPass"))[2]) {
		t.Fatalf("a password reached the log:\n%s", logs)
	}
	if !strings.Contains(logs, `msg=access`) || !strings.Contains(logs, `path="/?ls&k=v"`) || !strings.Contains(logs, "user=boss") || !strings.Contains(logs, "pw=***") {
		t.Fatalf("no access line with the query and user:\n%s", logs)
	}
}

// TestAccessLogJSON: --log-format json writes one JSON object per line.
func TestAccessLogJSON(t *testing.T) {
	s := start(t, "-v", t.TempDir()+"::r", "--log-format", "json")
	s.do(t, "GET", "/?ls&pw=zz", nil)
	logs := waitLog(t, s, `"msg":"access"`)
	for _, line := range strings.Split(strings.TrimSpace(logs), "\n") {
		if !strings.HasPrefix(line, "{") {
			continue // the listening line goes to stdout as text
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("not JSON: %q", line)
		}
		if m["msg"] == "access" {
			if m["path"] != "/?ls&pw=***" || m["status"] != float64(401) && m["status"] != float64(200) {
				t.Fatalf("access line %v", m)
			}
			return
		}
	}
	t.Fatalf("no JSON access line:\n%s", s.logs)
}

// TestReverseProxyNginx runs a real nginx in front of hoard at /files/.
// nginx connects from 127.0.0.2 (the only trusted proxy), the test's
// client from 127.0.0.3: ?ru must name 127.0.0.3, and every URL hoard
// hands back must work through nginx.
func TestReverseProxyNginx(t *testing.T) {
	dir := t.TempDir()
	s := start(t, "-a", "boss:bpw", "-v", dir+"::rw,*:A,boss", "--xff-src", "127.0.0.2/32", "--rp-loc", "/files")
	ngx := startNginx(t, s, "", "")
	resp, body := ngx.do("PUT", ngx.base+"/files/a.txt", "hello", "X-Forwarded-For: 6.6.6.6")
	wantStatus(t, resp, body, 201)
	loc := resp.Header.Get("Location")
	if loc != ngx.base+"/files/a.txt" {
		t.Fatalf("Location %q through nginx", loc)
	}
	resp, body = ngx.do("GET", loc, "")
	if resp.StatusCode != 200 || string(body) != "hello" {
		t.Fatalf("following %s: %d %q", loc, resp.StatusCode, body)
	}
	// A client's own X-Forwarded-Host does not get past the documented
	// config (docs/operations.md): hoard believes the header from nginx.
	resp, body = ngx.do("PUT", ngx.base+"/files/b.txt", "x", "X-Forwarded-Host: evil.example")
	wantStatus(t, resp, body, 201)
	if loc := resp.Header.Get("Location"); loc != ngx.base+"/files/b.txt" {
		t.Fatalf("Location %q through nginx with the client's X-Forwarded-Host", loc)
	}
	resp, body = ngx.do("GET", ngx.base+"/files/?ru&j", "", "PW: bpw")
	wantStatus(t, resp, body, 200)
	var ru ruBody
	json.Unmarshal(body, &ru)
	if len(ru.Ups) != 2 {
		t.Fatalf("?ru through nginx: %s", body)
	}
	for _, u := range ru.Ups {
		if u.IP != "127.0.0.3" || u.Vp != "/files/a.txt" && u.Vp != "/files/b.txt" {
			t.Fatalf("?ru through nginx: %s", body)
		}
	}
}

// nginxProxy is a real nginx in front of a hoard at /files/, and a client
// that reaches it from 127.0.0.3.
type nginxProxy struct {
	t    *testing.T
	base string // http(s)://127.0.0.1:PORT
	c    *http.Client
	out  *bytes.Buffer
}

// startNginx runs nginx (skipping the test when it is not installed)
// proxying /files/ to s from 127.0.0.2 with X-Forwarded-For and
// X-Forwarded-Proto; with cert (and key), nginx terminates TLS with them
// and the client trusts pool.
func startNginx(t *testing.T, s *server, cert, key string, pool ...*x509.CertPool) *nginxProxy {
	t.Helper()
	ngx, err := exec.LookPath("nginx")
	if err != nil {
		t.Skip("nginx is not installed; skipping the real-proxy test")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	pfx := t.TempDir()
	listen, scheme := fmt.Sprintf("listen 127.0.0.1:%d;", port), "http"
	if cert != "" {
		listen, scheme = fmt.Sprintf("listen 127.0.0.1:%d ssl; ssl_certificate %s; ssl_certificate_key %s;", port, cert, key), "https"
	}
	conf := fmt.Sprintf(`pid %[1]s/nginx.pid;
error_log %[1]s/error.log;
events {}
http {
  access_log off;
  client_body_temp_path %[1]s; proxy_temp_path %[1]s; fastcgi_temp_path %[1]s; uwsgi_temp_path %[1]s; scgi_temp_path %[1]s;
  server {
    %[2]s
    location /files/ {
      proxy_pass %[3]s;
      proxy_bind 127.0.0.2;
      proxy_set_header Host $http_host;
      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
      proxy_set_header X-Forwarded-Proto $scheme;
      proxy_set_header X-Forwarded-Host $http_host;
      proxy_request_buffering off;
      client_max_body_size 0;
    }
  }
}
`, pfx, listen, s.URL)
	os.WriteFile(filepath.Join(pfx, "nginx.conf"), []byte(conf), 0o644)
	cmd := exec.Command(ngx, "-p", pfx, "-c", filepath.Join(pfx, "nginx.conf"), "-g", "daemon off;")
	out := &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	// nginx's workers inherit the output pipe: stop the whole process
	// group, and never wait for the pipe longer than a moment.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); cmd.Wait() })
	tr := &http.Transport{DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.3")}}).DialContext}
	if len(pool) > 0 {
		tr.TLSClientConfig = &tls.Config{RootCAs: pool[0]}
	}
	return &nginxProxy{t: t, base: fmt.Sprintf("%s://127.0.0.1:%d", scheme, port), out: out,
		c: &http.Client{Timeout: 30 * time.Second, Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// do sends a request through nginx (waiting a little for it to listen)
// and returns the response with its body read.
func (n *nginxProxy) do(method, u string, body string, hdr ...string) (*http.Response, []byte) {
	t := n.t
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		req, _ := http.NewRequest(method, u, strings.NewReader(body))
		for _, h := range hdr {
			k, v, _ := strings.Cut(h, ":")
			req.Header.Set(k, strings.TrimSpace(v))
		}
		resp, err := n.c.Do(req)
		if err == nil {
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return resp, b
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s %s: %v\nnginx: %s", method, u, err, n.out.String())
		}
	}
}

// follow GETs an URL hoard handed back (absolute, or a path on nginx)
// and wants 200.
func (n *nginxProxy) follow(u string) []byte {
	n.t.Helper()
	if strings.HasPrefix(u, "/") {
		u = n.base + u
	}
	if !strings.HasPrefix(u, n.base+"/files/") {
		n.t.Fatalf("hoard handed back %q, not a URL below %s/files/", u, n.base)
	}
	resp, b := n.do("GET", u, "")
	if resp.StatusCode != 200 {
		n.t.Fatalf("following %s: %d %.200s", u, resp.StatusCode, b)
	}
	return b
}

// waitLog waits (a little) for a log line holding want: hoard's output
// is read asynchronously.
func waitLog(t *testing.T, s *server, want string) string {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		logs := s.logs.String()
		if strings.Contains(logs, want) {
			return logs
		}
		if time.Now().After(deadline) {
			t.Fatalf("log lacks %q:\n%s", want, logs)
		}
	}
}

// TestReverseProxyManage: with --rp-loc the paths a client behind the
// proxy names (a move's destination) carry the prefix, and so does the
// X-New-Dir hoard hands back.
func TestReverseProxyManage(t *testing.T) {
	dir := t.TempDir()
	s := start(t, "-v", dir+"::rwmd", "--rp-loc", "/files")
	writeFile(t, dir, "a.txt", []byte("A"))
	form, ct := multipartForm(t, formPart{"act", "", []byte("mkdir")}, formPart{"name", "", []byte("made")})
	resp, body := s.do(t, "POST", "/files/", form, ct)
	wantStatus(t, resp, body, 201)
	if got := resp.Header.Get("X-New-Dir"); got != "/files/made" {
		t.Fatalf("X-New-Dir %q, want /files/made", got)
	}
	resp, body = s.do(t, "POST", "/files/a.txt?move=/files/made/a.txt", nil)
	wantStatus(t, resp, body, 201)
	wantFile(t, dir, "made/a.txt", []byte("A"))
}

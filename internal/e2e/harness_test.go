// This file is the end-to-end suite's harness and every helper more than
// one test file uses: building and starting hoard, requests, files on disk,
// listings, up2k, search, archives, ?tail, recent uploads, shares and
// media fixtures, each in its own section. Helpers used by one test file
// live in that file.

package e2e

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"bytes"
	"compress/bzip2"
	"compress/gzip"
	"context"
	crand "crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"image"
	"image/color"
	_ "image/gif" // image.DecodeConfig in imageDims reads every format a thumbnail may come in
	"image/jpeg"
	"image/png"
	"io"
	"maps"
	mrand "math/rand/v2"
	"mime/multipart"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ulikunitz/xz"
	_ "golang.org/x/image/webp"
	"golang.org/x/text/encoding/charmap"
)

// ---- building and starting hoard ----

// binPath is the hoard binary built once for the whole package, or
// the one HOARD_BIN names (to benchmark another build of it).
var binPath string

func TestMain(m *testing.M) {
	moreParallel()
	if p := os.Getenv("HOARD_BIN"); p != "" {
		binPath = p
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "hoard-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binPath = filepath.Join(dir, "hoard")
	args := []string{"build", "-o", binPath}
	if raceEnabled {
		args = append(args, "-race")
	}
	cmd := exec.Command("go", append(args, ".")...)
	cmd.Dir = filepath.Join("..", "..")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building hoard:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// e2eParallel is how many parallel tests of this package run at once when
// -parallel is not given. The default (GOMAXPROCS) suits tests that keep
// a core busy; these mostly wait on a hoard process, a client program or
// a timer, so more of them overlap their waits (CI's race run has 2
// cores).
const e2eParallel = 4

// moreParallel raises -test.parallel to e2eParallel unless it was given.
func moreParallel() {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set && runtime.GOMAXPROCS(0) < e2eParallel {
		flag.Set("test.parallel", strconv.Itoa(e2eParallel))
	}
}

// server is one running hoard process.
type server struct {
	URL  string // http://127.0.0.1:PORT, no trailing slash
	cmd  *exec.Cmd
	logs *syncBuf
	done chan error
	gone atomic.Bool // its process has ended (set before done gets Wait's result)
}

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

var listenRE = regexp.MustCompile(`listening on (https?://\S+)`) // the first line: http unless --https-only

// start runs hoard with args plus -p 0 -i 127.0.0.1 in a new empty
// folder and waits until it listens. At cleanup it sends SIGTERM and
// requires exit status 0.
func start(t *testing.T, args ...string) *server {
	t.Helper()
	return startInDir(t, t.TempDir(), args...)
}

// startInDir is start with hoard's working folder dir, where relative
// volume paths in args resolve.
func startInDir(t *testing.T, dir string, args ...string) *server {
	t.Helper()
	s, err := launch(t, dir, args...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.stop(); err != nil {
			t.Errorf("hoard did not stop cleanly: %v\nlog:\n%s", err, s.logs)
		} else if t.Failed() {
			// What the server said about the failed requests (a dropped
			// connection is logged there, not sent).
			t.Logf("the test failed; the end of hoard's log:\n%s", tail(s.logs.String(), 8<<10))
		}
	})
	return s
}

// trackSources stats every source file of the module once per run, while
// tests run: go test records them, so a change to the server invalidates
// cached results of this package (which builds the server rather than
// importing it).
var trackSources = sync.OnceFunc(func() {
	filepath.WalkDir(filepath.Join("..", ".."), func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() && strings.HasPrefix(d.Name(), ".") && d.Name() != "." && d.Name() != ".." {
			return filepath.SkipDir
		}
		if n := d.Name(); strings.HasSuffix(n, ".go") || n == "go.mod" || n == "go.sum" {
			os.Stat(p)
		}
		return nil
	})
})

// startErr runs hoard like start but returns an error, not failing the
// test, when it does not come up; the caller stops it.
func startErr(t testing.TB, args ...string) (*server, error) {
	t.Helper()
	return launch(t, t.TempDir(), args...)
}

func launch(t testing.TB, dir string, args ...string) (*server, error) {
	t.Helper()
	trackSources()
	env := testEnv(t) // nil: hoard inherits the test's environment
	if onS3(t) {      // the S3 leg (s3matrix_test.go): volumes in a bucket
		s3Gate(t)
		args, env = s3Rewrite(t, args)
	}
	if v, ok := testVars.Load(t.Name()); ok { // withEnv
		if env == nil {
			env = os.Environ()
		}
		env = append(env, v.([]string)...) // the last of a name wins
	}
	cmd := exec.Command(binPath, append([]string{"-p", "0", "-i", "127.0.0.1"}, args...)...)
	cmd.Dir = dir
	cmd.Env = env
	s := &server{cmd: cmd, logs: &syncBuf{}, done: make(chan error, 1)}
	// Standard output and error share one pipe, read in order: whatever
	// hoard logged before its address line is in s.logs when start
	// returns. (With a pipe each, a start-up warning could still be on
	// its way while the address had arrived.)
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = pw, pw
	err = cmd.Start()
	pw.Close()
	if err != nil {
		pr.Close()
		return nil, err
	}
	urls := make(chan string, 1)
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		defer pr.Close()
		br := bufio.NewReader(pr)
		for {
			line, err := br.ReadString('\n')
			s.logs.Write([]byte(line))
			if m := listenRE.FindStringSubmatch(line); m != nil {
				select {
				case urls <- m[1]:
				default:
				}
			}
			if err != nil {
				return
			}
		}
	}()
	go func() {
		err := cmd.Wait()
		s.gone.Store(true)
		<-drained // the last lines are in s.logs before done says so
		s.done <- err
	}()
	select {
	case u := <-urls:
		s.URL = strings.TrimSuffix(u, "/")
		return s, nil
	case err := <-s.done:
		return nil, fmt.Errorf("hoard exited before listening: %v\nlog:\n%s", err, s.logs)
	case <-time.After(15 * time.Second):
		cmd.Process.Kill()
		return nil, fmt.Errorf("hoard did not print its address in time\nlog:\n%s", s.logs)
	}
}

// testVars holds withEnv's variables by test name.
var testVars sync.Map

// withEnv gives the hoard processes t starts the variables kv ("K=V")
// on top of their environment: t.Setenv for hoard alone, which a
// parallel test (and the S3 leg) may use.
func withEnv(t testing.TB, kv ...string) {
	testVars.Store(t.Name(), kv)
	t.Cleanup(func() { testVars.Delete(t.Name()) })
}

// stop sends SIGTERM and waits for a clean exit.
func (s *server) stop() error {
	if s.gone.Load() { // not ProcessState: Wait writes it on another goroutine
		return nil
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-s.done:
		return err
	case <-time.After(20 * time.Second):
		s.cmd.Process.Kill()
		return fmt.Errorf("no exit within 20 s of SIGTERM")
	}
}

// client never follows redirects, so tests see them.
var client = &http.Client{
	Timeout:       60 * time.Second,
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

// slowClient waits as long as a burst on a busy machine needs.
var slowClient = &http.Client{Timeout: 5 * time.Minute}

// up2kClients are separate HTTP clients (separate connection pools), so
// parallel posts really use several connections.
var up2kClients = sync.Pool{New: func() any {
	return &http.Client{Timeout: 2 * time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
}}

// do sends a request and returns the response with its body read.
// hdr is a list of "Name: value" strings.
func (s *server) do(t *testing.T, method, path string, body []byte, hdr ...string) (*http.Response, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(context.Background(), method, s.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	return roundTrip(t, req, hdr...)
}

// roundTrip sets the "Name: value" headers on req, sends it and returns the
// response with its body read.
func roundTrip(t *testing.T, req *http.Request, hdr ...string) (*http.Response, []byte) {
	t.Helper()
	s3Gate(t)
	for _, h := range hdr {
		k, v, _ := strings.Cut(h, ":")
		req.Header.Set(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading body: %v", req.Method, req.URL.Path, err)
	}
	return resp, b
}

// wantStatus fails the test unless resp has the status.
func wantStatus(t *testing.T, resp *http.Response, body []byte, code int) {
	t.Helper()
	if resp.StatusCode != code {
		t.Fatalf("%s %s: status = %d, want %d; body: %.300s", resp.Request.Method, resp.Request.URL.Path, resp.StatusCode, code, body)
	}
}

// writeFile creates a file (and its folders) below dir.
func writeFile(t *testing.T, dir, rel string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if m, key, ok := s3Path(p); ok {
		m.Put(t, s3MatrixBucket, key, data)
	}
	return p
}

// removeFile deletes the file rel of the volume folder dir behind
// hoard's back (in the bucket too, in the S3 leg).
func removeFile(t *testing.T, dir, rel string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	os.Remove(p)
	if m, key, ok := s3Path(p); ok {
		m.Remove(t, s3MatrixBucket, key)
	}
}

// tree lists every path below dir (slash-separated, sorted), to prove that
// a refused request changed nothing.
func tree(t *testing.T, dir string) []string {
	t.Helper()
	if m, key, ok := s3Path(dir); ok {
		return s3Tree(t, m, key)
	}
	var out []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || p == dir {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		out = append(out, filepath.ToSlash(rel))
		return nil
	})
	return out
}

// ---- processes ----

// kill ends the server with SIGKILL (no shutdown at all) and waits.
func (s *server) kill(t *testing.T) {
	t.Helper()
	s.cmd.Process.Kill()
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		t.Fatal("hoard did not die from SIGKILL")
	}
}

// runHoard runs hoard with args (after -p 0 -i 127.0.0.1) to completion,
// with a timeout, and returns its exit status and output.
func runHoard(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binPath, append([]string{"-p", "0", "-i", "127.0.0.1"}, args...)...)
	cmd.Dir = t.TempDir()
	cmd.Env = testEnv(t) // nil: the test's environment
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("hoard %q did not exit within 10 s (it should refuse to start); stdout %q stderr %q", args, o.String(), e.String())
	}
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, o.String(), e.String()
	case errors.As(err, &ee):
		return ee.ExitCode(), o.String(), e.String()
	}
	t.Fatalf("running hoard: %v", err)
	return 0, "", ""
}

// ---- requests ----

// getCtx sends a GET with ctx and returns status, the X-Hoard-Thumb header
// and the body; err when the request failed.
func (s *server) getCtx(ctx context.Context, path string) (int, http.Header, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", s.URL+path, nil)
	if err != nil {
		return 0, nil, nil, err
	}
	resp, err := slowClient.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b, err
}

// rawRequest sends a hand-written request over a fresh TCP connection, so that
// request targets reach the server exactly as written (Go's client would
// normalise some of them). It returns the response with its body read.
func rawRequest(t *testing.T, s *server, method, target string, body []byte, hdr ...string) (*http.Response, []byte) {
	t.Helper()
	s3Gate(t)
	conn, err := net.DialTimeout("tcp", strings.TrimPrefix(s.URL, "http://"), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(15 * time.Second))
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n", method, target, strings.TrimPrefix(s.URL, "http://"))
	for _, h := range hdr {
		b.WriteString(h + "\r\n")
	}
	if body != nil {
		fmt.Fprintf(&b, "Content-Length: %d\r\n", len(body))
	}
	b.WriteString("\r\n")
	if _, err := io.WriteString(conn, b.String()); err != nil {
		t.Fatal(err)
	}
	if body != nil {
		conn.Write(body) // the server may refuse before reading it
	}
	req, _ := http.NewRequest(method, s.URL+"/", nil)
	resp, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err != nil {
		t.Fatalf("%s %s: reading response: %v", method, target, err)
	}
	defer resp.Body.Close()
	rb, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading body: %v", method, target, err)
	}
	return resp, rb
}

// sendRaw writes raw bytes on a fresh connection, half-closes it and reads
// the one response. The request may be incomplete on purpose.
func sendRaw(t *testing.T, s *server, raw []byte) (*http.Response, []byte) {
	t.Helper()
	s3Gate(t)
	c, err := net.DialTimeout("tcp", strings.TrimPrefix(s.URL, "http://"), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	// Write concurrently: a server that refuses early (431) stops reading,
	// and a large request would then block here. Closing c ends the writer.
	go func() {
		c.Write(raw)
		c.(*net.TCPConn).CloseWrite()
	}()
	// The request, for wantStatus's messages: method and target of line 1.
	line, _, _ := strings.Cut(string(raw[:min(len(raw), 2000)]), "\r\n")
	method, target, _ := strings.Cut(line, " ")
	target, _, _ = strings.Cut(target, " ")
	u, err := url.ParseRequestURI(target)
	if err != nil {
		t.Fatalf("test bug: request target %q: %v", target, err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: method, URL: u})
	if err != nil {
		t.Fatalf("%s %s: reading response: got %v, want an HTTP response", method, target, err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, body
}

// doChunked sends body without Content-Length (chunked transfer encoding).
func doChunked(t *testing.T, s *server, method, path string, body []byte, hdr ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), method, s.URL+path, io.MultiReader(bytes.NewReader(body)))
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = -1
	return roundTrip(t, req, hdr...)
}

// basicAuth is an Authorization header line for HTTP Basic auth.
func basicAuth(userpass string) string {
	return "Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte(userpass))
}

// multipartFiles builds a multipart/form-data body with one file field f per
// name→content pair (in the order given) and returns it with its
// Content-Type header line.
func multipartFiles(t *testing.T, files ...[2]string) ([]byte, string) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for _, f := range files {
		w, err := mw.CreateFormFile("f", f[0])
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(w, f[1])
	}
	if err := mw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), "Content-Type: " + mw.FormDataContentType()
}

// formPart is one part of a multipart form; file "" makes a plain field.
type formPart struct {
	field, file string
	data        []byte
}

// multipartForm builds a multipart/form-data body.
func multipartForm(t *testing.T, parts ...formPart) ([]byte, string) {
	t.Helper()
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	for _, p := range parts {
		var w io.Writer
		var err error
		if p.file == "" {
			w, err = mw.CreateFormField(p.field)
		} else {
			w, err = mw.CreateFormFile(p.field, p.file)
		}
		if err != nil {
			t.Fatal(err)
		}
		w.Write(p.data)
	}
	if err := mw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes(), "Content-Type: " + mw.FormDataContentType()
}

// putReply is the JSON reply to a PUT (spec fields plus copyparty's).
type putReply struct {
	URL        string `json:"url"`
	Size       int64  `json:"size"`
	SHA512     string `json:"sha512"`
	UploadTime int64  `json:"upload_time"`
	FileURL    string `json:"fileurl"`
	FileSz     int64  `json:"filesz"`
	ShaB64     string `json:"sha_b64"`
	CK         string `json:"ck"`
}

// multipartFile is one file of a multipart JSON reply.
type multipartFile struct {
	putReply
	Sz     int64  `json:"sz"`
	Fn     string `json:"fn"`
	FnOrig string `json:"fn_orig"`
	Path   string `json:"path"`
}

type multipartReply struct {
	Status  string          `json:"status"`
	Sz      int64           `json:"sz"`
	Files   []multipartFile `json:"files"`
	FileURL string          `json:"fileurl"`
	Error   string          `json:"error"`
}

// decodeJSONKeys unmarshals a JSON reply into v and returns its keys.
func decodeJSONKeys(t *testing.T, body []byte, v any) map[string]json.RawMessage {
	t.Helper()
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("reply is not JSON: %v; got %q", err, body)
	}
	var keys map[string]json.RawMessage
	json.Unmarshal(body, &keys)
	return keys
}

// ---- files on disk ----

// readFile returns the bytes of the file at p, failing the test when it
// cannot be read.
func readFile(t *testing.T, p string) []byte {
	t.Helper()
	b, err := volReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// userTree is tree without the server's state folder.
func userTree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	for _, p := range tree(t, dir) {
		if p != ".hist" && !strings.HasPrefix(p, ".hist/") {
			out = append(out, p)
		}
	}
	return out
}

// snapshot records every path below dir with a digest of its content, to
// prove that a refused request changed nothing (tree plus contents).
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, rel := range tree(t, dir) {
		if rel == ".hist" || strings.HasPrefix(rel, ".hist/") {
			continue // the server's state (its logs of writes in progress) is not the volume's content
		}
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if ms, key, ok := s3Path(p); ok {
			m[rel] = s3Snapshot(ms, key)
			continue
		}
		fi, err := os.Lstat(p)
		if err != nil {
			continue // vanished meanwhile
		}
		if fi.IsDir() {
			m[rel] = "dir"
			continue
		}
		b, _ := os.ReadFile(p)
		m[rel] = snapshotEntry(b)
	}
	return m
}

// wantSameSnapshot fails unless the two snapshots are equal.
func wantSameSnapshot(t *testing.T, before, after map[string]string) {
	t.Helper()
	for p, a := range after {
		if b, ok := before[p]; !ok {
			t.Errorf("after the request %s exists (%s); got a new path, want none", p, a)
		} else if a != b {
			t.Errorf("after the request %s: got %s, want unchanged %s", p, a, b)
		}
	}
	for p := range before {
		if _, ok := after[p]; !ok {
			t.Errorf("after the request %s: got missing, want unchanged", p)
		}
	}
}

// readVolumeFile returns the bytes of rel in dir, failing when it is missing.
func readVolumeFile(t *testing.T, dir, rel string) []byte {
	t.Helper()
	b, err := volReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
	if err != nil {
		t.Fatalf("stored file %s: %v", rel, err)
	}
	return b
}

// wantFile checks that rel in dir holds exactly want.
func wantFile(t *testing.T, dir, rel string, want []byte) {
	t.Helper()
	got := readVolumeFile(t, dir, rel)
	if !bytes.Equal(got, want) {
		t.Errorf("stored %s: got %d bytes (sha256 %x), want %d bytes (sha256 %x)", rel, len(got), sha256.Sum256(got), len(want), sha256.Sum256(want))
	}
}

func pathExists(dir, rel string) bool {
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if m, key, ok := s3Path(p); ok {
		return s3Exists(m, key)
	}
	_, err := os.Lstat(p)
	return err == nil
}

// mkdirVol makes the folder p (and its parents), as a marker object for
// a path in a volume of the S3 leg.
func mkdirVol(t *testing.T, p string) {
	t.Helper()
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
	if m, key, ok := s3Path(p); ok {
		m.Put(t, s3MatrixBucket, key+"/", nil)
	}
}

// volMtime is the file's mtime; for a path in a volume of the S3 leg the
// object's hoard-lmod (the up2k client's mtime), else its LastModified.
func volMtime(p string) (time.Time, error) {
	if m, key, ok := s3Path(p); ok {
		s, err := s3Lmod(m, key)
		return time.Unix(s, 0), err
	}
	fi, err := os.Stat(p)
	if err != nil {
		return time.Time{}, err
	}
	return fi.ModTime(), nil
}

// volIsFile says whether p is a file (an object, in the S3 leg).
func volIsFile(p string) bool {
	if m, key, ok := s3Path(p); ok {
		_, found, err := s3Read(m, key)
		return err == nil && found
	}
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}

// volReadFile is os.ReadFile, from the bucket for a path in a volume of
// the S3 leg (s3matrix_test.go).
func volReadFile(p string) ([]byte, error) {
	m, key, ok := s3Path(p)
	if !ok {
		return os.ReadFile(p)
	}
	b, found, err := s3Read(m, key)
	if err == nil && !found {
		err = fmt.Errorf("%s (object %s): %w", p, key, os.ErrNotExist)
	}
	return b, err
}

// fileHolds reports whether the file below dir holds exactly want.
func fileHolds(dir, rel, want string) bool {
	b, err := volReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
	return err == nil && string(b) == want
}

// wantNoPartial fails when a work file (.PARTIAL) is left in dir.
func wantNoPartial(t *testing.T, dir string) {
	t.Helper()
	for _, p := range tree(t, dir) {
		if strings.HasSuffix(p, ".PARTIAL") {
			t.Errorf("stray work file: got %s, want none", p)
		}
	}
}

func setMtime(t *testing.T, p string, tm time.Time) {
	t.Helper()
	if err := os.Chtimes(p, tm, tm); err != nil {
		t.Fatal(err)
	}
}

func sparseFile(t *testing.T, dir, rel string, size int64) string {
	t.Helper()
	p := writeFile(t, dir, rel, []byte("x"))
	if err := os.Truncate(p, size); err != nil {
		t.Fatal(err)
	}
	return p
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	crand.Read(b)
	return b
}

// seededBytes returns n deterministic pseudo-random bytes.
func seededBytes(seed uint64, n int) []byte {
	var key [32]byte
	key[0] = byte(seed)
	key[1] = byte(seed >> 8)
	b := make([]byte, n)
	mrand.NewChaCha8(key).Read(b)
	return b
}

// ---- listings ----

// listingEntry and listingReply are the parts of a ?ls reply the tests read.
type listingEntry struct {
	Href string         `json:"href"`
	Name string         `json:"name"`
	Sz   int64          `json:"sz"`
	Ts   int64          `json:"ts"`
	Ext  string         `json:"ext"`
	Tags map[string]any `json:"tags"`
}

type listingReply struct {
	Dirs    []listingEntry `json:"dirs"`
	Files   []listingEntry `json:"files"`
	Acct    string         `json:"acct"`
	Perms   []string       `json:"perms"`
	Srvinf  string         `json:"srvinf"`
	Taglist []string       `json:"taglist"`
}

func decodeListing(t *testing.T, body []byte) listingReply {
	t.Helper()
	var r listingReply
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatalf("?ls body is not the listing JSON: %v; body: %.300s", err, body)
	}
	return r
}

// getListing fetches a ?ls listing and decodes it.
func getListing(t *testing.T, s *server, path string, hdr ...string) listingReply {
	t.Helper()
	resp, body := s.do(t, "GET", path, nil, hdr...)
	wantStatus(t, resp, body, http.StatusOK)
	return decodeListing(t, body)
}

// listingNames returns the names (href decoded) of a listing's dirs and files.
func listingNames(t *testing.T, l listingReply) (dirs, files []string) {
	t.Helper()
	for _, e := range l.Dirs {
		h := strings.SplitN(e.Href, "?", 2)[0]
		if !strings.HasSuffix(h, "/") {
			t.Errorf("dir href %q does not end in /", e.Href)
		}
		n, err := url.PathUnescape(strings.TrimSuffix(h, "/"))
		if err != nil {
			t.Errorf("dir href %q: %v", e.Href, err)
		}
		dirs = append(dirs, n)
	}
	for _, e := range l.Files {
		n, err := url.PathUnescape(strings.SplitN(e.Href, "?", 2)[0])
		if err != nil {
			t.Errorf("file href %q: %v", e.Href, err)
		}
		files = append(files, n)
	}
	return dirs, files
}

// ---- up2k ----

// copypartyChunkSize is copyparty's chunk size function, written out again here
// so that the tests do not trust the server's copy.
func copypartyChunkSize(size int64) int64 {
	cs, step := int64(1<<20), int64(512<<10)
	for {
		for _, mul := range []int64{1, 2} {
			n := (size + cs - 1) / cs
			if n <= 256 || (cs >= 32<<20 && n <= 4096) {
				return cs
			}
			cs += step
			step *= mul
		}
	}
}

// up2kChunkHash is copyparty's chunk hash: SHA-512, first 33 bytes, URL-safe base64.
func up2kChunkHash(b []byte) string {
	s := sha512.Sum512(b)
	return base64.RawURLEncoding.EncodeToString(s[:33])
}

// up2kFile is a file as an up2k client sees it.
type up2kFile struct {
	data   []byte
	cs     int64
	hashes []string
}

func (f *up2kFile) chunk(i int) []byte {
	off := int64(i) * f.cs
	return f.data[off:min(off+f.cs, int64(len(f.data)))]
}

// index returns the first chunk index with hash h.
func (f *up2kFile) index(h string) int { return slices.Index(f.hashes, h) }

func newUp2kFile(data []byte) *up2kFile {
	f := &up2kFile{data: data, cs: copypartyChunkSize(int64(len(data)))}
	for off := int64(0); off < int64(len(data)); off += f.cs {
		f.hashes = append(f.hashes, up2kChunkHash(f.chunk(int(off/f.cs))))
	}
	return f
}

// handshakeReply is the handshake answer.
type handshakeReply struct {
	Name string   `json:"name"`
	Purl string   `json:"purl"`
	Size int64    `json:"size"`
	Lmod int64    `json:"lmod"`
	Sprs bool     `json:"sprs"`
	Hash []string `json:"hash"`
	Dwrk string   `json:"dwrk"`
	Wark string   `json:"wark"`
	Need []string `json:"need"`
	FK   string   `json:"fk"`
}

// postHandshake posts a handshake (a JSON body) and returns the raw response.
func postHandshake(t *testing.T, s *server, folder string, body any, hdr ...string) (*http.Response, []byte) {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	return s.do(t, "POST", folder, b, append([]string{"Content-Type: application/json"}, hdr...)...)
}

// up2kHandshake posts a handshake for f named name and wants 200.
func up2kHandshake(t *testing.T, s *server, folder, name string, f *up2kFile, lmod int64, extra map[string]any, hdr ...string) handshakeReply {
	t.Helper()
	body := map[string]any{"name": name, "size": len(f.data), "lmod": lmod, "hash": f.hashes}
	for k, v := range extra {
		body[k] = v
	}
	resp, b := postHandshake(t, s, folder, body, hdr...)
	wantStatus(t, resp, b, 200)
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("handshake Content-Type %q", ct)
	}
	var rep handshakeReply
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatalf("handshake reply %s: %v", b, err)
	}
	// copyparty's fields and the spec's need, both always there.
	var raw map[string]json.RawMessage
	json.Unmarshal(b, &raw)
	for _, k := range []string{"name", "purl", "size", "lmod", "sprs", "hash", "dwrk", "wark", "need"} {
		if _, ok := raw[k]; !ok {
			t.Fatalf("handshake reply lacks %q: %s", k, b)
		}
	}
	if !slices.Equal(rep.Hash, rep.Need) {
		t.Fatalf("hash %v and need %v differ", rep.Hash, rep.Need)
	}
	for _, h := range rep.Hash {
		if !slices.Contains(f.hashes, h) {
			t.Fatalf("the server needs %s, which the client never sent", h)
		}
	}
	return rep
}

// postChunks posts chunk bytes with X-Up2k-Hash hdrHash to the reply's purl.
func postChunks(t *testing.T, s *server, purl, wark, hdrHash string, body []byte, hdr ...string) (*http.Response, []byte) {
	t.Helper()
	h := append([]string{"Content-Type: application/octet-stream", "X-Up2k-Wark: " + wark, "X-Up2k-Hash: " + hdrHash}, hdr...)
	return s.do(t, "POST", escapePurl(purl), body, h...)
}

// escapePurl URL-encodes a purl the way u2c does (copyparty sends it raw).
func escapePurl(p string) string {
	return (&url.URL{Path: p}).EscapedPath()
}

// postChunk posts chunk i of f and wants 200 "thank".
func postChunk(t *testing.T, s *server, rep handshakeReply, f *up2kFile, i int, hdr ...string) {
	t.Helper()
	resp, b := postChunks(t, s, rep.Purl, rep.Wark, f.hashes[i], f.chunk(i), hdr...)
	wantStatus(t, resp, b, 200)
	if string(b) != "thank" {
		t.Fatalf("chunk reply %q, want thank", b)
	}
}

// up2kUpload sends every needed chunk of f, in shuffled order over par
// parallel connections, then checks the final handshake.
func up2kUpload(t *testing.T, s *server, folder, name string, f *up2kFile, lmod int64, par int, hdr ...string) handshakeReply {
	t.Helper()
	rep := up2kHandshake(t, s, folder, name, f, lmod, nil, hdr...)
	need := slices.Clone(rep.Hash)
	mrand.Shuffle(len(need), func(i, j int) { need[i], need[j] = need[j], need[i] })
	runParallel(t, par, need, func(h string) {
		resp, b := postChunksNoFail(s, rep.Purl, rep.Wark, h, f.chunk(f.index(h)), hdr...)
		if resp != 200 || string(b) != "thank" {
			t.Errorf("chunk %s: %d %s", h, resp, b)
		}
	})
	if t.Failed() {
		t.FailNow()
	}
	fin := up2kHandshake(t, s, folder, rep.Name, f, lmod, nil, hdr...)
	if len(fin.Hash) != 0 {
		t.Fatalf("final handshake still needs %d chunks", len(fin.Hash))
	}
	return fin
}

// runParallel runs fn for every item on n goroutines.
func runParallel(t *testing.T, n int, items []string, fn func(string)) {
	ch := make(chan string)
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for it := range ch {
				fn(it)
			}
		}()
	}
	for _, it := range items {
		ch <- it
	}
	close(ch)
	wg.Wait()
}

// postChunksNoFail posts a chunk from any goroutine (no t.Fatal).
func postChunksNoFail(s *server, purl, wark, hdrHash string, body []byte, hdr ...string) (int, []byte) {
	c := up2kClients.Get().(*http.Client)
	defer up2kClients.Put(c)
	req, err := http.NewRequest("POST", s.URL+escapePurl(purl), bytes.NewReader(body))
	if err != nil {
		return 0, []byte(err.Error())
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	req.Header.Set("X-Up2k-Wark", wark)
	req.Header.Set("X-Up2k-Hash", hdrHash)
	for _, h := range hdr {
		k, v, _ := strings.Cut(h, ":")
		req.Header.Set(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, []byte(err.Error())
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	b.ReadFrom(resp.Body)
	return resp.StatusCode, b.Bytes()
}

// wantUploaded checks that the file at p holds data, with mtime lmod, and that
// no work file is left next to it.
func wantUploaded(t *testing.T, p string, data []byte, lmod int64) {
	t.Helper()
	got, err := volReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, data) {
		t.Fatalf("%s: %d bytes differ from the %d sent", p, len(got), len(data))
	}
	if m, key, ok := s3Path(p); ok {
		if got, err := s3Lmod(m, key); err != nil || (lmod != 0 && got != lmod) {
			t.Fatalf("%s: mtime %d (%v), want lmod %d", p, got, err, lmod)
		}
		if s3Exists(m, key+".PARTIAL") {
			t.Fatalf("%s.PARTIAL in the bucket", p)
		}
		return
	}
	fi, _ := os.Stat(p)
	if lmod != 0 && fi.ModTime().Unix() != lmod {
		t.Fatalf("%s: mtime %d, want lmod %d", p, fi.ModTime().Unix(), lmod)
	}
	if _, err := os.Stat(p + ".PARTIAL"); err == nil {
		t.Fatalf("%s.PARTIAL left behind", p)
	}
}

// stitchHashes is copyparty's compact X-Up2k-Hash for consecutive chunks:
// <h0>,<n>,<first n chars of each following hash>, n = 192/count in 2..9.
func stitchHashes(hs []string) string {
	if len(hs) == 1 {
		return hs[0]
	}
	n := min(max(192/len(hs), 2), 9)
	var b strings.Builder
	for _, h := range hs[1:] {
		b.WriteString(h[:n])
	}
	return fmt.Sprintf("%s,%d,%s", hs[0], n, b.String())
}

func jsonStrings(hs []string) string {
	b, _ := json.Marshal(hs)
	return string(b)
}

// ---- search ----

type searchHit struct {
	RP   string            `json:"rp"`
	FN   string            `json:"fn"`
	SZ   int64             `json:"sz"`
	MT   int64             `json:"mt"`
	TS   int64             `json:"ts"`
	Tags map[string]string `json:"tags"`
	Href string            `json:"href"`
}

type searchReply struct {
	Hits     []searchHit `json:"hits"`
	TagOrder []string    `json:"tag_order"`
	Trunc    bool        `json:"trunc"`
	Error    string      `json:"error"`
}

// postSearch posts a search body and decodes the JSON answer (errors included).
func postSearch(t *testing.T, s *server, body any, hdr ...string) (int, searchReply) {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	resp, rb := s.do(t, "POST", "/", b, append([]string{"Content-Type: application/json"}, hdr...)...)
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("search answered %d with Content-Type %q: %s", resp.StatusCode, ct, rb)
	}
	var r searchReply
	if err := json.Unmarshal(rb, &r); err != nil {
		t.Fatalf("search answer is not JSON: %v: %s", err, rb)
	}
	return resp.StatusCode, r
}

// rps are the hits' hrefs, sorted.
func (r searchReply) hrefs() []string {
	var out []string
	for _, h := range r.Hits {
		out = append(out, h.Href)
	}
	slices.Sort(out)
	return out
}

// waitReady polls until searches stop answering 503 (the first scan).
func waitReady(t *testing.T, s *server, hdr ...string) {
	t.Helper()
	deadline := time.Now().Add(180 * time.Second)
	for time.Now().Before(deadline) {
		code, r := postSearch(t, s, map[string]any{"q": "zzzznothing"}, hdr...)
		if code == 200 {
			return
		}
		if code != 503 {
			t.Fatalf("search = %d %q while waiting for the scan", code, r.Error)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("the first scan did not finish in 180 s")
}

// waitHits polls a query until its hits are want (the index follows
// changes asynchronously).
func waitHits(t *testing.T, s *server, q string, want []string, hdr ...string) {
	t.Helper()
	var got []string
	for range 200 {
		code, r := postSearch(t, s, map[string]any{"q": q}, hdr...)
		if code == http.StatusTooManyRequests {
			// Search's cost limit: a loaded machine makes each search dearer
			// (the message names the wait, under a second or two).
			time.Sleep(time.Second)
			continue
		}
		if code != 200 {
			t.Fatalf("search %q = %d %s", q, code, r.Error)
		}
		got = r.hrefs()
		if slices.Equal(got, want) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("search %q = %q, want %q", q, got, want)
}

// ---- archives ----

// readArchive decodes an archive with Go's readers: name → content.
func readArchive(t *testing.T, format string, b []byte) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	if strings.HasPrefix(format, "zip") {
		zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			t.Fatalf("%s: zip.NewReader: %v", format, err)
		}
		for _, zf := range zr.File {
			name := zf.Name
			if zf.Flags&0x800 == 0 {
				name, _ = charmap.CodePage437.NewDecoder().String(name)
			}
			rc, err := zf.Open()
			if err != nil {
				t.Fatalf("%s: %s: %v", format, name, err)
			}
			data, err := io.ReadAll(rc) // checks the CRC
			if err != nil {
				t.Fatalf("%s: %s: %v", format, name, err)
			}
			out[name] = data
		}
		return out
	}
	var r io.Reader = bytes.NewReader(b)
	var err error
	switch {
	case strings.Contains(format, "gz"):
		r, err = gzip.NewReader(r)
	case strings.Contains(format, "xz"):
		r, err = xz.NewReader(r)
	case strings.Contains(format, "bz2"):
		r = bzip2.NewReader(r)
	}
	if err != nil {
		t.Fatalf("%s: %v", format, err)
	}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: tar: %v", format, err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatalf("%s: %s: %v", format, h.Name, err)
		}
		out[h.Name] = data
	}
	return out
}

// wantArchiveFiles fails unless got holds exactly want's files under prefix.
func wantArchiveFiles(t *testing.T, what string, got map[string][]byte, prefix string, want map[string][]byte) {
	t.Helper()
	if len(got) != len(want) {
		var names []string
		for n := range got {
			names = append(names, n)
		}
		slices.Sort(names)
		t.Errorf("%s: %d entries, want %d: %q", what, len(got), len(want), names)
	}
	for name, data := range want {
		g, ok := got[prefix+name]
		if !ok {
			t.Errorf("%s: %q missing", what, prefix+name)
		} else if !bytes.Equal(g, data) {
			t.Errorf("%s: %q has %d bytes that differ from the %d on disk", what, prefix+name, len(g), len(data))
		}
	}
}

// untar returns the members of a tar archive by name.
func untarMembers(t *testing.T, b []byte) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("reading tar: %v", err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out[h.Name] = data
	}
}

func unzipMembers(t *testing.T, b []byte) map[string][]byte {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatalf("reading zip: %v", err)
	}
	out := map[string][]byte{}
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatalf("zip member %s: %v", f.Name, err)
		}
		out[f.Name] = data
	}
	return out
}

// sortedMembers is an archive's member names, sorted, joined by spaces.
func sortedMembers(m map[string][]byte) string {
	return strings.Join(slices.Sorted(maps.Keys(m)), " ")
}

// makeZip builds a zip in memory from name → content (a name ending in / is
// a folder), deflated.
func makeZip(t *testing.T, members [][2]string, mtime time.Time) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, m := range members {
		h := &zip.FileHeader{Name: m[0], Method: zip.Deflate, Modified: mtime}
		if strings.HasSuffix(m[0], "/") {
			h.Method = zip.Store
		}
		w, err := zw.CreateHeader(h)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(m[1]))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// ---- ?tail ----

// tailReader reads a ?tail response in the background.
type tailReader struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	done chan error
	resp *http.Response
}

func startTail(t *testing.T, s *server, path string) *tailReader {
	t.Helper()
	req, _ := http.NewRequest("GET", s.URL+path, nil)
	resp, err := (&http.Client{}).Do(req) // no overall timeout: it streams
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b)
	}
	tr := &tailReader{done: make(chan error, 1), resp: resp}
	t.Cleanup(func() { resp.Body.Close() })
	go func() {
		b := make([]byte, 4096)
		for {
			n, err := resp.Body.Read(b)
			tr.mu.Lock()
			tr.buf.Write(b[:n])
			tr.mu.Unlock()
			if err != nil {
				if err == io.EOF {
					err = nil
				}
				tr.done <- err
				return
			}
		}
	}()
	return tr
}

func (tr *tailReader) bytes() []byte {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return bytes.Clone(tr.buf.Bytes())
}

// waitLen waits until at least n bytes arrived.
func (tr *tailReader) waitLen(t *testing.T, n int, within time.Duration) time.Duration {
	t.Helper()
	t0 := time.Now()
	for time.Since(t0) < within {
		if len(tr.bytes()) >= n {
			return time.Since(t0)
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("only %d of %d bytes arrived within %v", len(tr.bytes()), n, within)
	return 0
}

// waitEnd waits for the server to end the stream.
func (tr *tailReader) waitEnd(t *testing.T, within time.Duration) {
	t.Helper()
	select {
	case err := <-tr.done:
		if err != nil {
			t.Fatalf("stream ended with %v", err)
		}
	case <-time.After(within):
		t.Fatalf("the stream did not end within %v", within)
	}
}

// ---- recent uploads and downloads ----

type dlsRow struct {
	Sent  int64   `json:"sent"`
	Size  int64   `json:"size"`
	Path  string  `json:"path"`
	Conn  string  `json:"conn"`
	Uname string  `json:"uname"`
	Rate  float64 `json:"rate"`
	Dur   float64 `json:"dur"`
}

func dlsGet(t *testing.T, s *server, hdr ...string) []dlsRow {
	t.Helper()
	resp, body := s.do(t, "GET", "/?dls", nil, hdr...)
	wantStatus(t, resp, body, 200)
	var rows []dlsRow
	if err := json.Unmarshal(body, &rows); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	return rows
}

// ---- shares ----

type shareRow struct {
	K     string   `json:"k"`
	URL   string   `json:"url"`
	VP    string   `json:"vp"`
	Files []string `json:"files"`
	Perms string   `json:"perms"`
	PW    bool     `json:"pw"`
	Un    string   `json:"un"`
	T1    int64    `json:"t1"`
}

// makeShare posts a share the way copyparty's web UI does and returns the
// share URL path.
func makeShare(t *testing.T, s *server, pw string, body map[string]any, code int) string {
	t.Helper()
	b, _ := json.Marshal(body)
	resp, rb := s.do(t, "POST", "/?share", b, "PW: "+pw, "Content-Type: text/plain")
	wantStatus(t, resp, rb, code)
	if code != 201 {
		return ""
	}
	txt := strings.TrimSpace(string(rb))
	if !strings.HasPrefix(txt, "created share: ") {
		t.Fatalf("body %q", rb)
	}
	u, err := url.Parse(txt[15:])
	if err != nil || u.Host == "" {
		t.Fatalf("share URL %q", txt[15:])
	}
	return u.EscapedPath()
}

func listShares(t *testing.T, s *server, pw string) []shareRow {
	t.Helper()
	resp, body := s.do(t, "GET", "/?shares&j", nil, "PW: "+pw)
	wantStatus(t, resp, body, 200)
	var rows []shareRow
	if err := json.Unmarshal(body, &rows); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	return rows
}

// ---- media ----

// ffmpegPath is the real ffmpeg; the media tests need it (CI installs it).
func ffmpegPath(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("ffmpeg")
	if err != nil {
		t.Fatalf("the media tests need ffmpeg and ffprobe (apt-get install ffmpeg): %v", err)
	}
	return p
}

// makeMedia makes a media file at out with ffmpeg's generated sources, e.g.
// makeMedia(t, out, "-f", "lavfi", "-i", "sine=d=2").
func makeMedia(t testing.TB, out string, args ...string) {
	t.Helper()
	cmd := exec.Command(ffmpegPath(t), append(append([]string{"-nostdin", "-v", "error", "-y"}, args...), out)...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("ffmpeg %v: %v\n%s", args, err, b)
	}
}

// mediaProbe is what ffprobe says about a file.
type mediaProbe struct {
	Streams []struct {
		CodecName string `json:"codec_name"`
		CodecType string `json:"codec_type"`
		Width     int    `json:"width"`
		Height    int    `json:"height"`
	} `json:"streams"`
	Format struct {
		FormatName string `json:"format_name"`
		Duration   string `json:"duration"`
		BitRate    string `json:"bit_rate"`
		Size       string `json:"size"`
	} `json:"format"`
}

func probeMedia(t testing.TB, data []byte) mediaProbe {
	t.Helper()
	f := filepath.Join(t.TempDir(), "probe.bin")
	if err := os.WriteFile(f, data, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("ffprobe", "-v", "error", "-of", "json", "-show_streams", "-show_format", f).Output()
	if err != nil {
		t.Fatalf("ffprobe: %v", err)
	}
	var p mediaProbe
	if err := json.Unmarshal(out, &p); err != nil {
		t.Fatal(err)
	}
	return p
}

func (p mediaProbe) duration() float64 {
	d, _ := strconv.ParseFloat(p.Format.Duration, 64)
	return d
}

// twoToneImage is a w×h JPEG, red in its left half and blue in its right.
func twoToneImage(w, h int) image.Image {
	m := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			c := color.RGBA{255, 0, 0, 255}
			if x >= w/2 {
				c = color.RGBA{0, 0, 255, 255}
			}
			m.SetRGBA(x, y, c)
		}
	}
	return m
}

func encodeJPEG(t testing.TB, m image.Image) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := jpeg.Encode(&b, m, &jpeg.Options{Quality: 90}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func encodePNG(t testing.TB, m image.Image) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, m); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// imageDims decodes an image's header: width, height, format.
func imageDims(t testing.TB, b []byte) (int, int, string) {
	t.Helper()
	cfg, kind, err := image.DecodeConfig(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("not an image (%v): %.80q", err, b)
	}
	return cfg.Width, cfg.Height, kind
}

// ffmpegWrapper writes a script to use as --ffmpeg: it records each run
// (one line in dir/runs), the number of runs alive at its start (dir/conc)
// and its pid while alive (dir/run.PID), sleeps pre seconds, then runs the
// real ffmpeg.
func ffmpegWrapper(t testing.TB, dir string, pre string) string {
	t.Helper()
	real := ffmpegPath(t)
	script := `#!/bin/sh
d='` + dir + `'
echo $$ > "$d/run.$$"
echo x >> "$d/runs"
ls "$d" | grep -c '^run\.' >> "$d/conc"
sleep ` + pre + `
'` + real + `' "$@"
rc=$?
rm -f "$d/run.$$"
exit $rc
`
	p := filepath.Join(dir, "ffmpeg-wrapper.sh")
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// wrapperStats reads the wrapper's records: runs and the highest
// concurrency seen.
func wrapperStats(t testing.TB, dir string) (runs, maxConc int) {
	t.Helper()
	b, _ := os.ReadFile(filepath.Join(dir, "runs"))
	runs = strings.Count(string(b), "\n")
	c, _ := os.ReadFile(filepath.Join(dir, "conc"))
	for _, l := range strings.Fields(string(c)) {
		n, _ := strconv.Atoi(l)
		maxConc = max(maxConc, n)
	}
	return runs, maxConc
}

func thumbURL(name, v string) string { return "/" + url.PathEscape(name) + "?th=" + url.QueryEscape(v) }

// ---- permissions ----

const (
	pageShowsNothing = ""
	indexPageText    = "INDEX-PAGE"
	listedFileName   = "x.txt"
)

// permCase is one row of the permission matrix.
type permCase struct {
	letters    string
	getFile    int
	getMissing int
	ls         int
	lsShows    bool     // ?ls lists the files
	perms      []string // ?ls perms when ls is 200
	html       int      // GET /sub/
	htmlHas    string   // what the page must contain
	put        int
	replace    int
	post       int
	dots       bool // ?ls&dots lists .dot
}

var permCases = []permCase{
	{letters: "r", getFile: 200, getMissing: 404, ls: 200, lsShows: true, perms: []string{"read"}, html: 200, htmlHas: listedFileName, put: 403, replace: 403, post: 403, dots: false},
	{letters: "w", getFile: 403, getMissing: 403, ls: 200, lsShows: false, perms: []string{"write"}, html: 200, htmlHas: pageShowsNothing, put: 201, replace: 403, post: 201, dots: false},
	{letters: "m", getFile: 403, getMissing: 403, ls: 403, lsShows: false, perms: nil, html: 403, htmlHas: pageShowsNothing, put: 403, replace: 403, post: 403, dots: false},
	{letters: "d", getFile: 403, getMissing: 403, ls: 403, lsShows: false, perms: nil, html: 403, htmlHas: pageShowsNothing, put: 403, replace: 403, post: 403, dots: false},
	{letters: "g", getFile: 200, getMissing: 403, ls: 403, lsShows: false, perms: nil, html: 403, htmlHas: pageShowsNothing, put: 403, replace: 403, post: 403, dots: false},
	{letters: "G", getFile: 200, getMissing: 403, ls: 403, lsShows: false, perms: nil, html: 403, htmlHas: pageShowsNothing, put: 403, replace: 403, post: 403, dots: false},
	{letters: "h", getFile: 200, getMissing: 403, ls: 403, lsShows: false, perms: nil, html: 200, htmlHas: indexPageText, put: 403, replace: 403, post: 403, dots: false},
	{letters: ".", getFile: 403, getMissing: 403, ls: 403, lsShows: false, perms: nil, html: 403, htmlHas: pageShowsNothing, put: 403, replace: 403, post: 403, dots: false},
	{letters: "a", getFile: 403, getMissing: 403, ls: 403, lsShows: false, perms: nil, html: 403, htmlHas: pageShowsNothing, put: 403, replace: 403, post: 403, dots: false},
	{letters: "A", getFile: 200, getMissing: 404, ls: 200, lsShows: true, perms: []string{"read", "write", "move", "delete", "dot", "admin"}, html: 200, htmlHas: listedFileName, put: 201, replace: 201, post: 201, dots: true},
	{letters: "rw", getFile: 200, getMissing: 404, ls: 200, lsShows: true, perms: []string{"read", "write"}, html: 200, htmlHas: listedFileName, put: 201, replace: 403, post: 201, dots: false},
	{letters: "rwd", getFile: 200, getMissing: 404, ls: 200, lsShows: true, perms: []string{"read", "write", "delete"}, html: 200, htmlHas: listedFileName, put: 201, replace: 201, post: 201, dots: false},
	{letters: "r.", getFile: 200, getMissing: 404, ls: 200, lsShows: true, perms: []string{"read", "dot"}, html: 200, htmlHas: listedFileName, put: 403, replace: 403, post: 403, dots: true},
	{letters: "wd", getFile: 403, getMissing: 403, ls: 200, lsShows: false, perms: []string{"write", "delete"}, html: 200, htmlHas: pageShowsNothing, put: 201, replace: 201, post: 201, dots: false},
	{letters: "rg", getFile: 200, getMissing: 404, ls: 200, lsShows: true, perms: []string{"read", "get"}, html: 200, htmlHas: listedFileName, put: 403, replace: 403, post: 403, dots: false},
}

// runPermCase checks one row against a server that start runs with user
// u (password pw1) holding tc.letters on the volume dir at /.
func runPermCase(t *testing.T, tc permCase, start func(dir string) *server) {
	dir := t.TempDir()
	writeFile(t, dir, "f.txt", []byte("F-CONTENT"))
	writeFile(t, dir, "r.txt", []byte("R-OLD"))
	writeFile(t, dir, ".dot", []byte("D"))
	writeFile(t, dir, "sub/index.html", []byte("<p>"+indexPageText+"</p>"))
	writeFile(t, dir, "sub/x.txt", []byte("X"))
	s := start(dir)
	cred := "PW: pw1"

	t.Run("anonymous gets 401", func(t *testing.T) {
		resp, body := s.do(t, "GET", "/f.txt", nil)
		wantStatus(t, resp, body, http.StatusUnauthorized)
		if got := resp.Header.Get("WWW-Authenticate"); !strings.HasPrefix(got, `Basic realm="hoard"`) {
			t.Errorf("WWW-Authenticate = %q, want Basic realm=\"hoard\"", got)
		}
	})
	t.Run("GET file", func(t *testing.T) {
		resp, body := s.do(t, "GET", "/f.txt", nil, cred)
		wantStatus(t, resp, body, tc.getFile)
		if got := strings.Contains(string(body), "F-CONTENT"); got != (tc.getFile == 200) {
			t.Errorf("body has the file: %v, want %v", got, tc.getFile == 200)
		}
	})
	t.Run("GET missing file", func(t *testing.T) {
		resp, body := s.do(t, "GET", "/missing.txt", nil, cred)
		wantStatus(t, resp, body, tc.getMissing)
	})
	t.Run("ls", func(t *testing.T) {
		resp, body := s.do(t, "GET", "/?ls", nil, cred)
		wantStatus(t, resp, body, tc.ls)
		if tc.ls != 200 {
			if strings.Contains(string(body), "f.txt") {
				t.Errorf("refused listing names f.txt: %s", body)
			}
			return
		}
		l := decodeListing(t, body)
		_, files := listingNames(t, l)
		if got := slices.Contains(files, "f.txt"); got != tc.lsShows {
			t.Errorf("files = %q: lists f.txt %v, want %v", files, got, tc.lsShows)
		}
		if !tc.lsShows && (len(l.Dirs) != 0 || len(l.Files) != 0) {
			t.Errorf("write-only listing: dirs %v files %v, want both empty", l.Dirs, l.Files)
		}
		if !reflect.DeepEqual(l.Perms, tc.perms) {
			t.Errorf("perms = %q, want %q", l.Perms, tc.perms)
		}
		if l.Acct != "u" {
			t.Errorf("acct = %q, want u", l.Acct)
		}
	})
	t.Run("ls=t", func(t *testing.T) {
		resp, body := s.do(t, "GET", "/sub/?ls=t", nil, cred)
		wantStatus(t, resp, body, tc.ls)
		if got := strings.Contains(string(body), "x.txt"); got != tc.lsShows {
			t.Errorf("text listing names x.txt: %v, want %v", got, tc.lsShows)
		}
	})
	t.Run("GET folder page", func(t *testing.T) {
		resp, body := s.do(t, "GET", "/sub/", nil, cred)
		wantStatus(t, resp, body, tc.html)
		if tc.htmlHas != "" && !strings.Contains(string(body), tc.htmlHas) {
			t.Errorf("page lacks %q: %.300s", tc.htmlHas, body)
		}
		if tc.htmlHas != listedFileName && strings.Contains(string(body), "x.txt") {
			t.Errorf("page names x.txt, want no listing: %.300s", body)
		}
		if tc.htmlHas != indexPageText && strings.Contains(string(body), indexPageText) {
			t.Errorf("page serves index.html, want not: %.300s", body)
		}
	})
	t.Run("dots", func(t *testing.T) {
		resp, body := s.do(t, "GET", "/?ls&dots", nil, cred)
		wantStatus(t, resp, body, tc.ls)
		if got := strings.Contains(string(body), ".dot"); got != tc.dots {
			t.Errorf("?ls&dots lists .dot: %v, want %v", got, tc.dots)
		}
	})
	t.Run("PUT", func(t *testing.T) {
		resp, body := s.do(t, "PUT", "/new.txt", []byte("NEW"), cred)
		wantStatus(t, resp, body, tc.put)
		if got := fileHolds(dir, "new.txt", "NEW"); got != (tc.put == 201) {
			t.Errorf("new.txt stored: %v, want %v", got, tc.put == 201)
		}
	})
	t.Run("PUT replace", func(t *testing.T) {
		resp, body := s.do(t, "PUT", "/r.txt?replace", []byte("R-NEW"), cred)
		wantStatus(t, resp, body, tc.replace)
		want := "R-OLD"
		if tc.replace == 201 {
			want = "R-NEW"
		}
		if !fileHolds(dir, "r.txt", want) {
			t.Errorf("r.txt does not hold %q after the request", want)
		}
	})
	t.Run("PUT Replace header", func(t *testing.T) {
		writeFile(t, dir, "r2.txt", []byte("R-OLD"))
		resp, body := s.do(t, "PUT", "/r2.txt", []byte("R-NEW"), cred, "Replace: 1")
		wantStatus(t, resp, body, tc.replace)
	})
	t.Run("multipart POST", func(t *testing.T) {
		mp, ct := multipartFiles(t, [2]string{"mp.txt", "MP"})
		resp, body := s.do(t, "POST", "/", mp, cred, ct)
		wantStatus(t, resp, body, tc.post)
		if got := fileHolds(dir, "mp.txt", "MP"); got != (tc.post == 201) {
			t.Errorf("mp.txt stored: %v, want %v", got, tc.post == 201)
		}
	})
	t.Run("anonymous writes get 401", func(t *testing.T) {
		resp, body := s.do(t, "PUT", "/anon.txt", []byte("A"))
		wantStatus(t, resp, body, http.StatusUnauthorized)
		mp, ct := multipartFiles(t, [2]string{"anon2.txt", "A"})
		resp, body = s.do(t, "POST", "/", mp, ct)
		wantStatus(t, resp, body, http.StatusUnauthorized)
		if pathExists(dir, "anon.txt") || pathExists(dir, "anon2.txt") {
			t.Errorf("anonymous upload stored, want nothing")
		}
	})
}

// ---- config files ----

// configFile writes a config file and returns its path.
func configFile(t *testing.T, text string) string {
	t.Helper()
	return writeFile(t, t.TempDir(), "hoard.conf", []byte(text))
}

// ---- clients from other addresses ----

// clientFromAddr is an HTTP client whose connections come from the loopback
// address ip (127.0.0.2, …), so that the server sees several clients.
func clientFromAddr(ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 10 * time.Second}
	return &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{DialContext: d.DialContext, MaxIdleConnsPerHost: 64}}
}

// ---- copyparty's u2c.py ----

// u2cRun runs u2c.py with args and returns its output.
func u2cRun(t *testing.T, ctx context.Context, args ...string) (string, error) {
	t.Helper()
	py := os.Getenv("HOARD_PYTHON")
	if py == "" {
		py = "python3"
	}
	cmd := exec.CommandContext(ctx, py, append([]string{os.Getenv("HOARD_U2C"), "-ns"}, args...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

func u2cNeed(t *testing.T) {
	t.Helper()
	if os.Getenv("HOARD_U2C") == "" {
		t.Skip("HOARD_U2C is not set: skipping the test with copyparty's u2c.py; set it to the path of bin/u2c.py from github.com/9001/copyparty to run it")
	}
}

// u2cSameTree compares every file below src with its copy below dst:
// content, and mtime to the second.
func u2cSameTree(t *testing.T, src, dst string) int {
	t.Helper()
	n := 0
	filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		a, _ := os.ReadFile(p)
		b, err := volReadFile(filepath.Join(dst, rel))
		if err != nil || !bytes.Equal(a, b) {
			t.Errorf("%s: not uploaded intact (%v)", rel, err)
			return nil
		}
		fa, _ := os.Stat(p)
		mb, err := volMtime(filepath.Join(dst, rel))
		if err != nil || fa.ModTime().Unix() != mb.Unix() {
			t.Errorf("%s: mtime %v (%v), want %v", rel, mb, err, fa.ModTime())
		}
		n++
		return nil
	})
	return n
}

// matrixAuth is how a permission-matrix test logs in as u: "anon" sends no
// credentials, "badpw" a wrong password (answered 401 like anon, never
// as anonymous), "nobody" is an account holding no rights, any other u is
// account "u"+u (its name spells its letters) with password "pw-"+u. ok
// says whether u holds every letter of need.
func matrixAuth(u, need string) (auth string, ok bool) {
	switch u {
	case "anon":
		return "X-No: 1", false
	case "badpw": // an account that holds everything, with a wrong password
		return basicAuth("urwmd:not-pw-rwmd"), false
	}
	name := u
	if u != "nobody" {
		name = "u" + u
	}
	ok = u != "nobody"
	for _, c := range need {
		ok = ok && strings.ContainsRune(u, c)
	}
	return basicAuth(name + ":pw-" + u), ok
}

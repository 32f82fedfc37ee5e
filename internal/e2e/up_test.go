package e2e

// hoard up, the bulk uploader, against the built server, through a
// counting (and, when asked, slow or flaky) proxy in the test.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"hoard/up2k"
)

// upProxy forwards to a hoard that may be replaced (a restart), counting
// up2k requests: handshakes, chunk posts, and the chunk bytes the server
// acknowledged (200).
type upProxy struct {
	URL     string
	backend atomic.Pointer[url.URL]
	srv     *http.Server

	handshakes atomic.Int64
	posts      atomic.Int64 // chunk posts forwarded
	postBytes  atomic.Int64 // their bodies
	acked      atomic.Int64 // posts answered 200
	oneShots   atomic.Int64 // one-shot posts (handshake and chunk in one request), also counted in posts
	ackedBytes atomic.Int64
	inflight   atomic.Int64 // requests in the proxy now

	delay  atomic.Int64                          // nanoseconds to hold each chunk post
	drop   atomic.Int64                          // per mille of requests whose connection is cut
	onPost atomic.Pointer[func(r *http.Request)] // called before a chunk post is forwarded
	rnd    *rand.Rand
	mu     sync.Mutex
}

// idle waits until no request is in the proxy.
func (p *upProxy) idle(t *testing.T, limit time.Duration) {
	t.Helper()
	for end := time.Now().Add(limit); p.inflight.Load() != 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("%d requests still in the proxy after %v", p.inflight.Load(), limit)
		}
	}
}

func newUpProxy(t *testing.T, target string) *upProxy {
	t.Helper()
	p := &upProxy{rnd: rand.New(rand.NewPCG(7, 11))}
	p.setBackend(t, target)
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			// A client that goes away does not cancel what the server
			// is answering: every 200 it sends is counted.
			pr.Out = pr.Out.WithContext(context.WithoutCancel(pr.Out.Context()))
			pr.SetURL(p.backend.Load())
			pr.Out.Host = pr.In.Host
		},
		ModifyResponse: func(resp *http.Response) error {
			// A one-shot post's bytes were taken only when it says it
			// published the file (else the file was there already).
			oneShot := resp.Request.Header.Get(up2k.OneShotHeader) != ""
			if resp.Request.Header.Get("X-Up2k-Hash") != "" && resp.StatusCode == 200 && (!oneShot || resp.Header.Get(up2k.DoneHeader) != "") {
				p.acked.Add(1)
				p.ackedBytes.Add(resp.Request.ContentLength)
			}
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			http.Error(w, "proxy: "+err.Error(), http.StatusBadGateway)
		},
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.inflight.Add(1)
		defer p.inflight.Add(-1)
		chunk := r.Header.Get("X-Up2k-Hash") != ""
		if r.Header.Get(up2k.OneShotHeader) != "" {
			p.oneShots.Add(1)
		}
		if chunk {
			p.posts.Add(1)
			p.postBytes.Add(r.ContentLength)
			if f := p.onPost.Load(); f != nil {
				(*f)(r)
			}
			if d := p.delay.Load(); d > 0 {
				time.Sleep(time.Duration(d))
			}
		} else if r.Method == "POST" && strings.Contains(r.Header.Get("Content-Type"), "json") && r.URL.RawQuery == "" {
			p.handshakes.Add(1)
		}
		if d := p.drop.Load(); d > 0 {
			p.mu.Lock()
			roll, after := p.rnd.Int64N(1000), p.rnd.IntN(2) == 0
			p.mu.Unlock()
			if roll < d {
				if after { // the server does the work, the answer is lost
					rec := &discardWriter{h: http.Header{}}
					rp.ServeHTTP(rec, r)
				}
				// The connection is closed under net/http, then the
				// handler aborts. Not Hijack, nor ErrAbortHandler alone:
				// when the body was read to its end on the proxy's
				// transport goroutine, net/http's server can wait
				// forever for its background read to stop, in both
				// (golang/go#46278; seen here about once in 100 runs
				// on a loaded machine: a client waiting on its post for
				// minutes). A closed socket ends that read.
				if c, ok := r.Context().Value(upProxyConn{}).(net.Conn); ok {
					c.Close()
				}
				panic(http.ErrAbortHandler)
			}
		}
		rp.ServeHTTP(w, r)
	})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.URL = "http://" + l.Addr().String()
	p.srv = &http.Server{Handler: h, ConnContext: func(ctx context.Context, c net.Conn) context.Context {
		return context.WithValue(ctx, upProxyConn{}, c)
	}}
	go p.srv.Serve(l)
	t.Cleanup(func() { p.srv.Close() })
	return p
}

func (p *upProxy) setBackend(t *testing.T, target string) {
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p.backend.Store(u)
}

func (p *upProxy) reset() {
	for _, c := range []*atomic.Int64{&p.handshakes, &p.posts, &p.postBytes, &p.acked, &p.ackedBytes, &p.oneShots} {
		c.Store(0)
	}
}

// upProxyConn keys a request's client connection in its context.
type upProxyConn struct{}

type discardWriter struct{ h http.Header }

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (d *discardWriter) WriteHeader(int)             {}

// upCmd is hoard up with args, its output collected.
func upCmd(ctx context.Context, args ...string) (*exec.Cmd, *syncBuf, *syncBuf) {
	cmd := exec.CommandContext(ctx, binPath, append([]string{"up"}, args...)...)
	var o, e syncBuf
	cmd.Stdout, cmd.Stderr = &o, &e
	cmd.Env = append(os.Environ(), "HOARD_PW=")
	// A client still running at the deadline dumps its goroutines (Go's
	// SIGQUIT) into stderr, which the failing test prints: a hang is
	// found where it waits, not guessed at.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGQUIT) }
	cmd.WaitDelay = 5 * time.Second
	return cmd, &o, &e
}

// startUp starts cmd; the channel gets its Wait's result.
func startUp(t *testing.T, cmd *exec.Cmd) <-chan error {
	t.Helper()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ch := make(chan error, 1)
	go func() { ch <- cmd.Wait() }()
	return ch
}

// hoardUp runs hoard up to the end and returns its exit status and output.
func hoardUp(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd, o, e := upCmd(ctx, args...)
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("hoard up %q did not finish in time\nstdout:\n%s\nstderr:\n%s", args, o, e)
	}
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, o.String(), e.String()
	case errors.As(err, &ee):
		return ee.ExitCode(), o.String(), e.String()
	}
	t.Fatalf("hoard up: %v", err)
	return 0, "", ""
}

// upSummary is the last line of --json output.
type upSummary struct {
	Event    string `json:"event"`
	Files    int64  `json:"files"`
	Uploaded int64  `json:"uploaded"`
	Present  int64  `json:"present"`
	Failed   int64  `json:"failed"`
	Found    int64  `json:"found"`
	NotFound int64  `json:"notfound"`
	Sent     int64  `json:"sent"`
	Deleted  int64  `json:"deleted"`
	OK       bool   `json:"ok"`
	Failures []struct {
		Path, Error string
	} `json:"failures"`
}

func lastSummary(t *testing.T, stdout string) upSummary {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	var s upSummary
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &s); err != nil || s.Event != "summary" {
		t.Fatalf("no JSON summary at the end (%v):\n%s", err, stdout)
	}
	for _, l := range lines {
		if !json.Valid([]byte(l)) {
			t.Fatalf("--json line is not JSON: %q", l)
		}
	}
	return s
}

// upTree makes a tree of big and small files (one of each size range,
// names with spaces and non-ASCII, an empty file, a duplicate) and
// returns its total size and file count.
func upTree(t *testing.T, dir string, big int) (int64, int) {
	t.Helper()
	var total int64
	n := 0
	add := func(rel string, b []byte) {
		writeFile(t, dir, rel, b)
		total += int64(len(b))
		n++
	}
	add("big.bin", seededBytes(1, big))
	add("a.txt", []byte("hello\n"))
	add("empty", nil)
	add("sub/b b.txt", seededBytes(2, 5000))
	add("sub/ünï cödé.bin", seededBytes(3, 70000))
	add("sub/deeper/c.bin", seededBytes(4, 3<<20+1))
	add("sub/deeper/same-as-c.bin", seededBytes(4, 3<<20+1))
	for i := range 40 {
		add(fmt.Sprintf("many/f%02d", i), seededBytes(uint64(100+i), 1+i*997))
	}
	past := time.Unix(1500000000, 0)
	os.Chtimes(filepath.Join(dir, "a.txt"), past, past)
	return total, n
}

// sameTree fails unless dst holds exactly the regular files of src
// (content and mtime to the second), nothing more (the state folder and
// work files aside).
func sameTree(t *testing.T, src, dst string) {
	t.Helper()
	want := map[string]bool{}
	filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		rel, _ := filepath.Rel(src, p)
		want[filepath.ToSlash(rel)] = true
		return nil
	})
	if n := u2cSameTree(t, src, dst); n != len(want) {
		t.Errorf("%d files compared, want %d", n, len(want))
	}
	for _, p := range userTree(t, dst) {
		if volIsFile(filepath.Join(dst, p)) && !want[p] {
			t.Errorf("remote has %s, which the local tree has not", p)
		}
	}
}

func TestUpTree(t *testing.T) {
	t.Parallel()
	vol, src := t.TempDir(), t.TempDir()
	tree := filepath.Join(src, "tree")
	total, n := upTree(t, tree, 40<<20+333)
	s := start(t, "-a", "u:pw", "-v", vol+"::rwd,u", "-e2d")
	px := newUpProxy(t, s.URL)

	code, out, errOut := hoardUp(t, "-a", "pw", "--json", px.URL+"/up/", tree)
	if code != 0 {
		t.Fatalf("hoard up: exit %d\n%s\n%s\nserver:\n%s", code, out, errOut, s.logs)
	}
	sameTree(t, tree, filepath.Join(vol, "up", "tree"))
	wantNoPartial(t, vol)
	sum := lastSummary(t, out)
	if sum.Files != int64(n) || sum.Failed != 0 || !sum.OK {
		t.Fatalf("summary %+v, want %d files, none failed", sum, n)
	}
	// Every chunk is acknowledged once (the duplicate file costs one
	// handshake, no chunk), and big consecutive chunks were stitched.
	dup := int64(3<<20 + 1)
	if got := px.ackedBytes.Load(); got != total-dup || px.postBytes.Load() != got {
		t.Errorf("chunk bytes acknowledged %d, posted %d; want both %d (the tree less its duplicate file)", got, px.postBytes.Load(), total-dup)
	}
	if p := px.posts.Load(); p >= int64(n)+40 {
		t.Errorf("%d chunk posts for %d files with a 40-chunk file: consecutive chunks were not stitched", p, n)
	}

	// A re-run finds everything there: a handshake per file, no chunk.
	px.reset()
	code, out, errOut = hoardUp(t, "-a", "pw", "--json", px.URL+"/up/", tree)
	if code != 0 {
		t.Fatalf("re-run: exit %d\n%s\n%s", code, out, errOut)
	}
	sum = lastSummary(t, out)
	if px.posts.Load() != 0 || px.handshakes.Load() != int64(n) || sum.Present != int64(n) || sum.Sent != 0 {
		t.Fatalf("re-run: %d chunk posts, %d handshakes, summary %+v; want 0 posts and %d handshakes, all present", px.posts.Load(), px.handshakes.Load(), sum, n)
	}

	// -s finds every file by its content; --dry-run sends nothing.
	t.Run("search", func(t *testing.T) {
		s3Gate(t) // search on S3 volumes: not built yet
		px.reset()
		code, out, _ := hoardUp(t, "-a", "pw", "-s", "--json", px.URL+"/up/", tree)
		if sum := lastSummary(t, out); code != 0 || sum.Found != int64(n)-1 || sum.NotFound != 1 || px.posts.Load() != 0 {
			// the empty file has no content to find
			t.Fatalf("-s: exit %d, %+v, %d posts\n%s", code, sum, px.posts.Load(), out)
		}
	})
	px.reset()
	writeFile(t, tree, "new.txt", []byte("new"))
	code, out, _ = hoardUp(t, "-a", "pw", "--dry-run", px.URL+"/up/", tree)
	if code != 0 || px.handshakes.Load() != 0 || px.posts.Load() != 0 || pathExists(vol, "up/tree/new.txt") || !strings.Contains(out, "would send: tree/new.txt") {
		t.Fatalf("--dry-run: exit %d, %d handshakes, %d posts\n%s", code, px.handshakes.Load(), px.posts.Load(), out)
	}
}

// TestUpPlainOutput: without --json, the progress and summary are lines
// on stderr, and an unreadable entry (here a dangling link) is reported,
// the rest uploaded, exit 1 with the failure listed.
func TestUpPlainOutput(t *testing.T) {
	vol, src := t.TempDir(), t.TempDir()
	writeFile(t, src, "d/ok.txt", []byte("fine"))
	os.Symlink(filepath.Join(src, "nowhere"), filepath.Join(src, "d", "dangling"))
	s := start(t, "-v", vol+"::rw")
	code, out, errOut := hoardUp(t, "--pi", "1", s.URL+"/", filepath.Join(src, "d")+"/")
	if code != 1 {
		t.Fatalf("exit %d, want 1 (one file failed)\n%s\n%s", code, out, errOut)
	}
	wantFile(t, vol, "ok.txt", []byte("fine"))
	if !strings.Contains(errOut, "failed: dangling:") || !strings.Contains(errOut, "these 1 files failed") || !strings.Contains(errOut, "1 uploaded") {
		t.Fatalf("stderr does not report the dangling link and the summary:\n%s", errOut)
	}
}

func TestUpKilledResumes(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("slow (a slowed upload killed and resumed); skipped with -short")
	}
	vol, src := t.TempDir(), t.TempDir()
	tree := filepath.Join(src, "tree")
	total, _ := upTree(t, tree, 24<<20)
	total -= 3<<20 + 1 // the duplicate is never sent
	s := start(t, "-v", vol+"::rw")
	px := newUpProxy(t, s.URL)
	px.delay.Store(int64(40 * time.Millisecond))

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd, o, e := upCmd(ctx, "-j", "2", "--sz", "1", px.URL+"/", tree)
	exited := startUp(t, cmd)
	for px.acked.Load() < 12 {
		select {
		case err := <-exited:
			t.Fatalf("hoard up ended (%v) before it was killed\n%s\n%s", err, o, e)
		case <-ctx.Done():
			t.Fatalf("the upload never got going\n%s\n%s", o, e)
		case <-time.After(5 * time.Millisecond):
		}
	}
	cmd.Process.Signal(syscall.SIGKILL)
	<-exited
	// A post whose body was in the proxy's socket when the client died
	// is still forwarded and answered: give the proxy time to read what
	// the dead client sent, then wait for it to be idle.
	time.Sleep(100 * time.Millisecond)
	px.idle(t, 10*time.Second)
	first := px.ackedBytes.Load()
	if first >= total {
		t.Fatalf("the first run finished (%d of %d bytes) before it was killed", first, total)
	}

	px.delay.Store(0)
	px.reset()
	code, out, errOut := hoardUp(t, "-j", "2", px.URL+"/", tree)
	if code != 0 {
		t.Fatalf("re-run: exit %d\n%s\n%s\nserver:\n%s", code, out, errOut, s.logs)
	}
	sameTree(t, tree, filepath.Join(vol, "tree"))
	wantNoPartial(t, vol)
	if got := px.postBytes.Load(); first+got != total || px.ackedBytes.Load() != got {
		t.Fatalf("the first run got %d bytes acknowledged, the re-run posted %d (%d acknowledged); want the %d missing of %d", first, got, px.ackedBytes.Load(), total-first, total)
	}
}

func TestUpServerRestart(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("slow (a slowed upload across a server restart); skipped with -short")
	}
	vol, src := t.TempDir(), t.TempDir()
	tree := filepath.Join(src, "tree")
	total, _ := upTree(t, tree, 24<<20)
	total -= 3<<20 + 1
	s, err := launch(t, t.TempDir(), "-v", vol+"::rw")
	if err != nil {
		t.Fatal(err)
	}
	px := newUpProxy(t, s.URL)
	px.delay.Store(int64(30 * time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd, o, e := upCmd(ctx, "-j", "2", "--sz", "1", "--json", "--pi", "1", px.URL+"/", tree)
	exited := startUp(t, cmd)
	for px.acked.Load() < 10 {
		select {
		case err := <-exited:
			t.Fatalf("hoard up ended (%v) before the restart\n%s\n%s", err, o, e)
		case <-ctx.Done():
			t.Fatalf("the upload never got going\n%s\n%s", o, e)
		case <-time.After(5 * time.Millisecond):
		}
	}
	s.kill(t) // no shutdown: the client sees refused connections, then a new server
	time.Sleep(300 * time.Millisecond)
	s2 := startInDir(t, t.TempDir(), "-v", vol+"::rw")
	px.setBackend(t, s2.URL)
	px.delay.Store(0)
	err = <-exited
	if err != nil {
		t.Fatalf("hoard up across a restart: %v\n%s\n%s\nserver:\n%s", err, o, e, s2.logs)
	}
	sameTree(t, tree, filepath.Join(vol, "tree"))
	wantNoPartial(t, vol)
	if sum := lastSummary(t, o.String()); !sum.OK || sum.Failed != 0 {
		t.Fatalf("summary %+v", sum)
	}
	if !strings.Contains(o.String(), `{"event":"progress","files":`) || !strings.Contains(o.String(), `"retries":`) {
		t.Errorf("no progress events (--pi 1) in a run of seconds:\n%s", o)
	}
	// No chunk was acknowledged twice: nothing the old server took was
	// sent again. Fewer is possible: a post the old server completed and
	// published just before the kill, whose answer never reached the
	// client, is found complete by the next handshake (seen once in about
	// twenty runs: one 12,962-byte file); the tree is whole either way.
	if got := px.ackedBytes.Load(); got > total {
		t.Fatalf("%d chunk bytes acknowledged across the restart, more than the %d of the files (a chunk sent again)", got, total)
	} else if got < total {
		t.Logf("%d bytes published at the kill without their answer reaching the client", total-got)
	}
}

func TestUpDeleteRemote(t *testing.T) {
	t.Parallel()
	vol, src := t.TempDir(), t.TempDir()
	tree := filepath.Join(src, "tree")
	upTree(t, tree, 2<<20)
	s := start(t, "-v", vol+"::rwmd")
	if code, out, errOut := hoardUp(t, s.URL+"/up/", tree); code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	// Locally: a file and a folder go, a file changes; remotely a file
	// and a folder appear that were never local; beside the target a
	// remote file that --dr must not touch.
	os.Remove(filepath.Join(tree, "a.txt"))
	os.RemoveAll(filepath.Join(tree, "sub", "deeper"))
	writeFile(t, tree, "many/f01", []byte("changed"))
	resp, body := s.do(t, "PUT", "/up/tree/many/remote-only", []byte("x"))
	wantStatus(t, resp, body, 201)
	resp, body = s.do(t, "PUT", "/up/tree/rdir/r", []byte("y"))
	wantStatus(t, resp, body, 201)
	resp, body = s.do(t, "PUT", "/up/beside", []byte("z"))
	wantStatus(t, resp, body, 201)
	// An excluded local file is still present: its remote copy stays.
	writeFile(t, tree, "keep.tmp", []byte("tmp"))
	resp, body = s.do(t, "PUT", "/up/tree/keep.tmp", []byte("tmp"))
	wantStatus(t, resp, body, 201)
	// A PUT's file has the server's time (the local file's is a moment
	// earlier, sometimes the second before): give the local file that
	// time, as the comparison of the trees wants.
	mt, err := volMtime(filepath.Join(vol, "up", "tree", "keep.tmp"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(filepath.Join(tree, "keep.tmp"), mt, mt); err != nil {
		t.Fatal(err)
	}

	code, out, errOut := hoardUp(t, "--dr", "--exclude", "*.tmp", "--json", s.URL+"/up/", tree)
	if code != 0 {
		t.Fatalf("--dr: exit %d\n%s\n%s\n%s", code, out, errOut, s.logs)
	}
	sameTree(t, tree, filepath.Join(vol, "up", "tree"))
	if sum := lastSummary(t, out); sum.Deleted != 4 {
		t.Errorf("deleted %d, want 4 (a.txt, sub/deeper, many/remote-only, rdir)", sum.Deleted)
	}
	wantFile(t, vol, "up/beside", []byte("z"))
	wantFile(t, vol, "up/tree/many/f01", []byte("changed")) // --dr implies --ow
	for _, gone := range []string{"up/tree/a.txt", "up/tree/sub/deeper", "up/tree/rdir", "up/tree/many/remote-only"} {
		if pathExists(vol, gone) {
			t.Errorf("%s is still there", gone)
		}
	}
}

func TestUpFlakyProxy(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("slow (retries through a flaky proxy); skipped with -short")
	}
	vol, src := t.TempDir(), t.TempDir()
	tree := filepath.Join(src, "tree")
	upTree(t, tree, 12<<20)
	s := start(t, "-v", vol+"::rw")
	px := newUpProxy(t, s.URL)
	px.drop.Store(200) // one request in five loses its connection
	code, out, errOut := hoardUp(t, "-j", "3", "--sz", "2", "--retries", "30", px.URL+"/", tree)
	if code != 0 {
		t.Fatalf("exit %d through a flaky proxy\n%s\n%s\nserver:\n%s", code, out, errOut, s.logs)
	}
	sameTree(t, tree, filepath.Join(vol, "tree"))
	wantNoPartial(t, vol)
}

// TestUpFileChanges: a file rewritten while its chunks are on their way
// is hashed again and uploaded again; the server ends with the new
// content where the client's report says (the old content's unfinished
// upload holds the name until the server drops it, so the new one may
// get a collision name), and no file with the old content is published.
func TestUpFileChanges(t *testing.T) {
	vol, src := t.TempDir(), t.TempDir()
	old := seededBytes(9, 777777)
	p := writeFile(t, src, "d/f.bin", old)
	s := start(t, "-v", vol+"::rwd")
	px := newUpProxy(t, s.URL)
	var once sync.Once
	newer := seededBytes(10, 777777)
	change := func(r *http.Request) {
		once.Do(func() {
			os.WriteFile(p, newer, 0o644)
			later := time.Now().Add(time.Hour)
			os.Chtimes(p, later, later)
		})
	}
	px.onPost.Store(&change)
	code, out, errOut := hoardUp(t, "--json", px.URL+"/", filepath.Join(src, "d"))
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s\n%s", code, out, errOut, s.logs)
	}
	var ev struct{ Status, URL string }
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, `"event":"file"`) {
			json.Unmarshal([]byte(l), &ev)
		}
	}
	if ev.Status != "uploaded" || !strings.HasPrefix(ev.URL, "/d/f.bin") {
		t.Fatalf("file event %+v\n%s", ev, out)
	}
	wantFile(t, vol, strings.TrimPrefix(ev.URL, "/"), newer)
	for _, f := range userTree(t, vol) {
		if b, err := os.ReadFile(filepath.Join(vol, f)); err == nil && bytes.Equal(b, old) && !strings.HasSuffix(f, ".PARTIAL") {
			t.Errorf("%s holds the old content", f)
		}
	}
}

func TestUpBadArgs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{}, "need a URL and at least one PATH"},
		{[]string{"http://127.0.0.1:1/"}, "need a URL and at least one PATH"},
		{[]string{"--nope", "http://127.0.0.1:1/", dir}, "nope"},
		{[]string{"-j", "0", "http://127.0.0.1:1/", dir}, "-j 0"},
		{[]string{"-j", "x", "http://127.0.0.1:1/", dir}, "-j"},
		{[]string{"ftp://127.0.0.1/", dir}, "want http://"},
		{[]string{"http://", dir}, "has no host"},
		{[]string{"127.0.0.1:3923/up", dir}, "want http://"},
		{[]string{dir, "http://127.0.0.1:1/"}, "want http://"},
		{[]string{"http://127.0.0.1:1/a/../b", dir}, ".."},
		{[]string{"http://127.0.0.1:1/", filepath.Join(dir, "missing")}, "no such file"},
		{[]string{"-x", "(", "http://127.0.0.1:1/", dir}, "-x"},
		{[]string{"--exclude", "[", "http://127.0.0.1:1/", dir}, "glob"},
		{[]string{"-s", "--dr", "http://127.0.0.1:1/", dir}, "do not go together"},
	} {
		code, out, errOut := hoardUp(t, c.args...)
		lines := strings.Split(strings.TrimSpace(errOut), "\n")
		if code != 2 || len(lines) != 1 || !strings.Contains(errOut, c.want) || !strings.HasPrefix(errOut, "hoard up: ") || out != "" {
			t.Errorf("hoard up %q: exit %d, stdout %q, stderr %q; want exit 2 and one line about %q", c.args, code, out, errOut, c.want)
		}
	}
	// -h prints the usage and exits 0; a server that is not there is a
	// run-time failure (1), after the retries.
	if code, out, _ := hoardUp(t, "-h"); code != 0 || !strings.Contains(out, "usage: hoard up") {
		t.Errorf("-h: exit %d\n%s", code, out)
	}
	writeFile(t, dir, "f", []byte("x"))
	if code, _, errOut := hoardUp(t, "--retries", "1", "http://127.0.0.1:1/", dir); code != 1 || !strings.Contains(errOut, "failed") {
		t.Errorf("no server: exit %d, want 1\n%s", code, errOut)
	}
	// A wrong password stops the run at once, exit 1.
	s := start(t, "-a", "u:pw", "-v", t.TempDir()+"::rw,u")
	if code, _, errOut := hoardUp(t, "-a", "wrong", s.URL+"/", dir); code != 1 || !strings.Contains(errOut, "wrong password") {
		t.Errorf("wrong password: exit %d, want 1\n%s", code, errOut)
	}
	// So does a failure every file would meet, for a whole tree: the
	// cause said at the end, the files in flight counted as stopped, not
	// each listed as failed ("context canceled").
	many := t.TempDir()
	for i := range 100 {
		writeFile(t, many, fmt.Sprintf("t/f%03d", i), []byte(fmt.Sprint(i)))
	}
	noSearch := start(t, "-v", t.TempDir()+"::rw") // no -e2d
	for _, c := range []struct {
		name      string
		args      []string
		want      string
		maxFailed int // files listed as failed
	}{
		{"wrong password", []string{"-a", "wrong", s.URL + "/", many}, "wrong password", 40},
		{"-s without -e2d", []string{"-s", noSearch.URL + "/", many}, "the server cannot search", 40},
		// Nothing listening: 64 files fail in a row, the rest are not tried.
		{"no server", []string{"--retries", "1", "http://127.0.0.1:1/", many}, "failed on the server's side", 99},
	} {
		t0 := time.Now()
		code, _, errOut := hoardUp(t, c.args...)
		lines := strings.Split(strings.TrimSpace(errOut), "\n")
		last := lines[len(lines)-1]
		if code != 1 || !strings.HasPrefix(last, "hoard up: ") || !strings.Contains(last, c.want) || strings.Contains(errOut, "canceled") || strings.Count(errOut, "failed: ") > c.maxFailed {
			t.Errorf("%s over 100 files: exit %d; want 1, the cause last, no file failed as cancelled\n%s", c.name, code, errOut)
		}
		if d := time.Since(t0); d > 20*time.Second {
			t.Errorf("%s over 100 files took %v: not stopped at once", c.name, d)
		}
	}
	// The password from a file (-a $FILE, as u2c) and from HOARD_PW.
	pwFile := writeFile(t, t.TempDir(), "pw", []byte("pw\n"))
	if code, _, errOut := hoardUp(t, "-a", "$"+pwFile, s.URL+"/", dir); code != 0 {
		t.Errorf("-a $FILE: exit %d\n%s", code, errOut)
	}
	cmd, _, e := upCmd(context.Background(), s.URL+"/env/", dir)
	cmd.Env = append(cmd.Env, "HOARD_PW=pw")
	if err := cmd.Run(); err != nil {
		t.Errorf("HOARD_PW: %v\n%s", err, e)
	}
}

// TestUpCopyparty: the same client against copyparty from source, when
// COPYPARTY_SRC names a checkout.
func TestUpCopyparty(t *testing.T) {
	cp := os.Getenv("COPYPARTY_SRC")
	if cp == "" {
		t.Skip("COPYPARTY_SRC is not set: skipping hoard up against copyparty; set it to a copyparty source tree (python3 -m copyparty runs there)")
	}
	py := os.Getenv("HOARD_PYTHON")
	if py == "" {
		py = "python3"
	}
	vol, src := t.TempDir(), t.TempDir()
	tree := filepath.Join(src, "tree")
	total, n := upTree(t, tree, 40<<20+333)
	port := freePort(t)
	cmd := exec.Command(py, "-m", "copyparty", "-q", "-p", strconv.Itoa(port), "-i", "127.0.0.1", "-v", vol+"::rwd", "-e2d", "--no-robots")
	cmd.Dir = cp
	var logs syncBuf
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	for i := 0; ; i++ {
		if resp, err := http.Get(base + "/"); err == nil {
			resp.Body.Close()
			break
		}
		if i > 300 {
			t.Fatalf("copyparty did not come up:\n%s", logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	px := newUpProxy(t, base)
	// Two connections: the 40 MiB file goes as two posts of 20 chunks
	// stitched in copyparty's compact form.
	code, out, errOut := hoardUp(t, "-j", "2", "--json", px.URL+"/up/", tree)
	if code != 0 {
		t.Fatalf("against copyparty: exit %d\n%s\n%s\ncopyparty:\n%s", code, out, errOut, logs.String())
	}
	sameTree(t, tree, filepath.Join(vol, "up", "tree"))
	if got := px.ackedBytes.Load(); got != total-(3<<20+1) {
		t.Errorf("%d chunk bytes acknowledged, want %d", got, total-(3<<20+1))
	}
	px.reset()
	code, out, _ = hoardUp(t, "--json", px.URL+"/up/", tree)
	if sum := lastSummary(t, out); code != 0 || px.posts.Load() != 0 || sum.Present != int64(n) {
		t.Fatalf("re-run against copyparty: exit %d, %d posts, %+v", code, px.posts.Load(), sum)
	}
	// A name taken by other content: the server renames the upload, and
	// the final handshake asks under that name (under the first one,
	// copyparty would make another copy at yet another name).
	writeFile(t, src, "coll/a.txt", []byte("local"))
	req, _ := http.NewRequest("PUT", base+"/up/coll/a.txt", strings.NewReader("remote, different"))
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode >= 300 {
		t.Fatalf("PUT: %v %v", resp, err)
	}
	if code, out, errOut := hoardUp(t, px.URL+"/up/", filepath.Join(src, "coll")); code != 0 {
		t.Fatalf("collision: exit %d\n%s\n%s", code, out, errOut)
	}
	if got := userTree(t, filepath.Join(vol, "up", "coll")); len(got) != 2 {
		t.Fatalf("after a collision the folder holds %q, want a.txt and one renamed copy", got)
	}
	// --dr with copyparty's listing and delete.
	os.Remove(filepath.Join(tree, "a.txt"))
	code, out, errOut = hoardUp(t, "--dr", px.URL+"/up/", tree)
	if code != 0 || pathExists(vol, "up/tree/a.txt") {
		t.Fatalf("--dr against copyparty: exit %d\n%s\n%s\n%s", code, out, errOut, logs.String())
	}
}

// TestUpTLS: --cacert (or u2c's -te) trusts the server's certificate; -td
// skips the check; without either a self-signed server is refused at
// once (no retries), exit 1.
func TestUpTLS(t *testing.T) {
	t.Parallel()
	vol, src, cdir := t.TempDir(), t.TempDir(), t.TempDir()
	writeFile(t, src, "tree/big.bin", seededBytes(5, 5<<20+77))
	writeFile(t, src, "tree/a.txt", []byte("hello\n"))
	certFile := filepath.Join(cdir, "cert.pem")
	tlsCert(t, certFile, "", 1)
	b := readFile(t, certFile)
	caFile := writeFile(t, cdir, "ca.pem", b[:bytes.Index(b, []byte("-----BEGIN PRIVATE KEY"))])
	s := start(t, "--cert", certFile, "-v", vol+"::rw")
	t0 := time.Now()
	code, _, errOut := hoardUp(t, httpsURL(s)+"/up/", filepath.Join(src, "tree"))
	if code != 1 || !strings.Contains(errOut, "certificate is not trusted") || time.Since(t0) > 10*time.Second || pathExists(vol, "up") {
		t.Fatalf("an untrusted certificate: exit %d after %v\n%s", code, time.Since(t0), errOut)
	}
	for _, flag := range []string{"--cacert", "-te"} {
		if code, out, errOut := hoardUp(t, flag, caFile, httpsURL(s)+"/up/", filepath.Join(src, "tree")); code != 0 {
			t.Fatalf("%s: exit %d\n%s\n%s", flag, code, out, errOut)
		}
	}
	sameTree(t, filepath.Join(src, "tree"), filepath.Join(vol, "up", "tree"))
	writeFile(t, src, "tree2/c.bin", seededBytes(6, 3<<20))
	if code, out, errOut := hoardUp(t, "-td", httpsURL(s)+"/up/", filepath.Join(src, "tree2")); code != 0 {
		t.Fatalf("-td: exit %d\n%s\n%s", code, out, errOut)
	}
	sameTree(t, filepath.Join(src, "tree2"), filepath.Join(vol, "up", "tree2"))
}

// nullUp2k is a do-nothing up2k server (as bench/nullup2k): every chunk
// needed on the first handshake of a name, none after; chunks read and
// thanked. It counts handshakes.
func nullUp2k(t *testing.T) (string, *atomic.Int64) {
	var mu sync.Mutex
	seen := map[string]bool{}
	var n atomic.Int64
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Up2k-Hash") != "" {
			io.Copy(io.Discard, r.Body)
			io.WriteString(w, "thank")
			return
		}
		var h struct {
			Name string   `json:"name"`
			Hash []string `json:"hash"`
		}
		if err := json.NewDecoder(r.Body).Decode(&h); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		n.Add(1)
		key := r.URL.Path + "/" + h.Name
		mu.Lock()
		need := []string{}
		if !seen[key] {
			need = slices.Compact(slices.Clone(h.Hash))
		}
		seen[key] = true
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"name": h.Name, "purl": r.URL.Path, "hash": need, "wark": strings.Repeat("w", 44), "sprs": true})
	})}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return "http://" + l.Addr().String(), &n
}

// TestUpMemoryBounded: the client's peak memory does not grow with the
// number of files (the walk streams, the queues are bounded): ten times
// the files, about the same peak.
func TestUpMemoryBounded(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("slow (33,000 files); skipped with -short")
	}
	if raceEnabled {
		t.Skip("the race detector's shadow memory makes peak RSS meaningless")
	}
	src := t.TempDir()
	mk := func(dir string, n int) {
		for i := range n {
			d := filepath.Join(src, dir, fmt.Sprintf("d%03d", i%100))
			if i < 100 {
				os.MkdirAll(d, 0o755)
			}
			os.WriteFile(filepath.Join(d, fmt.Sprintf("f%06d", i)), []byte(strconv.Itoa(i)), 0o644)
		}
	}
	mk("small", 3000)
	mk("large", 30000)
	base, hs := nullUp2k(t)
	peak := func(dir string) int64 {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		cmd, o, e := upCmd(ctx, "-q", base+"/", filepath.Join(src, dir))
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Not wait4's ru_maxrss: exec records the parent's peak (this
		// test process's, large after the other tests) into it. The
		// client's own VmHWM, polled until it exits, is its peak.
		var hwm atomic.Int64
		stop := make(chan struct{})
		polled := make(chan struct{})
		go func() {
			defer close(polled)
			status := fmt.Sprintf("/proc/%d/status", cmd.Process.Pid)
			for {
				if b, err := os.ReadFile(status); err == nil {
					for l := range strings.Lines(string(b)) {
						if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
							kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
							hwm.Store(max(hwm.Load(), kb))
						}
					}
				}
				select {
				case <-stop:
					return
				case <-time.After(5 * time.Millisecond):
				}
			}
		}()
		err := cmd.Wait()
		close(stop)
		<-polled
		if err != nil {
			t.Fatalf("%s: %v\n%s\n%s", dir, err, o, e)
		}
		if hwm.Load() == 0 {
			t.Skip("no VmHWM in /proc/PID/status")
		}
		return hwm.Load() >> 10 // KiB → MiB
	}
	small := peak("small")
	large := peak("large")
	if hs.Load() != 2*33000 { // each file: a handshake and the final one
		t.Fatalf("%d handshakes, want 66000", hs.Load())
	}
	t.Logf("peak RSS: %d MiB for 3,000 files, %d MiB for 30,000", small, large)
	if large > 100 || large > small+16 {
		t.Fatalf("peak RSS %d MiB for 30,000 files against %d MiB for 3,000: memory grows with the tree", large, small)
	}
}

// TestUpTouchOverwrite: --touch moves the server's mtime of an identical
// file to the local one; a different file of the same name is kept beside
// (a collision name) without --ow and replaced with it.
func TestUpTouchOverwrite(t *testing.T) {
	t.Parallel()
	vol, src := t.TempDir(), t.TempDir()
	p := writeFile(t, src, "d/a.txt", []byte("local"))
	s := start(t, "-v", vol+"::rwd", "-e2d")
	if code, out, errOut := hoardUp(t, s.URL+"/", filepath.Join(src, "d")); code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	later := time.Unix(1700000000, 0)
	os.Chtimes(p, later, later)
	if code, out, errOut := hoardUp(t, "--touch", s.URL+"/", filepath.Join(src, "d")); code != 0 {
		t.Fatalf("--touch: exit %d\n%s\n%s", code, out, errOut)
	}
	if mt, err := volMtime(filepath.Join(vol, "d", "a.txt")); err != nil || mt.Unix() != later.Unix() {
		t.Fatalf("--touch: remote mtime %v, want %v (%v)", mt, later, err)
	}

	// A different file under the name on the server (put there through
	// it, so its index knows).
	writeFile(t, src, "e/a.txt", []byte("local"))
	resp, body := s.do(t, "PUT", "/e/a.txt", []byte("remote, different"))
	wantStatus(t, resp, body, 201)
	if code, out, errOut := hoardUp(t, s.URL+"/", filepath.Join(src, "e")); code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	wantFile(t, vol, "e/a.txt", []byte("remote, different"))
	if n := len(userTree(t, filepath.Join(vol, "e"))); n != 2 {
		t.Fatalf("without --ow: %q, want a.txt and a renamed copy", userTree(t, filepath.Join(vol, "e")))
	}
	// (new content: the same content would be found as the renamed copy)
	writeFile(t, src, "e/a.txt", []byte("local v2"))
	if code, out, errOut := hoardUp(t, "--ow", s.URL+"/", filepath.Join(src, "e")); code != 0 {
		t.Fatalf("--ow: exit %d\n%s\n%s", code, out, errOut)
	}
	wantFile(t, vol, "e/a.txt", []byte("local v2"))
}

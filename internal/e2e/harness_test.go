package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// binPath is the hoard binary built once for the whole package, or
// the one HOARD_BIN names (to benchmark another build of it).
var binPath string

func TestMain(m *testing.M) {
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

// server is one running hoard process.
type server struct {
	URL  string // http://127.0.0.1:PORT, no trailing slash
	cmd  *exec.Cmd
	logs *syncBuf
	done chan error
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

// start runs hoard with args plus -p 0 -i 127.0.0.1 and waits until it
// listens. At cleanup it sends SIGTERM and requires exit status 0.
func start(t *testing.T, args ...string) *server {
	t.Helper()
	s, err := startErr(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.stop(); err != nil {
			t.Errorf("hoard did not stop cleanly: %v\nlog:\n%s", err, s.logs)
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

func startErr(t testing.TB, args ...string) (*server, error) {
	t.Helper()
	trackSources()
	cmd := exec.Command(binPath, append([]string{"-p", "0", "-i", "127.0.0.1"}, args...)...)
	cmd.Dir = t.TempDir()
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

// stop sends SIGTERM and waits for a clean exit.
func (s *server) stop() error {
	if s.cmd.ProcessState != nil {
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
	return p
}

// tree lists every path below dir (slash-separated, sorted), to prove that
// a refused request changed nothing.
func tree(t *testing.T, dir string) []string {
	t.Helper()
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

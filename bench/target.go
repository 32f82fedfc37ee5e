package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"
)

// target is one server under test.
type target struct {
	name string
	url  string // base URL without a trailing slash
	pid  int    // 0: no /proc figures
	cmd  *exec.Cmd
	done chan struct{}
	log  *tailBuf
	hc   *http.Client
}

// client returns the target's HTTP client: keep-alive, no compression, no
// proxy, enough idle connections for every worker.
func (t *target) client() *http.Client {
	if t.hc == nil {
		tr := &http.Transport{
			Proxy:               nil,
			DialContext:         (&net.Dialer{Timeout: 10 * time.Second}).DialContext,
			MaxIdleConns:        8192,
			MaxIdleConnsPerHost: 8192,
			IdleConnTimeout:     60 * time.Second,
			DisableCompression:  true,
			WriteBufferSize:     256 << 10,
			ReadBufferSize:      64 << 10,
			// An https target is a local server with a certificate made
			// for the run (compare.sh TLS=1): encrypted, not verified.
			// HTTP/1.1 only, as the plain targets.
			TLSClientConfig: benchTLS(),
		}
		t.hc = &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	return t.hc
}

// closeIdle drops kept-alive connections between measurements, so every
// measurement starts from the same state.
func (t *target) closeIdle() {
	if t.hc != nil {
		t.hc.CloseIdleConnections()
	}
}

var listenRE = regexp.MustCompile(`listening on (http://\S+)`)

// moduleRoot finds the hoard module above the working directory.
func moduleRoot() (string, error) {
	d, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(d, "go.mod"))
		if err == nil && strings.HasPrefix(string(b), "module hoard\n") {
			return d, nil
		}
		p := filepath.Dir(d)
		if p == d {
			return "", errors.New("not inside the hoard module (no go.mod with \"module hoard\" above the working directory); use -hoard-bin")
		}
		d = p
	}
}

// spawn builds hoard (unless -hoard-bin) and starts it on a free loopback
// port, serving dir read/write/move/delete for everyone, with indexing on and its
// state in tmp.
func (t *target) spawn(ctx context.Context, c *config, tmp, dir string) error {
	bin := c.hoardBin
	if bin == "" {
		root, err := moduleRoot()
		if err != nil {
			return err
		}
		bin = filepath.Join(tmp, "hoard")
		b := exec.CommandContext(ctx, "go", "build", "-o", bin, ".")
		b.Dir = root
		if out, err := b.CombinedOutput(); err != nil {
			return fmt.Errorf("go build: %v\n%s", err, out)
		}
	}
	hist := filepath.Join(tmp, "hist")
	if err := os.MkdirAll(hist, 0o755); err != nil {
		return err
	}
	args := []string{"-p", "0", "-i", "127.0.0.1", "-v", dir + "::rwmd", "-e2dsa", "-hist", hist}
	args = append(args, strings.Fields(c.hoardArgs)...)
	cmd := exec.Command(bin, args...)
	cmd.SysProcAttr = childAttr()
	pr, pw := io.Pipe()
	cmd.Stdout = pw
	cmd.Stderr = pw
	if err := cmd.Start(); err != nil {
		return err
	}
	t.cmd, t.pid, t.done, t.log = cmd, cmd.Process.Pid, make(chan struct{}), &tailBuf{}
	go func() {
		cmd.Wait()
		pw.Close()
		close(t.done)
	}()
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			line := sc.Text()
			t.log.add(line)
			if m := listenRE.FindStringSubmatch(line); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
		io.Copy(io.Discard, pr)
	}()
	select {
	case u := <-found:
		t.url = strings.TrimSuffix(u, "/")
		return nil
	case <-t.done:
		return fmt.Errorf("hoard exited during start:\n%s", t.log.String())
	case <-time.After(60 * time.Second):
		t.stop()
		return fmt.Errorf("hoard did not say it was listening within 60 s:\n%s", t.log.String())
	case <-ctx.Done():
		t.stop()
		return ctx.Err()
	}
}

// stop ends a spawned server: SIGTERM, then SIGKILL after 10 s.
func (t *target) stop() {
	t.closeIdle()
	if t.cmd == nil {
		return
	}
	t.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-t.done:
	case <-time.After(10 * time.Second):
		t.cmd.Process.Kill()
		<-t.done
	}
	t.cmd = nil
}

// alive reports whether a spawned server still runs.
func (t *target) alive() bool {
	if t.cmd == nil {
		return true
	}
	select {
	case <-t.done:
		return false
	default:
		return true
	}
}

// ping checks that the target serves the fixtures: GET of one small file
// must return its bytes.
func (t *target) ping(ctx context.Context, fx *fixtures) error {
	u := t.url + "/" + fx.smallPath(0)
	deadline := time.Now().Add(30 * time.Second)
	for {
		req, _ := http.NewRequestWithContext(ctx, "GET", u, nil)
		resp, err := t.client().Do(req)
		if err == nil {
			n, _ := io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 && n == int64(fx.cfg.smallSize) {
				return nil
			}
			err = fmt.Errorf("GET %s: %s, %d bytes (want 200, %d bytes): does it serve -dir at its root?", u, resp.Status, n, fx.cfg.smallSize)
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("target %s: %w", t.name, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// tailBuf keeps the last lines of a server's output for error messages.
type tailBuf struct {
	mu    sync.Mutex
	lines []string
}

func (b *tailBuf) add(s string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.lines = append(b.lines, s)
	if len(b.lines) > 40 {
		b.lines = b.lines[len(b.lines)-40:]
	}
}

func (b *tailBuf) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Join(b.lines, "\n")
}

// benchTLS is the TLS client configuration for https targets: local
// servers with a certificate made for the run, so it is not verified.
func benchTLS() *tls.Config {
	return &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}} // #nosec: a benchmark of local servers
}

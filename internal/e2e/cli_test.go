package e2e

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestCLIBadArguments(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cases := []struct {
		name  string
		args  []string
		code  int
		names []string // each must appear in stderr
	}{
		{name: "volume without colons", args: []string{"-v", "/x"}, code: 2, names: []string{"/x"}},
		{name: "volume with one colon", args: []string{"-v", "/x:y"}, code: 2, names: []string{"/x:y"}},
		{name: "unknown permission letter", args: []string{"-v", dir + "::rwz"}, code: 2, names: []string{"rwz", "z"}},
		{name: "permission for a user without account", args: []string{"-v", dir + "::r,nouser"}, code: 2, names: []string{"nouser"}},
		{name: "unknown volume flag", args: []string{"-v", dir + "::r:c,bogus"}, code: 2, names: []string{"bogus"}},
		{name: "bad lifetime", args: []string{"-v", dir + "::r:c,lifetime=abc"}, code: 2, names: []string{"lifetime"}},
		{name: "bad sz", args: []string{"-v", dir + "::r:c,sz=5-1"}, code: 2, names: []string{"sz"}},
		{name: "bad fk", args: []string{"-v", dir + "::r:c,fk=x"}, code: 2, names: []string{"fk"}},
		{name: "bad user name in permissions", args: []string{"-v", dir + "::r,bad user"}, code: 2, names: []string{"bad user"}},
		{name: "two volumes at one path", args: []string{"-v", dir + "::r", "-v", dir + "::w"}, code: 2, names: []string{"mounted at /"}},
		{name: "account without colon", args: []string{"-a", "nocolon", "-v", dir + "::r"}, code: 2, names: []string{"USER:PASS"}},
		{name: "account without user", args: []string{"-a", ":pw", "-v", dir + "::r"}, code: 2, names: []string{"bad user name \"\""}},
		{name: "account without password", args: []string{"-a", "ed:", "-v", dir + "::r"}, code: 2, names: []string{"ed"}},
		{name: "two accounts, same password", args: []string{"-a", "ann:same", "-a", "bob:same", "-v", dir + "::r"}, code: 2, names: []string{"ann", "bob", "password"}},
		{name: "one account twice", args: []string{"-a", "ann:x1", "-a", "ann:x2", "-v", dir + "::r"}, code: 2, names: []string{"ann"}},
		{name: "bad port", args: []string{"-p", "notaport", "-v", dir + "::r"}, code: 2, names: []string{"notaport"}},
		{name: "port out of range", args: []string{"-p", "70000", "-v", dir + "::r"}, code: 2, names: []string{"70000"}},
		{name: "max-ranges 0", args: []string{"--max-ranges", "0", "-v", dir + "::r"}, code: 2, names: []string{"max-ranges"}},
		{name: "arch-mt 0", args: []string{"--arch-mt", "0", "-v", dir + "::r"}, code: 2, names: []string{"arch-mt"}},
		{name: "unknown flag", args: []string{"--bogus-flag", "-v", dir + "::r"}, code: 2, names: []string{"bogus-flag"}},
		{name: "stray argument", args: []string{"-v", dir + "::r", "stray"}, code: 2, names: []string{"stray"}},
		{name: "bad log level", args: []string{"--log-level", "loud", "-v", dir + "::r"}, code: 2, names: []string{"loud"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runHoard(t, tc.args...)
			if code != tc.code {
				t.Errorf("exit status = %d, want %d; stderr %q", code, tc.code, stderr)
			}
			for _, n := range tc.names {
				if !strings.Contains(stderr, n) {
					t.Errorf("stderr = %q, want it to name %q", stderr, n)
				}
			}
			if strings.Contains(stdout, "listening on") {
				t.Errorf("stdout = %q: it started listening, want a refusal before that", stdout)
			}
			if strings.Contains(stderr, "goroutine ") || strings.Contains(stderr, "panic") {
				t.Errorf("stderr has a stack trace: %q", stderr)
			}
		})
	}
	t.Run("missing volume folder", func(t *testing.T) {
		missing := filepath.Join(dir, "does-not-exist")
		code, _, stderr := runHoard(t, "-v", missing+"::r")
		if code == 0 {
			t.Errorf("exit status = 0, want an error")
		}
		if !strings.Contains(stderr, "does-not-exist") {
			t.Errorf("stderr = %q, want it to name the folder", stderr)
		}
	})
	t.Run("help", func(t *testing.T) {
		code, stdout, _ := runHoard(t, "-h")
		if code != 0 {
			t.Errorf("-h: exit status = %d, want 0", code)
		}
		for _, f := range []string{"-v", "-a", "-p", "max-ranges"} {
			if !strings.Contains(stdout, f) {
				t.Errorf("-h output lacks %q", f)
			}
		}
	})
}

func TestCLIDefaultVolume(t *testing.T) {
	t.Parallel()
	s := start(t) // no -v: serves its working folder
	cwd := s.cmd.Dir
	writeFile(t, cwd, "there.txt", []byte("THERE"))
	t.Run("warning", func(t *testing.T) {
		l := s.logs.String()
		if !strings.Contains(l, "WARN") || !strings.Contains(l, "no -v") {
			t.Errorf("stderr = %q, want a warning about serving the folder to everyone", l)
		}
	})
	t.Run("anonymous read", func(t *testing.T) {
		resp, body := s.do(t, "GET", "/there.txt", nil)
		wantStatus(t, resp, body, http.StatusOK)
		if string(body) != "THERE" {
			t.Errorf("body = %q, want THERE", body)
		}
		l := getListing(t, s, "/?ls")
		if want := []string{"read", "write"}; strings.Join(l.Perms, ",") != strings.Join(want, ",") {
			t.Errorf("perms = %q, want %q", l.Perms, want)
		}
	})
	t.Run("anonymous write", func(t *testing.T) {
		resp, body := s.do(t, "PUT", "/new/up.txt", []byte("UP"))
		wantStatus(t, resp, body, http.StatusCreated)
		if !fileHolds(cwd, "new/up.txt", "UP") {
			t.Errorf("new/up.txt not stored in the working folder %s", cwd)
		}
	})
	t.Run("no delete", func(t *testing.T) {
		resp, body := s.do(t, "PUT", "/there.txt?replace", []byte("X"))
		wantStatus(t, resp, body, http.StatusUnauthorized)
		if !fileHolds(cwd, "there.txt", "THERE") {
			t.Errorf("there.txt changed")
		}
	})
}

var listeningLineRE = regexp.MustCompile(`^listening on http://127\.0\.0\.1:(\d+)$`)

// startHoardProcess starts hoard directly, returning the process, the listening
// lines (read until want of them arrived) and the rest of stdout.
func startHoardProcess(t *testing.T, want int, args ...string) (*exec.Cmd, []string, *syncBuf, chan error) {
	t.Helper()
	cmd := exec.Command(binPath, args...)
	cmd.Dir = t.TempDir()
	logs := &syncBuf{}
	cmd.Stderr = logs
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			<-done
		}
	})
	var got []string
	deadline := time.After(15 * time.Second)
	for len(got) < want {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("stdout closed after %q; stderr %s", got, logs)
			}
			if strings.HasPrefix(l, "listening on") {
				got = append(got, l)
			}
		case <-deadline:
			t.Fatalf("no %d listening lines in time, got %q; stderr %s", want, got, logs)
		}
	}
	return cmd, got, logs, done
}

func waitExit(t *testing.T, done chan error, within time.Duration, logs *syncBuf) {
	t.Helper()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("exit: %v, want status 0; stderr %s", err, logs)
		}
	case <-time.After(within):
		t.Fatalf("no exit within %v; stderr %s", within, logs)
	}
}

func TestCLIListenLine(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, dir, "a.txt", []byte("A"))
	cases := []struct {
		name  string
		ports string
		lines int
	}{
		{name: "one port", ports: "0", lines: 1},
		{name: "two ports", ports: "0,0", lines: 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cmd, lines, logs, done := startHoardProcess(t, tc.lines, "-p", tc.ports, "-i", "127.0.0.1", "-v", dir+"::r")
			ports := map[string]bool{}
			for _, l := range lines {
				m := listeningLineRE.FindStringSubmatch(l)
				if m == nil {
					t.Fatalf("line %q, want listening on http://127.0.0.1:PORT", l)
				}
				if n, _ := strconv.Atoi(m[1]); n == 0 {
					t.Errorf("port 0 printed, want the chosen port")
				}
				ports[m[1]] = true
				resp, err := http.Get("http://127.0.0.1:" + m[1] + "/a.txt")
				if err != nil {
					t.Fatalf("GET on the printed port: %v", err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 || string(b) != "A" {
					t.Errorf("GET on port %s: %d %q, want 200 A", m[1], resp.StatusCode, b)
				}
			}
			if len(ports) != tc.lines {
				t.Errorf("ports %v, want %d distinct", ports, tc.lines)
			}
			cmd.Process.Signal(syscall.SIGTERM)
			waitExit(t, done, 10*time.Second, logs)
		})
	}
}

func TestCLISignals(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "a.txt", []byte("A"))
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String()+" idle", func(t *testing.T) {
			cmd, lines, logs, done := startHoardProcess(t, 1, "-p", "0", "-i", "127.0.0.1", "-v", dir+"::r")
			addr := strings.TrimPrefix(listeningLineRE.FindStringSubmatch(lines[0])[0], "listening on http://")
			// An idle keep-alive connection must not hold the exit up.
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			fmt.Fprintf(c, "GET /a.txt HTTP/1.1\r\nHost: x\r\n\r\n")
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatal(err)
			}
			io.ReadAll(resp.Body)
			start := time.Now()
			cmd.Process.Signal(sig)
			waitExit(t, done, 5*time.Second, logs)
			if d := time.Since(start); d > 3*time.Second {
				t.Errorf("exit took %v with an idle connection, want promptly", d)
			}
		})
	}

	t.Run("in-flight download finishes", func(t *testing.T) {
		big := filepath.Join(t.TempDir(), "big.bin")
		const size = 64 << 20
		f, err := os.Create(big)
		if err != nil {
			t.Fatal(err)
		}
		f.Truncate(size)
		f.Close()
		cmd, lines, logs, done := startHoardProcess(t, 1, "-p", "0", "-i", "127.0.0.1", "-v", filepath.Dir(big)+"::r")
		addr := strings.TrimPrefix(listeningLineRE.FindStringSubmatch(lines[0])[0], "listening on http://")
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.(*net.TCPConn).SetReadBuffer(64 << 10)
		c.SetDeadline(time.Now().Add(30 * time.Second))
		fmt.Fprintf(c, "GET /big.bin HTTP/1.1\r\nHost: x\r\n\r\n")
		br := bufio.NewReaderSize(c, 4096)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		if resp.ContentLength != size {
			t.Fatalf("Content-Length = %d, want %d", resp.ContentLength, size)
		}
		first := make([]byte, 1000)
		if _, err := io.ReadFull(resp.Body, first); err != nil {
			t.Fatal(err)
		}
		// The download is stalled mid-way; now ask the server to stop.
		cmd.Process.Signal(syscall.SIGTERM)
		time.Sleep(300 * time.Millisecond)
		select {
		case err := <-done:
			t.Fatalf("server exited (%v) while a download was in flight, want it to finish the download first", err)
		default:
		}
		// New connections are refused while it drains.
		if nc, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			nc.SetDeadline(time.Now().Add(2 * time.Second))
			fmt.Fprintf(nc, "GET /big.bin HTTP/1.1\r\nHost: x\r\n\r\n")
			if r, err := http.ReadResponse(bufio.NewReader(nc), nil); err == nil {
				t.Errorf("a new request after SIGTERM got %d, want the listener closed", r.StatusCode)
				r.Body.Close()
			}
			nc.Close()
		}
		n, err := io.Copy(io.Discard, resp.Body)
		if err != nil || int64(len(first))+n != size {
			t.Errorf("download after SIGTERM: %d bytes, %v; want all %d bytes", int64(len(first))+n, err, size)
		}
		waitExit(t, done, 10*time.Second, logs)
	})
}

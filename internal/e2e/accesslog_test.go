package e2e

import (
	"bufio"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestAccessLogStuckStderr: hoard's standard error is a pipe nobody
// reads. Requests go on being answered (before, each one's access line
// waited for the pipe, so once its 64 KiB were full every request hung);
// the lines that did not fit are counted, and the count is logged once
// someone reads again; SIGTERM then ends hoard with the last lines out.
func TestAccessLogStuckStderr(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "f.txt", []byte("hello"))
	errR, errW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer errR.Close()
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer outR.Close()
	cmd := exec.Command(binPath, "-p", "0", "-i", "127.0.0.1", "-v", dir+"::r")
	cmd.Stdout, cmd.Stderr = outW, errW
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	outW.Close()
	errW.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			<-done
		}
	}()
	br := bufio.NewReader(outR)
	line, err := br.ReadString('\n')
	go io.Copy(io.Discard, br) // stdout is read; stderr is not, yet
	m := regexp.MustCompile(`listening on (http://\S+)`).FindStringSubmatch(line)
	if err != nil || m == nil {
		t.Fatalf("no listening line: %q %v", line, err)
	}
	base := strings.TrimSuffix(m[1], "/")

	// Lines of ~3 KiB: 1,500 requests are 4.5 MiB of log, far beyond the
	// pipe (64 KiB) and hoard's buffers (2 MiB).
	long := strings.Repeat("a", 3000)
	cl := &http.Client{Timeout: 10 * time.Second}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failed []string
	start := time.Now()
	for g := range 4 {
		wg.Go(func() {
			for i := range 375 {
				resp, err := cl.Get(base + "/f.txt?k=" + long + strconv.Itoa(g*1000+i))
				if err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				if err != nil || resp.StatusCode != 200 {
					mu.Lock()
					failed = append(failed, strconv.Itoa(i)+": "+errString(err, resp))
					mu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	if len(failed) > 0 {
		t.Fatalf("with stderr stuck, %d clients failed after %v, the first: %.200s", len(failed), time.Since(start), failed[0])
	}
	// Someone reads again: the dropped lines are counted in the log.
	logs := &syncBuf{}
	drained := make(chan struct{})
	go func() { io.Copy(logs, errR); close(drained) }()
	re := regexp.MustCompile(`msg="log lines dropped[^"]*" dropped=(\d+)`)
	for deadline := time.Now().Add(10 * time.Second); re.FindStringSubmatch(logs.String()) == nil; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no count of dropped lines:\n%.2000s", tail(logs.String(), 2000))
		}
	}
	dropped := 0
	for _, m := range re.FindAllStringSubmatch(logs.String(), -1) {
		n, _ := strconv.Atoi(m[1])
		dropped += n
	}
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("exit: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no exit after SIGTERM")
	}
	<-drained
	got := strings.Count(logs.String(), "msg=access")
	if got+dropped != 1500 {
		t.Fatalf("%d access lines + %d dropped != 1500 requests", got, dropped)
	}
	if !strings.Contains(logs.String(), `msg="shutting down"`) {
		t.Fatalf("the last lines did not come out at exit:\n%s", tail(logs.String(), 2000))
	}
}

func errString(err error, resp *http.Response) string {
	if err != nil {
		return strings.ReplaceAll(err.Error(), strings.Repeat("a", 3000), "a…")
	}
	return resp.Status
}

// TestAccessLogOrderAndShutdownFlush: the access lines of requests made
// one after another come out in their order, and those of the last
// requests before SIGTERM are all there when hoard has exited.
func TestAccessLogOrderAndShutdownFlush(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "f.txt", []byte("hello"))
	s := start(t, "-v", dir+"::r")
	const n = 200
	for i := range n {
		resp, body := s.do(t, "GET", "/f.txt?n="+strconv.Itoa(i), nil)
		wantStatus(t, resp, body, 200)
	}
	// No waiting: the lines may still be in hoard's buffer.
	if err := s.stop(); err != nil {
		t.Fatal(err)
	}
	var seen []int
	for _, l := range strings.Split(s.logs.String(), "\n") {
		if m := regexp.MustCompile(`msg=access .*path="/f.txt\?n=(\d+)"`).FindStringSubmatch(l); m != nil {
			i, _ := strconv.Atoi(m[1])
			seen = append(seen, i)
		}
	}
	if len(seen) != n {
		t.Fatalf("%d access lines after exit, want %d:\n%s", len(seen), n, tail(s.logs.String(), 2000))
	}
	for i, v := range seen {
		if v != i {
			t.Fatalf("access line %d is request %d: order lost", i, v)
		}
	}
}

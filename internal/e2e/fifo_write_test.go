package e2e

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// quickDo sends a request that must be answered within a few seconds (a
// hanging open would keep it waiting forever).
func quickDo(t *testing.T, s *server, method, path string, body []byte, hdr ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, s.URL+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hdr {
		k, v, _ := strings.Cut(h, ":")
		req.Header.Set(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: no answer (%v); the server hangs on a fifo", method, path, err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	b.ReadFrom(resp.Body)
	return resp.StatusCode, b.String()
}

// A fifo (or socket) in a volume never blocks a request: appending to one
// (with or without a reader at its other end) is refused at once with
// 400, nothing is written into it, and the server still stops cleanly
// (no thread pinned in an open). An indexing scan passes it by.
func TestAppendToFifoDoesNotHang(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "pipe.txt")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	writeFile(t, dir, "plain.txt", []byte("hello\n"))
	s := start(t, "-v", dir+"::A", "-e2dsa")
	code, body := quickDo(t, s, "PUT", "/pipe.txt?apnd", []byte("data"))
	if code != 400 || !strings.Contains(body, "pipe") {
		t.Fatalf("append to a fifo without reader: %d %q, want 400 naming a pipe", code, body)
	}
	// With a reader waiting at the other end, still refused; the reader
	// gets nothing.
	rd, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	code, body = quickDo(t, s, "PUT", "/pipe.txt?apnd", []byte("data"))
	if code != 400 {
		t.Fatalf("append to a fifo with a reader: %d %q, want 400", code, body)
	}
	if n, _ := rd.Read(make([]byte, 16)); n > 0 {
		t.Fatalf("%d bytes were written into the fifo", n)
	}
	rd.Close()
	// Reading it, and a plain append next to it, work as ever.
	if code, _ := quickDo(t, s, "GET", "/pipe.txt", nil); code != 404 {
		t.Fatalf("GET fifo: %d", code)
	}
	if code, body := quickDo(t, s, "PUT", "/plain.txt?apnd", []byte("more\n")); code != 201 {
		t.Fatalf("append to a file: %d %s", code, body)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "plain.txt")); string(b) != "hello\nmore\n" {
		t.Fatalf("plain.txt = %q", b)
	}
	// The scan indexed the file and stepped over the fifo.
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, body := quickDo(t, s, "POST", "/?srch", []byte(`{"q":"plain"}`), "Content-Type: application/json")
		if code == 200 && strings.Contains(body, "plain.txt") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("search after the scan: %d %s", code, body)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Fatalf("the fifo was replaced: %v %v", fi, err)
	}
	// Shutdown is not held up by a request stuck in an open.
	t0 := time.Now()
	if err := s.stop(); err != nil {
		t.Fatalf("stop: %v\n%s", err, s.logs)
	}
	if d := time.Since(t0); d > 10*time.Second {
		t.Fatalf("stopping took %v", d)
	}
}

// An up2k work file is hoard's own: when something else has taken its
// name (a link to another file of the volume, a fifo), a chunk post
// writes nothing through it, least of all into the link's target, and the
// session is dropped (the client's next handshake starts over).
func TestUp2kWorkFileReplacedByLinkOrFifo(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"symlink", "fifo"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			victim := writeFile(t, dir, "victim.bin", bytes.Repeat([]byte{'v'}, 3<<20))
			s := start(t, "-v", dir+"::rw", "--hist", t.TempDir())
			f := newUp2kFile(randomBytes(3 << 20))
			rep := up2kHandshake(t, s, "/", "up.bin", f, 1600000000, nil)
			work := filepath.Join(dir, "up.bin.PARTIAL")
			if err := os.Remove(work); err != nil {
				t.Fatal(err)
			}
			if kind == "symlink" {
				if err := os.Symlink("victim.bin", work); err != nil {
					t.Fatal(err)
				}
			} else if err := syscall.Mkfifo(work, 0o644); err != nil {
				t.Skipf("mkfifo: %v", err)
			}
			code, b := postChunksNoFail(s, rep.Purl, rep.Wark, f.hashes[0], f.chunk(0))
			if code != 400 {
				t.Fatalf("chunk into a %s work file: %d %s, want 400", kind, code, b)
			}
			got, _ := os.ReadFile(victim)
			if !bytes.Equal(got, bytes.Repeat([]byte{'v'}, 3<<20)) {
				t.Fatal("the chunk was written through the link into victim.bin")
			}
			// Dropped: the wark is unknown now.
			code, b = postChunksNoFail(s, rep.Purl, rep.Wark, f.hashes[1], f.chunk(1))
			if code != 400 || !strings.Contains(string(b), "unknown wark") {
				t.Fatalf("second chunk: %d %s, want 400 unknown wark", code, b)
			}
		})
	}
}

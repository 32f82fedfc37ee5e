package e2e

// What a SIGKILL leaves behind: an append cut off half-way is cut back at
// the next start, PUT work files are swept at start (and nothing else),
// and an acknowledged upload is in a plain -e2d index after the restart.
// The long randomized run is crash_loop_test.go.

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// slowPut starts a PUT whose body is fed through the returned pipe; the
// response, if any, is thrown away.
func slowPut(s *server, path string, size int64) *io.PipeWriter {
	pr, pw := io.Pipe()
	req, _ := http.NewRequest("PUT", s.URL+path, pr)
	req.ContentLength = size
	go func() {
		if resp, err := (&http.Client{}).Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	return pw
}

// waitFor polls cond for up to 20 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

func TestCrashAppendCutBack(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	args := []string{"-v", dir + "::rwd"}
	s := start(t, args...)
	old := []byte("line one\n")
	writeFile(t, dir, "log.txt", old)
	// An append cut off by a kill half-way through its body.
	pw := slowPut(s, "/log.txt?apnd", 8<<20)
	go pw.Write(bytes.Repeat([]byte("x"), 4<<20))
	waitFor(t, "the append to start writing", func() bool {
		fi, err := os.Stat(filepath.Join(dir, "log.txt"))
		return err == nil && fi.Size() > int64(len(old))
	})
	s.kill(t)
	pw.Close()
	s = start(t, args...)
	if b, _ := os.ReadFile(filepath.Join(dir, "log.txt")); !bytes.Equal(b, old) {
		t.Fatalf("after the kill and a restart the file holds %d bytes, want the %d from before the unacknowledged append", len(b), len(old))
	}
	// An acknowledged append survives a kill, and the next one is cut
	// back to it.
	resp, body := s.do(t, "PUT", "/log.txt?apnd", []byte("line two\n"))
	wantStatus(t, resp, body, 201)
	want := append(slices.Clone(old), "line two\n"...)
	pw = slowPut(s, "/log.txt?apnd", 8<<20)
	go pw.Write(bytes.Repeat([]byte("y"), 4<<20))
	waitFor(t, "the second append to start writing", func() bool {
		fi, err := os.Stat(filepath.Join(dir, "log.txt"))
		return err == nil && fi.Size() > int64(len(want))
	})
	s.kill(t)
	pw.Close()
	start(t, args...)
	if b, _ := os.ReadFile(filepath.Join(dir, "log.txt")); !bytes.Equal(b, want) {
		t.Fatalf("after the second kill the file holds %d bytes, want the %d acknowledged", len(b), len(want))
	}
}

// Two appends to one file at once take turns: neither interleaves its
// bytes with the other's.
func TestAppendsTakeTurns(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := start(t, "-v", dir+"::rwd")
	writeFile(t, dir, "log.txt", nil)
	const n, size = 6, 3 << 20
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			req, _ := http.NewRequest("PUT", s.URL+"/log.txt?apnd", io.MultiReader(
				// a slow start, so the appends overlap
				&slowReader{r: bytes.NewReader(bytes.Repeat([]byte{'a' + byte(i)}, 64<<10))},
				bytes.NewReader(bytes.Repeat([]byte{'a' + byte(i)}, size-64<<10))))
			req.ContentLength = size
			resp, err := (&http.Client{}).Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			if resp.StatusCode != 201 {
				t.Errorf("append %d: %d", i, resp.StatusCode)
			}
		})
	}
	wg.Wait()
	b, _ := os.ReadFile(filepath.Join(dir, "log.txt"))
	if len(b) != n*size {
		t.Fatalf("%d bytes, want %d", len(b), n*size)
	}
	for off := 0; off < len(b); off += size {
		if c := b[off]; bytes.Count(b[off:off+size], []byte{c}) != size {
			t.Fatalf("the append at %d is interleaved with another", off)
		}
	}
}

// slowReader hands out its bytes 4 KiB at a time, a millisecond apart.
type slowReader struct{ r io.Reader }

func (s *slowReader) Read(p []byte) (int, error) {
	time.Sleep(time.Millisecond)
	return s.r.Read(p[:min(len(p), 4<<10)])
}

func TestCrashSweepsWorkFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	args := []string{"-v", dir + "::rwd"}
	// Files that only look like work files are the users'.
	for _, n := range []string{"keep.PARTIAL", "d/.hoard-mine.PARTIAL", "d/notes.txt.PARTIAL"} {
		writeFile(t, dir, n, []byte("user data"))
	}
	s := start(t, args...)
	// An up2k upload in progress keeps its work file.
	f := newUp2kFile(randomBytes(3 << 20))
	rep := up2kHandshake(t, s, "/d/", "up.bin", f, 1600000000, nil)
	postChunk(t, s, rep, f, 1)
	// A PUT in flight writes into an unnamed file (O_TMPFILE), which a
	// kill takes away with the process; one that had a name (a file
	// system without unnamed files, or an older hoard) is left behind.
	pw := slowPut(s, "/d/put.bin", 8<<20)
	go pw.Write(bytes.Repeat([]byte("z"), 1<<20))
	works := func() []string {
		m, _ := filepath.Glob(filepath.Join(dir, "d", ".hoard-*.PARTIAL"))
		return slices.DeleteFunc(m, func(p string) bool { return strings.HasSuffix(p, "-mine.PARTIAL") })
	}
	unnamed := func() bool {
		fds, _ := filepath.Glob(fmt.Sprintf("/proc/%d/fd/*", s.cmd.Process.Pid))
		for _, fd := range fds {
			if l, err := os.Readlink(fd); err == nil && strings.HasPrefix(l, filepath.Join(dir, "d")+"/#") && strings.HasSuffix(l, " (deleted)") {
				return true
			}
		}
		return false
	}
	waitFor(t, "the PUT's work file", func() bool { return len(works()) == 1 || unnamed() })
	s.kill(t)
	pw.Close()
	writeFile(t, dir, "d/.hoard-AAAAAAAAAAAA.PARTIAL", []byte("left by a crash"))
	s = start(t, args...)
	waitFor(t, "the sweep of the PUT's work file", func() bool { return len(works()) == 0 })
	for _, n := range []string{"keep.PARTIAL", "d/.hoard-mine.PARTIAL", "d/notes.txt.PARTIAL", "d/up.bin.PARTIAL"} {
		if _, err := os.Stat(filepath.Join(dir, n)); err != nil {
			t.Errorf("%s is gone after the sweep: %v", n, err)
		}
	}
	again := up2kHandshake(t, s, "/d/", "up.bin", f, 1600000000, nil)
	if len(again.Hash) != len(f.hashes)-1 || slices.Contains(again.Hash, f.hashes[1]) {
		t.Fatalf("the upload needs %v after the restart", again.Hash)
	}
}

// With plain -e2d (no scan at start), uploads acknowledged just before a
// SIGKILL are found by search after the restart.
func TestCrashSearchComplete(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	args := []string{"-v", dir + "::rwd", "-e2d"}
	s := start(t, args...)
	// PUTs are hashed by the indexer after the reply, so a burst of big
	// ones leaves changes queued at the kill.
	const n = 12
	var want []string
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	for i := range n {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			name := fmt.Sprintf("/p/killme%02d.bin", i)
			resp, b := s.do(t, "PUT", name, randomBytes(8<<20))
			wantStatus(t, resp, b, 201)
			mu.Lock()
			want = append(want, name)
			mu.Unlock()
		})
	}
	wg.Go(func() {
		f := newUp2kFile(randomBytes(5 << 20))
		up2kUpload(t, s, "/u/", "killme-up.bin", f, 1600000000, 2)
		resp, b := s.do(t, "PUT", "/killme-log.txt?apnd", []byte("appended\n"))
		wantStatus(t, resp, b, 201)
		mu.Lock()
		want = append(want, "/u/killme-up.bin", "/killme-log.txt")
		mu.Unlock()
	})
	wg.Wait()
	s.kill(t)
	s = start(t, args...)
	waitReady(t, s)
	code, r := postSearch(t, s, map[string]any{"q": "killme", "n": 100})
	slices.Sort(want)
	if code != 200 || !slices.Equal(r.hrefs(), want) {
		t.Fatalf("after a kill and a restart the search finds %d %q, want all %d acknowledged uploads %q", code, r.hrefs(), len(want), want)
	}
}

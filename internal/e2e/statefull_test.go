package e2e

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// mountTmpfs mounts a tmpfs of size (e.g. "2m") on a new folder, or skips
// the test where mounting is not permitted.
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs to fill (%v: %s); skipping", err, strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() { exec.Command("umount", "-l", mnt).Run() })
	return mnt
}

// fill writes a file into dir until its file system is full.
func fill(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "filler")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 64<<10)
	for {
		if _, err := f.Write(b); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			break
		}
	}
	// Whatever is left (a partial page) goes too.
	for {
		if _, err := f.Write(b[:512]); err != nil {
			break
		}
	}
	return p
}

// A full disk under the state folder (--hist) does not keep hoard from
// starting, after a clean stop that left the index's write-ahead log to
// replay, and on a first start: downloads are served, uploads that need
// the index get 507 naming the state folder's free space, the condition
// is logged once per interval (not thousands of times a second), and
// once space is freed uploads work again, an unfinished upload resumes
// and new files are searchable.
func TestStateFolderFull(t *testing.T) {
	t.Parallel()
	t.Run("after a clean stop", func(t *testing.T) {
		hist := mountTmpfs(t, "2m")
		vol := t.TempDir()
		writeFile(t, vol, "a.txt", []byte("hello\n"))
		args := []string{"-v", vol + "::rw", "-e2dsa", "--hist", hist}
		s := start(t, args...)
		f := newUp2kFile(randomBytes(2 << 20))
		rep := up2kHandshake(t, s, "/", "big.bin", f, 1600000000, nil)
		postChunk(t, s, rep, f, 0)
		resp, body := s.do(t, "PUT", "/first.txt", []byte("first\n"))
		wantStatus(t, resp, body, 201)
		if err := s.stop(); err != nil {
			t.Fatal(err)
		}
		filler := fill(t, hist)
		stateFullChecks(t, args, filler, func(s *server) {
			// The unfinished upload resumes where it was.
			again := up2kHandshake(t, s, "/", "big.bin", f, 1600000000, nil)
			if len(again.Hash) != len(f.hashes)-1 {
				t.Fatalf("after the state folder had room again the upload needs %d chunks, want %d", len(again.Hash), len(f.hashes)-1)
			}
			for _, h := range again.Hash {
				postChunk(t, s, again, f, f.index(h))
			}
			wantUploaded(t, filepath.Join(vol, "big.bin"), f.data, 1600000000)
		})
	})
	t.Run("while running", func(t *testing.T) {
		hist := mountTmpfs(t, "2m")
		vol := t.TempDir()
		writeFile(t, vol, "a.txt", []byte("hello\n"))
		args := []string{"-a", "alice:apw", "-v", vol + "::rw:A,alice", "-e2dsa", "--hist", hist}
		s := start(t, args...)
		resp, body := s.do(t, "PUT", "/first.txt", []byte("first\n"))
		wantStatus(t, resp, body, 201)
		filler := fill(t, hist)
		// Shares are kept in the state folder too.
		b, _ := json.Marshal(map[string]any{"k": "full", "vp": []string{"/a.txt"}, "exp": "60", "perms": []string{"read"}})
		resp, body = s.do(t, "POST", "/?share", b, "PW: apw", "Content-Type: text/plain")
		wantStatus(t, resp, body, 507)
		if !strings.Contains(string(body), "state folder") || strings.Contains(string(body), hist) {
			t.Fatalf("share with the state folder full: %s", body)
		}
		resp, body = s.do(t, "GET", "/a.txt", nil)
		wantStatus(t, resp, body, 200)
		resp, body = s.do(t, "PUT", "/b.txt", []byte("bee\n"))
		wantStatus(t, resp, body, 507)
		resp, body = postHandshake(t, s, "/", map[string]any{"name": "new.bin", "size": 1 << 20, "hash": newUp2kFile(randomBytes(1 << 20)).hashes})
		wantStatus(t, resp, body, 507)
		os.Remove(filler)
		resp, body = s.do(t, "PUT", "/b.txt", []byte("bee\n"))
		wantStatus(t, resp, body, 201)
	})
	t.Run("first start", func(t *testing.T) {
		hist := mountTmpfs(t, "1m")
		vol := t.TempDir()
		writeFile(t, vol, "a.txt", []byte("hello\n"))
		filler := fill(t, hist)
		stateFullChecks(t, []string{"-v", vol + "::rw", "-e2dsa", "--hist", hist}, filler, nil)
	})
}

func stateFullChecks(t *testing.T, args []string, filler string, after func(*server)) {
	t.Helper()
	s, err := startErr(t, args...)
	if err != nil {
		t.Fatalf("hoard did not start with its state folder full: %v", err)
	}
	t.Cleanup(func() {
		if err := s.stop(); err != nil {
			t.Errorf("stop: %v\n%s", err, s.logs)
		}
	})
	resp, body := s.do(t, "GET", "/a.txt", nil)
	wantStatus(t, resp, body, 200)
	if string(body) != "hello\n" {
		t.Fatalf("GET a.txt = %q", body)
	}
	resp, body = s.do(t, "PUT", "/b.txt", []byte("bee\n"))
	wantStatus(t, resp, body, 507)
	if !strings.Contains(string(body), "state folder") || !strings.Contains(string(body), "free") || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("PUT with the state folder full: %s (Retry-After %q)", body, resp.Header.Get("Retry-After"))
	}
	g := newUp2kFile(randomBytes(1 << 20))
	resp, body = postHandshake(t, s, "/", map[string]any{"name": "new.bin", "size": len(g.data), "hash": g.hashes})
	wantStatus(t, resp, body, 507)
	if !strings.Contains(string(body), "state folder") {
		t.Fatalf("handshake with the state folder full: %s", body)
	}
	// Nothing of the refused uploads was left behind.
	if _, err := os.Stat(filepath.Join(strings.Split(args[1], "::")[0], "b.txt")); err == nil {
		t.Fatal("the refused PUT left b.txt")
	}
	time.Sleep(2 * time.Second) // let a retry loop show itself in the log
	logs := s.logs.String()
	if n := strings.Count(logs, "background error"); n > 3 {
		t.Fatalf("the index's background error was logged %d times:\n%.3000s", n, logs)
	}
	if n := strings.Count(logs, "state folder is full"); n > 4 {
		t.Fatalf("the full state folder was logged %d times in 2 s", n)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp, body = s.do(t, "PUT", "/b.txt", []byte("bee\n"))
		if resp.StatusCode == 201 {
			break
		}
		if time.Now().After(deadline) || resp.StatusCode != 507 && resp.StatusCode != 503 {
			t.Fatalf("PUT after space was freed: %d %s\n%s", resp.StatusCode, body, s.logs)
		}
		time.Sleep(200 * time.Millisecond)
	}
	for {
		resp, body = s.do(t, "POST", "/?srch", []byte(`{"q":"b.txt"}`), "Content-Type: application/json")
		var r struct{ Hits []struct{ Rp string } }
		json.Unmarshal(body, &r)
		if resp.StatusCode == 200 && len(r.Hits) == 1 && r.Hits[0].Rp == "b.txt" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("search after space was freed: %d %s", resp.StatusCode, body)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if after != nil {
		after(s)
	}
}

package e2e

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Crash safety of WebDAV's MOVE and DELETE: SIGKILL in the middle, then a
// restart. A cross-volume move leaves the source whole or the destination
// whole, never neither (and never a half file under either name); a tree
// delete leaves every remaining file whole; search agrees with the disk.

// otherFS returns a folder on another file system than t.TempDir's, or
// skips.
func otherFS(t *testing.T) string {
	t.Helper()
	base := t.TempDir()
	for _, root := range []string{"/dev/shm", os.Getenv("HOARD_OTHER_FS")} {
		if root == "" {
			continue
		}
		d, err := os.MkdirTemp(root, "hoard-dav-crash-")
		if err != nil {
			continue
		}
		var a, b syscall.Stat_t
		if syscall.Stat(base, &a) == nil && syscall.Stat(d, &b) == nil && a.Dev != b.Dev {
			t.Cleanup(func() { os.RemoveAll(d) })
			return d
		}
		os.RemoveAll(d)
	}
	t.Skip("no second file system (/dev/shm or $HOARD_OTHER_FS) for a cross-volume move")
	return ""
}

func TestDAVCrashCrossVolumeMove(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("slow: SIGKILL rounds with a large file")
	}
	a, b := t.TempDir(), otherFS(t)
	data := seededBytes(42, 192<<20+12345)
	auth := basicAuth("u:pw")
	args := []string{"-a", "u:pw", "-v", a + ":a:rwmd,u", "-v", b + ":b:rwmd,u", "-e2dsa"}
	// Put the file on a (through hoard, so it is indexed).
	s := start(t, args...)
	waitReady(t, s, auth)
	resp, body := s.do(t, "PUT", "/a/big.txt", data, auth, davUA)
	wantStatus(t, resp, body, http.StatusCreated)
	delays := []time.Duration{0, 20 * time.Millisecond, 60 * time.Millisecond, 120 * time.Millisecond, 250 * time.Millisecond, 400 * time.Millisecond, 700 * time.Millisecond, time.Second, 5 * time.Second}
	for round, d := range delays {
		// Move it to the other volume, or back.
		from, to, fromDir, toDir := "/a/big.txt", "/b/big.txt", a, b
		if pathExists(b, "big.txt") {
			from, to, fromDir, toDir = to, from, b, a
		}
		done := make(chan int, 1)
		go func() {
			req, _ := http.NewRequest("MOVE", s.URL+from, nil)
			req.Header.Set("Destination", to)
			req.Header.Set("Authorization", strings.TrimPrefix(auth, "Authorization: "))
			r, err := slowClient.Do(req)
			if err != nil {
				done <- 0
				return
			}
			r.Body.Close()
			done <- r.StatusCode
		}()
		time.Sleep(d)
		s.kill(t)
		code := <-done
		s = start(t, args...)
		waitReady(t, s, auth)
		src, dst := pathExists(fromDir, "big.txt"), pathExists(toDir, "big.txt")
		// Let the start-up finish the journal: the source goes once the
		// destination is whole.
		for i := 0; i < 100 && src && dst; i++ {
			time.Sleep(50 * time.Millisecond)
			src, dst = pathExists(fromDir, "big.txt"), pathExists(toDir, "big.txt")
		}
		t.Logf("round %d (kill after %v): MOVE answered %d; source there %v, destination there %v", round, d, code, src, dst)
		if code == http.StatusCreated && !dst {
			t.Fatalf("round %d: the MOVE was acknowledged but the destination is missing", round)
		}
		switch {
		case !src && !dst:
			t.Fatalf("round %d: neither the source nor the destination is there", round)
		case src && dst:
			t.Fatalf("round %d: both the source and the destination are there after the restart", round)
		}
		whole := filepath.Join(fromDir, "big.txt")
		name, other := from, to
		if dst {
			whole, name, other = filepath.Join(toDir, "big.txt"), to, from
		}
		got, err := os.ReadFile(whole)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, data) {
			t.Fatalf("round %d: %s is not whole (%d bytes of %d)", round, whole, len(got), len(data))
		}
		for _, dir := range []string{a, b} {
			for _, p := range tree(t, dir) {
				if !strings.HasPrefix(p, ".hist") && p != "big.txt" {
					t.Errorf("round %d: leftover %s in %s", round, p, dir)
				}
			}
		}
		waitHits(t, s, "big", []string{name}, auth)
		_ = other
	}
}

func TestDAVCrashTreeDelete(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("slow: SIGKILL rounds with a tree of files")
	}
	dir := t.TempDir()
	const n = 3000
	want := map[string][]byte{}
	for i := range n {
		rel := fmt.Sprintf("tree/d%02d/f%04d.txt", i%30, i)
		want[rel] = seededBytes(uint64(i), 100+i%5000)
		writeFile(t, dir, rel, want[rel])
	}
	auth := basicAuth("u:pw")
	args := []string{"-a", "u:pw", "-v", dir + "::rwmd,u", "-e2dsa"}
	s := start(t, args...)
	waitReady(t, s, auth)
	for round, d := range []time.Duration{5 * time.Millisecond, 30 * time.Millisecond, 100 * time.Millisecond} {
		if !pathExists(dir, "tree") {
			break
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			req, _ := http.NewRequest("DELETE", s.URL+"/tree/", nil)
			req.Header.Set("Authorization", strings.TrimPrefix(auth, "Authorization: "))
			if r, err := slowClient.Do(req); err == nil {
				r.Body.Close()
			}
		}()
		time.Sleep(d)
		s.kill(t)
		<-done
		s = start(t, args...)
		waitReady(t, s, auth)
		var left []string
		for _, p := range tree(t, dir) {
			if strings.HasPrefix(p, ".hist") {
				continue
			}
			if strings.HasSuffix(p, ".txt") {
				got, err := os.ReadFile(filepath.Join(dir, p))
				if err != nil || !bytes.Equal(got, want[p]) {
					t.Fatalf("round %d: %s is not whole after the crash", round, p)
				}
				left = append(left, "/"+p)
			}
		}
		slices.Sort(left)
		t.Logf("round %d (kill after %v): %d files left", round, d, len(left))
		waitAllHits(t, s, "txt", left, auth)
	}
	// Finishing the delete leaves nothing, and search finds nothing.
	resp, body := s.do(t, "DELETE", "/tree/", nil, auth)
	if resp.StatusCode != http.StatusNoContent && resp.StatusCode != http.StatusNotFound {
		t.Fatalf("DELETE: %d %s", resp.StatusCode, body)
	}
	if pathExists(dir, "tree") {
		t.Error("the tree is still there")
	}
	waitAllHits(t, s, "txt", nil, auth)
}

package e2e

// copyparty's own command-line uploader, u2c.py, against hoard. Runs when
// HOARD_U2C is the path of u2c.py (e.g. a checkout's bin/u2c.py);
// HOARD_PYTHON picks the interpreter (default python3).

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestUp2kU2C(t *testing.T) {
	u2cNeed(t)
	vol, src := t.TempDir(), t.TempDir()
	tree := filepath.Join(src, "tree")
	writeFile(t, tree, "big.bin", randomBytes(40<<20+333))
	writeFile(t, tree, "a.txt", []byte("hello\n"))
	writeFile(t, tree, "empty", nil)
	writeFile(t, tree, "sub/b b.txt", randomBytes(5000))
	writeFile(t, tree, "sub/ünï cödé.bin", randomBytes(70000))
	writeFile(t, tree, "sub/deeper/c.bin", randomBytes(3<<20+1))
	writeFile(t, tree, "sub/deeper/same-as-c.bin", readVolumeFile(t, tree, "sub/deeper/c.bin"))
	past := time.Unix(1500000000, 0)
	os.Chtimes(filepath.Join(tree, "a.txt"), past, past)
	s := start(t, "-a", "u:pw", "-v", vol+"::rw,u")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	out, err := u2cRun(t, ctx, "-a", "pw", s.URL+"/up/", tree)
	if err != nil {
		t.Fatalf("u2c: %v\n%s\nserver log:\n%s", err, out, s.logs)
	}
	if n := u2cSameTree(t, tree, filepath.Join(vol, "up", "tree")); n != 7 {
		t.Fatalf("%d files compared, want 7", n)
	}
	// A re-run finds everything present and uploads nothing.
	out, err = u2cRun(t, ctx, "-a", "pw", s.URL+"/up/", tree)
	if err != nil {
		t.Fatalf("u2c re-run: %v\n%s", err, out)
	}
	if strings.Count(out, "found ") < 7 || strings.Contains(out, "uploaded ") {
		t.Fatalf("the re-run did not find everything present:\n%s", out)
	}

	// An interrupted run resumes: kill u2c halfway through a big file,
	// then run it again; the server continues the same session.
	src2 := filepath.Join(src, "resume")
	writeFile(t, src2, "huge.bin", randomBytes(300<<20+17))
	py := os.Getenv("HOARD_PYTHON")
	if py == "" {
		py = "python3"
	}
	cmd := exec.Command(py, os.Getenv("HOARD_U2C"), "-ns", "-j", "1", "--sz", "1", "-a", "pw", s.URL+"/up/", src2)
	var kout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &kout, &kout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	partial := filepath.Join(vol, "up", "resume", "huge.bin.PARTIAL")
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if fi, err := os.Stat(partial); err == nil && fi.Sys().(*syscall.Stat_t).Blocks*512 >= 30<<20 {
			break
		}
		if onS3(t) && s3ChunkObjects(t, vol) >= 30 { // 1 MiB chunks, each an object
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("the upload never got going:\n%s", kout.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	cmd.Process.Kill()
	cmd.Wait()
	if pathExists(vol, "up/resume/huge.bin") {
		t.Fatal("the upload finished before u2c could be interrupted; the test proves nothing")
	}
	out, err = u2cRun(t, ctx, "-a", "pw", s.URL+"/up/", src2)
	if err != nil {
		t.Fatalf("u2c resume: %v\n%s", err, out)
	}
	if n := u2cSameTree(t, src2, filepath.Join(vol, "up", "resume")); n != 1 {
		t.Fatal("huge.bin not compared")
	}
	started := 0
	for _, l := range strings.Split(s.logs.String(), "\n") {
		if strings.Contains(l, `msg="upload started"`) && strings.Contains(l, "huge.bin") {
			started++
		}
	}
	if started != 1 {
		t.Fatalf("%d upload sessions for huge.bin; the second run should have resumed the first", started)
	}
}

// TestU2CSearchURLs: u2c -s prints the server's address + "/" + each
// hit's rp; those URLs fetch the files, also from a volume mounted below
// the root.
func TestU2CSearchURLs(t *testing.T) {
	u2cNeed(t)
	root, music, src := t.TempDir(), t.TempDir(), t.TempDir()
	a, b := randomBytes(2<<20+7), randomBytes(1000)
	writeFile(t, music, "Jazz/Take Five.bin", a)
	writeFile(t, root, "b #1.bin", b)
	writeFile(t, src, "a.bin", a)
	writeFile(t, src, "b.bin", b)
	writeFile(t, src, "c.bin", randomBytes(100))
	s := start(t, "-v", root+"::r", "-v", music+":a/music:r", "-e2dsa")
	waitReady(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := u2cRun(t, ctx, "-s", s.URL+"/", src)
	if err != nil {
		t.Fatalf("u2c -s: %v\n%s", err, out)
	}
	var urls []string
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), "found: "))
		if strings.HasPrefix(l, "http://") {
			urls = append(urls, l)
		}
	}
	slices.Sort(urls)
	want := []string{s.URL + "/a/music/Jazz/Take%20Five.bin", s.URL + "/b%20%231.bin"}
	if !slices.Equal(urls, want) {
		t.Fatalf("u2c -s printed %q, want %q\n%s", urls, want, out)
	}
	for i, u := range urls {
		resp, err := client.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !bytes.Equal(body, [][]byte{a, b}[i]) {
			t.Errorf("GET %s: %d, %d bytes", u, resp.StatusCode, len(body))
		}
	}
}

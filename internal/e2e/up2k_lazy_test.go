package e2e

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestUp2kSmallNoWorkFile: a small upload makes no work file at its
// handshake and none in its chunk post (its bytes go into an unnamed file
// that is linked under its name when complete): between handshake and
// chunk the folder holds nothing of it, a corrupt chunk leaves nothing,
// yet its name stays taken (a second upload to it is renamed). Its
// session is written unsynced (durability rule 3's exception: nothing of
// it is acknowledged before its chunk post), so a SIGKILL may lose it: a
// session that survived resumes under the name it was told, one that was
// lost is started again by the next handshake (every chunk needed, a name
// no other session holds), and either way both uploads complete and the
// folder holds exactly their two files.
func TestUp2kSmallNoWorkFile(t *testing.T) {
	t.Parallel()
	vol := t.TempDir()
	args := []string{"-v", vol + "::rw"}
	s := start(t, args...)
	dir := filepath.Join(vol, "l")
	names := func() []string {
		t.Helper()
		des, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, de := range des {
			out = append(out, de.Name())
		}
		return out
	}
	f := newUp2kFile(randomBytes(4096))
	g := newUp2kFile(randomBytes(5000))
	r1 := up2kHandshake(t, s, "/l/", "a.bin", f, 1600000000, nil)
	if got := names(); len(got) != 0 {
		t.Fatalf("after a small upload's handshake the folder holds %v, want nothing", got)
	}
	r2 := up2kHandshake(t, s, "/l/", "a.bin", g, 1600000000, nil)
	if r1.Name != "a.bin" || r2.Name == "a.bin" || !strings.HasPrefix(r2.Name, "a.bin-") {
		t.Fatalf("two uploads to one name got %q and %q, want a.bin and a collision name", r1.Name, r2.Name)
	}
	if got := names(); len(got) != 0 {
		t.Fatalf("after two handshakes the folder holds %v, want nothing", got)
	}
	bad := bytes.Clone(f.data)
	bad[100] ^= 1
	resp, b := postChunks(t, s, r1.Purl, r1.Wark, f.hashes[0], bad)
	wantStatus(t, resp, b, 400)
	if got := names(); len(got) != 0 {
		t.Fatalf("after a corrupt chunk the folder holds %v, want nothing", got)
	}
	s.kill(t)

	s2 := start(t, args...)
	a1 := up2kHandshake(t, s2, "/l/", "a.bin", f, 1600000000, nil)
	a2 := up2kHandshake(t, s2, "/l/", "a.bin", g, 1600000000, nil)
	// a.bin is the first upload's whether its session survived or not
	// (when it was lost, the second one's, if kept, holds the collision
	// name, not a.bin).
	if a1.Wark != r1.Wark || a1.Name != "a.bin" || !slices.Equal(a1.Hash, f.hashes) || len(a1.Need) != 1 {
		t.Fatalf("after SIGKILL the first upload is %+v, want %s at a.bin, every chunk needed", a1, r1.Wark)
	}
	if a2.Wark != r2.Wark || a2.Name == "a.bin" || !strings.HasPrefix(a2.Name, "a.bin-") || !slices.Equal(a2.Hash, g.hashes) || len(a2.Need) != 1 {
		t.Fatalf("after SIGKILL the second upload is %+v, want %s under a collision name, every chunk needed", a2, r2.Wark)
	}
	if a2.Name != r2.Name {
		t.Logf("the second upload's session was lost by the SIGKILL (rule 3's exception): new name %s, was %s", a2.Name, r2.Name)
	}
	postChunk(t, s2, a2, g, 0)
	postChunk(t, s2, a1, f, 0)
	wantUploaded(t, filepath.Join(dir, "a.bin"), f.data, 1600000000)
	wantUploaded(t, filepath.Join(dir, a2.Name), g.data, 1600000000)
	if got := names(); !slices.Equal(got, []string{"a.bin", a2.Name}) && !slices.Equal(got, []string{a2.Name, "a.bin"}) {
		t.Fatalf("the folder holds %v, want exactly the two files", got)
	}
}

// TestPutInFlightUnnamed: a PUT's bytes go into an unnamed file while
// they arrive (O_TMPFILE): the folder holds no work file of it at any
// moment, and the complete upload appears by its name only.
func TestPutInFlightUnnamed(t *testing.T) {
	t.Parallel()
	vol := t.TempDir()
	s := start(t, "-v", vol+"::rw")
	if err := os.MkdirAll(filepath.Join(vol, "p"), 0o755); err != nil {
		t.Fatal(err)
	}
	const size = 4 << 20
	pr, pw := io.Pipe()
	req, _ := http.NewRequest("PUT", s.URL+"/p/slow.bin", pr)
	req.ContentLength = size
	done := make(chan int, 1)
	go func() {
		resp, err := (&http.Client{}).Do(req)
		if err != nil {
			done <- 0
			return
		}
		resp.Body.Close()
		done <- resp.StatusCode
	}()
	body := randomBytes(size)
	pw.Write(body[:1<<20])
	open := func() bool {
		fds, _ := filepath.Glob(fmt.Sprintf("/proc/%d/fd/*", s.cmd.Process.Pid))
		for _, fd := range fds {
			if l, err := os.Readlink(fd); err == nil && strings.HasPrefix(l, filepath.Join(vol, "p")+"/") {
				return true
			}
		}
		return false
	}
	waitFor(t, "the PUT's work file to be open", open)
	if des, _ := os.ReadDir(filepath.Join(vol, "p")); len(des) != 0 {
		t.Errorf("while a PUT is in flight its folder holds %s, want nothing", des[0].Name())
	}
	pw.Write(body[1<<20:])
	pw.Close()
	if code := <-done; code != 201 {
		t.Fatalf("PUT: %d", code)
	}
	wantFile(t, vol, "p/slow.bin", body)
	if des, _ := os.ReadDir(filepath.Join(vol, "p")); len(des) != 1 {
		t.Fatalf("the folder holds %d entries after the PUT, want the file only", len(des))
	}
}

// TestUp2kSmallNameAndPieces: a small upload holding its name without a
// work file and a big one (with its .PARTIAL) never get the same name,
// whichever comes first; a small file sent in pieces (X-Up2k-Subc)
// makes its named work file with the first piece and completes.
func TestUp2kSmallNameAndPieces(t *testing.T) {
	t.Parallel()
	vol := t.TempDir()
	s := start(t, "-v", vol+"::rw")
	small, big := newUp2kFile(randomBytes(3000)), newUp2kFile(randomBytes(300<<10))
	r1 := up2kHandshake(t, s, "/n/", "a.bin", small, 1600000000, nil)
	r2 := up2kHandshake(t, s, "/n/", "a.bin", big, 1600000000, nil)
	if r1.Name != "a.bin" || r2.Name == "a.bin" {
		t.Fatalf("small then big: names %q and %q", r1.Name, r2.Name)
	}
	big2, small2 := newUp2kFile(randomBytes(300<<10)), newUp2kFile(randomBytes(3001))
	r3 := up2kHandshake(t, s, "/n/", "b.bin", big2, 1600000000, nil)
	r4 := up2kHandshake(t, s, "/n/", "b.bin", small2, 1600000000, nil)
	if r3.Name != "b.bin" || r4.Name == "b.bin" {
		t.Fatalf("big then small: names %q and %q", r3.Name, r4.Name)
	}
	// The small one in three pieces.
	c := small.data
	for _, p := range [][2]int{{0, 1000}, {1000, 2000}, {2000, 3000}} {
		resp, b := postChunks(t, s, r1.Purl, r1.Wark, small.hashes[0], c[p[0]:p[1]], fmt.Sprintf("X-Up2k-Subc: %d", p[0]))
		wantStatus(t, resp, b, 200)
		if p[0] == 0 && !pathExists(vol, "n/a.bin.PARTIAL") {
			t.Error("the first piece of a small file made no work file")
		}
	}
	wantUploaded(t, filepath.Join(vol, "n/a.bin"), small.data, 1600000000)
	for _, x := range []struct {
		r handshakeReply
		f *up2kFile
	}{{r2, big}, {r3, big2}, {r4, small2}} {
		for i := range x.f.hashes {
			postChunk(t, s, x.r, x.f, i)
		}
		wantUploaded(t, filepath.Join(vol, "n", x.r.Name), x.f.data, 1600000000)
	}
	wantNoPartial(t, vol)
}

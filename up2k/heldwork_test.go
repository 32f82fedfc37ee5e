package up2k

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"hoard/store"
)

// openFDs counts this process's open descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	des, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd")
	}
	return len(des)
}

// TestHandshakeKeepsWork: a handshake keeps its work file and folder open
// for the first chunk post, which writes and publishes through them; a
// session that goes (expired, dropped, closed) closes them; no more than
// maxHeldWork are kept.
func TestHandshakeKeepsWork(t *testing.T) {
	namedWork(t)
	f := newFixture(t, store.Flags{})
	data := randBytes(4096)
	rep, err := f.hs("a.bin", data)
	if err != nil {
		t.Fatal(err)
	}
	s, err := f.m.live(context.Background(), f.vol, rep.Wark)
	if err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	kept := s.work != nil
	s.mu.Unlock()
	if !kept || f.m.heldWork.Load() != 1 {
		t.Fatalf("the handshake kept no work file (held %d)", f.m.heldWork.Load())
	}
	cs, _ := hashes(data)
	w, err := f.post(rep.Wark, data, cs, 0)
	if err != nil || !w.Done {
		t.Fatalf("post: %+v %v", w, err)
	}
	if f.m.heldWork.Load() != 0 {
		t.Fatalf("held %d after the post", f.m.heldWork.Load())
	}
	if got := f.file("up/a.bin"); string(got) != string(data) {
		t.Fatal("published bytes differ")
	}
	// Sessions that go close what they kept.
	fds := openFDs(t)
	for i := range 3 {
		if _, err := f.hs("e"+string(rune('0'+i))+".bin", randBytes(5000)); err != nil {
			t.Fatal(err)
		}
	}
	if got := openFDs(t); got < fds+6 {
		t.Fatalf("%d descriptors after 3 handshakes, want at least %d", got, fds+6)
	}
	f.now = f.now.Add(25 * time.Hour)
	if n := f.m.Expire(context.Background()); n != 3 {
		t.Fatalf("expired %d, want 3", n)
	}
	if got := openFDs(t); got > fds || f.m.heldWork.Load() != 0 {
		t.Fatalf("%d descriptors (held %d) after the sessions expired, want %d", got, f.m.heldWork.Load(), fds)
	}
	// The bound.
	for i := range maxHeldWork + 5 {
		if _, err := f.hs("b"+string(rune('a'+i%26))+string(rune('a'+i/26))+".bin", randBytes(100+i)); err != nil {
			t.Fatal(err)
		}
	}
	if n := f.m.heldWork.Load(); n != maxHeldWork {
		t.Fatalf("%d work files kept, want the bound %d", n, maxHeldWork)
	}
	f.m.Close()
	if f.m.heldWork.Load() != 0 {
		t.Fatalf("Close left %d work files open", f.m.heldWork.Load())
	}
}

// TestHeldWorkFolderMoved: the folder of an upload is moved between its
// handshake and its last chunk (out of the volume, into the state folder,
// elsewhere inside the volume, by another program): the file never
// appears in the moved folder, and no file is reported done.
func TestHeldWorkFolderMoved(t *testing.T) {
	for _, lazy := range []bool{false, true} {
		t.Run(map[bool]string{false: "named", true: "lazy"}[lazy], func(t *testing.T) {
			if !lazy {
				namedWork(t)
			}
			testHeldWorkFolderMoved(t)
		})
	}
}

// namedWork makes the test's small uploads get their work file at the
// handshake, as bigger ones do (no record.Lazy).
func namedWork(t *testing.T) {
	lazySmall = false
	t.Cleanup(func() { lazySmall = true })
}

func testHeldWorkFolderMoved(t *testing.T) {
	outside := t.TempDir()
	for _, to := range []string{"outside", "state", "inside"} {
		t.Run(to, func(t *testing.T) {
			f := newFixture(t, store.Flags{})
			data := randBytes(4096)
			rep, err := f.hs("m.bin", data)
			if err != nil {
				t.Fatal(err)
			}
			dst := map[string]string{
				"outside": filepath.Join(outside, to),
				"state":   filepath.Join(f.dir, store.HistName, "moved"),
				"inside":  filepath.Join(f.dir, "elsewhere"),
			}[to]
			os.MkdirAll(filepath.Dir(dst), 0o755)
			if err := os.Rename(filepath.Join(f.dir, "up"), dst); err != nil {
				t.Fatal(err)
			}
			cs, _ := hashes(data)
			w, err := f.post(rep.Wark, data, cs, 0)
			if err == nil && w.Done {
				t.Fatalf("the upload was published into a folder moved %s: %+v", to, w)
			}
			if _, err := os.Lstat(filepath.Join(dst, "m.bin")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("m.bin appeared in the folder moved %s", to)
			}
		})
	}
}

package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestUp2kDiskFull fills a small file system under an upload: the chunks
// that do not fit get 500 naming the free space, the session stays, and
// once space is freed the same session completes. It needs to mount a
// tmpfs (root); it is skipped otherwise.
func TestUp2kDiskFull(t *testing.T) {
	t.Parallel()
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=32m", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs to fill (%v: %s); skipping the disk-full test", err, strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() { exec.Command("umount", "-l", mnt).Run() })
	vol := filepath.Join(mnt, "vol")
	os.Mkdir(vol, 0o755)
	s := start(t, "-v", vol+"::rw", "--hist", t.TempDir())
	f := newUp2kFile(randomBytes(20 << 20))
	rep := up2kHandshake(t, s, "/", "big.bin", f, 1600000000, nil)
	// Too big for what is free: the client's error (413 naming the free
	// space), refused at the handshake, nothing made.
	resp, b := postHandshake(t, s, "/", map[string]any{"name": "huge.bin", "size": 40 << 20, "hash": newUp2kFile(make([]byte, 40<<20)).hashes})
	wantStatus(t, resp, b, 413)
	if !strings.Contains(string(b), "free space") {
		t.Fatalf("disk full at handshake: %s", b)
	}
	if _, err := os.Stat(filepath.Join(vol, "huge.bin.PARTIAL")); err == nil {
		t.Fatal("a refused handshake left its work file")
	}
	filler := filepath.Join(mnt, "filler")
	if err := os.WriteFile(filler, randomBytes(16<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	var failed []string
	for i := range f.hashes {
		code, b := postChunksNoFail(s, rep.Purl, rep.Wark, f.hashes[i], f.chunk(i))
		switch {
		case code == 200:
		case code == 500 && strings.Contains(string(b), "free") && strings.Contains(string(b), "full"):
			failed = append(failed, f.hashes[i])
		default:
			t.Fatalf("chunk %d: %d %s", i, code, b)
		}
	}
	if len(failed) == 0 {
		t.Fatal("the file system never filled up")
	}
	again := up2kHandshake(t, s, "/", "big.bin", f, 1600000000, nil)
	if !slices.Equal(again.Hash, failed) {
		t.Fatalf("after disk full the server needs %d chunks, want the %d that failed", len(again.Hash), len(failed))
	}
	os.Remove(filler)
	for _, h := range again.Hash {
		postChunk(t, s, again, f, f.index(h))
	}
	wantUploaded(t, filepath.Join(vol, "big.bin"), f.data, 1600000000)
}

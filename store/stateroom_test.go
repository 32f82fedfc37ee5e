package store

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestStateRoomNearLimit: StateRoom may answer from its last statfs only
// far from the limit; near it, every call reads the file system, so a
// state folder that fills up is seen at once.
func TestStateRoomNearLimit(t *testing.T) {
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs (%v: %s)", err, strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() { exec.Command("umount", "-l", mnt).Run() })
	free1, _, err := StateRoom(mnt)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mnt, "f"), make([]byte, 2<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	free2, _, err := StateRoom(mnt) // at once: well within roomFresh
	if err != nil {
		t.Fatal(err)
	}
	if free1-free2 < 2<<20 {
		t.Fatalf("free space %d, then %d after writing 2 MiB: a stale answer near the limit", free1, free2)
	}
}

package e2e

import (
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// A fifo in a volume is not a file: a GET answers at once (404) instead of
// hanging on an open that waits for a writer.
func TestGetFifoDoesNotHang(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "pipe.txt"), 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	s := start(t, "-v", dir+"::r")
	t0 := time.Now()
	resp, body := s.do(t, "GET", "/pipe.txt", nil)
	wantStatus(t, resp, body, 404)
	if d := time.Since(t0); d > 10*time.Second {
		t.Fatalf("took %v", d)
	}
}

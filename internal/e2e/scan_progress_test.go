package e2e

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestScanProgress: a long first scan (slowed by the test hook) logs its
// progress every second or so, and a search during it gets a 503 that
// says how far it is.
func TestScanProgress(t *testing.T) {
	dir := t.TempDir()
	for i := range 40 {
		writeFile(t, dir, fmt.Sprintf("d%d/f%02d.txt", i%4, i), make([]byte, 1000+i))
	}
	t.Setenv("HOARD_TEST_SCAN_DELAY", "100ms") // 40 files: about 4 s
	s := start(t, "-v", dir+"::rw", "-e2dsa")
	time.Sleep(1500 * time.Millisecond)
	resp, body := s.do(t, "POST", "/", []byte(`{"q":"f01"}`), "Content-Type: application/json")
	wantStatus(t, resp, body, 503)
	m := regexp.MustCompile(`scan in progress: (\d+) files, ([\d.]+ (KiB|B)) so far`).FindStringSubmatch(string(body))
	if m == nil || m[1] == "0" || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("503 during the scan does not say how far it is: %q (Retry-After %q)", body, resp.Header.Get("Retry-After"))
	}
	waitReady(t, s)
	logs := s.logs.String()
	lines := 0
	for _, l := range strings.Split(logs, "\n") {
		if strings.Contains(l, "scan progress") {
			lines++
			for _, k := range []string{"files=", "bytes=", "files_per_s=", "rate=", "level=INFO"} {
				if !strings.Contains(l, k) {
					t.Errorf("progress line lacks %s: %s", k, l)
				}
			}
		}
	}
	if lines < 2 {
		t.Fatalf("%d progress lines in a 4 s scan, want a few:\n%s", lines, logs)
	}
}

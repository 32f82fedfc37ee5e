package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTextFlagsBad: the flags of tail, recent uploads and shares refuse
// bad values with exit status 2 and a message naming the flag.
func TestTextFlagsBad(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tc := range [][]string{
		{"--tail-tmax", "-1"}, {"--tail-cmax", "0"}, {"--ups-ring", "0"}, {"--shr", "/a/b/"}, {"--shr", "/x?y/"}, {"--tail-cmax", "many"},
	} {
		code, _, stderr := runHoard(t, append([]string{"-v", dir + "::r"}, tc...)...)
		if code != 2 || !strings.Contains(stderr, strings.TrimLeft(tc[0], "-")) {
			t.Errorf("%v: exit %d, stderr %q", tc, code, stderr)
		}
	}
	// A corrupt shares file stops the start instead of losing the shares.
	writeFile(t, dir, ".hist/shares.json", []byte("{corrupt"))
	code, _, stderr := runHoard(t, "-v", dir+"::r")
	if code == 0 || !strings.Contains(stderr, "shares") {
		t.Fatalf("corrupt shares.json: exit %d, %q", code, stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, ".hist", "shares.json")); string(b) != "{corrupt" {
		t.Fatal("the shares file was overwritten")
	}
	// --shr "" turns sharing off: /shr/ is an ordinary path again.
	writeFile(t, dir, "shr/k/f.txt", []byte("plain"))
	os.Remove(filepath.Join(dir, ".hist", "shares.json"))
	s := start(t, "-v", dir+"::r", "--shr", "")
	resp, body := s.do(t, "GET", "/shr/k/f.txt", nil)
	wantStatus(t, resp, body, 200)
	resp, body = s.do(t, "POST", "/?share", []byte(`{"k":"x"}`), "Content-Type: text/plain")
	if resp.StatusCode != 400 && resp.StatusCode != 401 {
		t.Fatalf("share with sharing off: %d %s", resp.StatusCode, body)
	}
}

package e2e

// --ah-alg: accounts hold copyparty-style password hashes.

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// copyparty's pwhash.py, sha2 with salt "saltsaltsalt", of "hunter2".
const hunter2SHA2 = "+COnOHl2B1nyvllS5o2OZPHNUNqLM1HlO"

func TestPwHashGen(t *testing.T) {
	t.Parallel()
	code, stdout, stderr := runHoard(t, "--ah-alg", "sha2", "--ah-salt", "saltsaltsalt", "--ah-gen", "hunter2")
	if code != 0 || stdout != hunter2SHA2+"\n" {
		t.Fatalf("--ah-gen: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	// From stdin, one per line.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binPath, "--ah-alg", "sha2", "--ah-salt", "saltsaltsalt", "--ah-gen", "-")
	cmd.Stdin = strings.NewReader("hunter2\nother\n")
	out, err := cmd.Output()
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if err != nil || len(lines) != 2 || lines[0] != hunter2SHA2 || len(lines[1]) != 33 {
		t.Fatalf("--ah-gen -: %v %q", err, out)
	}
	code, _, stderr = runHoard(t, "--ah-gen", "x")
	if code != 2 || !strings.Contains(stderr, "--ah-alg") {
		t.Fatalf("--ah-gen without --ah-alg: exit %d, %q", code, stderr)
	}
	code, _, stderr = runHoard(t, "--ah-alg", "md5", "--ah-salt", "saltsaltsalt", "-v", t.TempDir()+"::r")
	if code != 2 || !strings.Contains(stderr, "md5") {
		t.Fatalf("--ah-alg md5: exit %d, %q", code, stderr)
	}
}

// TestPwHashLogin: a hashed account logs in with its password, by flags
// and by config file; the hash itself is no password; a clear password
// next to --ah-alg still works and its hash is logged.
func TestPwHashLogin(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, dir, "f.txt", []byte("PRIVATE"))
	conf := configFile(t, fmt.Sprintf("[global]\n  ah-alg: sha2\n  ah-salt: saltsaltsalt\n[accounts]\n  ed: %s\n  k: clear-pw\n[/]\n  %s\n  accs:\n    r: ed, k\n", hunter2SHA2, dir))
	for _, args := range [][]string{
		{"--ah-alg", "sha2", "--ah-salt", "saltsaltsalt", "-a", "ed:" + hunter2SHA2, "-a", "k:clear-pw", "-v", dir + "::r,ed,k"},
		{"-c", conf},
	} {
		s := start(t, args...)
		for _, tc := range []struct {
			hdr    string
			status int
		}{
			{hdr: "PW: hunter2", status: 200},
			{hdr: "PW: clear-pw", status: 200},
			{hdr: basicAuth("ed:hunter2"), status: 200},
			{hdr: "PW: hunter2", status: 200}, // again: remembered
			{hdr: "PW: " + hunter2SHA2, status: 401},
			{hdr: "PW: wrong", status: 401},
		} {
			resp, body := s.do(t, "GET", "/f.txt", nil, tc.hdr)
			wantStatus(t, resp, body, tc.status)
			if tc.status == 200 && !bytes.Equal(body, []byte("PRIVATE")) {
				t.Fatalf("%s: body %q", tc.hdr, body)
			}
		}
		if !strings.Contains(s.logs.String(), "clear password") {
			t.Errorf("%v: no warning about the clear password:\n%s", args, s.logs)
		}
	}
}

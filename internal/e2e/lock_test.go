package e2e

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// A second hoard on a volume whose state folder a running one holds does
// not start (two servers on one state folder lose each other's upload
// sessions): exit status 2, naming the folder and the other's pid. Once
// the first has stopped, it starts.
func TestSecondServerOnStateFolderRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	hist := t.TempDir()
	for _, c := range []struct {
		name  string
		args  []string
		state string
	}{
		{name: "default .hist", args: []string{"-v", dir + "::rw"}, state: filepath.Join(dir, ".hist")},
		{name: "--hist", args: []string{"-v", dir + "::rw", "--hist", hist}, state: hist},
	} {
		t.Run(c.name, func(t *testing.T) {
			first := start(t, c.args...)
			code, _, stderr := runHoard(t, c.args...)
			if code != 2 {
				t.Fatalf("second hoard: exit %d, want 2; stderr:\n%s", code, stderr)
			}
			pid := strconv.Itoa(first.cmd.Process.Pid)
			if !strings.Contains(stderr, c.state) || !strings.Contains(stderr, "pid "+pid) {
				t.Fatalf("second hoard's message names neither the state folder %s nor pid %s:\n%s", c.state, pid, stderr)
			}
			// The first one is unharmed.
			resp, body := first.do(t, "PUT", "/x-"+strings.ReplaceAll(c.name, " ", "")+".txt", []byte("x"))
			wantStatus(t, resp, body, 201)
			if err := first.stop(); err != nil {
				t.Fatal(err)
			}
			second := start(t, c.args...)
			resp, body = second.do(t, "GET", "/x-"+strings.ReplaceAll(c.name, " ", "")+".txt", nil)
			wantStatus(t, resp, body, 200)
		})
	}
	// Servers that only read may share a state folder (as before, the
	// second one without the index); a writer then is refused, naming
	// them.
	ro := t.TempDir()
	writeFile(t, ro, "r.txt", []byte("r"))
	r1 := start(t, "-v", ro+"::r", "-e2dsa")
	r2 := start(t, "-v", ro+"::r")
	for _, s := range []*server{r1, r2} {
		resp, body := s.do(t, "GET", "/r.txt", nil)
		wantStatus(t, resp, body, 200)
	}
	code, _, stderr := runHoard(t, "-v", ro+"::rw")
	if code != 2 || !strings.Contains(stderr, filepath.Join(ro, ".hist")) || !strings.Contains(stderr, "read-only") {
		t.Fatalf("a writer next to read-only servers: exit %d, want 2 naming the state folder; stderr:\n%s", code, stderr)
	}
	// Two servers of other volumes on one --hist would share its
	// shares.json: refused too.
	other := t.TempDir()
	first := start(t, "-v", other+"::rw", "--hist", hist)
	code, _, stderr = runHoard(t, "-v", t.TempDir()+"::rw", "--hist", hist)
	if code != 2 || !strings.Contains(stderr, hist) || !strings.Contains(stderr, "pid "+strconv.Itoa(first.cmd.Process.Pid)) {
		t.Fatalf("second hoard on the same --hist: exit %d, want 2 naming %s; stderr:\n%s", code, hist, stderr)
	}
}

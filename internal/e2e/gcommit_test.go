package e2e

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// TestGroupCommitFlag: small PUTs are group-committed by default (their
// entries are still in the state database's journal when the server is
// killed at once, and the next start replays them), and --no-group-sync
// flushes each file on its own (nothing to replay). A clean stop runs the
// last checkpoint: nothing is left either.
func TestGroupCommitFlag(t *testing.T) {
	entries := regexp.MustCompile(`replayed the group-commit journal.* entries=(\d+)`)
	for _, c := range []struct {
		name   string
		args   []string
		kill   bool
		replay bool
	}{
		{"default", nil, true, true},
		{"no-group-sync", []string{"--no-group-sync"}, true, false},
		{"clean stop", nil, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			args := append([]string{"-v", dir + "::rwd"}, c.args...)
			s := start(t, args...)
			const n = 20
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() {
					req, _ := http.NewRequest("PUT", fmt.Sprintf("%s/f%d.txt", s.URL, i), strings.NewReader(fmt.Sprint("body ", i)))
					resp, err := http.DefaultClient.Do(req)
					if err != nil {
						t.Error(err)
						return
					}
					resp.Body.Close()
					if resp.StatusCode != 201 {
						t.Errorf("PUT: %d", resp.StatusCode)
					}
				})
			}
			wg.Wait()
			if c.kill {
				s.kill(t)
			} else if err := s.stop(); err != nil {
				t.Fatal(err)
			}
			s = start(t, args...)
			m := entries.FindStringSubmatch(s.logs.String())
			if c.replay && (m == nil || m[1] == "0") {
				t.Errorf("no group-commit entries were replayed after a kill; log:\n%s", s.logs)
			}
			if !c.replay && m != nil {
				t.Errorf("group-commit entries replayed (%s), want none", m[0])
			}
			for i := range n {
				b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("f%d.txt", i)))
				if err != nil || !bytes.Equal(b, []byte(fmt.Sprint("body ", i))) {
					t.Errorf("f%d.txt: %q %v", i, b, err)
				}
			}
		})
	}
}

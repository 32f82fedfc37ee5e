package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestSmoke runs every scenario once with tiny sizes against a spawned
// hoard, so the harness cannot rot: every scenario must give figures, or
// be reported unsupported (features hoard does not have yet), never fail.
func TestSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts hoard")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var out, errb bytes.Buffer
	code := run(ctx, []string{"-spawn", "-scenario", "all", "-rounds", "1", "-duration", "200ms",
		"-big", "4M", "-small-n", "40", "-many-n", "20", "-many-max", "8K", "-search-n", "200",
		"-dav-n", "50", "-sync-n", "30", "-c", "4", "-j", "2", "-prefault=false", "-limits", "-json", "-q"}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s\nstdout:\n%s", code, errb.String(), out.String())
	}
	var rep report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("-json output does not parse: %v\n%s", err, out.String())
	}
	if len(rep.Limits) != 6 {
		t.Errorf("%d machine limits, want 6: %+v", len(rep.Limits), rep.Limits)
	}
	for _, l := range rep.Limits {
		if l.Value <= 0 {
			t.Errorf("limit %s = %v", l.Name, l.Value)
		}
	}
	mayLack := []string{"tar", "zip", "search"} // issues 4 and 5, landing separately
	if _, err := exec.LookPath("rclone"); err != nil {
		mayLack = append(mayLack, "rclone-sync")
	}
	seen := map[string]bool{}
	for _, r := range rep.Results {
		seen[r.Scenario] = true
		if r.Target != "hoard" || r.Round != 1 {
			t.Errorf("result for %s round %d, want hoard round 1", r.Target, r.Round)
		}
		switch {
		case r.Error != "":
			t.Errorf("%s failed: %s", r.Scenario, r.Error)
		case r.Unsupported != "":
			if !slices.Contains(mayLack, r.Scenario) {
				t.Errorf("%s unsupported: %s", r.Scenario, r.Unsupported)
			}
		default:
			if len(r.Figures) == 0 {
				t.Errorf("%s: no figures", r.Scenario)
			}
			for _, f := range r.Figures {
				if f.Value <= 0 && f.Unit != "count" && f.Unit != "hits" { // a tiny corpus may lack a phrase
					t.Errorf("%s: %s = %v %s", r.Scenario, f.Name, f.Value, f.Unit)
				}
			}
			if r.TimedS <= 0 || r.ServerRSS <= 0 || r.ClientCores <= 0 {
				t.Errorf("%s: timed %v s, server RSS %v MiB, client %v cores", r.Scenario, r.TimedS, r.ServerRSS, r.ClientCores)
			}
		}
	}
	for _, s := range scenarioNames() {
		if !seen[s] {
			t.Errorf("no result for scenario %s", s)
		}
	}
}

func TestSmokeCancel(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts hoard")
	}
	// a run cancelled (SIGINT) in the middle of a measurement stops the
	// server, removes its temporary folder and exits 130
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	w := &watch{cancel: cancel, on: "get-small hoard round 1"}
	code := run(ctx, []string{"-spawn", "-scenario", "get-small", "-rounds", "50", "-duration", "1s", "-big", "1M", "-small-n", "10", "-search-n", "10"}, &bytes.Buffer{}, w)
	if code != 130 {
		t.Fatalf("exit %d after cancel, want 130\n%s", code, w.String())
	}
	m := regexp.MustCompile(`\(pid (\d+)\)`).FindStringSubmatch(w.String())
	if m == nil {
		t.Fatalf("no pid in the progress output:\n%s", w.String())
	}
	if _, err := os.Stat("/proc/" + m[1]); err == nil {
		t.Errorf("hoard (pid %s) still runs after the cancelled run", m[1])
	}
	if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
		t.Errorf("left behind in TMPDIR: %v", ents)
	}
}

// watch collects output and cancels once it has seen a string.
type watch struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	on     string
	cancel func()
}

func (w *watch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if w.cancel != nil && strings.Contains(w.buf.String(), w.on) {
		time.AfterFunc(300*time.Millisecond, w.cancel)
		w.cancel = nil
	}
	return len(p), nil
}

func (w *watch) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

func TestFlags(t *testing.T) {
	for _, args := range [][]string{
		{},                                    // no target
		{"-spawn", "-rounds", "0"},            // no rounds
		{"-spawn", "-scenario", "nope"},       // unknown scenario
		{"-spawn", "-big", "12X"},             // bad size
		{"-spawn", "-big", "1K"},              // too small
		{"-compare", "a=http://x,a=http://y"}, // name twice
		{"-compare", "a"},                     // not name=URL
		{"-compare", "a=ftp://x"},             // not http
		{"-target", "http://x", "-compare", "a=http://y"},
		{"-target", "http://x", "-pid", "zero"},
		{"-spawn", "extra"},
	} {
		var out, errb bytes.Buffer
		if code := run(context.Background(), args, &out, &errb); code != 2 {
			t.Errorf("%q: exit %d, want 2 (%s)", args, code, errb.String())
		}
		if !strings.HasPrefix(errb.String(), "bench: ") && !strings.Contains(errb.String(), "invalid value") {
			t.Errorf("%q: message %q", args, errb.String())
		}
	}
	// a target that is not a local spawn needs -dir
	var errb bytes.Buffer
	if code := run(context.Background(), []string{"-target", "http://127.0.0.1:1"}, &bytes.Buffer{}, &errb); code != 1 || !strings.Contains(errb.String(), "needs -dir") {
		t.Errorf("-target without -dir: exit %d, %q", code, errb.String())
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"4096": 4096, "4K": 4096, "64KiB": 64 << 10, "1m": 1 << 20, "2G": 2 << 30, "3MB": 3 << 20} {
		if got, err := parseSize(in); err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "-1", "K", "1.5M", "1T", "abc"} {
		if _, err := parseSize(in); err == nil {
			t.Errorf("parseSize(%q): no error", in)
		}
	}
}

package main

import (
	"bytes"
	"errors"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"hoard/idx"
)

// TestClosersReverseOrder: the stack closes last-pushed first, every
// closer runs even when one fails, the errors are joined and logged, and
// a second close does nothing.
func TestClosersReverseOrder(t *testing.T) {
	var logs bytes.Buffer
	cl := &closers{log: slog.New(slog.NewTextHandler(&logs, nil))}
	var order []string
	errB, errC := errors.New("b failed"), errors.New("c failed")
	for _, c := range []struct {
		name string
		err  error
	}{{"a", nil}, {"b", errB}, {"c", errC}} {
		cl.push(c.name, func() error { order = append(order, c.name); return c.err })
	}
	err := cl.close()
	if strings.Join(order, "") != "cba" {
		t.Fatalf("closed in the order %q, want cba", order)
	}
	if !errors.Is(err, errB) || !errors.Is(err, errC) {
		t.Fatalf("close = %v, want both errors", err)
	}
	if !strings.Contains(logs.String(), "what=b") || !strings.Contains(logs.String(), "what=c") {
		t.Fatalf("failures not logged: %s", logs.String())
	}
	if err := cl.close(); err != nil || len(order) != 3 {
		t.Fatalf("second close: %v, closers ran %d times", err, len(order))
	}
}

// TestRunClosesOnFailedStart: when a service fails to open after others
// did (here: a corrupt shares file, read last), run closes what it opened,
// the listeners included, before it returns: the port, the state folder's
// index and its run lock are free again.
func TestRunClosesOnFailedStart(t *testing.T) {
	dir := t.TempDir()
	hist := filepath.Join(dir, ".hist")
	if err := os.MkdirAll(hist, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(hist, "shares.json"), []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	ln.Close()
	var out, errb bytes.Buffer
	code := run([]string{"-p", port, "-i", "127.0.0.1", "-e2d", "-v", dir + "::rw", "--log-level", "error"}, &out, &errb)
	if code != 1 || !strings.Contains(errb.String(), "shares") {
		t.Fatalf("run = %d, stderr %q; want 1 and the shares file named", code, errb.String())
	}
	ln, err = net.Listen("tcp", "127.0.0.1:"+port)
	if err != nil {
		t.Fatalf("the port is still taken after run returned: %v", err)
	}
	ln.Close()
	db, err := idx.Open(filepath.Join(hist, "idx"), idx.Options{})
	if err != nil {
		t.Fatalf("the index is still open after run returned: %v", err)
	}
	db.Close()
	if b, err := os.ReadFile(filepath.Join(hist, "run")); err != nil || !strings.HasPrefix(string(b), "stopped") {
		t.Fatalf("the state folder's run file says %q (%v), want a clean stop", b, err)
	}
}

// TestValidate: each value hoard refuses gets an error naming its flag.
func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		args []string
		flag string
	}{
		{[]string{"--log-level", "loud"}, "--log-level"},
		{[]string{"-p", "80,x"}, "-p"},
		{[]string{"-p", "65536"}, "-p"},
		{[]string{"--df", "lots"}, "--df"},
		{[]string{"--srch-hits", "0"}, "--srch-hits"},
		{[]string{"--srch-hits", "10", "--srch-max", "9"}, "--srch-max"},
		{[]string{"--reg-cap", "0"}, "--reg-cap"},
		{[]string{"--reg-cap-ip", "0"}, "--reg-cap-ip"},
		{[]string{"--snap-drop", "0"}, "--snap-drop"},
		{[]string{"--snap-drop", "0.05"}, "--snap-drop"},
		{[]string{"--snap-drop", "-1"}, "--snap-drop"},
		{[]string{"--snap-drop", "NaN"}, "--snap-drop"},
		{[]string{"--snap-drop", "+Inf"}, "--snap-drop"},
		{[]string{"--snap-drop", "1e7"}, "--snap-drop"},
		{[]string{"--db-cache", "0"}, "--db-cache"},
		{[]string{"--th-mt", "0"}, "--th-mt"},
		{[]string{"--th-convt", "0"}, "--th-convt"},
		{[]string{"--th-queue", "0"}, "--th-queue"},
		{[]string{"--th-cache-max", "0"}, "--th-cache-max"},
		{[]string{"--th-max-mpx", "0"}, "--th-max-mpx"},
		{[]string{"--re-maxage", "-1"}, "--re-maxage"},
		{[]string{"--srch-slow-ms", "-1"}, "--srch-slow-ms"},
		{[]string{"--max-ranges", "0"}, "--max-ranges"},
		{[]string{"--arch-mt", "0"}, "--arch-mt"},
		{[]string{"--arch-mt", "-3"}, "--arch-mt"},
		{[]string{"--tail-tmax", "-1"}, "--tail-tmax"},
		{[]string{"--tail-cmax", "0"}, "--tail-cmax"},
		{[]string{"--unpost", "-1"}, "--unpost"},
		{[]string{"--ups-ring", "0"}, "--ups-ring"},
		{[]string{"--shr", "/a/b/"}, "--shr"},
		{[]string{"--warksalt", ""}, "--warksalt"},
	} {
		fs, o := newFlags()
		if err := fs.Parse(tc.args); err != nil {
			t.Fatalf("%q: %v", tc.args, err)
		}
		err := o.validate()
		if err == nil || !strings.HasPrefix(err.Error(), tc.flag+" ") && !strings.HasPrefix(err.Error(), tc.flag+":") {
			t.Errorf("%q: validate = %v, want an error starting with %s", tc.args, err, tc.flag)
		}
	}
	_, o := newFlags()
	if err := o.validate(); err != nil {
		t.Fatalf("the defaults do not validate: %v", err)
	}
	// --snap-drop takes a fraction of a minute.
	for arg, want := range map[string]time.Duration{"0.5": 30 * time.Second, "0.1": 6 * time.Second, "1440": 24 * time.Hour} {
		fs, o := newFlags()
		if err := fs.Parse([]string{"--snap-drop", arg}); err != nil {
			t.Fatal(err)
		}
		if err := o.validate(); err != nil {
			t.Errorf("--snap-drop %s: %v", arg, err)
		}
		if got := snapDropTime(o.snapDrop); got != want {
			t.Errorf("--snap-drop %s: %v, want %v", arg, got, want)
		}
	}
	if fs, _ := newFlags(); fs.Parse([]string{"--snap-drop", "a while"}) == nil {
		t.Error("--snap-drop a while: parsed")
	}
}

package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestEditDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		d    int
	}{
		{"", "", 0}, {"a", "", 1}, {"", "abc", 3}, {"cert", "crt", 1}, {"srch-hit", "srch-hits", 1},
		{"https_only", "https-only", 1}, {"kitten", "sitting", 3},
	} {
		if d := editDistance(tc.a, tc.b); d != tc.d {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tc.a, tc.b, d, tc.d)
		}
		if d := editDistance(tc.b, tc.a); d != tc.d {
			t.Errorf("editDistance(%q, %q) = %d, want %d (symmetric)", tc.b, tc.a, d, tc.d)
		}
	}
}

// TestUnknownFlagSuggestsOnlyClose: a flag far from every known one gets
// no "closest" (before: --bogus-flag was told of --ah-alg).
func TestUnknownFlagSuggestsOnlyClose(t *testing.T) {
	fs, _ := newFlags()
	for name, want := range map[string]string{
		"bogus-flag": "unknown flag -bogus-flag (see -h)",
		"srch-hit":   "unknown flag -srch-hit; the closest is --srch-hits (see -h)",
		"crt":        "unknown flag -crt; the closest is --cert (see -h)",
		"zzzzzzzz":   "unknown flag -zzzzzzzz (see -h)",
	} {
		if got := unknownFlag(fs.FlagSet, name); got != want {
			t.Errorf("unknownFlag(%q) = %q, want %q", name, got, want)
		}
	}
}

func TestLocate(t *testing.T) {
	p := &prodOptions{origin: map[string]string{"max-ranges": "f.conf:3", "p": "f.conf:9"}}
	for in, want := range map[string]string{
		"--max-ranges 0: want at least 1": "f.conf:3: --max-ranges 0: want at least 1",
		"-p \"x\": bad port":              "f.conf:9: -p \"x\": bad port",
		"--max-rangesx 0":                 "--max-rangesx 0",
		"--srch-hits 0: want":             "--srch-hits 0: want",
	} {
		if got := p.locate(in); got != want {
			t.Errorf("locate(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestDefaultSalt: made once, then the same on every start.
func TestDefaultSalt(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cfg")
	p := &prodOptions{ahAlg: "sha2,10", configDirForTest: dir}
	h1, err := p.pwHash()
	if err != nil || h1 == nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "ah-salt.txt"))
	if err != nil || len(strings.TrimSpace(string(b))) != 24 {
		t.Fatalf("salt file %q, %v", b, err)
	}
	h2, _ := p.pwHash()
	a, _ := h1.Hash("pw")
	c, _ := h2.Hash("pw")
	if a != c {
		t.Fatal("the default salt changed between starts")
	}
	if fi, _ := os.Stat(filepath.Join(dir, "ah-salt.txt")); fi.Mode().Perm() != 0o600 {
		t.Errorf("salt file mode %v", fi.Mode())
	}
}

func TestGenHash(t *testing.T) {
	var out, errb bytes.Buffer
	p := &prodOptions{ahAlg: "sha2", ahSalt: "saltsaltsalt", ahGen: "hunter2"}
	if code := p.genHashes(&out, &errb); code != 0 || out.String() != "+COnOHl2B1nyvllS5o2OZPHNUNqLM1HlO\n" {
		t.Fatalf("%d %q %q", code, out.String(), errb.String())
	}
	out.Reset()
	p = &prodOptions{ahAlg: "none", ahGen: "x"}
	if code := p.genHashes(&out, &errb); code != 2 || !strings.Contains(errb.String(), "needs --ah-alg") {
		t.Fatalf("without --ah-alg: %d %q", code, errb.String())
	}
}

// TestHelpCoversFlags: every flag run() defines is in exactly one -h
// group (a flag registered on the FlagSet directly, not through a group,
// shows under "other", and this test names it).
func TestHelpCoversFlags(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"-h"}, &out, &errb); code != 0 {
		t.Fatalf("-h: %d %s", code, errb.String())
	}
	if i := strings.Index(out.String(), "\nother:\n"); i >= 0 {
		t.Errorf("flags without a -h group (register them in newFlags under a group):%s", out.String()[i:])
	}
	fs, _ := newFlags()
	grouped := map[string]bool{}
	for _, g := range fs.groups {
		for _, f := range g.flags {
			if grouped[f] {
				t.Errorf("flag %q in two groups", f)
			}
			grouped[f] = true
		}
	}
	fs.VisitAll(func(f *flag.Flag) {
		if !grouped[f.Name] {
			t.Errorf("flag %q in no group", f.Name)
		}
	})
}

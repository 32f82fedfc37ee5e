package e2e

import (
	"regexp"
	"strings"
	"testing"
)

// TestCLIHelpGrouped: -h prints the flags in named groups, one line each,
// with examples, on stdout.
func TestCLIHelpGrouped(t *testing.T) {
	t.Parallel()
	code, stdout, stderr := runHoard(t, "--help")
	if code != 0 || stderr != "" {
		t.Fatalf("--help: exit %d, stderr %q", code, stderr)
	}
	for _, g := range []string{"\nnetwork:\n", "\nTLS:\n", "\naccounts and volumes:\n", "\nuploads:\n", "\nindexing and search:\n", "\nthumbnails and transcodes:\n", "\nexamples:\n"} {
		if !strings.Contains(stdout, g) {
			t.Errorf("-h lacks the group %q", strings.TrimSpace(g))
		}
	}
	if strings.Contains(stdout, "\nother:\n") {
		t.Errorf("flags outside any group:\n%s", stdout[strings.Index(stdout, "\nother:\n"):])
	}
	// One line per flag: "  -name ARG   text".
	flagLine := regexp.MustCompile(`(?m)^  --?([a-z0-9-]+)\b`)
	seen := map[string]int{}
	for _, m := range flagLine.FindAllStringSubmatch(stdout, -1) {
		seen[m[1]]++
	}
	for _, f := range []string{"p", "i", "a", "v", "cert", "key", "https-only", "http-only", "h2", "ah-alg", "ah-gen", "c", "version", "e2dsa", "th-mt", "max-ranges"} {
		if seen[f] != 1 {
			t.Errorf("-h: flag %q on %d lines, want 1", f, seen[f])
		}
	}
}

// TestCLIUnknownFlag: a mistyped flag gets one line naming the closest
// known one, not the whole usage.
func TestCLIUnknownFlag(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ arg, want string }{
		{arg: "--srch-hit", want: "--srch-hits"},
		{arg: "--https_only", want: "--https-only"},
		{arg: "-e2dssa", want: "-e2dsa"},
		{arg: "--crt", want: "--cert"},
	} {
		code, stdout, stderr := runHoard(t, tc.arg)
		if code != 2 || !strings.Contains(stderr, tc.want) || strings.Count(stderr, "\n") != 1 || stdout != "" {
			t.Errorf("%s: exit %d, stderr %q, stdout %q; want 2 and one line naming %s", tc.arg, code, stderr, stdout, tc.want)
		}
	}
}

// TestCLIVersion: --version prints one line with the version and exits.
func TestCLIVersion(t *testing.T) {
	t.Parallel()
	code, stdout, stderr := runHoard(t, "--version")
	if code != 0 || stderr != "" || !strings.HasPrefix(stdout, "hoard ") || !strings.Contains(stdout, " go1.") || strings.Count(stdout, "\n") != 1 {
		t.Fatalf("--version: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

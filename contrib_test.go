package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestSystemdUnit: contrib/hoard.service keeps its hardening and passes
// systemd-analyze verify without a warning (and, where systemd can judge
// a unit offline, an exposure level of at most 2).
func TestSystemdUnit(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("contrib", "hoard.service"))
	if err != nil {
		t.Fatal(err)
	}
	unit := string(b)
	for _, line := range []string{
		"ProtectSystem=strict", "ReadWritePaths=", "NoNewPrivileges=yes", "PrivateTmp=yes", "ProtectHome=yes",
		"CapabilityBoundingSet=\n", "RestrictAddressFamilies=", "SystemCallFilter=@system-service", "User=hoard",
		"ExecStart=/usr/local/bin/hoard ",
	} {
		if !strings.Contains(unit, "\n"+line) {
			t.Errorf("the unit lacks %q", strings.TrimSpace(line))
		}
	}
	sa, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze is not installed; the unit is not verified (Debian: apt-get install systemd)")
	}
	// verify wants the program to exist: this test's binary stands in.
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	name := filepath.Join(t.TempDir(), "hoard.service")
	if err := os.WriteFile(name, []byte(strings.ReplaceAll(unit, "/usr/local/bin/hoard", self)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(sa, "verify", name).CombinedOutput()
	if err != nil || strings.Contains(string(out), name) {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
	out, err = exec.Command(sa, "security", "--offline=yes", name).CombinedOutput()
	if err != nil {
		t.Logf("systemd-analyze security --offline is not available here (%v); exposure not checked", err)
		return
	}
	m := regexp.MustCompile(`Overall exposure level for hoard.service: ([0-9.]+)`).FindStringSubmatch(string(out))
	if m == nil {
		t.Fatalf("no exposure level in:\n%s", out)
	}
	if lvl, _ := strconv.ParseFloat(m[1], 64); lvl > 2 {
		t.Errorf("exposure level %s, want at most 2:\n%s", m[1], out)
	}
}

// TestInstallDocConfig: the config file in docs/install.md parses, and its
// hash is hunter2's under its salt.
func TestInstallDocConfig(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("docs", "install.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "```yaml\n")
	block, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatal("no yaml block in docs/install.md")
	}
	var lines []cfgLine
	for i, l := range strings.Split(block, "\n") {
		lines = append(lines, cfgLine{file: "install.md", n: i + 1, text: l})
	}
	entries, err := parseConfig(lines)
	if err != nil {
		t.Fatal(err)
	}
	vals := map[string]string{}
	for _, e := range entries {
		vals[e.name] = e.value
	}
	h, err := (&prodOptions{ahAlg: vals["ah-alg"], ahSalt: vals["ah-salt"]}).pwHash()
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := h.Hash("hunter2"); "ed:"+got != vals["a"] {
		t.Errorf("the example account %q is not hunter2's hash %q", vals["a"], got)
	}
}

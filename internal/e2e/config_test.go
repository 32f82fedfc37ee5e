package e2e

// -c FILE: copyparty's config file format, with the same meaning as the
// flags.

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConfigPermMatrix runs the permission matrix with the account and
// volume given by a config file instead of -a and -v.
func TestConfigPermMatrix(t *testing.T) {
	t.Parallel()
	for _, tc := range permCases {
		t.Run("perm "+tc.letters, func(t *testing.T) {
			t.Parallel()
			runPermCase(t, tc, func(dir string) *server {
				conf := configFile(t, fmt.Sprintf(`# the matrix's server
[accounts]
  u: pw1   # the only account

[/]
  %s
  accs:
    %s: u
`, dir, tc.letters))
				return start(t, "-c", conf)
			})
		})
	}
}

// TestConfigEquivalent: a config file with options, accounts, volumes,
// volume flags and an include serves as its flags do.
func TestConfigEquivalent(t *testing.T) {
	t.Parallel()
	pub, priv, inc := t.TempDir(), t.TempDir(), t.TempDir()
	writeFile(t, pub, "p.txt", []byte("PUBLIC"))
	writeFile(t, priv, "s.txt", []byte("SECRET"))
	cdir := t.TempDir()
	writeFile(t, cdir, "accounts.conf", []byte("[accounts]\n  ed: pw#ed  # a # inside a value stays\n  k: pw-k\n"))
	conf := writeFile(t, cdir, "main.conf", []byte(fmt.Sprintf(`[global]
  -e2d, dedup     # comma-separated flags, dashes optional
  srch-hits: 7
  log-level: debug

%% accounts.conf

[/]:
  %s
  accs:
    r: *
    rw: ed

[/priv/]
  %s
  accs:
    rwmd: ed, k
    g: *

[/inbox]
  %s
  accs:
    w: *
  flags:
    nodupe, sz: 1-10
`, pub, priv, inc)))
	flags := []string{"--e2d", "--dedup", "--srch-hits", "7", "--log-level", "debug",
		"-a", "ed:pw#ed", "-a", "k:pw-k",
		"-v", pub + "::r:rw,ed", "-v", priv + ":priv:rwmd,ed,k:g", "-v", inc + ":inbox:w:c,nodupe,sz=1-10"}
	type configProbe struct {
		method, path string
		body         string
		hdr          []string
	}
	probes := []configProbe{
		{method: "GET", path: "/p.txt", body: "", hdr: nil},
		{method: "GET", path: "/priv/s.txt", body: "", hdr: nil},
		{method: "GET", path: "/priv/?ls", body: "", hdr: nil},
		{method: "GET", path: "/priv/?ls", body: "", hdr: []string{"PW: pw-k"}},
		{method: "GET", path: "/priv/?ls", body: "", hdr: []string{"PW: pw#ed"}},
		{method: "PUT", path: "/x.txt", body: "x", hdr: nil},
		{method: "PUT", path: "/x.txt", body: "x", hdr: []string{"PW: pw-k"}},
		{method: "PUT", path: "/inbox/big.txt", body: "0123456789abc", hdr: nil},
		{method: "PUT", path: "/inbox/ok.txt", body: "ok", hdr: nil},
		{method: "GET", path: "/inbox/ok.txt", body: "", hdr: nil},
		{method: "GET", path: "/?ls", body: "", hdr: []string{"PW: pw#ed"}},
	}
	run := func(args ...string) ([]string, *server) {
		s := start(t, args...)
		var out []string
		for _, p := range probes {
			var body []byte
			if p.method == "PUT" {
				body = []byte(p.body)
			}
			resp, _ := s.do(t, p.method, p.path, body, p.hdr...)
			out = append(out, fmt.Sprintf("%s %s %v: %d", p.method, p.path, p.hdr, resp.StatusCode))
		}
		return out, s
	}
	viaFile, s := run("-c", conf)
	if err := s.stop(); err != nil { // one writing server per state folder
		t.Fatal(err)
	}
	for _, d := range []string{pub, priv, inc} { // the second server starts from the same files
		os.RemoveAll(filepath.Join(d, "x.txt"))
		os.RemoveAll(filepath.Join(d, "ok.txt"))
	}
	viaFlags, _ := run(flags...)
	if strings.Join(viaFile, "\n") != strings.Join(viaFlags, "\n") {
		t.Fatalf("config file and flags differ:\nfile:  %q\nflags: %q", viaFile, viaFlags)
	}
	for _, want := range []string{"GET /priv/s.txt []: 200", "GET /priv/?ls []: 401", "PUT /inbox/big.txt []: 413", "GET /priv/?ls [PW: pw#ed]: 200"} {
		if !strings.Contains(strings.Join(viaFile, "\n"), want) {
			t.Errorf("missing %q in %q", want, viaFile)
		}
	}
	if !strings.Contains(s.logs.String(), "level=DEBUG") {
		t.Error("log-level: debug from [global] not applied")
	}
}

// TestConfigWins: an option in a config file wins over the command line,
// as copyparty's do; -a and -v from both add up.
func TestConfigWins(t *testing.T) {
	t.Parallel()
	a, b := t.TempDir(), t.TempDir()
	writeFile(t, a, "a.txt", []byte("A"))
	writeFile(t, b, "b.txt", []byte("B"))
	conf := configFile(t, fmt.Sprintf("[global]\n  log-level: debug\n[/b]\n  %s\n  accs:\n    r:\n", b))
	s := start(t, "--log-level", "warn", "-c", conf, "-v", a+"::r")
	for _, p := range []string{"/a.txt", "/b/b.txt"} {
		resp, body := s.do(t, "GET", p, nil)
		wantStatus(t, resp, body, http.StatusOK)
	}
	if !strings.Contains(s.logs.String(), "level=DEBUG") {
		t.Error("the config file's log-level did not win over --log-level")
	}
}

// TestConfigErrors: each kind of mistake stops the start with status 2
// and names the file and line.
func TestConfigErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cases := []struct {
		name, text string
		line       int
		want       string
	}{
		{name: "outside a section", text: "p: 80\n", line: 1, want: "outside any section"},
		{name: "unknown section", text: "# x\n[bogus]\n", line: 2, want: "unknown section"},
		{name: "groups", text: "[groups]\n  g: a, b\n", line: 1, want: "[groups]"},
		{name: "unclosed header", text: "[global\n", line: 1, want: "closing ]"},
		{name: "unknown option", text: "[global]\n  e2d\n  srch-hitz: 5\n", line: 3, want: "closest is --srch-hits"},
		{name: "bad option value", text: "[global]\n\n  srch-hits: many\n", line: 3, want: "srch-hits"},
		{name: "option needs a value", text: "[global]\n  srch-hits\n", line: 2, want: "needs a value"},
		{name: "option the server refuses", text: "[global]\n  e2d\n  max-ranges: 0\n[/]\n  " + dir + "\n", line: 3, want: "--max-ranges 0: want at least 1"},
		{name: "bad log level", text: "[global]\n  log-level: loud\n", line: 2, want: "loud"},
		{name: "account without colon", text: "[accounts]\n  ed\n", line: 2, want: "user: password"},
		{name: "account bad name", text: "[accounts]\n  e d: pw\n", line: 2, want: "bad user name"},
		{name: "account empty password", text: "[accounts]\n  ed:\n", line: 2, want: "empty password"},
		{name: "account twice", text: "[accounts]\n  ed: a1\n  ed: a2\n", line: 3, want: "defined twice"},
		{name: "same password", text: "[accounts]\n  ed: same\n  k: same\n", line: 3, want: "same password"},
		{name: "volume without folder", text: "[/x]\n  accs:\n    r: *\n", line: 2, want: "must be the folder"},
		{name: "volume without folder at end", text: "[/x]\n", line: 1, want: "must be the folder"},
		{name: "bad permission letter", text: "[/]\n  " + dir + "\n  accs:\n    rz: *\n", line: 4, want: "unknown permission letter"},
		{name: "accs without colon", text: "[/]\n  " + dir + "\n  accs:\n    rw\n", line: 4, want: "accs lines"},
		{name: "users without commas", text: "[/]\n  " + dir + "\n  accs:\n    r: ed k\n", line: 4, want: "commas"},
		{name: "user without account", text: "[accounts]\n  ed: pw\n[/]\n  " + dir + "\n  accs:\n    r: ed\n    w: nobody\n", line: 7, want: "nobody"},
		{name: "unknown volume flag", text: "[/]\n  " + dir + "\n  flags:\n    e2d, bogus\n", line: 4, want: "unknown volume flag"},
		{name: "bad volume flag value", text: "[/]\n  " + dir + "\n  flags:\n    lifetime: soon\n", line: 4, want: "lifetime"},
		{name: "accs outside a volume", text: "[global]\n  accs:\n", line: 2, want: "belongs in a volume"},
		{name: "line after folder", text: "[/]\n  " + dir + "\n  stray\n", line: 3, want: "accs:"},
		{name: "two volumes at one path", text: "[/a]\n  " + dir + "\n[/a/]\n  " + dir + "\n", line: 3, want: "mounted at /a"},
		{name: "missing include", text: "[global]\n  e2d\n% nope.conf\n", line: 3, want: "nope.conf"},
		{name: "c in global", text: "[global]\n  c: other.conf\n", line: 2, want: "% FILE"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			conf := configFile(t, tc.text)
			code, _, stderr := runHoard(t, "-c", conf)
			if code != 2 || !strings.Contains(stderr, tc.want) {
				t.Fatalf("exit %d, stderr %q; want 2 and %q", code, stderr, tc.want)
			}
			if at := fmt.Sprintf("%s:%d: ", conf, tc.line); tc.line > 0 && !strings.Contains(stderr, at) {
				t.Fatalf("stderr %q does not name %s", stderr, at)
			}
			if strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
				t.Errorf("more than one line: %q", stderr)
			}
		})
	}
	t.Run("include loop", func(t *testing.T) {
		d := t.TempDir()
		a := writeFile(t, d, "a.conf", []byte("[global]\n  e2d\n% b.conf\n"))
		writeFile(t, d, "b.conf", []byte("\n% a.conf\n"))
		code, _, stderr := runHoard(t, "-c", a)
		if want := filepath.Join(d, "b.conf") + ":2: "; code != 2 || !strings.Contains(stderr, want) || !strings.Contains(stderr, "includes itself") {
			t.Fatalf("exit %d, stderr %q; want 2 naming %s", code, stderr, want)
		}
	})
	t.Run("missing file", func(t *testing.T) {
		code, _, stderr := runHoard(t, "-c", filepath.Join(dir, "none.conf"))
		if code != 2 || !strings.Contains(stderr, "none.conf") {
			t.Fatalf("exit %d, stderr %q", code, stderr)
		}
	})
}

// TestConfigErrorsHidePasswords: an error about an account or a
// misplaced line does not repeat the password.
func TestConfigErrorsHidePasswords(t *testing.T) {
	t.Parallel()
	for _, text := range []string{
		"[accounts]\n  e d: s3cret-pw\n",
		"ed: s3cret-pw\n",
		"[accounts]\n  ed: s3cret-pw\n[/]\n  /tmp\n  ed: s3cret-pw\n",
		"[global]\n  ah-salt s3cret-pw\n",
	} {
		code, _, stderr := runHoard(t, "-c", configFile(t, text))
		if code != 2 || strings.Contains(stderr, "s3cret") {
			t.Errorf("%q: exit %d, stderr %q; want 2 without the password", text, code, stderr)
		}
	}
	for _, arg := range []string{"s3cret-pw", "bad user:s3cret-pw"} {
		code, _, stderr := runHoard(t, "-a", arg, "-v", t.TempDir()+"::r")
		if code != 2 || strings.Contains(stderr, "s3cret") {
			t.Errorf("-a %q: exit %d, stderr %q; want 2 without the password", arg, code, stderr)
		}
	}
}

// TestConfigFolder: -c FOLDER reads its *.conf files in name order.
func TestConfigFolder(t *testing.T) {
	t.Parallel()
	vol, cdir := t.TempDir(), t.TempDir()
	writeFile(t, vol, "f.txt", []byte("F"))
	writeFile(t, cdir, "10-accounts.conf", []byte("[accounts]\n  ed: pw-ed\n"))
	writeFile(t, cdir, "20-volumes.conf", []byte("[/]\n  "+vol+"\n  accs:\n    r: ed\n"))
	writeFile(t, cdir, "README", []byte("not a config file"))
	s := start(t, "-c", cdir)
	resp, body := s.do(t, "GET", "/f.txt", nil)
	wantStatus(t, resp, body, 401)
	resp, body = s.do(t, "GET", "/f.txt", nil, "PW: pw-ed")
	wantStatus(t, resp, body, 200)
}

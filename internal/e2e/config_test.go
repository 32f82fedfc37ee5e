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

// cfgFile writes a config file and returns its path.
func cfgFile(t *testing.T, text string) string {
	t.Helper()
	return writeFile(t, t.TempDir(), "hoard.conf", []byte(text))
}

// TestConfigPermMatrix runs the permission matrix with the account and
// volume given by a config file instead of -a and -v.
func TestConfigPermMatrix(t *testing.T) {
	t.Parallel()
	for _, tc := range permCases {
		t.Run("perm "+tc.letters, func(t *testing.T) {
			t.Parallel()
			runPermCase(t, tc, func(dir string) *server {
				conf := cfgFile(t, fmt.Sprintf(`# the matrix's server
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
	type probe struct {
		method, path string
		body         string
		hdr          []string
	}
	probes := []probe{
		{"GET", "/p.txt", "", nil},
		{"GET", "/priv/s.txt", "", nil},
		{"GET", "/priv/?ls", "", nil},
		{"GET", "/priv/?ls", "", []string{"PW: pw-k"}},
		{"GET", "/priv/?ls", "", []string{"PW: pw#ed"}},
		{"PUT", "/x.txt", "x", nil},
		{"PUT", "/x.txt", "x", []string{"PW: pw-k"}},
		{"PUT", "/inbox/big.txt", "0123456789abc", nil},
		{"PUT", "/inbox/ok.txt", "ok", nil},
		{"GET", "/inbox/ok.txt", "", nil},
		{"GET", "/?ls", "", []string{"PW: pw#ed"}},
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
	conf := cfgFile(t, fmt.Sprintf("[global]\n  log-level: debug\n[/b]\n  %s\n  accs:\n    r:\n", b))
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
		{"outside a section", "p: 80\n", 1, "outside any section"},
		{"unknown section", "# x\n[bogus]\n", 2, "unknown section"},
		{"groups", "[groups]\n  g: a, b\n", 1, "[groups]"},
		{"unclosed header", "[global\n", 1, "closing ]"},
		{"unknown option", "[global]\n  e2d\n  srch-hitz: 5\n", 3, "closest is --srch-hits"},
		{"bad option value", "[global]\n\n  srch-hits: many\n", 3, "srch-hits"},
		{"option needs a value", "[global]\n  srch-hits\n", 2, "needs a value"},
		{"option the server refuses", "[global]\n  e2d\n  max-ranges: 0\n[/]\n  " + dir + "\n", 3, "--max-ranges 0: want at least 1"},
		{"bad log level", "[global]\n  log-level: loud\n", 2, "loud"},
		{"account without colon", "[accounts]\n  ed\n", 2, "user: password"},
		{"account bad name", "[accounts]\n  e d: pw\n", 2, "bad user name"},
		{"account empty password", "[accounts]\n  ed:\n", 2, "empty password"},
		{"account twice", "[accounts]\n  ed: a1\n  ed: a2\n", 3, "defined twice"},
		{"same password", "[accounts]\n  ed: same\n  k: same\n", 3, "same password"},
		{"volume without folder", "[/x]\n  accs:\n    r: *\n", 2, "must be the folder"},
		{"volume without folder at end", "[/x]\n", 1, "must be the folder"},
		{"bad permission letter", "[/]\n  " + dir + "\n  accs:\n    rz: *\n", 4, "unknown permission letter"},
		{"accs without colon", "[/]\n  " + dir + "\n  accs:\n    rw\n", 4, "accs lines"},
		{"users without commas", "[/]\n  " + dir + "\n  accs:\n    r: ed k\n", 4, "commas"},
		{"user without account", "[accounts]\n  ed: pw\n[/]\n  " + dir + "\n  accs:\n    r: ed\n    w: nobody\n", 7, "nobody"},
		{"unknown volume flag", "[/]\n  " + dir + "\n  flags:\n    e2d, bogus\n", 4, "unknown volume flag"},
		{"bad volume flag value", "[/]\n  " + dir + "\n  flags:\n    lifetime: soon\n", 4, "lifetime"},
		{"accs outside a volume", "[global]\n  accs:\n", 2, "belongs in a volume"},
		{"line after folder", "[/]\n  " + dir + "\n  stray\n", 3, "accs:"},
		{"two volumes at one path", "[/a]\n  " + dir + "\n[/a/]\n  " + dir + "\n", 3, "mounted at /a"},
		{"missing include", "[global]\n  e2d\n% nope.conf\n", 3, "nope.conf"},
		{"c in global", "[global]\n  c: other.conf\n", 2, "% FILE"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			conf := cfgFile(t, tc.text)
			code, _, stderr := rsRunBin(t, "-c", conf)
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
		code, _, stderr := rsRunBin(t, "-c", a)
		if want := filepath.Join(d, "b.conf") + ":2: "; code != 2 || !strings.Contains(stderr, want) || !strings.Contains(stderr, "includes itself") {
			t.Fatalf("exit %d, stderr %q; want 2 naming %s", code, stderr, want)
		}
	})
	t.Run("missing file", func(t *testing.T) {
		code, _, stderr := rsRunBin(t, "-c", filepath.Join(dir, "none.conf"))
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
		code, _, stderr := rsRunBin(t, "-c", cfgFile(t, text))
		if code != 2 || strings.Contains(stderr, "s3cret") {
			t.Errorf("%q: exit %d, stderr %q; want 2 without the password", text, code, stderr)
		}
	}
	for _, arg := range []string{"s3cret-pw", "bad user:s3cret-pw"} {
		code, _, stderr := rsRunBin(t, "-a", arg, "-v", t.TempDir()+"::r")
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

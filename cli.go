package main

// The command line around the flags: -c config files, --version, the
// grouped -h, one-line errors for unknown flags, and the production flags
// (TLS, password hashing).

import (
	"bufio"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"

	"hoard/store"
)

// prodOptions are the flags of cli.go, tls.go and config.go.
type prodOptions struct {
	configs          listFlag
	version          bool
	cert, key        string
	httpOnly         bool
	httpsOnly        bool
	h2               bool
	ahAlg, ahSalt    string
	ahGen            string
	configDirForTest string
	origin           map[string]string // flag name → file:line of the config line that set it last // where the default --ah-salt lives; "" is the user's config folder
}

const helpExamples = `examples:
  hoard -v .::r                                    read-only share of the current folder
  hoard -a ed:hunter2 -v /srv/pub:pub:r:rw,ed     /pub readable by all, writable by ed
  hoard -e2dsa -v /srv/music:music:r               index and search /music
  hoard --cert /etc/hoard/cert.pem -v /srv::r      HTTPS and HTTP on port 3923
  hoard -c /etc/hoard/hoard.conf                   everything from a config file
  echo hunter2 | hoard --ah-alg argon2 --ah-salt SALT --ah-gen -
  hoard up -a hunter2 http://host:3923/pub/ ~/photos   upload (the bulk uploader; hoard up -h)
`

// printHelp writes the flags in their groups, one line each.
func printHelp(w io.Writer, fs *flagSet) {
	fmt.Fprintf(w, "usage: hoard [flags]\n\nAn HTTP file server that speaks copyparty's interface. Flags take one or two\ndashes; their names are copyparty's where it has the feature.\n")
	seen := map[string]bool{}
	line := func(f *flag.Flag) {
		seen[f.Name] = true
		_, usage := flag.UnquoteUsage(f)
		def := ""
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" && !isBool(f) {
			def = fmt.Sprintf(" (default %s)", f.DefValue)
		}
		fmt.Fprintf(w, "  %-20s %s%s\n", fs.helpName(f), usage, def)
	}
	for _, g := range fs.groups {
		fmt.Fprintf(w, "\n%s:\n", g.name)
		for _, n := range g.flags {
			if f := fs.Lookup(n); f != nil {
				line(f)
			}
		}
	}
	var rest []*flag.Flag
	fs.VisitAll(func(f *flag.Flag) {
		if !seen[f.Name] {
			rest = append(rest, f)
		}
	})
	if len(rest) > 0 {
		fmt.Fprintf(w, "\nother:\n")
		for _, f := range rest {
			line(f)
		}
	}
	fmt.Fprintf(w, "\n%s", helpExamples)
}

func isBool(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// parseArgs parses the command line and the config files it names (which
// win, as copyparty's do). It handles -h and --version itself; exit
// reports that run should return code now.
func parseArgs(fs *flagSet, p *prodOptions, args []string, stdout, stderr io.Writer) (code int, exit bool) {
	fs.SetOutput(io.Discard) // errors are ours to print, in one line
	fs.Usage = func() {}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printHelp(stdout, fs)
			return 0, true
		}
		fmt.Fprintf(stderr, "hoard: %s\n", flagError(fs.FlagSet, err))
		return 2, true
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "hoard: unexpected argument %q (flags come as -name or --name; see -h)\n", fs.Arg(0))
		return 2, true
	}
	if p.version {
		fmt.Fprintln(stdout, versionLine())
		return 0, true
	}
	var all []cfgEntry
	at := map[string]string{} // -a and -v values from config files → file:line
	for _, c := range slices.Clone(p.configs) {
		entries, err := readConfig(c)
		if err == nil {
			err = applyConfig(fs.FlagSet, entries)
		}
		if err != nil {
			fmt.Fprintf(stderr, "hoard: %v\n", err)
			return 2, true
		}
		for _, e := range entries {
			if e.name == "a" || e.name == "v" {
				at[e.value] = e.at // checked with their place already (applyConfig)
				continue
			}
			if p.origin == nil {
				p.origin = map[string]string{}
			}
			p.origin[e.name] = e.at
		}
		all = append(all, entries...)
	}
	if len(all) > 0 {
		if err := checkConfigRefs(listValues(fs.FlagSet, "a"), listValues(fs.FlagSet, "v"), at, all); err != nil {
			fmt.Fprintf(stderr, "hoard: %v\n", err)
			return 2, true
		}
	}
	if p.ahGen != "" {
		return p.genHashes(stdout, stderr), true
	}
	return 0, false
}

// locate prefixes an error about a flag's value with the file and line
// of the config file that set it, if one did.
func (p *prodOptions) locate(msg string) string {
	for name, at := range p.origin {
		for _, dash := range []string{"-", "--"} {
			if rest, ok := strings.CutPrefix(msg, dash+name); ok && (strings.HasPrefix(rest, " ") || strings.HasPrefix(rest, ":")) {
				return at + ": " + msg
			}
		}
	}
	return msg
}

func listValues(fs *flag.FlagSet, name string) []string {
	if f := fs.Lookup(name); f != nil {
		if l, ok := f.Value.(*listFlag); ok {
			return *l
		}
	}
	return nil
}

// flagError rewrites the flag package's errors: an unknown flag names the
// closest known one.
func flagError(fs *flag.FlagSet, err error) string {
	msg := err.Error()
	name, ok := strings.CutPrefix(msg, "flag provided but not defined: -")
	if !ok {
		return msg
	}
	return unknownFlag(fs, name)
}

func unknownFlag(fs *flag.FlagSet, name string) string {
	name = strings.TrimLeft(name, "-")
	best, bestD := "", 1<<30
	fs.VisitAll(func(f *flag.Flag) {
		if d := editDistance(name, f.Name); d < bestD {
			best, bestD = f.Name, d
		}
	})
	if bestD > max(2, len(name)/3) {
		return fmt.Sprintf("unknown flag -%s (see -h)", name) // nothing close: a guess would mislead
	}
	return fmt.Sprintf("unknown flag -%s; the closest is %s (see -h)", name, dashed(best))
}

// editDistance is the Levenshtein distance of two short strings.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// versionLine is the module version and the commit it was built from.
func versionLine() string {
	v := "hoard (unknown version)"
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v + " " + runtime.Version()
	}
	v = "hoard " + bi.Main.Version
	s := map[string]string{}
	for _, kv := range bi.Settings {
		s[kv.Key] = kv.Value
	}
	if r := s["vcs.revision"]; r != "" {
		v += " " + s["vcs"] + " " + r
		if t := s["vcs.time"]; t != "" {
			v += " " + t
		}
		if s["vcs.modified"] == "true" {
			v += " (modified)"
		}
	}
	return v + " " + bi.GoVersion + " " + runtime.GOOS + "/" + runtime.GOARCH
}

// pwHash is --ah-alg with its salt; nil when passwords are not hashed.
func (p *prodOptions) pwHash() (*store.PwHash, error) {
	if p.ahAlg == "" || p.ahAlg == "none" || strings.HasPrefix(p.ahAlg, "none,") {
		return nil, nil
	}
	salt := p.ahSalt
	if salt == "" {
		var err error
		if salt, err = p.defaultSalt(); err != nil {
			return nil, fmt.Errorf("--ah-alg needs a salt: %w; give one with --ah-salt", err)
		}
	}
	h, err := store.ParsePwHash(p.ahAlg, salt)
	if err != nil {
		return nil, err
	}
	return h, nil
}

// defaultSalt reads the salt kept in the user's config folder, making a
// random one the first time (as copyparty keeps its own).
func (p *prodOptions) defaultSalt() (string, error) {
	dir := p.configDirForTest
	if dir == "" {
		d, err := os.UserConfigDir()
		if err != nil {
			return "", err
		}
		dir = filepath.Join(d, "hoard")
	}
	name := filepath.Join(dir, "ah-salt.txt")
	if b, err := os.ReadFile(name); err == nil {
		if s := strings.TrimSpace(string(b)); s != "" {
			return s, nil
		}
	}
	b := make([]byte, 18)
	rand.Read(b)
	salt := base64.StdEncoding.EncodeToString(b)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		if errors.Is(err, os.ErrExist) { // made meanwhile by another start
			return p.defaultSalt()
		}
		return "", err
	}
	_, err = f.WriteString(salt + "\n")
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(name)
		return "", err
	}
	return salt, nil
}

// genHashes prints the hash of --ah-gen's password, or of each line of
// stdin with --ah-gen -.
func (p *prodOptions) genHashes(stdout, stderr io.Writer) int {
	h, err := p.pwHash()
	if err == nil && h == nil {
		err = errors.New("--ah-gen needs --ah-alg (argon2, scrypt or sha2)")
	}
	if err != nil {
		fmt.Fprintf(stderr, "hoard: %v\n", err)
		return 2
	}
	pws := []string{p.ahGen}
	if p.ahGen == "-" {
		pws = nil
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			if pw := strings.TrimSpace(sc.Text()); pw != "" { // as copyparty reads them
				pws = append(pws, pw)
			}
		}
		if err := sc.Err(); err != nil {
			fmt.Fprintf(stderr, "hoard: reading stdin: %v\n", err)
			return 1
		}
	}
	for _, pw := range pws {
		s, err := h.Hash(pw)
		if err != nil {
			fmt.Fprintf(stderr, "hoard: %s\n", err.Error())
			return 2
		}
		fmt.Fprintln(stdout, s)
	}
	return 0
}

package main

// Config files in copyparty's format (-c FILE):
//
//	[global]            # options: anything from -h, dashes optional
//	  p: 3923           # "name: value"; inline comments need two spaces before the #
//	  e2dsa, dedup      # flags without a value, comma-separated
//	[accounts]
//	  ed: hunter2       # user: password (or its --ah-alg hash)
//	[/pub]              # a volume at /pub
//	  /srv/pub          # first line: the folder it serves
//	  accs:
//	    r: *            # permission letters: users (* is everyone)
//	    rw: ed
//	  flags:
//	    e2d, fk: 8      # volume flags; "name: value" for one with a value
//	% other.conf        # include a file (or every *.conf of a folder), relative to this one
//
// A file is turned into the very flag values the command line gives:
// [global] lines set flags by name, [accounts] lines are -a USER:PASS and
// each volume is one -v SRC:DST:PERMS...:c,FLAGS. They are set after the
// command line, so a config file wins over it (as copyparty's do); -a and
// -v add up. Every error names the file and line.

import (
	"bytes"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"hoard/store"
)

// cfgEntry is one flag value a config file gives.
type cfgEntry struct {
	at       string // file:line
	name     string // the flag
	value    string
	hasValue bool
	// For a volume (-v): where each user got permissions, to name the line
	// of a user without an account.
	users map[string]string
}

// cfgLine is one line of a config file, includes expanded.
type cfgLine struct {
	file string
	n    int
	text string
}

func (l cfgLine) at() string { return fmt.Sprintf("%s:%d", l.file, l.n) }

// cfgFiles is where config files are read from: the file system, or a map
// in tests.
type cfgFiles interface {
	ReadFile(name string) ([]byte, error)
	ReadDir(name string) ([]fs.DirEntry, error)
	Stat(name string) (fs.FileInfo, error)
}

type osFiles struct{}

func (osFiles) ReadFile(name string) ([]byte, error)       { return os.ReadFile(name) }
func (osFiles) ReadDir(name string) ([]fs.DirEntry, error) { return os.ReadDir(name) }
func (osFiles) Stat(name string) (fs.FileInfo, error)      { return os.Stat(name) }

const (
	maxIncludeDepth = 16
	maxConfigSize   = 4 << 20
)

// readConfig reads the config file (or folder of *.conf files) at name.
func readConfig(name string) ([]cfgEntry, error) {
	lines, err := expandConfig(osFiles{}, name, "", nil)
	if err != nil {
		return nil, err
	}
	return parseConfig(lines)
}

// expandConfig reads name (a file, or a folder whose *.conf files are read
// in name order) with its % includes in place. from is the file:line of
// the include ("" for -c); stack holds the files being read, to refuse
// include loops.
func expandConfig(files cfgFiles, name, from string, stack []string) ([]cfgLine, error) {
	where := "-c " + name
	if from != "" {
		where = from
	}
	if abs, err := filepath.Abs(name); err == nil && files == (osFiles{}) {
		name = abs
	}
	name = filepath.Clean(name)
	if slices.Contains(stack, name) {
		return nil, fmt.Errorf("%s: %s includes itself", where, name)
	}
	if len(stack) >= maxIncludeDepth {
		return nil, fmt.Errorf("%s: includes nested more than %d deep", where, maxIncludeDepth)
	}
	fi, err := files.Stat(name)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	stack = append(stack, name)
	if fi.IsDir() {
		ents, err := files.ReadDir(name)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		var out []cfgLine
		for _, e := range ents { // ReadDir sorts by name
			if e.IsDir() || !strings.HasSuffix(strings.ToLower(e.Name()), ".conf") {
				continue
			}
			more, err := expandConfig(files, filepath.Join(name, e.Name()), where, stack)
			if err != nil {
				return nil, err
			}
			out = append(out, more...)
		}
		return out, nil
	}
	if fi.Size() > maxConfigSize {
		return nil, fmt.Errorf("%s: %s is larger than %d MiB; not a config file?", where, name, maxConfigSize>>20)
	}
	data, err := files.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	var out []cfgLine
	for i, raw := range bytes.Split(data, []byte("\n")) {
		l := cfgLine{file: name, n: i + 1, text: strings.TrimSuffix(string(raw), "\r")}
		if inc, ok := strings.CutPrefix(cfgStrip(l.text), "% "); ok {
			inc = strings.TrimSpace(inc)
			if inc == "" {
				return nil, fmt.Errorf("%s: %% include without a file name", l.at())
			}
			if !filepath.IsAbs(inc) {
				inc = filepath.Join(filepath.Dir(name), inc)
			}
			more, err := expandConfig(files, inc, l.at(), stack)
			if err != nil {
				return nil, err
			}
			out = append(out, more...)
			continue
		}
		out = append(out, l)
	}
	return out, nil
}

// cfgStrip drops an inline comment (two spaces, then #) and the spaces
// around a line; a # without two spaces before it is part of the value
// (passwords may hold one).
func cfgStrip(s string) string {
	s, _, _ = strings.Cut(s, "  #")
	return strings.TrimSpace(s)
}

// cfgSplit splits "a, b, c: 3" into the flags a and b and c with the value
// 3 (copyparty's rule: commas separate names until the first colon, and
// everything after that colon is the value).
func cfgSplit(s string) []cfgEntry {
	var out []cfgEntry
	for {
		s = strings.TrimSpace(s)
		if s == "" {
			return out
		}
		comma, colon := strings.IndexByte(s, ','), strings.IndexByte(s, ':')
		switch {
		case comma < 0 && colon < 0:
			return append(out, cfgEntry{name: s})
		case comma >= 0 && (colon < 0 || comma < colon):
			out = append(out, cfgEntry{name: strings.TrimSpace(s[:comma])})
			s = s[comma+1:]
		default:
			return append(out, cfgEntry{name: strings.TrimSpace(s[:colon]), value: strings.TrimSpace(s[colon+1:]), hasValue: true})
		}
	}
}

// configError is an error at a line of a config file.
func configError(l cfgLine, format string, args ...any) error {
	return fmt.Errorf("%s: %s", l.at(), fmt.Sprintf(format, args...))
}

// cfgVolume is a [/vpath] section being read.
type cfgVolume struct {
	head  cfgLine
	vpath string
	src   string
	items []string // PERMS,USERS... and c,FLAG=VALUE parts of -v
	users map[string]string
}

// parseConfig turns a config file's lines into flag values.
func parseConfig(lines []cfgLine) ([]cfgEntry, error) {
	var out []cfgEntry
	section := "" // "[global]", "[accounts]", "vol"
	sub := ""     // in a volume: "", "accs:", "flags:"
	var vol *cfgVolume
	endVolume := func() error {
		if vol == nil {
			return nil
		}
		v := vol
		vol = nil
		if v.src == "" {
			return configError(v.head, "the first line after [/%s] must be the folder that volume serves", v.vpath)
		}
		spec := v.src + ":" + v.vpath + ":" + strings.Join(v.items, ":")
		if _, err := store.ParseVolume(spec); err != nil { // each part was checked; this is a guard
			return configError(v.head, "%s", err.Error())
		}
		out = append(out, cfgEntry{at: v.head.at(), name: "v", value: spec, hasValue: true, users: v.users})
		return nil
	}
	for _, l := range lines {
		ln := cfgStrip(l.text)
		if before, _, _ := strings.Cut(ln, "#"); strings.TrimSpace(before) == "" {
			continue // blank, or a comment
		}
		if strings.HasPrefix(ln, "[") && strings.HasSuffix(ln, "]:") {
			ln = ln[:len(ln)-1]
		}
		if strings.HasPrefix(ln, "[") {
			if err := endVolume(); err != nil {
				return nil, err
			}
			if !strings.HasSuffix(ln, "]") {
				return nil, configError(l, "section header %q lacks its closing ]", ln)
			}
			name := strings.TrimSpace(ln[1 : len(ln)-1])
			switch {
			case name == "global" || name == "accounts":
				section = "[" + name + "]"
			case name == "groups":
				return nil, configError(l, "[groups] is not supported by hoard; give each user its permissions")
			case strings.HasPrefix(name, "/"):
				vp := strings.Trim(name, "/")
				if strings.ContainsAny(vp, ":") {
					return nil, configError(l, "volume path [%s]: a ':' cannot be part of it", name)
				}
				if _, err := store.ParseVolume("x:" + vp + ":"); err != nil {
					return nil, configError(l, "volume path [%s]: %s", name, cfgErrText(err, "x:"+vp+":"))
				}
				section, sub = "vol", ""
				vol = &cfgVolume{head: l, vpath: vp, users: map[string]string{}}
			default:
				return nil, configError(l, "unknown section %q (want [global], [accounts] or [/path] for a volume)", ln)
			}
			continue
		}
		if ln == "accs:" || ln == "flags:" {
			if vol == nil {
				return nil, configError(l, "%q belongs in a volume's section ([/path])", ln)
			}
			if vol.src == "" {
				return nil, configError(l, "the first line after [/%s] must be the folder that volume serves, before %q", vol.vpath, ln)
			}
			sub = ln
			continue
		}
		switch {
		case section == "":
			return nil, configError(l, "a line (%s) outside any section; start with [global], [accounts] or [/path]", cfgQuote(ln))
		case section == "[global]":
			for _, e := range cfgSplit(ln) {
				e.name = strings.TrimLeft(e.name, "-")
				e.at = l.at()
				switch {
				case e.name == "":
					return nil, configError(l, "an option without a name")
				case strings.ContainsAny(e.name, " \t="):
					return nil, configError(l, "option %s: a name has no spaces or =; write \"name: value\"", cfgQuote(e.name))
				case e.name == "c":
					return nil, configError(l, "config files include others with a line \"%% FILE\", not with c")
				}
				out = append(out, e)
			}
		case section == "[accounts]":
			user, pass, ok := strings.Cut(ln, ":")
			user, pass = strings.TrimSpace(user), strings.TrimSpace(pass)
			if !ok {
				return nil, configError(l, "lines in [accounts] are \"user: password\"")
			}
			if _, err := store.ParseAccount(user + ":" + pass); err != nil {
				return nil, configError(l, "%s", err.Error())
			}
			out = append(out, cfgEntry{at: l.at(), name: "a", value: user + ":" + pass, hasValue: true})
		case vol.src == "":
			if strings.Contains(ln, ":") {
				return nil, configError(l, "the first line after [/%s] must be the folder that volume serves, and a ':' cannot be part of a folder here (%s)", vol.vpath, cfgQuote(ln))
			}
			vol.src = ln
		case sub == "accs:":
			if err := vol.addAccs(l, ln); err != nil {
				return nil, err
			}
		case sub == "flags:":
			if err := vol.addFlags(l, ln); err != nil {
				return nil, err
			}
		default:
			return nil, configError(l, "%s: after a volume's folder come \"accs:\" and \"flags:\" sections", cfgQuote(ln))
		}
	}
	if err := endVolume(); err != nil {
		return nil, err
	}
	return out, nil
}

// cfgQuote quotes the start of a line an error is about, up to a colon or
// space: a misplaced line may hold a password after it.
func cfgQuote(ln string) string {
	cut := len(ln)
	if i := strings.IndexAny(ln, ": \t="); i >= 0 {
		cut = i
	}
	cut = min(cut, 40)
	if cut < len(ln) {
		return strconv.Quote(ln[:cut]) + "…"
	}
	return strconv.Quote(ln)
}

// cfgErrText is store.ParseVolume's error without its echo of the spec.
func cfgErrText(err error, spec string) string {
	s, _ := strings.CutPrefix(err.Error(), fmt.Sprintf("volume %q: ", spec))
	return s
}

// addAccs reads "rw: user1, user2" (no users: everyone).
func (v *cfgVolume) addAccs(l cfgLine, ln string) error {
	letters, users, ok := strings.Cut(ln, ":")
	letters = strings.TrimSpace(letters)
	if !ok || strings.Contains(users, ":") || letters == "" {
		return configError(l, "accs lines are \"PERMS: user1, user2\" with permission letters of rwmdgGha.A")
	}
	if _, err := store.ParsePerm(letters); err != nil {
		return configError(l, "%s", err.Error())
	}
	var names []string
	for _, f := range strings.Split(users, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if strings.ContainsAny(f, " \t") {
			return configError(l, "users %q: separate users with commas", strings.TrimSpace(users))
		}
		if strings.HasPrefix(f, "@") {
			return configError(l, "user %q: groups are not supported by hoard", f)
		}
		names = append(names, f)
	}
	if len(names) == 0 {
		names = []string{"*"}
	}
	item := letters + "," + strings.Join(names, ",")
	spec := "x:" + v.vpath + ":" + item
	if _, err := store.ParseVolume(spec); err != nil {
		return configError(l, "%s", cfgErrText(err, spec))
	}
	for _, n := range names {
		if _, ok := v.users[n]; !ok && n != "*" {
			v.users[n] = l.at()
		}
	}
	v.items = append(v.items, item)
	return nil
}

// addFlags reads "e2d, nodupe, fk: 8".
func (v *cfgVolume) addFlags(l cfgLine, ln string) error {
	for _, e := range cfgSplit(ln) {
		name := strings.TrimLeft(e.name, "-")
		if name == "" || strings.Trim(name, "abcdefghijklmnopqrstuvwxyz0123456789_-") != "" {
			return configError(l, "volume flag %q: a name of lowercase letters, digits, _ and -", e.name)
		}
		item := "c," + name
		if e.hasValue {
			if strings.ContainsAny(e.value, ":,") {
				return configError(l, "volume flag %s: value %q: a ':' or ',' cannot be part of it", name, e.value)
			}
			item += "=" + e.value
		}
		spec := "x:" + v.vpath + ":" + item
		if _, err := store.ParseVolume(spec); err != nil {
			return configError(l, "%s", cfgErrText(err, spec))
		}
		v.items = append(v.items, item)
	}
	return nil
}

// applyConfig sets the flags the entries give, in order.
func applyConfig(fset *flag.FlagSet, entries []cfgEntry) error {
	for _, e := range entries {
		f := fset.Lookup(e.name)
		if f == nil {
			return fmt.Errorf("%s: %s", e.at, unknownFlag(fset, e.name))
		}
		v := e.value
		if !e.hasValue {
			if !isBool(f) {
				return fmt.Errorf("%s: %s needs a value (%s: VALUE)", e.at, e.name, e.name)
			}
			v = "true"
		}
		switch e.name {
		case "a":
			if _, err := store.ParseAccount(v); err != nil {
				return fmt.Errorf("%s: %s", e.at, err.Error())
			}
		case "v":
			if _, err := store.ParseVolume(v); err != nil {
				return fmt.Errorf("%s: %s", e.at, err.Error())
			}
		}
		if err := fset.Set(e.name, v); err != nil {
			return fmt.Errorf("%s: %s: %v", e.at, e.name, err)
		}
	}
	return nil
}

// checkConfigRefs finds, with their file and line, what store's validation
// would refuse without one: permissions for a user without an account, two
// volumes at one path, an account defined twice or two with one password.
// accounts and volumes are every -a and -v, from the command line too; at
// says where a value came from ("" for the command line).
func checkConfigRefs(accounts, volumes []string, at map[string]string, entries []cfgEntry) error {
	users := map[string]string{}
	pws := map[string]string{}
	for _, a := range accounts {
		user, pass, _ := strings.Cut(a, ":")
		if prev, ok := users[user]; ok && at[a] != "" {
			return fmt.Errorf("%s: account %q is defined twice (also %s)", at[a], user, orFlags(prev))
		}
		if other, ok := pws[pass]; ok && at[a] != "" {
			return fmt.Errorf("%s: accounts %q and %q have the same password (passwords identify users and must be unique)", at[a], other, user)
		}
		users[user], pws[pass] = at[a], user
	}
	mounted := map[string]string{}
	for _, v := range volumes {
		spec, err := store.ParseVolume(v)
		if err != nil {
			continue // the command line's; storeConfig says what is wrong
		}
		if prev, ok := mounted[spec.VPath]; ok && at[v] != "" {
			return fmt.Errorf("%s: a volume is mounted at /%s already (%s)", at[v], spec.VPath, orFlags(prev))
		}
		mounted[spec.VPath] = at[v]
	}
	for _, e := range entries {
		names := make([]string, 0, len(e.users))
		for u := range e.users {
			names = append(names, u)
		}
		slices.Sort(names)
		for _, u := range names {
			if _, ok := users[u]; !ok {
				return fmt.Errorf("%s: permissions for %q, who has no account (add \"%s: PASSWORD\" to [accounts])", e.users[u], u, u)
			}
		}
	}
	return nil
}

func orFlags(at string) string {
	if at == "" {
		return "on the command line"
	}
	return at
}

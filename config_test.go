package main

import (
	"flag"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"

	"hoard/store"
)

func parseMap(t testing.TB, files fstest.MapFS, name string) ([]cfgEntry, error) {
	t.Helper()
	lines, err := expandConfig(files, name, "", nil)
	if err != nil {
		return nil, err
	}
	return parseConfig(lines)
}

// TestConfigParse: every construct of the format, turned into flag values.
func TestConfigParse(t *testing.T) {
	files := fstest.MapFS{
		"etc/main.conf": {Data: []byte(`# not actually YAML
[global]
  p: 8086, 3939  # two ports
  -e2dsa  # dashes are optional
  dedup, e2ts, srch-hits: 5

[accounts]
  ed: 12#3   # a # without two spaces before it is the password's
  k: k:k

% inc/more.conf

[/]:
  .
  accs:
    r: *
    rw: ed
[/priv/]
  ./priv
  accs:
    r: k
    rwmd: ed,k
    g:
  flags:
    e2d, nodupe
    fk: 4
    sz: 1k-3g
`)},
		"etc/inc/more.conf": {Data: []byte("\r\n[global]\r\n  log-level: debug\r\n")},
	}
	got, err := parseMap(t, files, "etc/main.conf")
	if err != nil {
		t.Fatal(err)
	}
	type kv struct{ at, name, value string }
	var flat []kv
	for _, e := range got {
		v := e.value
		if !e.hasValue {
			v = "<bool>"
		}
		flat = append(flat, kv{e.at, e.name, v})
	}
	want := []kv{
		{"etc/main.conf:3", "p", "8086, 3939"},
		{"etc/main.conf:4", "e2dsa", "<bool>"},
		{"etc/main.conf:5", "dedup", "<bool>"},
		{"etc/main.conf:5", "e2ts", "<bool>"},
		{"etc/main.conf:5", "srch-hits", "5"},
		{"etc/main.conf:8", "a", "ed:12#3"},
		{"etc/main.conf:9", "a", "k:k:k"},
		{"etc/inc/more.conf:3", "log-level", "debug"},
		{"etc/main.conf:13", "v", ".::r,*:rw,ed"},
		{"etc/main.conf:18", "v", "./priv:priv:r,k:rwmd,ed,k:g,*:c,e2d:c,nodupe:c,fk=4:c,sz=1k-3g"},
	}
	if !reflect.DeepEqual(flat, want) {
		t.Fatalf("got\n%q\nwant\n%q", flat, want)
	}
	if u := got[9].users; !reflect.DeepEqual(u, map[string]string{"k": "etc/main.conf:21", "ed": "etc/main.conf:22"}) {
		t.Errorf("users = %v", u)
	}
	for _, e := range got {
		if e.name == "v" {
			if _, err := store.ParseVolume(e.value); err != nil {
				t.Errorf("%s does not parse as -v: %v", e.value, err)
			}
		}
	}
}

// TestConfigParseErrors: each mistake names its file and line.
func TestConfigParseErrors(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{"x\n", "c.conf:1: "},
		{"\n\n[global]\n  accs:\n", "c.conf:4: "},
		{"[/a]\n  /x\n  junk\n", "c.conf:3: "},
		{"[/a]\n  /x\n  accs:\n    r: a b\n", "c.conf:4: "},
		{"[/a]\n  /x\n  accs:\n    q: a\n", "c.conf:4: unknown permission letter"},
		{"[/a]\n  /x\n  flags:\n    fk: 99\n", "c.conf:4: "},
		{"[/a]\n  /x\n  flags:\n    hist: /a:b\n", "c.conf:4: "},
		{"[/a]\n  /x\n  flags:\n    Bad\n", "c.conf:4: "},
		{"[/a]\n  /x\n  accs:\n    r: @grp\n", "c.conf:4: user \"@grp\": groups"},
		{"[/a:b]\n", "c.conf:1: "},
		{"[/..]\n", "c.conf:1: "},
		{"[/a]\n  c:/x\n", "c.conf:2: "},
		{"[accounts]\n  :pw\n", "c.conf:2: "},
		{"% \n", "c.conf:1: "},
		{"% c.conf\n", "c.conf:1: "},
		{"[global]\n  , \n", "c.conf:2: "},
	} {
		_, err := parseMap(t, fstest.MapFS{"c.conf": {Data: []byte(tc.text)}}, "c.conf")
		if err == nil || !strings.HasPrefix(err.Error(), "c.conf:") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err %v, want one starting %q", tc.text, err, tc.want)
		}
	}
}

func testFlagSet() (*flag.FlagSet, *options) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	var o options
	fs.Var(&o.accounts, "a", "")
	fs.Var(&o.volumes, "v", "")
	fs.IntVar(&o.srchHits, "srch-hits", 200, "")
	fs.BoolVar(&o.e2d, "e2d", false, "")
	fs.StringVar(&o.logLevel, "log-level", "info", "")
	return fs, &o
}

func TestApplyConfig(t *testing.T) {
	fs, o := testFlagSet()
	if err := fs.Parse([]string{"--srch-hits", "9", "-a", "x:y"}); err != nil {
		t.Fatal(err)
	}
	entries := []cfgEntry{
		{at: "f:1", name: "srch-hits", value: "5", hasValue: true},
		{at: "f:2", name: "e2d"},
		{at: "f:3", name: "a", value: "ed:pw", hasValue: true},
	}
	if err := applyConfig(fs, entries); err != nil {
		t.Fatal(err)
	}
	if o.srchHits != 5 || !o.e2d || !reflect.DeepEqual([]string(o.accounts), []string{"x:y", "ed:pw"}) {
		t.Fatalf("options %+v", o)
	}
	for _, tc := range []struct {
		e    cfgEntry
		want string
	}{
		{cfgEntry{at: "f:7", name: "srch-hit", value: "1", hasValue: true}, "f:7: unknown flag -srch-hit; the closest is --srch-hits"},
		{cfgEntry{at: "f:8", name: "srch-hits"}, "f:8: srch-hits needs a value"},
		{cfgEntry{at: "f:9", name: "srch-hits", value: "x", hasValue: true}, "f:9: srch-hits: "},
		{cfgEntry{at: "f:10", name: "a", value: "nopass", hasValue: true}, "f:10: an account without a colon"},
		{cfgEntry{at: "f:11", name: "v", value: "/x", hasValue: true}, "f:11: volume"},
		{cfgEntry{at: "f:12", name: "e2d", value: "maybe", hasValue: true}, "f:12: e2d: "},
	} {
		err := applyConfig(fs, []cfgEntry{tc.e})
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.e, err, tc.want)
		}
	}
}

func TestCheckConfigRefs(t *testing.T) {
	at := map[string]string{"b:pw": "f:2", "/v:x:r": "f:3", "b:pw-a": "f:4"}
	vol := []cfgEntry{{name: "v", users: map[string]string{"zed": "f:9"}}}
	for _, tc := range []struct {
		accounts, volumes []string
		entries           []cfgEntry
		want              string
	}{
		{[]string{"a:pw", "b:pw"}, nil, nil, "f:2: accounts \"a\" and \"b\" have the same password"},
		{[]string{"b:pw-a", "b:pw"}, nil, nil, "f:2: account \"b\" is defined twice"},
		{nil, []string{"/w:x:r", "/v:x:r"}, nil, "f:3: a volume is mounted at /x already (on the command line)"},
		{[]string{"a:pw-a"}, nil, vol, "f:9: permissions for \"zed\""},
	} {
		err := checkConfigRefs(tc.accounts, tc.volumes, at, tc.entries)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%v %v: %v, want %q", tc.accounts, tc.volumes, err, tc.want)
		}
	}
	if err := checkConfigRefs([]string{"zed:pw"}, []string{"/v:x:r"}, at, vol); err != nil {
		t.Errorf("a good configuration: %v", err)
	}
}

func TestCfgSplit(t *testing.T) {
	for in, want := range map[string]string{
		"a":             "a",
		"a, b, c: 3":    "a b c=3",
		"k: v, w: x":    "k=v, w: x",
		"p: 8086, 3939": "p=8086, 3939",
		"a,,b":          "a  b",
		"":              "",
	} {
		var got []string
		for _, e := range cfgSplit(in) {
			if e.hasValue {
				got = append(got, e.name+"="+e.value)
			} else {
				got = append(got, e.name)
			}
		}
		if strings.Join(got, " ") != want {
			t.Errorf("cfgSplit(%q) = %q, want %q", in, strings.Join(got, " "), want)
		}
	}
}

// FuzzConfig: any file either parses into values the flags accept the
// way a command line gives them (each -a and -v parses, every entry
// names a line of the file) or is refused with its file and line.
func FuzzConfig(f *testing.F) {
	for _, s := range []string{
		"[global]\n  p: 80\n  e2d, dedup\n[accounts]\n  ed: pw\n[/]\n  /srv\n  accs:\n    rw: ed\n    r:\n  flags:\n    fk: 4, nodupe\n",
		"% inc.conf\n[/x]:\n  ./a b\n",
		"[/a]\n  /x  # c\n  accs:\n    A: *\n",
		"# only a comment\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		files := fstest.MapFS{
			"c.conf":   {Data: []byte(text)},
			"inc.conf": {Data: []byte("[global]\n  e2d\n")},
		}
		entries, err := parseMap(t, files, "c.conf")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "c.conf:") && !strings.HasPrefix(err.Error(), "inc.conf:") && !strings.HasPrefix(err.Error(), "-c ") {
				t.Fatalf("error without a place: %v", err)
			}
			return
		}
		nlines := strings.Count(text, "\n") + 1
		for _, e := range entries {
			file, line, ok := strings.Cut(e.at, ":")
			n, err := strconv.Atoi(line)
			if !ok || err != nil || n < 1 || (file == "c.conf" && n > nlines) || (file != "c.conf" && file != "inc.conf") {
				t.Fatalf("entry %+v: bad place", e)
			}
			switch {
			case !e.hasValue: // applyConfig refuses a valueless -a or -v, with its place
			case e.name == "a":
				if _, err := store.ParseAccount(e.value); err != nil {
					t.Fatalf("%s: -a %q does not parse: %v", e.at, e.value, err)
				}
			case e.name == "v":
				if _, err := store.ParseVolume(e.value); err != nil {
					t.Fatalf("%s: -v %q does not parse: %v", e.at, e.value, err)
				}
			}
			if e.name == "" {
				t.Fatalf("%s: entry without a name", e.at)
			}
			if strings.ContainsAny(e.name, " \t\n") {
				t.Fatalf("%s: name %q", e.at, e.name)
			}
		}
	})
}

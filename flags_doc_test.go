package main

import (
	"bufio"
	"flag"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// docFlag is one row of docs/flags.md's tables.
type docFlag struct {
	line    int
	name    string // the flag, without dashes
	cell    string // the first cell: "--hist DIR"
	def     string // the default cell
	meaning string
	cparty  string
}

// docGroup is one "## " section of docs/flags.md.
type docGroup struct {
	name  string
	flags []docFlag
}

// readFlagsDoc reads the groups of docs/flags.md: each "## " heading
// starts one, and each table row whose first cell is a backquoted flag
// ("| `-p PORTS` | ...") is one of its flags. Other lines (prose, tables
// of volume flags) are skipped.
func readFlagsDoc(t *testing.T, path string) []docGroup {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []docGroup
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if h, ok := strings.CutPrefix(line, "## "); ok {
			out = append(out, docGroup{name: strings.TrimSpace(h)})
			continue
		}
		if !strings.HasPrefix(line, "| `-") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), " | ")
		if len(cells) != 4 {
			t.Errorf("docs/flags.md:%d: %d cells, want 4 (flag, default, meaning, copyparty): %s", n, len(cells), line)
			continue
		}
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		cell := strings.Trim(cells[0], "`")
		name, _, _ := strings.Cut(strings.TrimLeft(cell, "-"), " ")
		if len(out) == 0 {
			t.Fatalf("docs/flags.md:%d: a flag before the first group heading", n)
		}
		g := &out[len(out)-1]
		g.flags = append(g.flags, docFlag{line: n, name: name, cell: cell, def: cells[1], meaning: cells[2], cparty: cells[3]})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// docDefault is how docs/flags.md writes f's default.
func docDefault(f *flag.Flag) []string {
	switch {
	case isBool(f):
		return []string{"off"}
	case f.DefValue == "":
		return []string{"—"}
	case f.DefValue == strconv.Itoa(runtime.NumCPU()):
		return []string{"cores", "`" + f.DefValue + "`"}
	}
	return []string{"`" + f.DefValue + "`"}
}

// TestFlagsDocumented: docs/flags.md and the FlagSet agree both ways: the
// same groups in the same order as -h, the same flags in each, each named
// as -h names it and with its default; nothing documented that the program
// lacks, no flag undocumented.
func TestFlagsDocumented(t *testing.T) {
	fs, _ := newFlags()
	doc := readFlagsDoc(t, "docs/flags.md")
	var docNames, fsNames []string
	for _, g := range doc {
		docNames = append(docNames, g.name)
	}
	for _, g := range fs.groups {
		fsNames = append(fsNames, g.name)
	}
	if !slices.Equal(docNames, fsNames) {
		t.Fatalf("docs/flags.md's groups %q, -h's %q", docNames, fsNames)
	}
	documented := map[string]bool{}
	for i, g := range doc {
		var names []string
		for _, d := range g.flags {
			names = append(names, d.name)
			if documented[d.name] {
				t.Errorf("docs/flags.md:%d: %s documented twice", d.line, d.name)
			}
			documented[d.name] = true
			f := fs.Lookup(d.name)
			if f == nil {
				t.Errorf("docs/flags.md:%d: documents %q, which hoard does not have", d.line, d.cell)
				continue
			}
			if want := fs.helpName(f); d.cell != want {
				t.Errorf("docs/flags.md:%d: %q, -h says %q", d.line, d.cell, want)
			}
			if want := docDefault(f); !slices.Contains(want, d.def) {
				t.Errorf("docs/flags.md:%d: %s defaults to %s, the program to %q (write %s)", d.line, d.name, d.def, f.DefValue, want[0])
			}
			if d.meaning == "" || d.cparty == "" {
				t.Errorf("docs/flags.md:%d: %s has an empty meaning or copyparty cell", d.line, d.name)
			}
		}
		if want := fs.groups[i].flags; !slices.Equal(names, want) {
			t.Errorf("docs/flags.md's group %q lists %q, -h lists %q", g.name, names, want)
		}
	}
	fs.VisitAll(func(f *flag.Flag) {
		if !documented[f.Name] {
			t.Errorf("flag %s is not in docs/flags.md", fs.helpName(f))
		}
	})
}

package idx

import (
	"encoding/json"
	"errors"
	"flag"
	"os"
	"reflect"
	"strings"
	"testing"
)

var rewrite = flag.Bool("rewrite", false, "rewrite testdata/queries.txt with the current output")

// The golden file holds cases separated by blank lines: a query on one
// line, then the expected AST as JSON, or "error <pos>: <message>".
const goldenPath = "testdata/queries.txt"

type goldenCase struct{ query, want string }

func readGolden(t testing.TB) []goldenCase {
	b, err := os.ReadFile(goldenPath)
	if err != nil {
		t.Fatal(err)
	}
	var out []goldenCase
	for _, block := range strings.Split(strings.TrimSpace(string(b)), "\n\n") {
		query, want, _ := strings.Cut(block, "\n")
		out = append(out, goldenCase{strings.TrimPrefix(query, "q "), want})
	}
	return out
}

func describe(q string) string {
	ast, err := Parse(q)
	if err != nil {
		var se *SyntaxError
		if !errors.As(err, &se) {
			return "non-syntax error " + err.Error()
		}
		return "error " + se.Error()
	}
	var b strings.Builder
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	e.Encode(ast)
	return strings.TrimSpace(b.String())
}

func TestParseGolden(t *testing.T) {
	cases := readGolden(t)
	if len(cases) < 40 {
		t.Fatalf("only %d golden cases", len(cases))
	}
	var out strings.Builder
	for i, c := range cases {
		got := describe(c.query)
		if *rewrite {
			if i > 0 {
				out.WriteString("\n")
			}
			out.WriteString("q " + c.query + "\n" + got + "\n")
			continue
		}
		if got != c.want {
			t.Errorf("Parse(%q)\n got %s\nwant %s", c.query, got, c.want)
		}
	}
	if *rewrite {
		if err := os.WriteFile(goldenPath, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestParseRoundTrip: every golden query that parses prints to a query
// that parses to the same AST.
func TestParseRoundTrip(t *testing.T) {
	for _, c := range readGolden(t) {
		checkRoundTrip(t, c.query)
	}
}

func checkRoundTrip(t *testing.T, q string) {
	t.Helper()
	a, err := Parse(q)
	if err != nil {
		return
	}
	s := a.String()
	b, err := Parse(s)
	if err != nil {
		t.Fatalf("Parse(%q) ok, but its print %q fails: %v", q, s, err)
	}
	if !reflect.DeepEqual(stripPos(a), stripPos(b)) {
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		t.Fatalf("Parse(%q) = %s; printed %q parses to %s", q, ja, s, jb)
	}
}

func stripPos(q *Query) *Query {
	c := &Query{Terms: make([]Term, len(q.Terms))}
	for i, t := range q.Terms {
		t.Pos = 0
		c.Terms[i] = t
	}
	return c
}

func TestSyntaxErrorPositions(t *testing.T) {
	for _, c := range []struct {
		q   string
		pos int
	}{
		{`size:>5X`, 5},
		{`foo "bar`, 4},
		{`a date:2020-13-01`, 7},
		{`ext:mp3,,flac`, 4},
		{`year:abc`, 5},
		{`  size:`, 7},
		{`dur:>1e3`, 4},
		{strings.Repeat("a ", 65), 128},
	} {
		_, err := Parse(c.q)
		var se *SyntaxError
		if !errors.As(err, &se) {
			t.Errorf("Parse(%q) = %v, want a SyntaxError", c.q, err)
			continue
		}
		if se.Pos != c.pos {
			t.Errorf("Parse(%q) position = %d, want %d (%v)", c.q, se.Pos, c.pos, se)
		}
	}
}

func FuzzParseQuery(f *testing.F) {
	for _, c := range readGolden(f) {
		f.Add(c.query)
	}
	f.Fuzz(func(t *testing.T, q string) {
		a, err := Parse(q)
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) || se.Pos < 0 || se.Pos > len(q) {
				t.Fatalf("Parse(%q): %v (want a SyntaxError inside the query)", q, err)
			}
			return
		}
		if len(a.Terms) > maxTerms {
			t.Fatalf("Parse(%q) gave %d terms", q, len(a.Terms))
		}
		checkRoundTrip(t, q)
	})
}

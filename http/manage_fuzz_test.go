package http

import (
	"strings"
	"testing"
)

// checkTargetParts: a parsed target is clean components only: never
// empty, ".", "..", nor holding a slash, backslash, NUL or control
// character, nor an escape that a second decoding would turn into one.
func checkTargetParts(t *testing.T, in string, parts []string) {
	t.Helper()
	for _, c := range parts {
		if c == "" || c == "." || c == ".." || strings.ContainsAny(c, "/\\\x00") {
			t.Fatalf("%q: bad component %q in %q", in, c, parts)
		}
		for i := 0; i < len(c); i++ {
			if c[i] < 0x20 || c[i] == 0x7f {
				t.Fatalf("%q: control character in %q", in, c)
			}
		}
		low := strings.ToLower(c)
		for _, e := range []string{"%2e", "%2f", "%5c", "%00"} {
			if strings.Contains(low, e) {
				t.Fatalf("%q: component %q keeps the escape %s", in, c, e)
			}
		}
	}
	// Parsing the joined result again gives the same components.
	again, err := parseTarget("/" + strings.Join(parts, "/"))
	if err != nil || strings.Join(again, "/") != strings.Join(parts, "/") {
		t.Fatalf("%q: re-parse of %q = %q, %v", in, parts, again, err)
	}
}

// FuzzParseTarget: a ?move=/?copy= destination or a ?delete list entry
// is refused with a 4xx or gives clean components.
func FuzzParseTarget(f *testing.F) {
	for _, s := range []string{"/a/b.txt", "a/b", "/v/../x", "/v/%2e%2e/x", "//host/x", "http://h/x", "/a\\b", "/a\x00b",
		"/./a/./b/", "/%252e", "", "/", "ünï/cödé", "/a//b", "/.hist/x", "\xff\xfe"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		parts, err := parseTarget(in)
		if err != nil {
			if code, msg := statusOf(err); code < 400 || code >= 500 || msg == "" {
				t.Fatalf("%q: error %v is %d", in, err, code)
			}
			return
		}
		checkTargetParts(t, in, parts)
	})
}

// FuzzDeleteList: a ?delete body is refused with a 4xx or is a non-empty
// list whose entries each parse or are refused with a 4xx.
func FuzzDeleteList(f *testing.F) {
	for _, s := range []string{`["a/b.txt","/c"]`, `[]`, `[""]`, `["../x"]`, `{"a":1}`, `null`, `[1]`, `["a"`, `"a"`, `["\u0000"]`, `["%2e%2e/x"]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		paths, err := parseDeleteList(body)
		if err != nil {
			if code, _ := statusOf(err); code < 400 || code >= 500 {
				t.Fatalf("error %v is %d", err, code)
			}
			return
		}
		if len(paths) == 0 {
			t.Fatal("an empty list was accepted")
		}
		for _, p := range paths {
			parts, err := parseTarget(p)
			if err != nil {
				if code, _ := statusOf(err); code < 400 || code >= 500 {
					t.Fatalf("%q: error %v is %d", p, err, code)
				}
				continue
			}
			checkTargetParts(t, p, parts)
		}
	})
}

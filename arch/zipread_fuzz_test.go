package arch

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzZipMemberName: a name ?zget accepts never climbs out of a folder,
// is never absolute, and is valid UTF-8 without control characters.
func FuzzZipMemberName(f *testing.F) {
	for _, s := range []string{"a.txt", "dir/b.txt", "../x", "a/../../b", "/etc/passwd", "c:\\win", "ok/..", "..", ".", "a\x00b", "日本/語.txt", "", strings.Repeat("n", 5000)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if CheckMemberName(name) != nil {
			return
		}
		if strings.HasPrefix(name, "/") || strings.Contains(name, "\\") || !utf8.ValidString(name) || len(name) > ZipMaxName {
			t.Fatalf("accepted %q", name)
		}
		for _, c := range strings.Split(name, "/") {
			if c == ".." {
				t.Fatalf("accepted %q", name)
			}
		}
		for _, r := range name {
			if r < 0x20 || r == 0x7f {
				t.Fatalf("accepted %q", name)
			}
		}
	})
}

package store

import (
	"strings"
	"testing"
	"time"
)

// Expiry record names sort as their deadlines and read back as them;
// anything else reads as no deadline (due at once), never a panic.
func FuzzLifeDeadline(f *testing.F) {
	f.Add(int64(0), "abc", "00000000000000000001-x")
	f.Add(time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano(), "0f", "-")
	f.Add(int64(1)<<62, "", "99999999999999999999-")
	f.Fuzz(func(t *testing.T, ns int64, tag, name string) {
		lifeDeadline(name) // any name: no panic
		if ns < 0 || strings.Contains(tag, "-") {
			return
		}
		a := lifeName(time.Unix(0, ns), tag)
		got, ok := lifeDeadline(a)
		if !ok || got != ns {
			t.Fatalf("lifeName(%d) = %q reads back as %d, %v", ns, a, got, ok)
		}
		b := lifeName(time.Unix(0, ns/2), tag)
		if ns/2 < ns && !(b < a) {
			t.Fatalf("names do not sort as deadlines: %q, %q", b, a)
		}
	})
}

// An expiry record names a path a request could name, or is refused.
func FuzzParseExpiryRec(f *testing.F) {
	for _, s := range []string{`{"rel":"a/b.txt","at":"2026-01-01T00:00:00Z"}`, `{"rel":"../x","at":"1"}`, `{"rel":".hist/x","at":"1"}`, `{"rel":".","at":"1"}`, `{"rel":"a//b","at":"1"}`, `[]`, ``} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		rec, rel, ok := parseExpiryRec(b)
		if !ok {
			return
		}
		if c, err := cleanRel(rel); err != nil || c != rel || rel == "." || rec.At == "" {
			t.Fatalf("accepted %q: rel %q (%v)", b, rel, err)
		}
	})
}

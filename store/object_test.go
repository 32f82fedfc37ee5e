package store

import (
	"io"
	"strings"
	"testing"
)

func TestParseS3Target(t *testing.T) {
	for _, c := range []struct{ in, bucket, prefix string }{
		{"vol", "vol", ""},
		{"vol/", "vol", ""},
		{"my.bucket-1/a/b", "my.bucket-1", "a/b"},
		{"vol/pre/", "vol", "pre"},
	} {
		b, p, err := ParseS3Target(c.in)
		if err != nil || b != c.bucket || p != c.prefix {
			t.Errorf("ParseS3Target(%q) = %q, %q, %v; want %q, %q", c.in, b, p, err, c.bucket, c.prefix)
		}
	}
	for _, in := range []string{"", "ab", "Vol", "v_l", "-vol", "vol-", "v..l", strings.Repeat("a", 64),
		"vol/../x", "vol/a//b", "vol/.hist", "vol/a/.HIST/b", "vol/x.PARTIAL", "vol/a\x01b", "vol/a\\b", "vol/./a"} {
		if b, p, err := ParseS3Target(in); err == nil {
			t.Errorf("ParseS3Target(%q) = %q, %q; want an error", in, b, p)
		}
	}
}

// FuzzParseS3Target: whatever it accepts is a valid bucket and a prefix
// that is a clean volume path, and parses again to itself.
func FuzzParseS3Target(f *testing.F) {
	for _, s := range []string{"vol", "vol/a/b", "vol//a", "vol/../a", "a.b-c/x/", "VOL/x", "vol/.hist"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b, p, err := ParseS3Target(s)
		if err != nil {
			return
		}
		if len(b) < 3 || len(b) > 63 || strings.Trim(b, "abcdefghijklmnopqrstuvwxyz0123456789.-") != "" {
			t.Fatalf("%q: bad bucket %q accepted", s, b)
		}
		if p != "" {
			if r, err := cleanRel(p); err != nil || r != p {
				t.Fatalf("%q: prefix %q is not a clean volume path (%q, %v)", s, p, r, err)
			}
		}
		target := b
		if p != "" {
			target += "/" + p
		}
		if b2, p2, err := ParseS3Target(target); err != nil || b2 != b || p2 != p {
			t.Fatalf("%q → %q, %q does not parse to itself: %q, %q, %v", s, b, p, b2, p2, err)
		}
	})
}

// sizedReader passes exactly the body and fails the read that breaks a
// bound, for every body length around the bounds.
func TestSizedReaderBounds(t *testing.T) {
	const lo, hi = 10, 20
	for n := 0; n <= 25; n++ {
		for _, want := range []int64{-1, int64(n), int64(n) + 1, int64(n) - 1} {
			body := strings.Repeat("x", n)
			sr := &sizedReader{r: strings.NewReader(body), min: lo, max: hi, want: want}
			got, err := io.ReadAll(sr)
			ok := n >= lo && n <= hi && (want < 0 || want == int64(n))
			switch {
			case ok && (err != nil || string(got) != body || sr.n != int64(n)):
				t.Errorf("n=%d want=%d: %d bytes, err %v; want the body", n, want, len(got), err)
			case !ok && err == nil:
				t.Errorf("n=%d want=%d: no error", n, want)
			case !ok && sr.err == nil:
				t.Errorf("n=%d want=%d: the failure is not the body's (sr.err nil)", n, want)
			}
		}
	}
}

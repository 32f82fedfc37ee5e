package http

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// contentDispositionRef is contentDisposition as it was before it was
// made in one allocation (issue 19): the reference for the property below.
func contentDispositionRef(disp, name string) string {
	var ascii strings.Builder
	for _, r := range name {
		if r >= 0x20 && r < 0x7f && r != '"' && r != '\\' && r != '%' {
			ascii.WriteRune(r)
		} else {
			ascii.WriteByte('_')
		}
	}
	var pct strings.Builder
	for i := 0; i < len(name); i++ {
		if c := name[i]; 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("!#$&+-.^_`|~", c) >= 0 {
			pct.WriteByte(c)
		} else {
			fmt.Fprintf(&pct, "%%%02X", c)
		}
	}
	return disp + `; filename="` + ascii.String() + `"; filename*=UTF-8''` + pct.String()
}

// TestContentDispositionProperty: the one-allocation builder gives the
// reference's text for any name (random bytes, invalid UTF-8 included).
func TestContentDispositionProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	names := []string{"", "a.txt", `q"u\o%te`, "naïve 日本.txt", "\xff\xfe", "100% #1?.txt"}
	for range 2000 {
		b := make([]byte, r.IntN(40))
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
		names = append(names, string(b))
	}
	for _, n := range names {
		for _, d := range []string{"inline", "attachment"} {
			if got, want := contentDisposition(d, n), contentDispositionRef(d, n); got != want {
				t.Fatalf("contentDisposition(%q, %q) = %q, want %q", d, n, got, want)
			}
		}
	}
	if a := testing.AllocsPerRun(100, func() { contentDisposition("inline", "s00001.bin") }); a > 1 {
		t.Errorf("contentDisposition allocates %v times, want 1", a)
	}
}

// FuzzTypePolicyMemo: the memoized policy of a server-chosen type is the
// parsed one, asked once or many times.
func FuzzTypePolicyMemo(f *testing.F) {
	for _, s := range []string{"text/plain; charset=utf-8", "text/html", "image/svg+xml", "application/octet-stream", "", "bad;;", "TEXT/PLAIN"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, ct string) {
		want := policyOf(ct, false)
		for range 2 {
			if got := typePolicy(ct); got != want {
				t.Fatalf("typePolicy(%q) = %+v, want %+v", ct, got, want)
			}
		}
	})
}

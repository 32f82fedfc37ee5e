package http

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"golang.org/x/text/encoding/htmlindex"
	"golang.org/x/text/encoding/ianaindex"
)

// FuzzTxtEncoding: any ?txt= value gives either a 400 or a canonical
// WHATWG or IANA (MIME) name that names the encoder returned, never a panic or a header
// with control characters.
func FuzzTxtEncoding(f *testing.F) {
	for _, s := range []string{"", "utf-8", "UTF8", "latin1", "iso-8859-1", "us-ascii", "utf-16", "shift_jis", " gbk ", "replacement", "utf-16le", "x-user-defined", "nope", "\x00", "utf-8\r\nX: y", strings.Repeat("k", 70)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, label string) {
		enc, name, err := txtEncoding(label)
		if err != nil {
			var he *httpError
			if !errors.As(err, &he) || he.code != http.StatusBadRequest {
				t.Fatalf("%q: error %v is not a 400", label, err)
			}
			return
		}
		if name == "" || strings.ContainsAny(name, "\r\n\x00 ;") {
			t.Fatalf("%q: bad name %q", label, name)
		}
		if enc == nil {
			if name != "utf-8" {
				t.Fatalf("%q: no encoder for %q", label, name)
			}
			return
		}
		n, err := htmlindex.Name(enc)
		if m, err2 := ianaindex.MIME.Name(enc); err2 == nil && strings.ToLower(m) == name {
			n, err = name, nil // a charset IANA names, which the label named
		}
		if err != nil || n != name {
			t.Fatalf("%q: encoder is %q, name %q", label, n, name)
		}
		if _, err := htmlindex.Get(label); err != nil {
			t.Fatalf("%q: accepted, but WHATWG does not know it", label)
		}
	})
}

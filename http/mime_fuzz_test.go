package http

import (
	"mime"
	"net/http"
	"strings"
	"testing"
)

// FuzzMimePolicy: any ?mime= value is refused or becomes a clean header
// value that parses back to itself; it is shown inline only when its type
// is on the inert allow-list, else it goes out as a sandboxed attachment.
func FuzzMimePolicy(f *testing.F) {
	for _, s := range []string{"text/plain", "text/html", "multipart/x-mixed-replace;boundary=x", "text/rdf", "TEXT/PLAIN; CHARSET=UTF-8",
		"text/plain; charset=utf-7", "image/svg+xml", "image/png; x=y", "a/b/c", "text/", "/plain", "text/plain\r\nX: y",
		"text/plain; charset=\"latin1\"", "application/octet-stream", "image/png ; charset=gbk", "x/y; boundary=\"a;b\""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		ct, ok := parseMime(v)
		if !ok {
			return
		}
		if strings.ContainsFunc(ct, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			t.Fatalf("%q: control character in %q", v, ct)
		}
		mt, params, err := mime.ParseMediaType(ct)
		if err != nil {
			t.Fatalf("%q: %q does not parse: %v", v, ct, err)
		}
		if again, ok := parseMime(ct); !ok || again != ct {
			t.Fatalf("%q: %q is not stable (%q, %v)", v, ct, again, ok)
		}
		for k := range params {
			if k != "charset" {
				t.Fatalf("%q: parameter %q kept", v, k)
			}
		}
		p := policyOf(ct, true)
		switch {
		case inertTypes[mt] && p != (bodyPolicy{}):
			t.Fatalf("%q: inert %q got %+v", v, mt, p)
		case !inertTypes[mt] && (!p.sandbox || !p.attach):
			t.Fatalf("%q: %q got %+v, want a sandboxed attachment", v, mt, p)
		}
		h := http.Header{}
		disp := p.apply(h, ct, "inline")
		if h.Get("Content-Type") != ct || h.Get("X-Content-Type-Options") != "nosniff" || (disp == "inline") != !p.attach {
			t.Fatalf("%q: headers %v disposition %q", v, h, disp)
		}
	})
}

// FuzzTypePolicy: whatever type a file's name maps to, a body is sent
// without a sandbox only when its type is inert, and inline only when it
// is inert or a document type that honours the sandbox.
func FuzzTypePolicy(f *testing.F) {
	for ext := range mimeTypes {
		f.Add("a." + ext)
	}
	for _, s := range []string{"a.hta", "a.swf", "a.eml", "a.rdf", "a.xsl", "a.xul", "a.shtml", "a.mht", "a.vtt", "a.jnlp", "noext", "a.", ".htaccess"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		for _, ct := range []string{contentType(name), name} {
			p := policyOf(ct, false)
			mt, _, err := mime.ParseMediaType(ct)
			mt = strings.ToLower(mt)
			if !p.sandbox && (err != nil || !inertTypes[mt]) {
				t.Fatalf("%q: type %q has no sandbox", name, ct)
			}
			if !p.attach && (err != nil || !inertTypes[mt] && !viewableTypes[mt]) {
				t.Fatalf("%q: type %q shown inline", name, ct)
			}
			if inertTypes[mt] && err == nil && p != (bodyPolicy{}) {
				t.Fatalf("%q: inert %q got %+v", name, ct, p)
			}
		}
	})
}

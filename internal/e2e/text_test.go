package e2e

import (
	"bytes"
	"net/url"
	"os"
	"strings"
	"testing"
	"unicode/utf8"

	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/htmlindex"
)

// whatwgNames are the encodings of the WHATWG Encoding Standard that text
// can be served in (all but "replacement").
var whatwgNames = []string{
	"utf-8", "ibm866", "iso-8859-2", "iso-8859-3", "iso-8859-4", "iso-8859-5", "iso-8859-6", "iso-8859-7",
	"iso-8859-8", "iso-8859-8-i", "iso-8859-10", "iso-8859-13", "iso-8859-14", "iso-8859-15", "iso-8859-16",
	"koi8-r", "koi8-u", "macintosh", "windows-874", "windows-1250", "windows-1251", "windows-1252",
	"windows-1253", "windows-1254", "windows-1255", "windows-1256", "windows-1257", "windows-1258",
	"x-mac-cyrillic", "gbk", "gb18030", "big5", "euc-jp", "iso-2022-jp", "shift_jis", "euc-kr",
	"utf-16be", "utf-16le",
}

// txtSample has characters from many scripts; each encoding's fixture is
// the part of it that the encoding can represent.
const txtSample = "plain ASCII line 1\nÀéîõü ÆØÅ ß ąęłśź čšž őű ğış țș\nΑλφάβητο Ωμέγα\nПривет мир ёЁ ґєії\n" +
	"שלום עולם\nمرحبا بالعالم\nสวัสดีชาวโลก\nViệt Nam ả ữ\n日本語のテキスト ｶﾀｶﾅ\n中文简体 中文繁體\n한국어 텍스트\n€ ‰ — “quotes” …\nend\n"

func representable(t *testing.T, enc encoding.Encoding) string {
	t.Helper()
	var b strings.Builder
	for _, r := range txtSample {
		s := string(r)
		if out, err := enc.NewEncoder().String(s); err == nil {
			if back, err := enc.NewDecoder().String(out); err == nil && back == s {
				b.WriteString(s)
			}
		}
	}
	return b.String()
}

func TestTextEveryEncodingRoundTrips(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := start(t, "-v", dir+"::r")
	for _, name := range whatwgNames {
		t.Run(name, func(t *testing.T) {
			enc, err := htmlindex.Get(name)
			if err != nil {
				t.Fatal(err)
			}
			text := representable(t, enc)
			if utf8.RuneCountInString(text) < 40 {
				t.Fatalf("fixture for %s too small: %q", name, text)
			}
			fn := "t-" + name + ".txt"
			writeFile(t, dir, fn, []byte(text))
			resp, body := s.do(t, "GET", "/"+fn+"?txt="+url.QueryEscape(name), nil)
			wantStatus(t, resp, body, 200)
			if ct := resp.Header.Get("Content-Type"); ct != "text/plain; charset="+name {
				t.Fatalf("Content-Type = %q", ct)
			}
			if name != "utf-8" && bytes.Equal(body, []byte(text)) && text != strings.ToValidUTF8(text, "") {
				t.Fatalf("body was not transcoded")
			}
			got, err := enc.NewDecoder().Bytes(body)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != text {
				t.Fatalf("round trip differs:\n got %q\nwant %q", got, text)
			}
		})
	}
}

func TestTextLabelsAndDefaults(t *testing.T) {
	dir := t.TempDir()
	s := start(t, "-v", dir+"::r")
	writeFile(t, dir, "a.log", []byte("héllo\n"))
	// Default: utf-8, unchanged, ranges still work.
	resp, body := s.do(t, "GET", "/a.log?txt", nil)
	wantStatus(t, resp, body, 200)
	if resp.Header.Get("Content-Type") != "text/plain; charset=utf-8" || string(body) != "héllo\n" {
		t.Fatalf("?txt: %q %q", resp.Header.Get("Content-Type"), body)
	}
	resp, body = s.do(t, "GET", "/a.log?txt=utf8", nil, "Range: bytes=1-2")
	wantStatus(t, resp, body, 206)
	if string(body) != "é" {
		t.Fatalf("range body %q", body)
	}
	// A WHATWG alias that is no charset name of its own gives the
	// canonical name.
	resp, body = s.do(t, "GET", "/a.log?txt=cp1252", nil)
	wantStatus(t, resp, body, 200)
	if resp.Header.Get("Content-Type") != "text/plain; charset=windows-1252" || string(body) != "h\xe9llo\n" {
		t.Fatalf("?txt=cp1252: %q %q", resp.Header.Get("Content-Type"), body)
	}
	// A file that is not UTF-8 is taken to be in the named encoding and
	// goes out unchanged.
	legacy := []byte("\x82\xa0\x82\xa2 shift_jis\n")
	writeFile(t, dir, "sj.txt", legacy)
	resp, body = s.do(t, "GET", "/sj.txt?txt=shift_jis", nil)
	wantStatus(t, resp, body, 200)
	if !bytes.Equal(body, legacy) || resp.Header.Get("Content-Type") != "text/plain; charset=shift_jis" {
		t.Fatalf("legacy file: %q %q", resp.Header.Get("Content-Type"), body)
	}
	// HEAD has the headers and no body.
	resp, body = s.do(t, "HEAD", "/a.log?txt=koi8-r", nil)
	wantStatus(t, resp, body, 200)
	if len(body) != 0 || resp.Header.Get("Content-Type") != "text/plain; charset=koi8-r" {
		t.Fatalf("HEAD: %q %q", resp.Header.Get("Content-Type"), body)
	}
}

func TestTextBadEncodings(t *testing.T) {
	dir := t.TempDir()
	s := start(t, "-v", dir+"::r")
	p := writeFile(t, dir, "a.txt", []byte("x\n"))
	for _, bad := range []string{"nope", "utf-9", "replacement", "iso-2022-kr", strings.Repeat("a", 100), "utf-8\r\nX: y", "../etc", "%00"} {
		resp, body := s.do(t, "GET", "/a.txt?txt="+url.QueryEscape(bad), nil)
		wantStatus(t, resp, body, 400)
		if !strings.Contains(string(body), "txt=") {
			t.Fatalf("%q: body %q does not say what was wrong", bad, body)
		}
	}
	if b, _ := os.ReadFile(p); string(b) != "x\n" {
		t.Fatal("file changed")
	}
	if got := userTree(t, dir); len(got) != 1 || got[0] != "a.txt" {
		t.Fatalf("tree changed: %v", got)
	}
}

// TestTextAskedCharset: a label that names a real charset is answered in
// that charset, by name, even where WHATWG reads it as another one
// (iso-8859-1 as windows-1252): the bytes agree with the label.
func TestTextAskedCharset(t *testing.T) {
	dir := t.TempDir()
	s := start(t, "-v", dir+"::r")
	writeFile(t, dir, "a.log", []byte("héllo €\n"))
	for _, c := range []struct{ label, charset, body string }{
		{label: "iso-8859-1", charset: "iso-8859-1", body: "h\xe9llo \x1a\n"},
		{label: "ISO-8859-1", charset: "iso-8859-1", body: "h\xe9llo \x1a\n"},
		{label: "latin1", charset: "iso-8859-1", body: "h\xe9llo \x1a\n"},
		{label: "us-ascii", charset: "us-ascii", body: "h\x1allo \x1a\n"},
		{label: "iso-8859-9", charset: "iso-8859-9", body: "h\xe9llo \x1a\n"},
		{label: "windows-1252", charset: "windows-1252", body: "h\xe9llo \x80\n"},
		{label: "cp1252", charset: "windows-1252", body: "h\xe9llo \x80\n"},
		{label: "utf8", charset: "utf-8", body: "héllo €\n"},
		{label: "UTF-8", charset: "utf-8", body: "héllo €\n"},
		{label: "iso-8859-15", charset: "iso-8859-15", body: "h\xe9llo \xa4\n"},
	} {
		resp, body := s.do(t, "GET", "/a.log?txt="+url.QueryEscape(c.label), nil)
		wantStatus(t, resp, body, 200)
		if got := resp.Header.Get("Content-Type"); got != "text/plain; charset="+c.charset || string(body) != c.body {
			t.Errorf("?txt=%s: %q %q, want charset=%s %q", c.label, got, body, c.charset, c.body)
		}
	}
	// ?tail names it the same way.
	resp, body := s.do(t, "HEAD", "/a.log?tail&txt=iso-8859-1", nil)
	wantStatus(t, resp, body, 200)
	if got := resp.Header.Get("Content-Type"); got != "text/plain; charset=iso-8859-1" {
		t.Errorf("?tail&txt=iso-8859-1: %q", got)
	}
}

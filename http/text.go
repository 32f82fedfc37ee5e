package http

import (
	"io"
	"io/fs"
	"net/http"
	"os"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/htmlindex"
	"golang.org/x/text/encoding/ianaindex"
	"golang.org/x/text/transform"
)

// fileView returns the handler of a file modifier that replaces the plain
// download (?tail, ?zls, ?zget, ?v), or nil. It runs after the read
// permission (and file key) of the file were checked.
func fileView(query map[string][]string) func(s *Server, q *req, f *os.File, fi fs.FileInfo) error {
	switch {
	case has(query, "tail"):
		return (*Server).tail
	case has(query, "zls"):
		return (*Server).zls
	case has(query, "zget"):
		return (*Server).zget
	case has(query, "v"):
		return (*Server).view
	}
	return nil
}

// txtSniff is how much of a file ?txt reads to decide whether it is UTF-8.
const txtSniff = 64 << 10

// txtEncoding parses the value of ?txt= (an encoding label; empty is
// utf-8) and returns the encoder and the charset name to send. Labels are
// accepted as the WHATWG Encoding Standard accepts them, but where the
// label is a charset IANA registers (iso-8859-1, latin1, us-ascii,
// iso-8859-9...), that charset is named and used, even when WHATWG reads
// the label as another (windows-1252 for iso-8859-1): the client gets the
// charset it asked for, bytes and label agreeing. enc is nil for utf-8.
func txtEncoding(label string) (enc encoding.Encoding, name string, err error) {
	label = strings.TrimSpace(label)
	if label == "" {
		return nil, "utf-8", nil
	}
	if len(label) > 64 {
		return nil, "", errorf(http.StatusBadRequest, "txt=: encoding name too long")
	}
	e, err := htmlindex.Get(label)
	if err != nil {
		return nil, "", errorf(http.StatusBadRequest, "txt=%q: unknown encoding (use a WHATWG name such as utf-8, windows-1252, shift_jis, gbk, euc-kr, koi8-r, utf-16le)", label)
	}
	name, err = htmlindex.Name(e)
	if err != nil || name == "replacement" {
		return nil, "", errorf(http.StatusBadRequest, "txt=%q: not an encoding text can be served in", label)
	}
	if ie, iname, ok := ianaCharset(label); ok {
		e, name = ie, iname
	}
	if name == "utf-8" {
		return nil, name, nil
	}
	return e, name, nil
}

// ianaCharset looks label up among IANA's charset names and aliases and
// returns its encoder and preferred MIME name, lower-cased.
func ianaCharset(label string) (encoding.Encoding, string, bool) {
	e, err := ianaindex.IANA.Encoding(label)
	if err != nil || e == nil {
		return nil, "", false
	}
	name, err := ianaindex.MIME.Name(e)
	if err != nil || name == "" {
		return nil, "", false
	}
	return e, strings.ToLower(name), true
}

// txtType decides how ?txt serves f: a content type, and an encoder when
// the body must be transcoded. A file whose start is valid UTF-8 is taken
// for UTF-8 text and encoded into the requested encoding; any other file
// is taken to be in that encoding already and goes out unchanged, only
// labelled (copyparty's behaviour).
func txtType(label string, f io.ReaderAt, size int64) (ct string, enc encoding.Encoding, err error) {
	enc, name, err := txtEncoding(label)
	if err != nil {
		return "", nil, err
	}
	ct = "text/plain; charset=" + name
	if enc == nil {
		return ct, nil, nil
	}
	buf := make([]byte, min(size, txtSniff))
	n, err := f.ReadAt(buf, 0)
	if err != nil && err != io.EOF {
		return "", nil, err
	}
	if !validUTF8Prefix(buf[:n], int64(n) < size) {
		return ct, nil, nil
	}
	return ct, enc, nil
}

// validUTF8Prefix reports whether b is valid UTF-8; when more follows, a
// rune cut at the end of b does not count against it.
func validUTF8Prefix(b []byte, more bool) bool {
	if more {
		for i := 0; i < utf8.UTFMax-1 && len(b) > 0; i++ {
			r, size := utf8.DecodeLastRune(b)
			if r != utf8.RuneError || size != 1 {
				break
			}
			b = b[:len(b)-1]
		}
	}
	return utf8.Valid(b)
}

// txtTranscode streams f, read as UTF-8, in enc. Characters the encoding
// cannot represent become its replacement character. The length is not
// known in advance, so ranges do not apply.
func (s *Server) txtTranscode(q *req, f io.Reader, ct string, enc encoding.Encoding) error {
	h := q.w.Header()
	h.Set("Content-Type", ct)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-cache")
	h.Del("Accept-Ranges")
	if q.r.Method == http.MethodHead {
		q.w.WriteHeader(http.StatusOK)
		return nil
	}
	tr := transform.NewReader(f, encoding.ReplaceUnsupported(enc.NewEncoder()))
	q.w.WriteHeader(http.StatusOK)
	_, err := io.Copy(writerOnly{q.w}, tr)
	return err
}

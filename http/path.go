package http

import (
	"net/http"
	"strings"
	"unicode/utf8"
)

// parsePath turns the request's URL path (decoded once by net/url) into
// clean components. It rejects "..", NUL, control characters, backslashes
// and invalid UTF-8 (which includes overlong encodings); empty and "."
// components are dropped. slash reports a trailing "/".
func parsePath(p string) (parts []string, slash bool, err error) {
	if !utf8.ValidString(p) {
		return nil, false, errorf(http.StatusBadRequest, "the path is not valid UTF-8")
	}
	for i := 0; i < len(p); i++ {
		switch b := p[i]; {
		case b < 0x20 || b == 0x7f:
			return nil, false, errorf(http.StatusBadRequest, "the path contains a control character")
		case b == '\\':
			return nil, false, errorf(http.StatusBadRequest, "the path contains a backslash")
		}
	}
	slash = strings.HasSuffix(p, "/")
	for c := range strings.SplitSeq(p, "/") {
		switch {
		case c == "" || c == ".":
			continue
		case c == "..":
			return nil, false, errorf(http.StatusBadRequest, "the path contains \"..\"")
		case len(c) > 255:
			return nil, false, errorf(http.StatusBadRequest, "a path component is longer than 255 bytes")
		}
		parts = append(parts, c)
	}
	return parts, slash, nil
}

// escapePath escapes a slash-separated path for use in a URL: each
// component is percent-encoded, and ':' too so that no component reads as
// a URL scheme.
func escapePath(p string) string {
	if p == "" {
		return ""
	}
	parts := strings.Split(p, "/")
	for i, c := range parts {
		parts[i] = escapeName(c)
	}
	return strings.Join(parts, "/")
}

func escapeName(c string) string {
	var b strings.Builder
	for i := 0; i < len(c); i++ {
		ch := c[i]
		if 'a' <= ch && ch <= 'z' || 'A' <= ch && ch <= 'Z' || '0' <= ch && ch <= '9' || strings.IndexByte("-._~!$&'()*+=@", ch) >= 0 {
			b.WriteByte(ch)
			continue
		}
		b.WriteByte('%')
		b.WriteByte("0123456789ABCDEF"[ch>>4])
		b.WriteByte("0123456789ABCDEF"[ch&15])
	}
	return b.String()
}

package http

import (
	"io"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"
)

// AccessLog is where the access lines go when set in Config: each is made
// by hand, without reflection or allocation, into a pooled buffer, in
// the very bytes slog's text (or JSON) handler would write, and handed to
// W in one Write (main gives a batching writer, internal/logbuf).
type AccessLog struct {
	W    io.Writer
	JSON bool // slog's JSON handler's format instead of its text one
}

// access is one request's access line.
type access struct {
	t                    time.Time
	id, ip, user, method string
	u                    *url.URL
	status               int
	bytes                int64
	dur                  time.Duration
}

// accessBuf is a line being made and its path's scratch space.
type accessBuf struct{ line, path []byte }

var accessPool = sync.Pool{New: func() any { return &accessBuf{line: make([]byte, 0, 512), path: make([]byte, 0, 256)} }}

// write makes a's line and hands it to l.W.
func (l *AccessLog) write(a *access) {
	b := accessPool.Get().(*accessBuf)
	b.path = appendLogPath(b.path[:0], a.u)
	b.line = appendAccess(b.line[:0], l.JSON, a, b.path)
	l.W.Write(b.line)
	if cap(b.line) <= 64<<10 && cap(b.path) <= 64<<10 {
		accessPool.Put(b)
	}
}

// appendAccess appends a's line, its path (with the query redacted)
// given, as slog's handler of that format would write it.
func appendAccess(dst []byte, json bool, a *access, path []byte) []byte {
	if json {
		dst = append(dst, `{"time":"`...)
		dst = a.t.AppendFormat(dst, time.RFC3339Nano)
		dst = append(dst, `","level":"INFO","msg":"access","pkg":"http","id":`...)
		dst = appendJSONString(dst, a.id)
		dst = append(dst, `,"ip":`...)
		dst = appendJSONString(dst, a.ip)
		dst = append(dst, `,"user":`...)
		dst = appendJSONString(dst, a.user)
		dst = append(dst, `,"method":`...)
		dst = appendJSONString(dst, a.method)
		dst = append(dst, `,"path":`...)
		dst = appendJSONString(dst, path)
		dst = append(dst, `,"status":`...)
		dst = strconv.AppendInt(dst, int64(a.status), 10)
		dst = append(dst, `,"bytes":`...)
		dst = strconv.AppendInt(dst, a.bytes, 10)
		dst = append(dst, `,"dur":`...)
		dst = strconv.AppendInt(dst, int64(a.dur), 10)
		return append(dst, "}\n"...)
	}
	dst = append(dst, "time="...)
	dst = appendRFC3339Millis(dst, a.t)
	dst = append(dst, " level=INFO msg=access pkg=http id="...)
	dst = appendText(dst, a.id)
	dst = append(dst, " ip="...)
	dst = appendText(dst, a.ip)
	dst = append(dst, " user="...)
	dst = appendText(dst, a.user)
	dst = append(dst, " method="...)
	dst = appendText(dst, a.method)
	dst = append(dst, " path="...)
	dst = appendText(dst, path)
	dst = append(dst, " status="...)
	dst = strconv.AppendInt(dst, int64(a.status), 10)
	dst = append(dst, " bytes="...)
	dst = strconv.AppendInt(dst, a.bytes, 10)
	dst = append(dst, " dur="...)
	dst = append(dst, a.dur.String()...) // inlined: the string stays on the stack
	return append(dst, '\n')
}

// appendRFC3339Millis is slog's text time: RFC 3339 with exactly three
// digits of milliseconds.
func appendRFC3339Millis(dst []byte, t time.Time) []byte {
	const prefix = len("2006-01-02T15:04:05.000")
	n := len(dst)
	dst = t.Truncate(time.Millisecond).Add(time.Millisecond/10).AppendFormat(dst, time.RFC3339Nano)
	return append(dst[:n+prefix], dst[n+prefix+1:]...) // drop the 4th digit
}

// textSafe reports the ASCII bytes slog's text handler writes unquoted
// (what JSON leaves unescaped, but for space and '=').
func textSafe(b byte) bool { return b >= 0x20 && b != '"' && b != ' ' && b != '=' }

// appendText appends s as slog's text handler does: as it is, or quoted
// as strconv.Quote does when empty or holding a space, '=', '"', a
// control character or anything not printable.
func appendText[S string | []byte](dst []byte, s S) []byte {
	if !textNeedsQuote(s) {
		return append(dst, s...)
	}
	return appendQuoted(dst, s)
}

// appendQuoted is strconv.AppendQuote for a string or bytes, without
// converting bytes to a string.
func appendQuoted[S string | []byte](dst []byte, s S) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			switch {
			case b == '"' || b == '\\':
				dst = append(dst, '\\', b)
			case b >= 0x20 && b < 0x7f:
				dst = append(dst, b)
			case b == '\a':
				dst = append(dst, '\\', 'a')
			case b == '\b':
				dst = append(dst, '\\', 'b')
			case b == '\f':
				dst = append(dst, '\\', 'f')
			case b == '\n':
				dst = append(dst, '\\', 'n')
			case b == '\r':
				dst = append(dst, '\\', 'r')
			case b == '\t':
				dst = append(dst, '\\', 't')
			case b == '\v':
				dst = append(dst, '\\', 'v')
			default:
				dst = append(dst, '\\', 'x', hex[b>>4], hex[b&0xF])
			}
			i++
			continue
		}
		r, size := decodeRune(s, i)
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, '\\', 'x', hex[b>>4], hex[b&0xF])
			i++
			continue
		}
		n := len(dst)
		dst = strconv.AppendQuoteRune(dst, r) // 'r', escaped as in a string: no quote in it to escape
		dst = append(dst[:n], dst[n+1:len(dst)-1]...)
		i += size
	}
	return append(dst, '"')
}

// decodeRune decodes the rune at s[i:].
func decodeRune[S string | []byte](s S, i int) (rune, int) {
	return utf8.DecodeRuneInString(string(s[i:min(len(s), i+utf8.UTFMax)])) // at most 4 bytes, on the stack
}

func textNeedsQuote[S string | []byte](s S) bool {
	if len(s) == 0 {
		return true
	}
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if b != '\\' && !textSafe(b) {
				return true
			}
			i++
			continue
		}
		r, size := decodeRune(s, i)
		if r == utf8.RuneError || unicode.IsSpace(r) || !unicode.IsPrint(r) {
			return true
		}
		i += size
	}
	return false
}

// appendJSONString appends s quoted as slog's JSON handler does (as
// encoding/json, without HTML escaping; bad UTF-8 as \ufffd).
func appendJSONString[S string | []byte](dst []byte, s S) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := decodeRune(s, i)
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// logPath is a request's path and query as the logs show them: every pw
// parameter's value (however its name is escaped or cased) is replaced
// by "***", so no password reaches a log.
func logPath(u *url.URL) string { return string(appendLogPath(nil, u)) }

// appendLogPath appends logPath(u) without allocating (but for a name
// with a %-escape, which is decoded to be checked).
func appendLogPath(dst []byte, u *url.URL) []byte {
	if u.RawPath != "" || u.Path == "*" {
		dst = append(dst, u.EscapedPath()...)
	} else {
		dst = appendEscapedPath(dst, u.Path)
	}
	if u.RawQuery == "" && !u.ForceQuery {
		return dst
	}
	dst = append(dst, '?')
	return appendRedactedQuery(dst, u.RawQuery)
}

// appendEscapedPath is u.EscapedPath() for a URL without RawPath: the
// path as it is when nothing in it needs escaping (the usual case, with
// no allocation), else escaped by net/url.
func appendEscapedPath(dst []byte, p string) []byte {
	for i := 0; i < len(p); i++ {
		if !pathByteOK(p[i]) {
			return append(dst, (&url.URL{Path: p}).EscapedPath()...)
		}
	}
	return append(dst, p...)
}

// pathByteOK: the bytes net/url leaves unescaped in a path.
func pathByteOK(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	switch c {
	case '-', '_', '.', '~', '$', '&', '+', ',', '/', ':', ';', '=', '@':
		return true
	}
	return false
}

// appendRedactedQuery appends raw with the value of every pw parameter
// replaced. Go's query parser splits on & only. A piece whose name does
// not decode, or whose name holds pw (pwd, PW, p%77), has its value
// redacted too.
func appendRedactedQuery(dst []byte, raw string) []byte {
	for first := true; ; first = false {
		piece, rest, more := strings.Cut(raw, "&")
		if !first {
			dst = append(dst, '&')
		}
		k, _, hasVal := strings.Cut(piece, "=")
		if hasVal && secretName(k) {
			dst = append(dst, k...)
			dst = append(dst, "=***"...)
		} else {
			dst = append(dst, piece...)
		}
		if !more {
			return dst
		}
		raw = rest
	}
}

// secretName reports whether a query parameter's raw name does not
// decode or holds "pw" in any case.
func secretName(k string) bool {
	if strings.ContainsAny(k, "%+") {
		name, err := url.QueryUnescape(k)
		if err != nil {
			return true
		}
		k = name
	}
	for i := 0; i+1 < len(k); i++ {
		if k[i]|0x20 == 'p' && k[i+1]|0x20 == 'w' {
			return true
		}
	}
	return false
}

// redactQuery is appendRedactedQuery as a string.
func redactQuery(raw string) string { return string(appendRedactedQuery(nil, raw)) }

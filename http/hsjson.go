package http

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// A handshake body, read without building a map: copyparty's clients send
// one per file (two with u2c.py and the browser), and decoding it into a
// map of raw values and then each value again cost more than the rest of
// the handshake's own code. objectFields walks the top-level object of a
// body that json.Valid accepted and hands out each member's raw value, as
// json.Unmarshal into map[string]json.RawMessage would keep it; the
// helpers below read the common shapes (a plain string, a list of plain
// strings, a number) straight from those bytes and leave anything else to
// encoding/json, so every value means exactly what it meant before.

// objectFields calls fn with each member of the JSON object body (which
// must be valid JSON) in order: its key and its raw value. ok is false
// when body is not an object or a key has an escape (\) or is not UTF-8,
// which the caller must then decode the general way.
func objectFields(body []byte, fn func(key, val []byte)) (ok bool) {
	i := skipWS(body, 0)
	if i >= len(body) || body[i] != '{' {
		return false
	}
	i = skipWS(body, i+1)
	if i < len(body) && body[i] == '}' {
		return true
	}
	for i < len(body) {
		if body[i] != '"' {
			return false
		}
		j := i + 1
		for j < len(body) && body[j] != '"' {
			if body[j] == '\\' {
				return false
			}
			j++
		}
		if j >= len(body) {
			return false
		}
		key := body[i+1 : j]
		if !utf8.Valid(key) {
			return false // encoding/json would replace the bad bytes
		}
		i = skipWS(body, j+1)
		if i >= len(body) || body[i] != ':' {
			return false
		}
		i = skipWS(body, i+1)
		end := skipValue(body, i)
		if end <= i {
			return false
		}
		fn(key, body[i:end])
		i = skipWS(body, end)
		if i >= len(body) {
			return false
		}
		switch body[i] {
		case ',':
			i = skipWS(body, i+1)
		case '}':
			return true
		default:
			return false
		}
	}
	return false
}

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipValue returns the end of the valid JSON value starting at b[i].
func skipValue(b []byte, i int) int {
	depth := 0
	for i < len(b) {
		c := b[i]
		switch c {
		case '"':
			i++
			for i < len(b) && b[i] != '"' {
				if b[i] == '\\' {
					i++
				}
				i++
			}
			i++ // the closing quote
		case '{', '[':
			depth++
			i++
		case '}', ']':
			if depth == 0 {
				return i // the end of the enclosing object (a literal before it)
			}
			depth--
			i++
		case ',', ' ', '\t', '\n', '\r', ':':
			if depth == 0 {
				return i
			}
			i++
		default: // a number or literal
			i++
		}
		if depth == 0 && (c == '"' || c == '}' || c == ']') {
			return i
		}
	}
	return i
}

// plainString is the JSON string raw when it has no escapes and is valid
// UTF-8 (then its bytes are its value); ok is false otherwise.
func plainString(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", false
	}
	in := raw[1 : len(raw)-1]
	for _, c := range in {
		if c == '\\' || c == '"' || c < 0x20 {
			return "", false
		}
	}
	if !utf8.Valid(in) {
		return "", false
	}
	return string(in), true
}

// jsonString decodes the JSON string raw as json.Unmarshal would.
func jsonString(raw []byte, out *string) error {
	if s, ok := plainString(raw); ok {
		*out = s
		return nil
	}
	return json.Unmarshal(raw, out)
}

// jsonStrings decodes the JSON list of strings raw as json.Unmarshal would.
func jsonStrings(raw []byte, out *[]string) error {
	if l, ok := plainStrings(raw); ok {
		*out = l
		return nil
	}
	return json.Unmarshal(raw, out)
}

// plainStrings reads a list of plain strings (see plainString); ok is false
// for anything else.
func plainStrings(raw []byte) ([]string, bool) {
	if len(raw) < 2 || raw[0] != '[' || raw[len(raw)-1] != ']' {
		return nil, false
	}
	n := 0
	for _, c := range raw {
		if c == '"' {
			n++
		}
	}
	out := make([]string, 0, n/2)
	i := skipWS(raw, 1)
	if raw[i] == ']' {
		return out, i == len(raw)-1
	}
	for {
		if i >= len(raw) || raw[i] != '"' {
			return nil, false
		}
		j := i + 1
		for j < len(raw) && raw[j] != '"' {
			j++
		}
		if j >= len(raw) {
			return nil, false
		}
		s, ok := plainString(raw[i : j+1])
		if !ok {
			return nil, false
		}
		out = append(out, s)
		i = skipWS(raw, j+1)
		if i >= len(raw) {
			return nil, false
		}
		switch raw[i] {
		case ',':
			i = skipWS(raw, i+1)
		case ']':
			return out, i == len(raw)-1
		default:
			return nil, false
		}
	}
}

// jsonFloat decodes the JSON number raw as json.Unmarshal into a float64
// would; ok is false when that would fail or leave it unset (not a number,
// out of range, null).
func jsonFloat(raw []byte) (float64, bool) {
	if len(raw) == 0 || !(raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9') {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	return f, err == nil
}

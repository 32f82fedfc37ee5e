package idx

import (
	"fmt"
	"hoard/store"
	"strings"
)

// SyntaxError is a query the parser could not read; Pos is the byte
// offset (from 0) where the problem is.
type SyntaxError struct {
	Pos int
	Msg string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("bad query at position %d: %s", e.Pos, e.Msg)
}

// Class is store.KindInvalid.
func (e *SyntaxError) Class() (store.Kind, string) { return store.KindInvalid, e.Error() }

func errAt(pos int, format string, args ...any) error {
	return &SyntaxError{Pos: pos, Msg: fmt.Sprintf(format, args...)}
}

// token is one space-separated word of a query: an optional "-", an
// optional known keyword with its colon, and a value made of bare
// characters and quoted sections ("..." with \" and \\ escapes).
type token struct {
	pos    int    // start of the token
	neg    bool   // led by "-"
	key    string // lower-case keyword, "" for a plain word
	valPos int    // start of the value
	val    string // value with quotes removed
	quoted bool   // some part of the value was quoted
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

func isLetter(c byte) bool { return 'a' <= c|0x20 && c|0x20 <= 'z' }

// Limits on a query, so a hostile one costs little.
const (
	maxQueryLen = 4096
	maxTerms    = 64
)

// lex splits q into tokens. It runs synchronously (no goroutine).
func lex(q string) ([]token, error) {
	if len(q) > maxQueryLen {
		return nil, errAt(maxQueryLen, "the query is longer than %d bytes", maxQueryLen)
	}
	var out []token
	i := 0
	for {
		for i < len(q) && isSpace(q[i]) {
			i++
		}
		if i == len(q) {
			return out, nil
		}
		if len(out) == maxTerms {
			return nil, errAt(i, "more than %d terms", maxTerms)
		}
		t := token{pos: i}
		if q[i] == '-' && i+1 < len(q) && !isSpace(q[i+1]) {
			t.neg = true
			i++
		}
		j := i
		for j < len(q) && isLetter(q[j]) {
			j++
		}
		if j > i && j < len(q) && q[j] == ':' {
			if k := strings.ToLower(q[i:j]); keywords[k] != nil {
				t.key = k
				i = j + 1
			}
		}
		t.valPos = i
		var v strings.Builder
		for i < len(q) && !isSpace(q[i]) {
			if q[i] != '"' {
				v.WriteByte(q[i])
				i++
				continue
			}
			open := i
			t.quoted = true
			i++
			for {
				if i == len(q) {
					return nil, errAt(open, "the quote opened here is not closed")
				}
				c := q[i]
				if c == '"' {
					i++
					break
				}
				if c == '\\' && i+1 < len(q) && (q[i+1] == '"' || q[i+1] == '\\') {
					c = q[i+1]
					i++
				}
				v.WriteByte(c)
				i++
			}
		}
		t.val = v.String()
		out = append(out, t)
	}
}

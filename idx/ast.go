package idx

import (
	"strconv"
	"strings"
	"time"
)

// Query is a parsed search: every term must match (AND).
type Query struct {
	Terms []Term `json:"terms"`
}

// Kind names what a term tests.
type Kind string

// Term kinds. Text terms match the file's path (volume mount point
// included, no leading slash) case-insensitively as a substring; a glob is
// matched against the file name or the whole path; the rest are filters.
const (
	KText   Kind = "text"   // word or quoted phrase
	KGlob   Kind = "glob"   // word with *
	KSize   Kind = "size"   // Num bytes
	KDate   Kind = "date"   // Num Unix seconds (UTC), Span 86400 or 1
	KPath   Kind = "path"   // Text: path prefix, no leading slash
	KExt    Kind = "ext"    // List: extensions, lower case, no dot
	KArtist Kind = "artist" // Text: substring of the tag
	KAlbum  Kind = "album"
	KTitle  Kind = "title"
	KGenre  Kind = "genre"
	KYear   Kind = "year" // Num
	KRate   Kind = "rate" // Num kbps
	KDur    Kind = "dur"  // Num milliseconds
)

// Term is one condition of a query.
type Term struct {
	Not  bool     `json:"not,omitempty"`
	Kind Kind     `json:"kind"`
	Op   string   `json:"op,omitempty"` // "<" "<=" "=" ">=" ">" for numbers and dates
	Text string   `json:"text,omitempty"`
	List []string `json:"list,omitempty"`
	Num  int64    `json:"num,omitempty"`
	Span int64    `json:"span,omitempty"`
	Pos  int      `json:"-"` // byte offset of the term in the query
}

// isTag reports whether the term needs tag indexing.
func (t *Term) isTag() bool {
	switch t.Kind {
	case KArtist, KAlbum, KTitle, KGenre, KYear, KRate, KDur:
		return true
	}
	return false
}

// String prints the query in the syntax Parse reads; Parse(q.String())
// gives q back.
func (q *Query) String() string {
	var b strings.Builder
	for i, t := range q.Terms {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(t.String())
	}
	return b.String()
}

// String prints one term.
func (t Term) String() string {
	var b strings.Builder
	if t.Not {
		b.WriteByte('-')
	}
	switch t.Kind {
	case KText:
		if bare(t.Text) && !strings.ContainsAny(t.Text, "*:") && t.Text[0] != '-' {
			b.WriteString(t.Text)
		} else {
			b.WriteString(quote(t.Text))
		}
	case KGlob:
		b.WriteString(t.Text)
	case KPath:
		b.WriteString("path:")
		b.WriteString(value("/" + t.Text))
	case KExt:
		b.WriteString("ext:")
		b.WriteString(value(strings.Join(t.List, ",")))
	case KArtist, KAlbum, KTitle, KGenre:
		b.WriteString(string(t.Kind) + ":")
		b.WriteString(value(t.Text))
	case KDate:
		b.WriteString("date:" + t.Op)
		tm := time.Unix(t.Num, 0).UTC()
		if t.Span == 1 {
			b.WriteString(quote(tm.Format(time.DateTime)))
		} else {
			b.WriteString(tm.Format(time.DateOnly))
		}
	case KDur:
		b.WriteString("dur:" + t.Op + strconv.FormatFloat(float64(t.Num)/1000, 'f', -1, 64))
	default: // size, year, rate
		b.WriteString(string(t.Kind) + ":" + t.Op + strconv.FormatInt(t.Num, 10))
	}
	return b.String()
}

// bare reports whether s can be written without quotes.
func bare(s string) bool {
	return s != "" && !strings.ContainsAny(s, " \t\n\r\v\f\"\\")
}

// value prints a filter value, quoted when needed.
func value(s string) string {
	if bare(s) {
		return s
	}
	return quote(s)
}

func quote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

package idx

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// keyword is one filter of the query language. The table below is the
// whole language besides plain words, phrases and wildcards; Help prints it.
type keyword struct {
	kind    Kind
	syntax  string
	help    string
	compile func(t token, rest []token) (Term, int, error) // int: extra tokens consumed
}

var keywordList = []*keyword{
	{KSize, "size:<op><number>[K|M|G|T]", "file size; op is > < = >= <=; units are KiB, MiB, GiB, TiB; a bare number is bytes", compileSize},
	{KDate, "date:<op>YYYY-MM-DD[ HH:MM:SS]", "modification time (UTC); a day compares as a whole day", compileDate},
	{KPath, "path:<prefix>", "path starts with prefix: the URL path (volume mount point included) or the path in the volume", compilePath},
	{KExt, "ext:<a>,<b>", "file extension is one of the list", compileExt},
	{KArtist, "artist:<text>", "artist tag contains text (quote values with spaces)", compileTagText},
	{KAlbum, "album:<text>", "album tag contains text", compileTagText},
	{KTitle, "title:<text>", "title tag contains text", compileTagText},
	{KGenre, "genre:<text>", "genre tag contains text", compileTagText},
	{KYear, "year:[op]<year>", "year tag; op is > < = >= <=", compileNum},
	{KRate, "rate:<op><kbps>", "bitrate in kbps", compileNum},
	{KDur, "dur:<op><seconds>", "duration in seconds", compileNum},
}

// keywords maps a keyword's name to its entry.
var keywords = func() map[string]*keyword {
	m := map[string]*keyword{}
	for _, k := range keywordList {
		m[string(k.kind)] = k
	}
	return m
}()

// Help describes the query language, one line per form.
func Help() []string {
	out := []string{
		`word: path contains word (case-insensitive); several words must all match`,
		`"a phrase": path contains the phrase`,
		`*: wildcard, e.g. *.log or foo*bar (matches the file name or the whole path)`,
		`-term: the term must not match`,
	}
	for _, k := range keywordList {
		out = append(out, k.syntax+": "+k.help)
	}
	return out
}

// Parse reads a query. An empty query matches every file.
func Parse(q string) (*Query, error) {
	toks, err := lex(q)
	if err != nil {
		return nil, err
	}
	out := &Query{Terms: []Term{}}
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		var term Term
		if t.key == "" {
			term = Term{Kind: KText, Text: t.val}
			if !t.quoted && strings.Contains(t.val, "*") {
				term.Kind = KGlob
			}
		} else {
			if t.val == "" && !t.quoted {
				return nil, errAt(t.valPos, "%s: needs a value", t.key)
			}
			var n int
			term, n, err = keywords[t.key].compile(t, toks[i+1:])
			if err != nil {
				return nil, err
			}
			i += n
		}
		term.Not, term.Pos = t.neg, t.pos
		out.Terms = append(out.Terms, term)
	}
	return out, nil
}

// splitOp takes a comparison operator off the front of s.
func splitOp(s string) (op, rest string) {
	for _, o := range []string{">=", "<=", "==", ">", "<", "="} {
		if strings.HasPrefix(s, o) {
			if o == "==" {
				o = "="
			}
			return o, s[len(o):]
		}
	}
	return "", s
}

var sizeRE = regexp.MustCompile(`^([0-9]+(?:\.[0-9]+)?)\s*([kmgtKMGT]?)(?:[iI]?[bB])?$`)

func compileSize(t token, _ []token) (Term, int, error) {
	op, rest := splitOp(t.val)
	if op == "" {
		op = "="
	}
	m := sizeRE.FindStringSubmatch(rest)
	if m == nil {
		return Term{}, 0, errAt(t.valPos, "size: %q is not a number with an optional unit K, M, G or T", rest)
	}
	f, _ := strconv.ParseFloat(m[1], 64)
	mul := map[string]float64{"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}[strings.ToLower(m[2])]
	n := math.Round(f * mul)
	if n > 1<<62 {
		return Term{}, 0, errAt(t.valPos, "size: %q is too large", rest)
	}
	return Term{Kind: KSize, Op: op, Num: int64(n)}, 0, nil
}

var clockRE = regexp.MustCompile(`^[0-9]{2}:[0-9]{2}:[0-9]{2}$`)

func compileDate(t token, rest []token) (Term, int, error) {
	op, v := splitOp(t.val)
	if op == "" {
		op = "="
	}
	used := 0
	// "date:>2020-01-02 03:04:05" unquoted: the time is the next word.
	if len(v) == 10 && len(rest) > 0 && rest[0].key == "" && !rest[0].neg && !rest[0].quoted && clockRE.MatchString(rest[0].val) {
		v += " " + rest[0].val
		used = 1
	}
	for _, f := range []struct {
		layout string
		span   int64
	}{{time.DateOnly, 86400}, {time.DateTime, 1}, {"2006-01-02T15:04:05", 1}} {
		if tm, err := time.ParseInLocation(f.layout, v, time.UTC); err == nil {
			return Term{Kind: KDate, Op: op, Num: tm.Unix(), Span: f.span}, used, nil
		}
	}
	return Term{}, 0, errAt(t.valPos, "date: %q is not YYYY-MM-DD or YYYY-MM-DD HH:MM:SS", v)
}

func compilePath(t token, _ []token) (Term, int, error) {
	return Term{Kind: KPath, Text: strings.TrimLeft(t.val, "/")}, 0, nil
}

func compileExt(t token, _ []token) (Term, int, error) {
	var list []string
	pos := t.valPos
	for _, e := range strings.Split(t.val, ",") {
		e = strings.ToLower(strings.TrimLeft(strings.TrimSpace(e), "."))
		if e == "" || strings.HasSuffix(e, ".") || strings.Contains(e, "..") {
			return Term{}, 0, errAt(pos, "ext: empty extension in %q", t.val)
		}
		list = append(list, e)
	}
	return Term{Kind: KExt, List: list}, 0, nil
}

func compileTagText(t token, _ []token) (Term, int, error) {
	if t.val == "" {
		return Term{}, 0, errAt(t.valPos, "%s: needs a value", t.key)
	}
	return Term{Kind: Kind(t.key), Text: t.val}, 0, nil
}

func compileNum(t token, _ []token) (Term, int, error) {
	op, v := splitOp(t.val)
	if op == "" {
		op = "="
	}
	k := Kind(t.key)
	if k == KDur {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 0 || f > 1e12 || strings.ContainsAny(v, "eExXpP_") || v == "" {
			return Term{}, 0, errAt(t.valPos, "dur: %q is not a number of seconds", v)
		}
		return Term{Kind: k, Op: op, Num: int64(math.Round(f * 1000))}, 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 || n > 1<<40 || strings.ContainsAny(v, "+_") {
		return Term{}, 0, errAt(t.valPos, "%s: %q is not a whole number", t.key, v)
	}
	return Term{Kind: k, Op: op, Num: n}, 0, nil
}

package idx

import "strings"

// This file is the residual filter: the exact meaning of every term,
// tested against one record. The planner only narrows the candidates; a
// hit is always decided here (and the oracle test uses only this).

// cand is one candidate file as the executor sees it.
type cand struct {
	full string // lower-cased path: volume mount point, "/", path in the volume
	name string // lower-cased file name
	pre  int    // length of the mount point and "/" in full (0 at the root)
	rec  *Record
}

func cmpOp(v int64, op string, n int64) bool {
	switch op {
	case "<":
		return v < n
	case "<=":
		return v <= n
	case ">":
		return v > n
	case ">=":
		return v >= n
	}
	return v == n
}

// pathOnly reports whether the term can be decided from the path alone.
func (t *Term) pathOnly() bool {
	switch t.Kind {
	case KText, KGlob, KPath, KExt:
		return true
	}
	return false
}

// matchPath decides a pathOnly term on a path full whose first pre bytes
// are the volume's mount point and "/".
func (t *Term) matchPath(full, name string, pre int) bool {
	var ok bool
	switch t.Kind {
	case KText:
		ok = strings.Contains(full, lower(t.Text))
	case KGlob:
		g := lower(t.Text)
		ok = glob(g, name) || glob(g, full)
	case KPath:
		// A URL path (mount point included) or a path in the volume.
		p := lower(t.Text)
		ok = strings.HasPrefix(full, p) || strings.HasPrefix(full[pre:], p)
	case KExt:
		e := ext(name)
		for _, x := range t.List {
			if strings.Contains(x, ".") {
				ok = strings.HasSuffix(name, "."+x)
			} else {
				ok = e == x
			}
			if ok {
				break
			}
		}
	}
	return ok != t.Not
}

// match decides any term.
func (t *Term) match(c *cand) bool {
	if t.pathOnly() {
		return t.matchPath(c.full, c.name, c.pre)
	}
	var ok bool
	r := c.rec
	switch t.Kind {
	case KSize:
		ok = cmpOp(r.Size, t.Op, t.Num)
	case KDate:
		lo, hi := dateRange(t)
		s := mtimeSec(r.Mtime)
		ok = s >= lo && s < hi
	case KArtist, KAlbum, KTitle, KGenre:
		v, has := r.Tags[string(t.Kind)]
		ok = has && strings.Contains(lower(v), lower(t.Text))
	case KYear, KRate, KDur:
		v, has := numTag(r.Tags, numField(t.Kind))
		ok = has && cmpOp(v, t.Op, t.Num)
	}
	return ok != t.Not
}

// dateRange is the half-open range of Unix seconds a date term accepts.
func dateRange(t *Term) (lo, hi int64) {
	const minT, maxT = -1 << 62, 1 << 62
	switch t.Op {
	case "<":
		return minT, t.Num
	case "<=":
		return minT, t.Num + t.Span
	case ">":
		return t.Num + t.Span, maxT
	case ">=":
		return t.Num, maxT
	}
	return t.Num, t.Num + t.Span
}

// numRange is the half-open range a numeric comparison accepts.
func numRange(op string, n int64) (lo, hi int64) {
	const minT, maxT = -1 << 62, 1 << 62
	switch op {
	case "<":
		return minT, n
	case "<=":
		return minT, n + 1
	case ">":
		return n + 1, maxT
	case ">=":
		return n, maxT
	}
	return n, n + 1
}

func numField(k Kind) byte {
	switch k {
	case KYear:
		return fieldYear
	case KRate:
		return fieldRate
	}
	return fieldDur
}

func textField(k Kind) byte {
	switch k {
	case KArtist:
		return fieldArtist
	case KAlbum:
		return fieldAlbum
	case KTitle:
		return fieldTitle
	case KGenre:
		return fieldGenre
	}
	return fieldPath
}

// glob matches s against pattern p, where * is any run of bytes and
// everything else is literal; anchored at both ends. Linear in practice:
// the classic backtrack-to-last-star loop.
func glob(p, s string) bool {
	pi, si := 0, 0
	star, mark := -1, 0
	for si < len(s) {
		switch {
		case pi < len(p) && p[pi] == '*':
			star, mark = pi, si
			pi++
		case pi < len(p) && p[pi] == s[si]:
			pi++
			si++
		case star >= 0:
			pi = star + 1
			mark++
			si = mark
		default:
			return false
		}
	}
	for pi < len(p) && p[pi] == '*' {
		pi++
	}
	return pi == len(p)
}

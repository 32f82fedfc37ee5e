package idx

import (
	"cmp"
	"slices"
	"strings"

	"github.com/cockroachdb/pebble/v2"
)

// A plan lists a volume's candidates from the cheapest index range, or
// from the block-by-block join of posting lists (postings.go), and leaves the
// exact decision to the residual filter (match.go).

// krange is a key range [lo, hi) whose keys end in a file id. The keys
// of a paths range are 'p' keys, which carry the lower-cased path.
type krange struct {
	lo, hi []byte
	paths  bool
	name   string // 'N' keys: the wildcard the name must match ("" none)
}

// source is one way to list candidates.
type source struct {
	name   string   // "tri", "ext", "size", "date", "path", "num", "scan"
	conj   []conj   // block posting lists (postings.go): intersected
	ranges []krange // scanned one after another
	est    int      // estimated candidates (ranges counted up to estCap)
}

// conj is a union of block posting lists, one conjunct of a join.
type conj struct {
	lists [][]byte // list prefixes
	n     int      // ids in all of them (counted exactly)
}

// estCap bounds the counting of a range while planning.
const estCap = 1000

// maxConj bounds the conjuncts one join intersects (the rarest are kept;
// the residual filter checks the rest anyway).
const maxConj = 32

// plan is the chosen way to run a query on one volume.
type plan struct {
	src  source
	none bool // no file of the volume can match
}

// Name is the plan's source, for tests and logs (e.g. "tri", "size",
// "scan", "none").
func (p plan) Name() string {
	if p.none {
		return "none"
	}
	return p.src.name
}

// straddles reports whether some match of the lower-cased literal s in
// pre+rel could begin inside pre (the volume's mount prefix), where the
// rel-only postings cannot see it.
func straddles(pre, s string) bool {
	if strings.Contains(pre, s) {
		return true
	}
	for k := 1; k < len(s); k++ {
		if strings.HasSuffix(pre, s[:k]) {
			return true
		}
	}
	return false
}

// triConj is one conjunct per trigram of s.
func triConj(field byte, s string) []conj {
	var out []conj
	for _, t := range trigrams(s) {
		out = append(out, conj{lists: [][]byte{{famTri, field, t[0], t[1], t[2]}}})
	}
	return out
}

func numBounds(fam byte, field []byte, lo, hi int64) krange {
	l := append(append([]byte{fam}, field...), s64(lo)...)
	h := append(append([]byte{fam}, field...), s64(hi)...)
	return krange{l, h, false, ""}
}

// anchored is the source of a wildcard that does not start with *: names
// starting with its first literal, and paths starting with it.
func anchored(pre, g string) (source, bool) {
	first, _, _ := strings.Cut(g, "*")
	if first == "" || strings.HasPrefix(pre, first) {
		return source{}, false // the whole volume's paths could match
	}
	s := source{name: "glob"}
	if !strings.Contains(first, "/") {
		lo := append([]byte{famName}, first...)
		// A name that does not match is skipped here: if its path
		// matches, the path range below lists it.
		s.ranges = append(s.ranges, krange{lo, prefixEnd(lo), false, g})
	}
	if strings.HasPrefix(first, pre) {
		lo := append([]byte{famPath}, first[len(pre):]...)
		s.ranges = append(s.ranges, krange{lo, prefixEnd(lo), true, ""})
	}
	return s, true
}

// makePlan picks the source for terms on the volume mounted at pre.
func makePlan(r pebble.Reader, db *pebble.DB, pre string, terms []Term) (plan, error) {
	counted := map[string]int{} // list prefix → ids, for lists shared by terms
	estimate := func(s *source) error { return estimateSrc(r, db, s, counted) }
	var cands []source
	var lists []source // sources of block posting lists, for the join
	spans := map[Kind][2]int64{}
	var kinds []Kind
	for i := range terms {
		t := &terms[i]
		if t.Not {
			continue
		}
		var s source
		switch t.Kind {
		case KText, KArtist, KAlbum, KTitle, KGenre:
			tl := lower(t.Text)
			f := textField(t.Kind)
			if len(tl) < 3 || (f == fieldPath && straddles(pre, tl)) {
				continue
			}
			s = source{name: "tri", conj: triConj(f, tl)}
		case KGlob:
			// Anchored at the start: the name or the whole path begins
			// with the first literal.
			if a, ok := anchored(pre, lower(t.Text)); ok {
				if err := estimate(&a); err != nil {
					return plan{}, err
				}
				// Its candidates are tested on the key alone (no record
				// read), about ten times cheaper each.
				a.est = max(1, a.est/10)
				cands = append(cands, a)
			}
			// Every literal is in the path; the last one, unless the
			// wildcard ends with *, ends it (and the name).
			s = source{name: "tri"}
			segs := strings.Split(lower(t.Text), "*")
			for i, seg := range segs {
				if i == len(segs)-1 && seg != "" {
					seg += pathEnd
				}
				if len(seg) >= 3 && !straddles(pre, seg) {
					s.conj = append(s.conj, triConj(fieldPath, seg)...)
				}
			}
			if len(s.conj) == 0 {
				continue
			}
		case KPath:
			// A URL path (mount point included) or a path in the
			// volume: the union of both readings' ranges.
			p := lower(t.Text)
			if strings.HasPrefix(pre, p) {
				continue // the whole volume is below the prefix
			}
			lo := append([]byte{famPath}, p...)
			s = source{name: "path", ranges: []krange{{lo, prefixEnd(lo), true, ""}}}
			if pre != "" && strings.HasPrefix(p, pre) {
				lo := append([]byte{famPath}, p[len(pre):]...)
				s.ranges = append(s.ranges, krange{lo, prefixEnd(lo), true, ""})
			}
		case KExt:
			// One conjunct: the union of the extensions' lists (of
			// "gz" for tar.gz; the filter checks the rest).
			var c conj
			for _, e := range t.List {
				e = e[strings.LastIndexByte(e, '.')+1:]
				l := append(append([]byte{famExt}, e...), 0)
				if !slices.ContainsFunc(c.lists, func(o []byte) bool { return string(o) == string(l) }) {
					c.lists = append(c.lists, l)
				}
			}
			s = source{name: "ext", conj: []conj{c}}
		case KSize, KDate, KYear, KRate, KDur:
			// Ranges on one field are intersected into one source below.
			var lo, hi int64
			if t.Kind == KDate {
				lo, hi = dateRange(t)
			} else {
				lo, hi = numRange(t.Op, t.Num)
			}
			if r, ok := spans[t.Kind]; ok {
				lo, hi = max(lo, r[0]), min(hi, r[1])
			} else {
				kinds = append(kinds, t.Kind)
			}
			spans[t.Kind] = [2]int64{lo, hi}
			continue
		default:
			continue
		}
		if err := estimate(&s); err != nil {
			return plan{}, err
		}
		cands = append(cands, s)
		if len(s.conj) > 0 {
			lists = append(lists, s)
		}
	}
	for _, k := range kinds {
		lo, hi := spans[k][0], spans[k][1]
		if lo >= hi {
			return plan{none: true}, nil
		}
		var s source
		switch k {
		case KSize:
			s = source{name: "size", ranges: []krange{numBounds(famSize, nil, max(lo, 0), max(hi, 0))}}
		case KDate:
			s = source{name: "date", ranges: []krange{numBounds(famMtime, nil, lo, hi)}}
		default:
			s = source{name: "num", ranges: []krange{numBounds(famNum, []byte{numField(k)}, lo, hi)}}
		}
		if err := estimate(&s); err != nil {
			return plan{}, err
		}
		cands = append(cands, s)
	}
	if len(cands) == 0 {
		return plan{src: source{name: "scan", ranges: []krange{{[]byte{famPath}, []byte{famPath + 1}, true, ""}}, est: 1 << 62}}, nil
	}
	best := slices.MinFunc(cands, func(a, b source) int {
		if c := cmp.Compare(a.est, b.est); c != 0 {
			return c
		}
		return cmp.Compare(len(b.conj), len(a.conj)) // prefer postings on a tie
	})
	if best.est == 0 {
		return plan{none: true}, nil
	}
	if len(best.conj) > 0 {
		// Join the posting lists of every term, rarest first: a block
		// of a list costs little next to a record read per candidate.
		var all []conj
		seen := map[string]bool{}
		for _, s := range lists {
			for _, c := range s.conj {
				k := string(bytesJoin(c.lists))
				if !seen[k] {
					seen[k] = true
					all = append(all, c)
				}
			}
		}
		slices.SortStableFunc(all, func(a, b conj) int { return cmp.Compare(a.n, b.n) })
		best.conj = all[:min(len(all), maxConj)]
	}
	return plan{src: best}, nil
}

func bytesJoin(ls [][]byte) []byte {
	var k []byte
	for _, l := range ls {
		k = append(append(k, l...), 0xff)
	}
	return k
}

// estimateSrc sets s.est: for posting lists, the size of the smallest
// conjunct (each counted exactly, and cached in counted); for ranges, the
// sum of their keys counted up to estCap, past which the range's estimated
// size on disk (db, when given) tells big from bigger.
func estimateSrc(r pebble.Reader, db *pebble.DB, s *source, counted map[string]int) error {
	size := func(kr krange) (int, error) {
		n, err := count(r, kr)
		if err != nil || n < estCap || db == nil {
			return n, err
		}
		b, err := db.EstimateDiskUsage(kr.lo, kr.hi)
		return n + int(min(b, 1<<40)), err
	}
	if len(s.conj) > 0 {
		s.est = 1 << 62
		for i := range s.conj {
			c := &s.conj[i]
			c.n = 0
			for _, l := range c.lists {
				n, ok := counted[string(l)]
				if !ok {
					var err error
					if n, err = listCount(r, l); err != nil {
						return err
					}
					counted[string(l)] = n
				}
				c.n += n
			}
			s.est = min(s.est, c.n)
		}
		return nil
	}
	s.est = 0
	for _, kr := range s.ranges {
		n, err := size(kr)
		if err != nil {
			return err
		}
		s.est += n
	}
	return nil
}

func count(r pebble.Reader, kr krange) (int, error) {
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: kr.lo, UpperBound: kr.hi})
	if err != nil {
		return 0, err
	}
	n := 0
	for ok := it.First(); ok && n < estCap; ok = it.Next() {
		n++
	}
	if err := it.Error(); err != nil {
		it.Close()
		return 0, err
	}
	return n, it.Close()
}

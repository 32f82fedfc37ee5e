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
		out = append(out, conj{lists: [][]byte{triList(field, t)}})
	}
	return out
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
		lo := namePrefix(first)
		// A name that does not match is skipped here: if its path
		// matches, the path range below lists it.
		s.ranges = append(s.ranges, krange{lo, prefixEnd(lo), false, g})
	}
	if strings.HasPrefix(first, pre) {
		lo := pathPrefix(first[len(pre):])
		s.ranges = append(s.ranges, krange{lo, prefixEnd(lo), true, ""})
	}
	return s, true
}

// planner gathers the candidate sources of one query on one volume.
type planner struct {
	r       pebble.Reader
	db      *pebble.DB
	pre     string         // the volume's mount prefix
	counted map[string]int // list prefix → ids, for lists shared by terms
	cands   []source
	lists   []source // sources of block posting lists, for the join
	spans   map[Kind][2]int64
	kinds   []Kind // the fields of spans, in the order the terms name them
}

// makePlan picks the source for terms on the volume mounted at pre: each
// term offers its sources, number ranges on one field are intersected,
// and the cheapest source wins.
func makePlan(r pebble.Reader, db *pebble.DB, pre string, terms []Term) (plan, error) {
	p := &planner{r: r, db: db, pre: pre, counted: map[string]int{}, spans: map[Kind][2]int64{}}
	for i := range terms {
		if err := p.term(&terms[i]); err != nil {
			return plan{}, err
		}
	}
	none, err := p.spanSources()
	if err != nil || none {
		return plan{none: none}, err
	}
	return p.choose(), nil
}

// term adds the sources of one term (none for a negated one: its files
// are the ones not listed).
func (p *planner) term(t *Term) error {
	if t.Not {
		return nil
	}
	switch t.Kind {
	case KText, KArtist, KAlbum, KTitle, KGenre:
		return p.add(textSource(p.pre, t))
	case KGlob:
		// Anchored at the start: the name or the whole path begins
		// with the first literal.
		if a, ok := anchored(p.pre, lower(t.Text)); ok {
			if err := p.estimate(&a); err != nil {
				return err
			}
			// Its candidates are tested on the key alone (no record
			// read), about ten times cheaper each.
			a.est = max(1, a.est/10)
			p.cands = append(p.cands, a)
		}
		return p.add(globSource(p.pre, t))
	case KPath:
		return p.add(pathSource(p.pre, t))
	case KExt:
		return p.add(extSource(t), true)
	case KSize, KDate, KYear, KRate, KDur:
		p.span(t)
	}
	return nil
}

// add estimates s and makes it a candidate; ok false adds nothing.
func (p *planner) add(s source, ok bool) error {
	if !ok {
		return nil
	}
	if err := p.estimate(&s); err != nil {
		return err
	}
	p.cands = append(p.cands, s)
	if len(s.conj) > 0 {
		p.lists = append(p.lists, s)
	}
	return nil
}

func (p *planner) estimate(s *source) error { return estimateSrc(p.r, p.db, s, p.counted) }

// textSource is the trigrams of a text term's literal, ok false when it
// is too short or could straddle the mount prefix.
func textSource(pre string, t *Term) (source, bool) {
	tl := lower(t.Text)
	f := textField(t.Kind)
	if len(tl) < 3 || (f == fieldPath && straddles(pre, tl)) {
		return source{}, false
	}
	return source{name: "tri", conj: triConj(f, tl)}, true
}

// globSource is the trigrams of a wildcard's literals: every literal is
// in the path; the last one, unless the wildcard ends with *, ends it
// (and the name).
func globSource(pre string, t *Term) (source, bool) {
	s := source{name: "tri"}
	segs := strings.Split(lower(t.Text), "*")
	for i, seg := range segs {
		if i == len(segs)-1 && seg != "" {
			seg += pathEnd
		}
		if len(seg) >= 3 && !straddles(pre, seg) {
			s.conj = append(s.conj, triConj(fieldPath, seg)...)
		}
	}
	return s, len(s.conj) > 0
}

// pathSource is the paths below a URL path (mount point included) or a
// path in the volume: the union of both readings' ranges. ok is false
// when the whole volume is below it.
func pathSource(pre string, t *Term) (source, bool) {
	p := lower(t.Text)
	if strings.HasPrefix(pre, p) {
		return source{}, false
	}
	lo := pathPrefix(p)
	s := source{name: "path", ranges: []krange{{lo, prefixEnd(lo), true, ""}}}
	if pre != "" && strings.HasPrefix(p, pre) {
		lo := pathPrefix(p[len(pre):])
		s.ranges = append(s.ranges, krange{lo, prefixEnd(lo), true, ""})
	}
	return s, true
}

// extSource is one conjunct: the union of the extensions' lists (of "gz"
// for tar.gz; the filter checks the rest).
func extSource(t *Term) source {
	var c conj
	for _, e := range t.List {
		l := extList(e[strings.LastIndexByte(e, '.')+1:])
		if !slices.ContainsFunc(c.lists, func(o []byte) bool { return string(o) == string(l) }) {
			c.lists = append(c.lists, l)
		}
	}
	return source{name: "ext", conj: []conj{c}}
}

// span narrows the number range of t's field to t's bounds; ranges on one
// field become one source (spanSources).
func (p *planner) span(t *Term) {
	var lo, hi int64
	if t.Kind == KDate {
		lo, hi = dateRange(t)
	} else {
		lo, hi = numRange(t.Op, t.Num)
	}
	if r, ok := p.spans[t.Kind]; ok {
		lo, hi = max(lo, r[0]), min(hi, r[1])
	} else {
		p.kinds = append(p.kinds, t.Kind)
	}
	p.spans[t.Kind] = [2]int64{lo, hi}
}

// spanSources adds a source per number field; none is true when a
// field's range is empty, so no file can match.
func (p *planner) spanSources() (none bool, err error) {
	for _, k := range p.kinds {
		lo, hi := p.spans[k][0], p.spans[k][1]
		if lo >= hi {
			return true, nil
		}
		s := spanSource(k, lo, hi)
		if err := p.estimate(&s); err != nil {
			return false, err
		}
		p.cands = append(p.cands, s)
	}
	return false, nil
}

// spanSource is the key range of the numbers [lo, hi) of field k.
func spanSource(k Kind, lo, hi int64) source {
	switch k {
	case KSize:
		lo, hi = max(lo, 0), max(hi, 0)
		return source{name: "size", ranges: []krange{{sizeBound(lo), sizeBound(hi), false, ""}}}
	case KDate:
		return source{name: "date", ranges: []krange{{mtimeBound(lo), mtimeBound(hi), false, ""}}}
	}
	f := numField(k)
	return source{name: "num", ranges: []krange{{numBound(f, lo), numBound(f, hi), false, ""}}}
}

// choose picks the cheapest candidate (the whole volume's paths when there
// is none); a posting-list winner joins every term's lists.
func (p *planner) choose() plan {
	if len(p.cands) == 0 {
		lo, hi := famRange(famPath)
		return plan{src: source{name: "scan", ranges: []krange{{lo, hi, true, ""}}, est: 1 << 62}}
	}
	best := slices.MinFunc(p.cands, func(a, b source) int {
		if c := cmp.Compare(a.est, b.est); c != 0 {
			return c
		}
		return cmp.Compare(len(b.conj), len(a.conj)) // prefer postings on a tie
	})
	if best.est == 0 {
		return plan{none: true}
	}
	if len(best.conj) > 0 {
		best.conj = p.join()
	}
	return plan{src: best}
}

// join is the conjuncts of every term's posting lists, each once, rarest
// first (a block of a list costs little next to a record read per
// candidate), at most maxConj.
func (p *planner) join() []conj {
	var all []conj
	seen := map[string]bool{}
	for _, s := range p.lists {
		for _, c := range s.conj {
			k := string(bytesJoin(c.lists))
			if !seen[k] {
				seen[k] = true
				all = append(all, c)
			}
		}
	}
	slices.SortStableFunc(all, func(a, b conj) int { return cmp.Compare(a.n, b.n) })
	return all[:min(len(all), maxConj)]
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

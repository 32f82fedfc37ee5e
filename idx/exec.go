package idx

import (
	"context"

	"github.com/cockroachdb/pebble/v2"
)

// run streams the plan's candidates through the residual filter and calls
// emit for each hit until emit returns false.
func (p plan) run(ctx context.Context, r pebble.Reader, pre string, terms []Term, emit func(*cand) bool) error {
	if p.none {
		return nil
	}
	var pathTerms, otherTerms []*Term
	for i := range terms {
		if terms[i].pathOnly() {
			pathTerms = append(pathTerms, &terms[i])
		} else {
			otherTerms = append(otherTerms, &terms[i])
		}
	}
	n := 0
	// check decides one candidate; full is known for 'p' keys.
	check := func(id uint64, full string) (bool, error) {
		if n++; n&255 == 0 {
			if err := ctx.Err(); err != nil {
				return false, err
			}
		}
		c := &cand{full: full, pre: len(pre)}
		if full != "" {
			c.name = full[bytesLastSlash(full)+1:]
			for _, t := range pathTerms {
				if !t.matchPath(c.full, c.name, c.pre) {
					return true, nil
				}
			}
		}
		rec, err := recordByID(r, id)
		if err != nil || rec == nil {
			return err == nil, err // nil: deleted since the posting was read
		}
		c.rec = rec
		if full == "" {
			c.full = pre + lower(rec.Rel)
			c.name = c.full[bytesLastSlash(c.full)+1:]
			for _, t := range pathTerms {
				if !t.matchPath(c.full, c.name, c.pre) {
					return true, nil
				}
			}
		}
		for _, t := range otherTerms {
			if !t.match(c) {
				return true, nil
			}
		}
		return emit(c), nil
	}
	if len(p.src.conj) > 0 {
		conj := make([][][]byte, len(p.src.conj))
		for i, c := range p.src.conj {
			conj[i] = c.lists
		}
		return blockJoin(r, conj, func(id uint64) (bool, error) { return check(id, "") })
	}
	var seen map[uint64]bool // ranges of one source can overlap
	if len(p.src.ranges) > 1 {
		seen = map[uint64]bool{}
	}
	for _, kr := range p.src.ranges {
		it, err := r.NewIter(&pebble.IterOptions{LowerBound: kr.lo, UpperBound: kr.hi})
		if err != nil {
			return err
		}
		more := true
		for ok := it.First(); ok && more; ok = it.Next() {
			k := it.Key()
			id := idOf(k)
			if kr.name != "" && !glob(kr.name, textOfKey(k)) {
				continue
			}
			if seen != nil {
				if seen[id] {
					continue
				}
				seen[id] = true
			}
			full := ""
			if kr.paths {
				full = pre + textOfKey(k)
			}
			more, err = check(id, full)
			if err != nil {
				it.Close()
				return err
			}
		}
		if err := it.Error(); err != nil {
			it.Close()
			return err
		}
		if err := it.Close(); err != nil {
			return err
		}
		if !more {
			return nil
		}
	}
	return nil
}

func bytesLastSlash(s string) int {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '/' {
			return i
		}
	}
	return -1
}

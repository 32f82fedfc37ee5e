package idx

import (
	"encoding/binary"
	"errors"
	"io"
	"math/bits"
	"sync"

	"github.com/cockroachdb/pebble/v2"
)

// This file is the block posting lists of the trigram ('t') and extension
// ('e') families: one key per list and block of 65,536 ids, whose value is
// the set of the block's ids in the list. Writes are blind Pebble merge
// operands ("add id", "remove id"), which flushes and compactions fold into
// one set per key; a query reads each list as a few values and intersects
// them as bitmaps, instead of seeking through one key per posting.
//
// A value is two sets, the ids added and the ids removed (the removals
// cancel additions in older operands; a folded value that includes the
// oldest operand has none). A set is either
//
//	'A' uvarint(n) n×uint16 little-endian, ascending   (n ≤ 4096)
//	'B' 8192 bytes, bit i of byte i/8 = offset i       (denser sets)

const (
	blockBits  = 16
	blockIDs   = 1 << blockBits
	blockWords = blockIDs / 64
	arrayMax   = blockIDs / 16 // above this many ids a bitmap is smaller
)

// bitmap is one block's set of ids, by offset.
type bitmap [blockWords]uint64

func (b *bitmap) set(o uint16)      { b[o>>6] |= 1 << (o & 63) }
func (b *bitmap) clr(o uint16)      { b[o>>6] &^= 1 << (o & 63) }
func (b *bitmap) has(o uint16) bool { return b[o>>6]&(1<<(o&63)) != 0 }

func (b *bitmap) count() int {
	n := 0
	for _, w := range b {
		n += bits.OnesCount64(w)
	}
	return n
}

var bitmaps = sync.Pool{New: func() any { return new(bitmap) }}

func getBitmap() *bitmap {
	b := bitmaps.Get().(*bitmap)
	*b = bitmap{}
	return b
}

var errPosting = errors.New("idx: corrupt posting block")

// blockOp is the merge operand that adds (or removes) id.
func blockOp(id uint64, add bool) []byte {
	o := binary.LittleEndian.AppendUint16(nil, uint16(id))
	if add {
		return append([]byte{'A', 1, o[0], o[1]}, 'A', 0)
	}
	return []byte{'A', 0, 'A', 1, o[0], o[1]}
}

// pset is one decoded set of a value: an array or a bitmap, aliasing the
// value's bytes.
type pset struct {
	arr []byte // 'A': n×2 bytes
	bm  []byte // 'B': 8192 bytes
}

// splitSet reads one set from the front of v.
func splitSet(v []byte) (pset, []byte, error) {
	if len(v) == 0 {
		return pset{}, nil, errPosting
	}
	switch v[0] {
	case 'A':
		n, w := binary.Uvarint(v[1:])
		if w <= 0 || n > blockIDs || uint64(len(v)-1-w) < 2*n {
			return pset{}, nil, errPosting
		}
		s := v[1+w:]
		for i := 2; i < int(2*n); i += 2 {
			if binary.LittleEndian.Uint16(s[i:]) <= binary.LittleEndian.Uint16(s[i-2:]) {
				return pset{}, nil, errPosting // not strictly ascending
			}
		}
		return pset{arr: s[:2*n]}, s[2*n:], nil
	case 'B':
		if len(v) < 1+blockIDs/8 {
			return pset{}, nil, errPosting
		}
		return pset{bm: v[1 : 1+blockIDs/8]}, v[1+blockIDs/8:], nil
	}
	return pset{}, nil, errPosting
}

func (s pset) count() int {
	if s.bm == nil {
		return len(s.arr) / 2
	}
	n := 0
	for i := 0; i < len(s.bm); i += 8 {
		n += bits.OnesCount64(binary.LittleEndian.Uint64(s.bm[i:]))
	}
	return n
}

// each calls fn with every offset of s.
func (s pset) each(fn func(uint16)) {
	if s.bm == nil {
		for i := 0; i < len(s.arr); i += 2 {
			fn(binary.LittleEndian.Uint16(s.arr[i:]))
		}
		return
	}
	for i := 0; i < len(s.bm); i += 8 {
		w := binary.LittleEndian.Uint64(s.bm[i:])
		for w != 0 {
			fn(uint16(i*8 + bits.TrailingZeros64(w)))
			w &= w - 1
		}
	}
}

// into ORs s into b.
func (s pset) into(b *bitmap) {
	if s.bm == nil {
		for i := 0; i < len(s.arr); i += 2 {
			b.set(binary.LittleEndian.Uint16(s.arr[i:]))
		}
		return
	}
	for i := range b {
		b[i] |= binary.LittleEndian.Uint64(s.bm[i*8:])
	}
}

// decodeValue splits a value into its added and removed sets.
func decodeValue(v []byte) (add, del pset, err error) {
	add, rest, err := splitSet(v)
	if err != nil {
		return add, del, err
	}
	del, rest, err = splitSet(rest)
	if err == nil && len(rest) != 0 {
		err = errPosting
	}
	return add, del, err
}

// appendSet encodes b, as an array or a bitmap, whichever is smaller.
func appendSet(out []byte, b *bitmap) []byte {
	n := b.count()
	if n > arrayMax {
		out = append(out, 'B')
		for _, w := range b {
			out = binary.LittleEndian.AppendUint64(out, w)
		}
		return out
	}
	out = append(out, 'A')
	out = binary.AppendUvarint(out, uint64(n))
	for i, w := range b {
		for w != 0 {
			out = binary.LittleEndian.AppendUint16(out, uint16(i*64+bits.TrailingZeros64(w)))
			w &= w - 1
		}
	}
	return out
}

// appendArray encodes the ascending offsets offs as an array set (what
// appendSet writes for a small set, from a list instead of a bitmap).
func appendArray(out []byte, offs []uint16) []byte {
	out = binary.AppendUvarint(append(out, 'A'), uint64(len(offs)))
	for _, o := range offs {
		out = binary.LittleEndian.AppendUint16(out, o)
	}
	return out
}

// merger folds the operands of a block posting; for any other key it is
// Pebble's default, concatenation (hoard writes no other merge operands).
//
// It keeps the default's name: Pebble records the merger's name in every
// table and refuses to open a database under another name, and every
// database made before block postings existed was created under this one
// without ever holding a merge operand.
var merger = &pebble.Merger{
	Name: pebble.DefaultMerger.Name,
	Merge: func(key, value []byte) (pebble.ValueMerger, error) {
		if !blockFamily(key) {
			return pebble.DefaultMerger.Merge(key, value)
		}
		return &blockMerger{first: append([]byte(nil), value...)}, nil
	},
}

// blockMerger folds block operands. With one operand it returns it as is;
// from the second on it works on two bitmaps: what the operands seen so far
// add, and what they remove.
type blockMerger struct {
	first    []byte
	add, del *bitmap
}

func (m *blockMerger) spill() error {
	if m.add != nil {
		return nil
	}
	m.add, m.del = getBitmap(), getBitmap()
	a, d, err := decodeValue(m.first)
	if err != nil {
		return err
	}
	a.into(m.add)
	d.into(m.del)
	m.first = nil
	return nil
}

// MergeNewer applies an operand newer than all seen: its additions and
// removals win.
func (m *blockMerger) MergeNewer(v []byte) error {
	if err := m.spill(); err != nil {
		return err
	}
	a, d, err := decodeValue(v)
	if err != nil {
		return err
	}
	a.each(func(o uint16) { m.add.set(o); m.del.clr(o) })
	d.each(func(o uint16) { m.del.set(o); m.add.clr(o) })
	return nil
}

// MergeOlder applies an operand older than all seen: only where the newer
// ones say nothing.
func (m *blockMerger) MergeOlder(v []byte) error {
	if err := m.spill(); err != nil {
		return err
	}
	a, d, err := decodeValue(v)
	if err != nil {
		return err
	}
	a.each(func(o uint16) {
		if !m.del.has(o) {
			m.add.set(o)
		}
	})
	d.each(func(o uint16) {
		if !m.add.has(o) {
			m.del.set(o)
		}
	})
	return nil
}

func (m *blockMerger) Finish(includesBase bool) ([]byte, io.Closer, error) {
	if m.add == nil {
		if _, _, err := decodeValue(m.first); err != nil {
			return nil, nil, err
		}
		return m.first, nil, nil
	}
	defer func() {
		bitmaps.Put(m.add)
		bitmaps.Put(m.del)
		m.add, m.del = nil, nil
	}()
	out := appendSet(nil, m.add)
	if includesBase {
		return append(out, 'A', 0), nil, nil
	}
	return appendSet(out, m.del), nil, nil
}

// blist walks one block posting list, block by block.
type blist struct {
	it     *pebble.Iterator
	prefix []byte
	seek   []byte
	block  uint32 // current block, valid when ok
	ok     bool
	done   bool
}

func openList(r pebble.Reader, prefix []byte) (*blist, error) {
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: prefixEnd(prefix)})
	if err != nil {
		return nil, err
	}
	return &blist{it: it, prefix: prefix, seek: make([]byte, 0, len(prefix)+4)}, nil
}

// to moves to the first block ≥ b; false when there is none.
func (l *blist) to(b uint32) bool {
	if l.done {
		return false
	}
	if l.ok && l.block >= b {
		return true
	}
	var ok bool
	if l.ok && l.block+1 == b {
		ok = l.it.Next()
	} else {
		l.seek = appendBlockKey(l.seek[:0], l.prefix, b)
		ok = l.it.SeekGE(l.seek)
	}
	for ; ok; ok = l.it.Next() {
		if blk, mine := blockOfKey(l.it.Key(), len(l.prefix)); mine {
			l.block, l.ok = blk, true
			return true
		}
		// not one of this list's keys (cannot happen)
	}
	l.ok, l.done = false, true
	return false
}

// added is the current block's set of ids.
func (l *blist) added() (pset, error) {
	v, err := l.it.ValueAndErr()
	if err != nil {
		return pset{}, err
	}
	a, _, err := decodeValue(v)
	return a, err
}

func (l *blist) close() error { return l.it.Close() }

// listCount is the number of ids in the list with prefix.
func listCount(r pebble.Reader, prefix []byte) (int, error) {
	l, err := openList(r, prefix)
	if err != nil {
		return 0, err
	}
	n := 0
	for b := uint32(0); l.to(b); b = l.block + 1 {
		a, err := l.added()
		if err != nil {
			l.close()
			return 0, err
		}
		n += a.count()
		if l.block == ^uint32(0) {
			break
		}
	}
	if err := l.it.Error(); err != nil {
		l.close()
		return 0, err
	}
	return n, l.close()
}

// blockJoin calls fn, in ascending order, with every id present in all
// conjuncts, each the union of one or more lists: the lists are walked
// block by block (a block missing from one conjunct is skipped in all),
// and a block's sets are ORed per conjunct and ANDed across them.
func blockJoin(r pebble.Reader, conj [][][]byte, fn func(id uint64) (bool, error)) (err error) {
	lists := make([][]*blist, len(conj))
	defer func() {
		for _, ls := range lists {
			for _, l := range ls {
				if cerr := l.close(); err == nil {
					err = cerr
				}
			}
		}
	}()
	for i, c := range conj {
		for _, p := range c {
			l, err := openList(r, p)
			if err != nil {
				return err
			}
			lists[i] = append(lists[i], l)
		}
	}
	res, tmp := getBitmap(), getBitmap()
	defer bitmaps.Put(res)
	defer bitmaps.Put(tmp)
	// next is conjunct i's first block ≥ b (false: none).
	next := func(i int, b uint32) (uint32, bool, error) {
		best, any := uint32(0), false
		for _, l := range lists[i] {
			if l.to(b) && (!any || l.block < best) {
				best, any = l.block, true
			}
			if err := l.it.Error(); err != nil {
				return 0, false, err
			}
		}
		return best, any, nil
	}
	target := uint32(0)
	for {
		agreed := 0
		for i := 0; agreed < len(lists); i = (i + 1) % len(lists) {
			b, ok, err := next(i, target)
			if err != nil || !ok {
				return err
			}
			if b == target {
				agreed++
				continue
			}
			target, agreed = b, 1
		}
		// Every conjunct has the block: intersect.
		empty := false
		for i, ls := range lists {
			dst := res
			if i > 0 {
				dst = tmp
				*tmp = bitmap{}
			} else {
				*res = bitmap{}
			}
			for _, l := range ls {
				if !l.ok || l.block != target {
					continue
				}
				a, err := l.added()
				if err != nil {
					return err
				}
				a.into(dst)
			}
			if i > 0 {
				var any uint64
				for w := range res {
					res[w] &= tmp[w]
					any |= res[w]
				}
				if any == 0 {
					empty = true
					break
				}
			}
		}
		if !empty {
			base := uint64(target) << blockBits
			for w, word := range res {
				for word != 0 {
					id := base | uint64(w*64+bits.TrailingZeros64(word))
					word &= word - 1
					more, err := fn(id)
					if err != nil || !more {
						return err
					}
				}
			}
		}
		if target == ^uint32(0) {
			return nil
		}
		target++
	}
}

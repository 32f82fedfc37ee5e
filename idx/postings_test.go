package idx

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// TestBlockPostings adds and removes random ids of three lists in many
// batches, flushing and compacting now and then (so operands are folded
// in every combination: memtable, flush, partial and full compactions),
// and compares the counts and joins with a model.
func TestBlockPostings(t *testing.T) {
	d := testDB(t, vfs.NewMem())
	defer d.Close()
	lists := [][]byte{{famTri, fieldPath, 'a', 'b', 'c'}, {famTri, fieldPath, 'b', 'c', 'd'}, append([]byte{famExt}, "mp3\x00"...)}
	model := make([]map[uint64]bool, len(lists))
	for i := range model {
		model[i] = map[uint64]bool{}
	}
	r := rand.New(rand.NewPCG(5, 6))
	// Ids cluster in a few blocks, some dense enough for bitmaps.
	randID := func() uint64 {
		base := []uint64{1, blockIDs - 3000, 3 * blockIDs, 7 * blockIDs}[r.IntN(4)]
		return base + uint64(r.IntN(9000))
	}
	check := func(stage string) {
		t.Helper()
		for i, l := range lists {
			n, err := listCount(d.db, l)
			if err != nil {
				t.Fatal(err)
			}
			if n != len(model[i]) {
				t.Fatalf("%s: list %d counts %d, model %d", stage, i, n, len(model[i]))
			}
		}
		for _, conj := range [][][][]byte{
			{{lists[0]}},
			{{lists[0]}, {lists[1]}},
			{{lists[2]}, {lists[0], lists[1]}},
			{{lists[0]}, {lists[1]}, {lists[2]}},
		} {
			var want []uint64
			for id := range model[0] {
				want = append(want, id)
			}
			for id := range model[1] {
				want = append(want, id)
			}
			for id := range model[2] {
				want = append(want, id)
			}
			slices.Sort(want)
			want = slices.Compact(want)
			want = slices.DeleteFunc(want, func(id uint64) bool {
				for _, c := range conj {
					in := false
					for _, l := range c {
						in = in || model[slices.IndexFunc(lists, func(x []byte) bool { return string(x) == string(l) })][id]
					}
					if !in {
						return true
					}
				}
				return false
			})
			var got []uint64
			if err := blockJoin(d.db, conj, func(id uint64) (bool, error) {
				got = append(got, id)
				return true, nil
			}); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("%s: join of %d conjuncts: %d ids, model %d", stage, len(conj), len(got), len(want))
			}
		}
	}
	for round := range 60 {
		b := d.db.NewBatch()
		for range 1 + r.IntN(4000) {
			i, id := r.IntN(len(lists)), randID()
			add := r.IntN(4) > 0
			if err := b.Merge(blockKey(lists[i], id), blockOp(id, add), nil); err != nil {
				t.Fatal(err)
			}
			if add {
				model[i][id] = true
			} else {
				delete(model[i], id)
			}
		}
		if err := b.Commit(pebble.NoSync); err != nil {
			t.Fatal(err)
		}
		switch round % 7 {
		case 2, 5:
			if err := d.db.Flush(); err != nil {
				t.Fatal(err)
			}
		case 6:
			if err := d.db.Compact(context.Background(), []byte{famExt}, []byte{famTri + 1}, round%2 == 0); err != nil {
				t.Fatal(err)
			}
		}
		check("round " + string(rune('0'+round%10)))
	}
}

// TestBlockValueCorrupt: a malformed value is an error, never a panic.
func TestBlockValueCorrupt(t *testing.T) {
	for _, v := range [][]byte{nil, {'A'}, {'A', 5, 1}, {'B', 1, 2}, {'X'}, {'A', 0}, {'A', 0, 'A', 0, 0}, {'A', 2, 5, 0, 5, 0, 'A', 0}, {'A', 2, 6, 0, 5, 0, 'A', 0}, {'A', 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}} {
		if _, _, err := decodeValue(v); err == nil {
			t.Errorf("decodeValue(%q) = nil error", v)
		}
	}
	if _, _, err := decodeValue([]byte{'A', 1, 7, 0, 'A', 0}); err != nil {
		t.Errorf("good value: %v", err)
	}
}

// TestBlockMergerOrder folds random operands newest first (MergeOlder) and
// oldest first (MergeNewer), with and without the base, and compares both
// with a model.
func TestBlockMergerOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 9))
	key := []byte{famTri, fieldPath, 'x', 'y', 'z', 0, 0, 0, 0}
	for trial := range 200 {
		var ops [][]byte
		want := map[uint16]bool{}
		for range 1 + r.IntN(30) {
			add, del := getBitmap(), getBitmap()
			for range r.IntN(1 + []int{5, 300, 6000}[trial%3]) {
				o := uint16(r.IntN(8000))
				if r.IntN(3) > 0 {
					add.set(o)
					del.clr(o)
				} else {
					del.set(o)
					add.clr(o)
				}
			}
			for o := range blockIDs {
				if add.has(uint16(o)) {
					want[uint16(o)] = true
				} else if del.has(uint16(o)) {
					delete(want, uint16(o))
				}
			}
			ops = append(ops, appendSet(appendSet(nil, add), del))
		}
		fold := func(newer bool) []byte {
			first := ops[len(ops)-1]
			if newer {
				first = ops[0]
			}
			m, err := merger.Merge(key, first)
			if err != nil {
				t.Fatal(err)
			}
			for i := 1; i < len(ops); i++ {
				if newer {
					err = m.MergeNewer(ops[i])
				} else {
					err = m.MergeOlder(ops[len(ops)-1-i])
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			v, c, err := m.Finish(trial%2 == 0)
			if err != nil {
				t.Fatal(err)
			}
			v = slices.Clone(v)
			if c != nil {
				c.Close()
			}
			return v
		}
		for _, newer := range []bool{false, true} {
			add, _, err := decodeValue(fold(newer))
			if err != nil {
				t.Fatal(err)
			}
			got := map[uint16]bool{}
			add.each(func(o uint16) { got[o] = true })
			if add.count() != len(want) || len(got) != len(want) {
				t.Fatalf("trial %d newer %v: %d ids, model %d", trial, newer, len(got), len(want))
			}
			for o := range want {
				if !got[o] {
					t.Fatalf("trial %d newer %v: %d missing", trial, newer, o)
				}
			}
		}
	}
}

// FuzzBlockValue: any bytes as a stored value or merge operand give an
// error or a well-formed value, never a panic, and a decoded value's sets
// re-encode to themselves.
func FuzzBlockValue(f *testing.F) {
	b := getBitmap()
	for o := range 5000 {
		b.set(uint16(o * 13))
	}
	f.Add(blockOp(7, true), blockOp(7, false))
	f.Add(appendSet(appendSet(nil, b), &bitmap{}), blockOp(65535, false))
	f.Add([]byte{'A', 2, 1, 0, 1, 0, 'A', 0}, []byte{'B'}) // not ascending
	f.Add([]byte{'A', 2, 1, 0, 2, 0, 'A', 0}, []byte{'A', 1, 2, 0, 'A', 1, 1, 0})
	f.Add([]byte{'A', 0x80}, []byte{})
	key := []byte{famTri, fieldPath, 'a', 'b', 'c', 0, 0, 0, 0}
	f.Fuzz(func(t *testing.T, a, c []byte) {
		if add, del, err := decodeValue(a); err == nil {
			for _, s := range []pset{add, del} {
				bm := getBitmap()
				s.into(bm)
				if s.count() != bm.count() {
					t.Fatalf("%q: %d offsets, %d distinct", a, s.count(), bm.count())
				}
				bitmaps.Put(bm)
			}
		}
		for _, newer := range []bool{false, true} {
			m, err := merger.Merge(key, a)
			if err != nil {
				t.Fatal(err)
			}
			if newer {
				err = m.MergeNewer(c)
			} else {
				err = m.MergeOlder(c)
			}
			if err != nil {
				continue
			}
			v, closer, err := m.Finish(newer)
			if err != nil {
				continue
			}
			if _, _, err := decodeValue(v); err != nil {
				t.Fatalf("merging %q and %q gave a bad value %q: %v", a, c, v, err)
			}
			if closer != nil {
				closer.Close()
			}
		}
	})
}

package idx

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// TestPutRecordsSameAsOneByOne indexes the same rounds of uploads into two
// databases, one record per batch in the first and whole rounds through
// PutRecords (block operands folded per key) in the second, with
// replacements of paths indexed before (their old tags' trigrams removed,
// the same id kept) and deletions between rounds, flushing and compacting now
// and then; after every round both hold the same keys, the same records
// and the same posting sets.
func TestPutRecordsSameAsOneByOne(t *testing.T) {
	one, many := testDB(t, vfs.NewMem()), testDB(t, vfs.NewMem())
	defer one.Close()
	defer many.Close()
	r := rand.New(rand.NewPCG(3, 4))
	names := []string{"a.txt", "b.mp3", "photo 1.jpg", "x/y/z.bin", "deep/er/song.flac", "ünï/cødé.md", "p0001.bin", "p0002.bin", "q.tar.gz"}
	dirs := []string{"", "up/", "up/r1/", "other/place/"}
	for round := range 40 {
		var recs []*Record
		seen := map[string]bool{}
		for range 1 + r.IntN(maxBatch) {
			rel := dirs[r.IntN(len(dirs))] + names[r.IntN(len(names))] + fmt.Sprint(r.IntN(30))
			if seen[rel] {
				continue
			}
			seen[rel] = true
			rec := &Record{Rel: rel, Size: r.Int64N(1 << 20), Mtime: r.Int64N(1e18), At: r.Int64N(1e9), Uploader: "u", IP: "127.0.0.1"}
			if r.IntN(2) == 0 { // a replacement's other tags: old trigrams removed, new added
				artists := []string{"abba", "the band", "bandit", "ünïcode"}
				rec.Tags = map[string]string{"artist": artists[r.IntN(len(artists))], "year": fmt.Sprint(1950 + r.IntN(70))}
			}
			if r.IntN(2) == 0 {
				rec.Wark = fmt.Sprintf("%044d", r.IntN(1000))
				rec.Chunks = []string{rec.Wark}
			}
			recs = append(recs, rec)
		}
		for _, rec := range recs {
			putRecordRef(t, one, rec)
		}
		if err := many.PutRecords(recs, make([]uint64, len(recs))); err != nil {
			t.Fatal(err)
		}
		for range r.IntN(5) {
			rel := recs[r.IntN(len(recs))].Rel
			if err := one.DeleteRecord(rel); err != nil {
				t.Fatal(err)
			}
			if err := many.DeleteRecord(rel); err != nil {
				t.Fatal(err)
			}
		}
		if round%5 == 4 {
			for _, d := range []*DB{one, many} {
				if err := d.db.Flush(); err != nil {
					t.Fatal(err)
				}
			}
		}
		a, b := dump(t, one), dump(t, many)
		if len(a) != len(b) {
			t.Fatalf("round %d: %d keys one by one, %d batched", round, len(a), len(b))
		}
		for k, v := range a {
			if w, ok := b[k]; !ok || v != w {
				t.Fatalf("round %d: key %q: %q one by one, %q (%v) batched", round, k, v, w, ok)
			}
		}
	}
	if a, b := one.files.Load(), many.files.Load(); a != b {
		t.Fatalf("file counts %d one by one, %d batched", a, b)
	}
}

// putRecordRef is PutRecord as it was before PutRecords: one merge
// operand per list and file (blockOp), the old record's removals first.
func putRecordRef(t *testing.T, d *DB, rec *Record) {
	t.Helper()
	b := d.db.NewBatch()
	defer b.Close()
	id, old, err := d.lookup(d.db, rec.Rel)
	if err != nil {
		t.Fatal(err)
	}
	if old != nil {
		for _, k := range postings(id, old) {
			b.Delete(k, nil)
		}
		for _, l := range lists(old) {
			b.Merge(blockKey(l, id), blockOp(id, false), nil)
		}
	} else {
		id = d.nextID.Add(1)
		d.files.Add(1)
	}
	b.Set(relKey(rec.Rel), u64(id), nil)
	b.Set(recKey(id), rec.encode(), nil)
	for _, k := range postings(id, rec) {
		b.Set(k, nil, nil)
	}
	for _, l := range lists(rec) {
		b.Merge(blockKey(l, id), blockOp(id, true), nil)
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		t.Fatal(err)
	}
}

// dump is every key of d with its value; a block posting's value is
// written as its added ids (the folded form differs with the operands).
func dump(t *testing.T, d *DB) map[string]string {
	t.Helper()
	it, err := d.db.NewIter(&pebble.IterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	out := map[string]string{}
	for it.First(); it.Valid(); it.Next() {
		k, v := string(it.Key()), it.Value()
		if k[0] == famTri || k[0] == famExt {
			add, del, err := decodeValue(v)
			if err != nil {
				t.Fatalf("key %q: %v", k, err)
			}
			var ids []uint16
			add.each(func(o uint16) { ids = append(ids, o) })
			if !slices.IsSorted(ids) {
				t.Fatalf("key %q: ids out of order", k)
			}
			// The removals may stay beside the additions of a value not
			// folded with the oldest operand, but never name an added id
			// (the merger would drop it once folded with anything).
			del.each(func(o uint16) {
				if slices.Contains(ids, o) {
					t.Fatalf("key %q: id offset %d both added and removed", k, o)
				}
			})
			if len(ids) == 0 {
				continue // an empty set is no set
			}
			out[k] = fmt.Sprint(ids)
			continue
		}
		out[k] = string(v)
	}
	return out
}

// TestPutRecordsBadInput: a batch with a bad path, a path twice, notes
// that do not match its records or too many records is refused whole.
func TestPutRecordsBadInput(t *testing.T) {
	d := testDB(t, vfs.NewMem())
	defer d.Close()
	before := len(dump(t, d)) // the schema keys
	ok := &Record{Rel: "fine.txt", Size: 1}
	many := make([]*Record, maxBatch+1)
	for i := range many {
		many[i] = &Record{Rel: fmt.Sprint("f", i)}
	}
	for _, c := range []struct {
		recs  []*Record
		notes []uint64
	}{
		{[]*Record{ok, {Rel: ""}}, []uint64{0, 0}},
		{[]*Record{ok, {Rel: "a\x00b"}}, []uint64{0, 0}},
		{[]*Record{ok, {Rel: "fine.txt", Size: 2}}, []uint64{0, 0}},
		{[]*Record{ok}, nil},
		{many, make([]uint64, len(many))},
	} {
		if err := d.PutRecords(c.recs, c.notes); err == nil {
			t.Errorf("%d records, %d notes: no error", len(c.recs), len(c.notes))
		}
	}
	if len(dump(t, d)) != before || d.files.Load() != 0 {
		t.Fatalf("a refused batch wrote something: %v", dump(t, d))
	}
}

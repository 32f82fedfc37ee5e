package idx

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/cockroachdb/pebble/v2"
)

// This file is the file index: one record per file and its postings.

// initFiles checks the file index's schema version (dropping the file
// families on a mismatch, so a scan rebuilds them) and finds the next id.
func (d *DB) initFiles() error {
	v, closer, err := d.db.Get(fileSchemaKey)
	got := ""
	switch {
	case err == nil:
		got = string(v)
		closer.Close()
	case !errors.Is(err, pebble.ErrNotFound):
		return fmt.Errorf("idx: reading the file index version: %w", err)
	}
	if got != fileSchemaVersion {
		if got != "" {
			d.log.Warn("the file index has an older layout; dropping it (a scan rebuilds it)", "have", got, "want", fileSchemaVersion)
		}
		b := d.db.NewBatch()
		defer b.Close()
		for _, f := range fileFams {
			lo, hi := famRange(f)
			if err := b.DeleteRange(lo, hi, nil); err != nil {
				return err
			}
		}
		if err := b.Set(fileSchemaKey, []byte(fileSchemaVersion), nil); err != nil {
			return err
		}
		if err := b.Commit(pebble.Sync); err != nil {
			return fmt.Errorf("idx: dropping the old file index: %w", err)
		}
	}
	lo, hi := famRange(famRec)
	it, err := d.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return err
	}
	if it.Last() && len(it.Key()) == idLen {
		d.nextID.Store(idOf(it.Key()))
	}
	if err := it.Error(); err != nil {
		it.Close()
		return err
	}
	return it.Close()
}

// lower is the case folding of every text match.
func lower(s string) string { return strings.ToLower(s) }

// trigrams returns the distinct 3-byte windows of s, sorted.
func trigrams(s string) []string {
	if len(s) < 3 {
		return nil
	}
	out := make([]string, 0, len(s)-2)
	for i := 0; i+3 <= len(s); i++ {
		out = append(out, s[i:i+3])
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// textTags are the tags searched as text, with their trigram fields.
var textTags = []struct {
	name  string
	field byte
}{{"artist", fieldArtist}, {"album", fieldAlbum}, {"title", fieldTitle}, {"genre", fieldGenre}}

// numTag returns the indexed number of a numeric tag (year; rate in kbps;
// dur in milliseconds), ok false when the tag is absent or not a number.
func numTag(tags map[string]string, field byte) (int64, bool) {
	switch field {
	case fieldYear:
		v := tags["year"]
		if len(v) < 4 {
			return 0, false
		}
		n, err := strconv.Atoi(v[:4])
		return int64(n), err == nil
	case fieldRate:
		n, err := strconv.ParseInt(tags["rate"], 10, 64)
		return n, err == nil
	case fieldDur:
		f, err := strconv.ParseFloat(tags["dur"], 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || math.Abs(f) > 1e12 {
			return 0, false
		}
		return int64(math.Round(f * 1000)), true
	}
	return 0, false
}

// postings returns every key of rec other than its 'r' and 'n' keys and
// its block postings (lists).
func postings(id uint64, rec *Record) [][]byte {
	lr := lower(rec.Rel)
	out := make([][]byte, 0, 8+len(rec.Chunks))
	out = append(out, pathKey(lr, id))
	out = append(out, nameKey(lr[strings.LastIndexByte(lr, '/')+1:], id))
	out = append(out, sizeKey(rec.Size, id))
	out = append(out, mtimeKey(mtimeSec(rec.Mtime), id))
	if rec.At > 0 && rec.IP != "" {
		out = append(out, upKey(rec.At, id))
	}
	if rec.Wark != "" {
		out = append(out, warkKey(rec.Wark, id))
	}
	chunks := slices.Clone(rec.Chunks)
	slices.Sort(chunks)
	for _, c := range slices.Compact(chunks) {
		out = append(out, hashKey(c, id))
	}
	for _, f := range []byte{fieldYear, fieldRate, fieldDur} {
		if n, ok := numTag(rec.Tags, f); ok {
			out = append(out, numKey(f, n, id))
		}
	}
	return out
}

// lists returns the block posting lists (postings.go) rec belongs to: the
// trigrams of its lower-cased path followed by an end mark (0x00, so a
// literal the path must end with is a trigram too), of its text tags, and
// its extension.
func lists(rec *Record) [][]byte {
	tris := trigrams(lower(rec.Rel) + pathEnd)
	out := make([][]byte, 0, len(tris)+2)
	for _, t := range tris {
		out = append(out, triList(fieldPath, t))
	}
	for _, tt := range textTags {
		for _, t := range trigrams(lower(rec.Tags[tt.name])) {
			out = append(out, triList(tt.field, t))
		}
	}
	if e := ext(rec.Name()); e != "" {
		out = append(out, extList(e))
	}
	return out
}

// pathEnd marks the end of a path in its trigrams.
const pathEnd = "\x00"

// mtimeSec is the whole second of a Unix-nanosecond time (floor).
func mtimeSec(ns int64) int64 {
	s := ns / 1e9
	if ns%1e9 < 0 {
		s--
	}
	return s
}

// PutRecord adds or replaces the record of rec.Rel and all its postings,
// in one batch. The file index can be rebuilt by a scan, so it is not
// synced (the write-ahead log still has it after a clean exit).
func (d *DB) PutRecord(rec *Record) error { return d.putRecord(rec, 0) }

// PutRecordDropNote is PutRecord that also drops the journal note note in
// the same batch: an upload's record and the end of its note are one
// write, not two (a crash cannot come between them).
func (d *DB) PutRecordDropNote(rec *Record, note uint64) error { return d.putRecord(rec, note) }

func (d *DB) putRecord(rec *Record, note uint64) error {
	return d.PutRecords([]*Record{rec}, []uint64{note})
}

// PutRecords is PutRecord for several files (each path once) in one
// batch, dropping notes[i] (0: none) with recs[i]. The block postings of
// all of them are folded into one merge operand per block key: uploads
// that land together share most trigrams of their folder's path, and one
// operand per key instead of one per file and key saves the memtable's
// inserts and the flushes' and compactions' merging (issue 19).
func (d *DB) PutRecords(recs []*Record, notes []uint64) error {
	if len(recs) != len(notes) || len(recs) > maxBatch {
		return fmt.Errorf("idx: %d records and %d notes in one batch (at most %d, as many of each)", len(recs), len(notes), maxBatch)
	}
	var seen map[string]bool // one record (every scanned file): no map
	for _, rec := range recs {
		if rec.Rel == "" || strings.IndexByte(rec.Rel, 0) >= 0 {
			return fmt.Errorf("idx: bad path %q", rec.Rel)
		}
		if len(recs) == 1 {
			break
		}
		if seen == nil {
			seen = make(map[string]bool, len(recs))
		}
		if seen[rec.Rel] {
			return fmt.Errorf("idx: %q twice in one batch", rec.Rel)
		}
		seen[rec.Rel] = true
	}
	if len(recs) == 0 {
		return nil
	}
	if err := d.writable(); err != nil {
		return err
	}
	d.wmu.Lock()
	defer d.wmu.Unlock()
	b := d.db.NewBatch()
	defer b.Close()
	ops := blockOps{direct: len(recs) == 1}
	added := 0
	for i, rec := range recs {
		id, err := d.dropRecordOps(b, rec.Rel, &ops)
		if err != nil {
			return err
		}
		if id == 0 {
			id = d.nextID.Add(1)
			added++
		}
		if err := b.Set(relKey(rec.Rel), u64(id), nil); err != nil {
			return err
		}
		if err := b.Set(recKey(id), rec.encode(), nil); err != nil {
			return err
		}
		for _, k := range postings(id, rec) {
			if err := b.Set(k, nil, nil); err != nil {
				return err
			}
		}
		for _, l := range lists(rec) {
			if err := ops.add(b, l, id, true); err != nil {
				return err
			}
		}
		if notes[i] != 0 {
			if err := b.Delete(noteKey(notes[i]), nil); err != nil {
				return err
			}
		}
	}
	if err := ops.write(b); err != nil {
		return err
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		return err
	}
	d.files.Add(int64(added))
	return nil
}

// maxBatch bounds the records of one PutRecords: a block operand holds at
// most two changes per record in it, well under the array set's limit.
const maxBatch = 256

// blockOps folds the block posting changes of one batch: for each block
// key, each id's last change (added or removed), in the order made. A
// direct one writes each change to the batch at once (one record: nothing
// to fold; operands in order are what folding gives).
type blockOps struct {
	direct bool
	keys   []string            // in first-use order
	by     map[string][]change // block key → changes in order
}

type change struct {
	off uint16 // the id's offset in its block
	add bool
}

// add notes that id joins (or leaves) list.
func (o *blockOps) add(b *pebble.Batch, list []byte, id uint64, add bool) error {
	if o.direct {
		return b.Merge(blockKey(list, id), blockOp(id, add), nil)
	}
	if o.by == nil {
		o.by = map[string][]change{}
	}
	k := string(blockKey(list, id))
	cs, ok := o.by[k]
	if !ok {
		o.keys = append(o.keys, k)
	}
	o.by[k] = append(cs, change{uint16(id), add})
	return nil
}

// write adds one merge operand per block key to b: the ids whose last
// change adds them, and those whose last change removes them (the two
// sets disjoint, as the merger keeps them).
func (o *blockOps) write(b *pebble.Batch) error {
	var val []byte
	var adds, dels []uint16
	for _, k := range o.keys {
		cs := o.by[k]
		// By id, each id's changes still in the order made: its last
		// one is what holds.
		slices.SortStableFunc(cs, func(a, b change) int { return int(a.off) - int(b.off) })
		adds, dels = adds[:0], dels[:0]
		for i, c := range cs {
			if i+1 < len(cs) && cs[i+1].off == c.off {
				continue
			}
			if c.add {
				adds = append(adds, c.off)
			} else {
				dels = append(dels, c.off)
			}
		}
		val = appendArray(appendArray(val[:0], adds), dels)
		if err := b.Merge([]byte(k), val, nil); err != nil {
			return err
		}
	}
	return nil
}

// DeleteRecord forgets the file rel and its postings (no error when it
// was not indexed).
func (d *DB) DeleteRecord(rel string) error {
	if err := d.writable(); err != nil {
		return err
	}
	d.wmu.Lock()
	defer d.wmu.Unlock()
	b := d.db.NewBatch()
	defer b.Close()
	id, err := d.dropRecord(b, rel)
	if err != nil || id == 0 {
		return err
	}
	if err := b.Delete(relKey(rel), nil); err != nil {
		return err
	}
	if err := b.Delete(recKey(id), nil); err != nil {
		return err
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		return err
	}
	d.files.Add(-1)
	return nil
}

// FileCount is how many files the index holds; ok is false until they were
// counted (at start, once the database is open).
func (d *DB) FileCount() (n int64, ok bool) {
	return d.files.Load(), d.counted.Load()
}

// countFiles counts the file records once. The count starts from the
// snapshot its iterator reads, taken under wmu with the counter zeroed, so
// the writes meanwhile (each adds its change under wmu) and the records
// counted add up exactly.
func (d *DB) countFiles() {
	if d.counted.Load() || d.usable() != nil {
		return
	}
	lo, hi := famRange(famRel)
	d.wmu.Lock()
	it, err := d.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err == nil {
		d.files.Store(0)
	}
	d.wmu.Unlock()
	if err != nil {
		return
	}
	var n int64
	for it.First(); it.Valid(); it.Next() {
		n++
	}
	if it.Close() != nil {
		return // the counter stays unshown; the next start counts again
	}
	d.files.Add(n)
	d.counted.Store(true)
}

// dropRecord adds the deletion of rel's postings to b and returns its id
// (0 when rel is not indexed). The caller holds wmu.
func (d *DB) dropRecord(b *pebble.Batch, rel string) (uint64, error) {
	ops := blockOps{direct: true}
	id, err := d.dropRecordOps(b, rel, &ops)
	if err != nil {
		return 0, err
	}
	return id, ops.write(b)
}

// dropRecordOps is dropRecord with the block postings' removals noted in
// ops, for the caller to write.
func (d *DB) dropRecordOps(b *pebble.Batch, rel string, ops *blockOps) (uint64, error) {
	id, old, err := d.lookup(d.db, rel)
	if err != nil || old == nil {
		return 0, err
	}
	for _, k := range postings(id, old) {
		if err := b.Delete(k, nil); err != nil {
			return 0, err
		}
	}
	for _, l := range lists(old) {
		if err := ops.add(b, l, id, false); err != nil {
			return 0, err
		}
	}
	return id, nil
}

// lookup returns the id and record of rel (0, nil when absent).
func (d *DB) lookup(r pebble.Reader, rel string) (uint64, *Record, error) {
	v, closer, err := r.Get(relKey(rel))
	if errors.Is(err, pebble.ErrNotFound) {
		return 0, nil, nil
	}
	if err != nil {
		return 0, nil, err
	}
	if len(v) != 8 {
		closer.Close()
		return 0, nil, errCorrupt
	}
	id := idOf(v)
	closer.Close()
	rec, err := recordByID(r, id)
	if rec == nil && err == nil {
		return 0, nil, errCorrupt
	}
	return id, rec, err
}

// Record returns the indexed record of rel, nil when there is none.
func (d *DB) Record(rel string) (*Record, error) {
	if err := d.usable(); err != nil {
		return nil, err
	}
	_, rec, err := d.lookup(d.db, rel)
	return rec, err
}

// recordByID reads the record with id (nil, nil when absent).
func recordByID(r pebble.Reader, id uint64) (*Record, error) {
	v, closer, err := r.Get(recKey(id))
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer closer.Close()
	return decodeRecord(v)
}

// Rels calls fn with every indexed path, in byte order.
func (d *DB) Rels(fn func(rel string) error) error {
	if err := d.usable(); err != nil {
		return err
	}
	lo, hi := famRange(famRel)
	it, err := d.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return err
	}
	for it.First(); it.Valid(); it.Next() {
		if err := fn(relOfKey(it.Key())); err != nil {
			it.Close()
			return err
		}
	}
	if err := it.Error(); err != nil {
		it.Close()
		return err
	}
	return it.Close()
}

// compactFiles compacts the file index families (after a bulk scan).
func (d *DB) compactFiles(ctx context.Context) error {
	if err := d.usable(); err != nil {
		return err
	}
	lo, hi := fileFamsSpan()
	return d.db.Compact(ctx, lo, hi, true)
}

// Uploads calls fn with the records of uploaded files (those with an
// upload time and a client address), newest first, until fn returns
// false.
func (d *DB) Uploads(fn func(*Record) bool) error {
	if err := d.usable(); err != nil {
		return err
	}
	lo, hi := famRange(famUp)
	it, err := d.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return err
	}
	for it.Last(); it.Valid(); it.Prev() {
		k := it.Key()
		if len(k) != upKeyLen {
			continue
		}
		rec, err := recordByID(d.db, idOf(k))
		if err != nil {
			it.Close()
			return err
		}
		if rec != nil && !fn(rec) {
			break
		}
	}
	if err := it.Error(); err != nil {
		it.Close()
		return err
	}
	return it.Close()
}

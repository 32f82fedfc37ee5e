package idx

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"hoard/store"
)

// The index follows the store's file management: a deleted file or tree
// is forgotten, a moved one keeps its record (hashes, tags, upload time,
// uploader, address) at its new path, in its new volume's database when it
// moved across volumes, and a copy is indexed with the hashes and tags of
// its source (but not its upload: a copy is no upload). A tree is one
// event; its records are walked in batches, so memory stays flat.

// moveBatch is how many records one batch of a tree change carries.
const moveBatch = 256

// isDotPath reports whether rel is or lies below a dotfile (not indexed).
func isDotPath(rel string) bool {
	return strings.HasPrefix(rel, ".") || strings.Contains(rel, "/.")
}

// enqueueManaged queues a Moved or Copied event. Changes queued before it
// that are not applied yet and lie under a moved path are re-pointed to
// the new path, so that an upload indexed just after the move keeps its
// uploader at its new place instead of being looked for where it was.
func (x *Indexer) enqueueManaged(e store.Event) {
	if x.vol(e.Vol) == nil && x.vol(e.FromVol) == nil {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if e.Kind == store.Moved {
		for i := range x.queue {
			q := &x.queue[i].e
			if q.Kind == store.Created && q.Vol == e.FromVol && e.FromUnder(q.Rel) {
				q.Vol, q.Rel = e.Vol, e.Rebase(q.Rel)
			}
		}
	}
	x.queue = append(x.queue, queued{e: e, noteDB: x.noteDB(e)})
	x.cond.Signal()
}

// applyManaged applies a Moved or Copied event.
func (x *Indexer) applyManaged(ctx context.Context, e store.Event) error {
	from, to := x.vol(e.FromVol), x.vol(e.Vol)
	if from != nil && isDotPath(e.From) {
		from = nil
	}
	if to != nil && isDotPath(e.Rel) {
		to = nil
	}
	switch e.Kind {
	case store.Moved:
		if from != nil {
			if to == nil {
				_, err := from.db.DeleteRecords(ctx, e.From, e.Tree, nil)
				return err
			}
			_, err := from.db.MoveRecords(ctx, e.From, to.db, e.Rel, e.Tree)
			return err
		}
		if to == nil {
			return nil
		}
		if !e.Tree {
			return x.indexFile(ctx, to, e.Rel, nil, nil)
		}
		return x.indexTree(ctx, to, e.Rel, nil)
	case store.Copied:
		if to == nil {
			return nil
		}
		var src func(rel string) *Record
		if from != nil {
			src = func(rel string) *Record {
				rec, err := from.db.Record(rel)
				if err != nil || rec == nil {
					return nil
				}
				// The copy has the content (hashes, tags), not the upload.
				rec.At, rec.Uploader, rec.IP = 0, "", ""
				return rec
			}
		}
		if !e.Tree {
			var old *Record
			if src != nil {
				old = src(e.From)
			}
			return x.indexFile(ctx, to, e.Rel, old, nil)
		}
		if src == nil {
			return x.indexTree(ctx, to, e.Rel, nil)
		}
		ev := e
		return x.indexTree(ctx, to, e.Rel, func(rel string) *Record {
			// rel is below e.Rel; its source is the same place below From.
			back := store.Event{From: ev.Rel, Rel: ev.From, Tree: true}
			return src(back.Rebase(rel))
		})
	}
	return nil
}

// removeTree forgets the records below the folder rel whose files are
// gone (a tree delete that stopped half-way leaves some).
func (x *Indexer) removeTree(ctx context.Context, vi *volIdx, rel string) error {
	_, err := vi.db.DeleteRecords(ctx, rel, true, func(r string) bool {
		fi, err := vi.v.Stat(r)
		return err == nil && fi.Mode().IsRegular()
	})
	return err
}

// indexTree indexes every file below the folder rel of vi (after a move
// from an unindexed volume, or a copy), taking a file's hashes and tags
// from src(path) when that describes the same size and mtime.
func (x *Indexer) indexTree(ctx context.Context, vi *volIdx, rel string, src func(rel string) *Record) error {
	dirs := []string{rel}
	for len(dirs) > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		dir := dirs[len(dirs)-1]
		dirs = dirs[:len(dirs)-1]
		ents, err := vi.v.List(ctx, dir, store.ListOptions{})
		if err != nil {
			continue
		}
		for _, en := range ents {
			p := dir + "/" + en.Name
			if en.Dir {
				if !en.Link {
					dirs = append(dirs, p)
				}
				continue
			}
			var old *Record
			if src != nil {
				old = src(p)
			}
			if err := x.indexFile(ctx, vi, p, old, nil); err != nil && ctx.Err() == nil {
				x.log.Warn("could not index a file", "volume", "/"+vi.v.VPath, "path", p, "err", err)
			}
		}
	}
	return nil
}

// relsFrom returns up to n indexed paths in [lo, hi), in order.
func (d *DB) relsFrom(lo, hi []byte, n int) ([]string, error) {
	it, err := d.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return nil, err
	}
	var out []string
	for ok := it.First(); ok && len(out) < n; ok = it.Next() {
		out = append(out, relOfKey(it.Key()))
	}
	if err := it.Error(); err != nil {
		it.Close()
		return nil, err
	}
	return out, it.Close()
}

// walkRels calls fn with the indexed paths at or below rel, a batch at a
// time (fn may change the index; the walk goes on after the batch's last
// path).
func (d *DB) walkRels(ctx context.Context, rel string, tree bool, fn func(rels []string) error) error {
	lo, hi := relRange(rel, tree)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		rels, err := d.relsFrom(lo, hi, moveBatch)
		if err != nil || len(rels) == 0 {
			return err
		}
		if err := fn(rels); err != nil {
			return err
		}
		lo = relAfter(rels[len(rels)-1])
	}
}

// DeleteRecords forgets the record of rel, or with tree the records of
// every path below the folder rel, except those keep (when not nil)
// says still exist. It returns how many it forgot.
func (d *DB) DeleteRecords(ctx context.Context, rel string, tree bool, keep func(rel string) bool) (int, error) {
	n := 0
	err := d.walkRels(ctx, rel, tree, func(rels []string) error {
		d.wmu.Lock()
		defer d.wmu.Unlock()
		b := d.db.NewBatch()
		defer b.Close()
		gone := 0
		for _, r := range rels {
			if keep != nil && keep(r) {
				continue
			}
			id, err := d.dropRecord(b, r)
			if err != nil {
				return err
			}
			if id == 0 {
				continue
			}
			if err := b.Delete(relKey(r), nil); err != nil {
				return err
			}
			if err := b.Delete(recKey(id), nil); err != nil {
				return err
			}
			gone++
		}
		if err := b.Commit(pebble.NoSync); err != nil {
			return err
		}
		n += gone
		d.files.Add(-int64(gone))
		return nil
	})
	return n, err
}

// MoveRecords moves the record of rel (or with tree, of every path below
// the folder rel) to newRel (the same place below newRel) in nd, which
// may be d itself: everything the record holds is kept, and up2k's record
// of the file's content ('f') follows it. A path that had a record at the
// destination is replaced. It returns how many records moved.
func (d *DB) MoveRecords(ctx context.Context, rel string, nd *DB, newRel string, tree bool) (int, error) {
	if strings.IndexByte(newRel, 0) >= 0 || newRel == "" && !tree {
		return 0, errors.New("idx: bad destination path")
	}
	ev := store.Event{From: rel, Rel: newRel, Tree: tree}
	n := 0
	err := d.walkRels(ctx, rel, tree, func(rels []string) error {
		d.wmu.Lock()
		defer d.wmu.Unlock()
		if nd != d {
			nd.wmu.Lock()
			defer nd.wmu.Unlock()
		}
		b := d.db.NewBatch()
		defer b.Close()
		nb := b
		if nd != d {
			nb = nd.db.NewBatch()
			defer nb.Close()
		}
		moved, replaced := 0, 0
		for _, old := range rels {
			id, rec, err := d.lookup(d.db, old)
			if err != nil {
				return err
			}
			if rec == nil {
				continue
			}
			var meta []byte
			if rec.Wark != "" {
				if v, closer, err := d.db.Get(fileKey(rec.Wark, old)); err == nil {
					meta = slices.Clone(v)
					closer.Close()
					if err := b.Delete(fileKey(rec.Wark, old), nil); err != nil {
						return err
					}
				}
			}
			// Out of the old place.
			if _, err := d.dropRecord(b, old); err != nil {
				return err
			}
			if err := b.Delete(relKey(old), nil); err != nil {
				return err
			}
			if err := b.Delete(recKey(id), nil); err != nil {
				return err
			}
			// Into the new one, over whatever record was there.
			nrel := ev.Rebase(old)
			oid, err := nd.dropRecord(nb, nrel)
			if err != nil {
				return err
			}
			if oid != 0 && oid != id {
				replaced++
				if err := nb.Delete(recKey(oid), nil); err != nil {
					return err
				}
			}
			nid := id
			if nd != d {
				nid = nd.nextID.Add(1)
			}
			rec.Rel = nrel
			if err := nb.Set(relKey(nrel), u64(nid), nil); err != nil {
				return err
			}
			if err := nb.Set(recKey(nid), rec.encode(), nil); err != nil {
				return err
			}
			for _, k := range postings(nid, rec) {
				if err := nb.Set(k, nil, nil); err != nil {
					return err
				}
			}
			op := blockOp(nid, true)
			for _, l := range lists(rec) {
				if err := nb.Merge(blockKey(l, nid), op, nil); err != nil {
					return err
				}
			}
			if meta != nil {
				if err := nb.Set(fileKey(rec.Wark, nrel), meta, nil); err != nil {
					return err
				}
			}
			moved++
		}
		// The new place first: a crash between the two leaves a record
		// twice (a scan drops the stale one), never none.
		if nb != b {
			if err := nb.Commit(pebble.Sync); err != nil {
				return err
			}
			nd.files.Add(int64(moved - replaced))
		}
		if err := b.Commit(pebble.Sync); err != nil {
			return err
		}
		n += moved
		if nb != b {
			d.files.Add(-int64(moved))
		} else {
			d.files.Add(-int64(replaced))
		}
		return nil
	})
	return n, err
}

// UploadOf implements store.UploadLookup for unpost: who uploaded the
// file rel of v (account and address), when, and its size and mtime then.
// Changes still queued for the index count first: an upload waiting to be
// indexed is known; a file moved by a queued move is looked for where it
// was; a path with another pending change is not known until it is
// applied.
func (x *Indexer) UploadOf(v *store.Volume, rel string) (store.UploadInfo, bool, error) {
	if x.vol(v) == nil {
		return store.UploadInfo{}, false, nil
	}
	x.mu.Lock()
	pending := make([]store.Event, 0, len(x.queue)+1)
	for _, q := range x.queue {
		pending = append(pending, q.e)
	}
	pending = append(slices.Clone(x.applying), pending...)
	x.mu.Unlock()
	type place struct {
		v   *store.Volume
		rel string
	}
	// names are the places the file had, newest first: an upload queued
	// before a move was re-pointed to the new place, anything else about
	// it is at the place it had then (the last of names).
	names := []place{{v, rel}}
	for i := len(pending) - 1; i >= 0; i-- {
		e := &pending[i]
		cur := names[len(names)-1]
		if e.Kind == store.Created {
			for _, p := range names {
				if e.Vol == p.v && e.Rel == p.rel {
					if e.ClientIP == "" {
						return store.UploadInfo{}, false, nil
					}
					return store.UploadInfo{User: e.Uploader, IP: e.ClientIP, At: e.At, Size: e.Size, Mtime: e.Mtime}, true, nil
				}
			}
			continue
		}
		if e.Kind == store.Moved && e.Vol == cur.v && e.Under(cur.rel) {
			back := store.Event{From: e.Rel, Rel: e.From, Tree: e.Tree}
			names = append(names, place{e.FromVol, back.Rebase(cur.rel)})
			continue
		}
		if e.Vol == cur.v && e.Under(cur.rel) || e.Kind == store.Moved && e.FromVol == cur.v && e.FromUnder(cur.rel) {
			return store.UploadInfo{}, false, nil
		}
	}
	cur := names[len(names)-1]
	vi := x.vol(cur.v)
	if vi == nil {
		return store.UploadInfo{}, false, nil
	}
	rec, err := vi.db.Record(cur.rel)
	if err != nil || rec == nil || rec.At == 0 || rec.IP == "" {
		return store.UploadInfo{}, false, err
	}
	return store.UploadInfo{User: rec.Uploader, IP: rec.IP, At: time.Unix(rec.At, 0), Size: rec.Size, Mtime: time.Unix(0, rec.Mtime)}, true, nil
}

var _ store.UploadLookup = (*Indexer)(nil)

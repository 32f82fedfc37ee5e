package idx

import (
	"context"
	"errors"
	"sync"

	"github.com/cockroachdb/pebble/v2"

	"hoard/store"
)

// This file keeps the entries of store's group commit (store/gcommit.go):
// a small upload's bytes and record, written with its index note in one
// synced batch, so that concurrent uploads share one write-ahead-log
// flush (Pebble commits concurrent synced batches together). The store
// owns the entries' encoding; here they are opaque values under 'g' id.

// SmallLog implements store.SmallLog over the volumes' databases.
type SmallLog struct {
	mu  sync.RWMutex
	dbs map[*store.Volume]*DB
	x   *Indexer // notes of indexed volumes go into the same batch; may be nil
}

// NewSmallLog keeps the small uploads of the volumes in dbs (Add adds
// more), with the index notes of x's volumes in the same batches.
func NewSmallLog(dbs map[*store.Volume]*DB, x *Indexer) *SmallLog {
	l := &SmallLog{dbs: map[*store.Volume]*DB{}, x: x}
	for v, db := range dbs {
		l.dbs[v] = db
	}
	return l
}

// SetIndexer puts the index notes of x's volumes into the batches from
// now on. Call it before serving.
func (l *SmallLog) SetIndexer(x *Indexer) {
	l.mu.Lock()
	l.x = x
	l.mu.Unlock()
}

// Add keeps v's entries in db (a volume a reload mounts).
func (l *SmallLog) Add(v *store.Volume, db *DB) {
	l.mu.Lock()
	l.dbs[v] = db
	l.mu.Unlock()
}

// Remove forgets v (a reload that failed).
func (l *SmallLog) Remove(v *store.Volume) {
	l.mu.Lock()
	delete(l.dbs, v)
	l.mu.Unlock()
}

// CheckpointBytes implements store.SmallBudget: a quarter of the smallest
// memtable of the databases, so that a checkpoint mostly deletes its
// entries while they are still in the memtable that holds them. An entry
// deleted there never reaches a table on disk (the flush drops the value
// its tombstone covers); one that the memtable's flush finds still alive
// is written to level 0 and compacted down, only to be deleted a moment
// later: under up2k-many, a quarter of the server's CPU.
func (l *SmallLog) CheckpointBytes() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	var m int64
	for _, db := range l.dbs {
		if m == 0 || db.mem < m {
			m = db.mem
		}
	}
	return m / 4
}

var errNoDB = errors.New("idx: the volume has no database")

func (l *SmallLog) db(v *store.Volume) (*DB, error) {
	l.mu.RLock()
	db := l.dbs[v]
	l.mu.RUnlock()
	if db == nil {
		return nil, errNoDB
	}
	return db, nil
}

// Commit implements store.SmallLog: rec under a new id, the index note of
// e (when e's volume is indexed in the same database), and the deletion
// of the entries drop, in one synced batch.
func (l *SmallLog) Commit(v *store.Volume, rec []byte, e *store.Event, drop []uint64) (id, nid uint64, err error) {
	return l.CommitFinish(v, rec, e, drop, nil)
}

// CommitFinish implements store.SmallFinisher: Commit with an up2k
// upload's finishing record (its session replaced by the record of its
// file at e.Rel) in the same batch.
func (l *SmallLog) CommitFinish(v *store.Volume, rec []byte, e *store.Event, drop []uint64, fin *store.SmallFinish) (id, nid uint64, err error) {
	db, err := l.db(v)
	if err != nil {
		return 0, 0, err
	}
	l.mu.RLock()
	x := l.x
	l.mu.RUnlock()
	if err := db.writable(); err != nil {
		return 0, 0, err
	}
	b := db.db.NewBatchWithSize(len(rec) + 256)
	defer b.Close()
	id = db.nextSmall.Add(1)
	if err := b.Set(smallKey(id), rec, nil); err != nil {
		return 0, 0, err
	}
	for _, d := range drop {
		if err := b.Delete(smallKey(d), nil); err != nil {
			return 0, 0, err
		}
	}
	if fin != nil {
		if e == nil {
			return 0, 0, errors.New("idx: a finishing record needs its event")
		}
		if err := checkWark(fin.Wark); err != nil {
			return 0, 0, err
		}
		if fin.NoReceipts {
			err = b.Delete(sessionKey(fin.Wark), nil)
		} else {
			err = db.deleteSession(b, fin.Wark)
		}
		if err == nil && fin.Prev != "" && fin.Prev != e.Rel {
			err = b.Delete(fileKey(fin.Wark, fin.Prev), nil)
		}
		if err == nil {
			err = b.Set(fileKey(fin.Wark, e.Rel), fin.Meta, nil)
		}
		if err != nil {
			return 0, 0, err
		}
	}
	if e != nil && x != nil {
		x.jmu.RLock()
		defer x.jmu.RUnlock()
		if ndb, n := x.prepNote(*e); ndb == db {
			nid = db.nextNote.Add(1)
			if err := b.Set(noteKey(nid), n.encode(), nil); err != nil {
				return 0, 0, err
			}
		} else if ndb != nil {
			// Another database: its own synced write (never the case
			// for an upload, whose volume is the note's).
			if nid, err = ndb.putNote(n); err != nil {
				return 0, 0, err
			}
		}
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return 0, 0, err
	}
	return id, nid, nil
}

// Retire implements store.SmallLog: the entries ids are deleted, synced.
func (l *SmallLog) Retire(v *store.Volume, ids []uint64) error {
	if len(ids) == 0 {
		return nil
	}
	db, err := l.db(v)
	if err != nil {
		return err
	}
	if err := db.usable(); err != nil {
		return err
	}
	b := db.db.NewBatch()
	defer b.Close()
	for _, id := range ids {
		if err := b.Delete(smallKey(id), nil); err != nil {
			return err
		}
	}
	return b.Commit(pebble.Sync)
}

// Each implements store.SmallLog: fn sees every entry of v's database,
// oldest first (entries of other volumes sharing it too; the store tells
// them apart).
func (l *SmallLog) Each(ctx context.Context, v *store.Volume, fn func(id uint64, rec []byte) error) error {
	db, err := l.db(v)
	if err != nil {
		return nil // no database: nothing was ever committed there
	}
	if err := db.usable(); err != nil {
		return err
	}
	lo, hi := famRange(famSmall)
	it, err := db.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return err
	}
	for it.First(); it.Valid(); it.Next() {
		if err := ctx.Err(); err != nil {
			it.Close()
			return err
		}
		if len(it.Key()) != idLen {
			continue
		}
		if err := fn(idOf(it.Key()), append([]byte(nil), it.Value()...)); err != nil {
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

// initSmall finds the last small-upload entry id.
func (d *DB) initSmall() error {
	lo, hi := famRange(famSmall)
	it, err := d.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return err
	}
	if it.Last() && len(it.Key()) == idLen {
		d.nextSmall.Store(idOf(it.Key()))
	}
	if err := it.Error(); err != nil {
		it.Close()
		return err
	}
	return it.Close()
}

var (
	_ store.SmallLog      = (*SmallLog)(nil)
	_ store.SmallFinisher = (*SmallLog)(nil)
	_ store.SmallBudget   = (*SmallLog)(nil)
)

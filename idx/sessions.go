package idx

import (
	"context"
	"fmt"
	"slices"

	"github.com/cockroachdb/pebble/v2"
)

// This file implements up2k.SessionStore.

// PutSession stores a session's blob, synced.
func (d *DB) PutSession(ctx context.Context, wark string, blob []byte) error {
	return d.putSession(wark, blob, pebble.Sync)
}

// PutSessionLazy stores a session's blob without syncing it: the next
// synced write to the database (the session's chunk receipts, its Finish,
// or the group-commit batch of its post; one write-ahead log) carries it
// to the disk (up2k.LazySessionStore).
func (d *DB) PutSessionLazy(ctx context.Context, wark string, blob []byte) error {
	return d.putSession(wark, blob, pebble.NoSync)
}

func (d *DB) putSession(wark string, blob []byte, o *pebble.WriteOptions) error {
	if err := checkWark(wark); err != nil {
		return err
	}
	if err := d.Unavailable(); err != nil {
		return err
	}
	return d.db.Set(sessionKey(wark), blob, o)
}

// Session returns the blob of the session wark.
func (d *DB) Session(ctx context.Context, wark string) ([]byte, error) {
	if err := checkWark(wark); err != nil {
		return nil, err
	}
	if err := d.usable(); err != nil {
		return nil, err
	}
	v, closer, err := d.db.Get(sessionKey(wark))
	if err != nil {
		return nil, fmt.Errorf("idx: session %s: %w", wark, err)
	}
	defer closer.Close()
	return slices.Clone(v), nil
}

// PutChunks records chunk receipts of a session in one synced batch.
func (d *DB) PutChunks(ctx context.Context, wark string, keys []string) error {
	if err := checkWark(wark); err != nil {
		return err
	}
	if err := d.writable(); err != nil {
		return err
	}
	b := d.db.NewBatch()
	defer b.Close()
	for _, k := range keys {
		if err := b.Set(chunkKey(wark, k), nil, nil); err != nil {
			return err
		}
	}
	return b.Commit(pebble.Sync)
}

// DropChunks removes chunk receipts in one synced batch.
func (d *DB) DropChunks(ctx context.Context, wark string, keys []string) error {
	if err := checkWark(wark); err != nil {
		return err
	}
	if err := d.writable(); err != nil {
		return err
	}
	b := d.db.NewBatch()
	defer b.Close()
	for _, k := range keys {
		if err := b.Delete(chunkKey(wark, k), nil); err != nil {
			return err
		}
	}
	return b.Commit(pebble.Sync)
}

// DeleteSession removes a session and its receipts, synced.
func (d *DB) DeleteSession(ctx context.Context, wark string) error {
	if err := checkWark(wark); err != nil {
		return err
	}
	if err := d.writable(); err != nil {
		return err
	}
	b := d.db.NewBatch()
	defer b.Close()
	if err := d.deleteSession(b, wark); err != nil {
		return err
	}
	return b.Commit(pebble.Sync)
}

// deleteSession adds the deletion of a session and its receipts to b.
// Receipts are deleted one by one: range tombstones would have to be
// fragmented by every later iterator over the memtable, which made each
// lookup slower with every finished upload.
func (d *DB) deleteSession(b *pebble.Batch, wark string) error {
	if err := b.Delete(sessionKey(wark), nil); err != nil {
		return err
	}
	keys, err := chunksOf(context.Background(), d.db, wark)
	if err != nil {
		return err
	}
	for _, k := range keys {
		if err := b.Delete(chunkKey(wark, k), nil); err != nil {
			return err
		}
	}
	return nil
}

// Sessions calls fn for every stored session with its chunk receipts.
func (d *DB) Sessions(ctx context.Context, fn func(wark string, blob []byte, keys []string) error) error {
	if err := d.usable(); err != nil {
		return err
	}
	snap := d.db.NewSnapshot()
	defer snap.Close()
	lo, hi := famRange(famSession)
	it, err := snap.NewIterWithContext(ctx, &pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return err
	}
	defer it.Close()
	for it.First(); it.Valid(); it.Next() {
		if err := ctx.Err(); err != nil {
			return err
		}
		wark := warkOfSession(it.Key())
		blob := slices.Clone(it.Value())
		keys, err := chunksOf(ctx, snap, wark)
		if err != nil {
			return err
		}
		if err := fn(wark, blob, keys); err != nil {
			return err
		}
	}
	return it.Error()
}

func chunksOf(ctx context.Context, r pebble.Reader, wark string) ([]string, error) {
	p := chunkPrefix(wark)
	it, err := r.NewIterWithContext(ctx, &pebble.IterOptions{LowerBound: p, UpperBound: prefixEnd(p)})
	if err != nil {
		return nil, err
	}
	var out []string
	for it.First(); it.Valid(); it.Next() {
		out = append(out, afterPrefix(it.Key(), p))
	}
	if err := it.Error(); err != nil {
		it.Close()
		return nil, err
	}
	return out, it.Close()
}

// Finish replaces a session by a file record in one synced batch.
func (d *DB) Finish(ctx context.Context, wark, rel string, meta []byte) error {
	return d.finish(wark, rel, meta, pebble.Sync)
}

// FinishNoSync is Finish, not synced: it is durable with the next synced
// write to the database (up2k uses it after a group-committed publish,
// whose entry was that write's predecessor; a crash that loses it leaves
// the session, which the restart closes).
func (d *DB) FinishNoSync(ctx context.Context, wark, rel string, meta []byte) error {
	return d.finish(wark, rel, meta, pebble.NoSync)
}

// finish replaces the session wark by the file record rel in one batch,
// committed with how.
func (d *DB) finish(wark, rel string, meta []byte, how *pebble.WriteOptions) error {
	if err := checkWark(wark); err != nil {
		return err
	}
	if err := d.writable(); err != nil {
		return err
	}
	b := d.db.NewBatch()
	defer b.Close()
	if err := d.deleteSession(b, wark); err != nil {
		return err
	}
	if err := b.Set(fileKey(wark, rel), meta, nil); err != nil {
		return err
	}
	return b.Commit(how)
}

// PutFile records a file with content wark, synced.
func (d *DB) PutFile(ctx context.Context, wark, rel string, meta []byte) error {
	if err := checkWark(wark); err != nil {
		return err
	}
	if err := d.writable(); err != nil {
		return err
	}
	return d.db.Set(fileKey(wark, rel), meta, pebble.Sync)
}

// DeleteFile forgets a file record, synced.
func (d *DB) DeleteFile(ctx context.Context, wark, rel string) error {
	if err := checkWark(wark); err != nil {
		return err
	}
	if err := d.writable(); err != nil {
		return err
	}
	return d.db.Delete(fileKey(wark, rel), pebble.Sync)
}

// Files returns the files recorded with content wark (rel → meta).
func (d *DB) Files(ctx context.Context, wark string) (map[string][]byte, error) {
	if err := checkWark(wark); err != nil {
		return nil, err
	}
	if err := d.usable(); err != nil {
		return nil, err
	}
	p := filePrefix(wark)
	it, err := d.db.NewIterWithContext(ctx, &pebble.IterOptions{LowerBound: p, UpperBound: prefixEnd(p)})
	if err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	for it.First(); it.Valid(); it.Next() {
		out[afterPrefix(it.Key(), p)] = slices.Clone(it.Value())
	}
	if err := it.Error(); err != nil {
		it.Close()
		return nil, err
	}
	return out, it.Close()
}

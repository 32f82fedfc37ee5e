package idx

import (
	"errors"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"hoard/store"
)

// This file is the index's journal (store.Journal): a synced note of every
// change to an indexed volume, made before the change is acknowledged and
// dropped once the change is indexed. Start-up replays the notes a crash
// left, so that a plain -e2d index (no scan at start) still finds every
// acknowledged upload. A replay looks at the path as it is then: a file
// deleted, replaced or moved since is indexed as it is now (or forgotten),
// never as the note describes it.

// famNote: 'j' id(8) → kind(1) + record (record.go's encoding).
const famNote = 'j'

func noteKey(id uint64) []byte { return idKey(famNote, id) }

// note is one journal entry.
type note struct {
	id   uint64
	kind store.EventKind
	rec  Record
}

func (n *note) encode() []byte {
	return append([]byte{byte(n.kind)}, n.rec.encode()...)
}

var errBadNote = errors.New("idx: corrupt journal note")

func decodeNote(b []byte) (*note, error) {
	if len(b) < 2 || (store.EventKind(b[0]) != store.Created && store.EventKind(b[0]) != store.Removed) {
		return nil, errBadNote
	}
	r, err := decodeRecord(b[1:])
	if err != nil || r.Rel == "" {
		return nil, errBadNote
	}
	return &note{kind: store.EventKind(b[0]), rec: *r}, nil
}

// initNotes finds the last note id.
func (d *DB) initNotes() error {
	it, err := d.db.NewIter(&pebble.IterOptions{LowerBound: []byte{famNote}, UpperBound: []byte{famNote + 1}})
	if err != nil {
		return err
	}
	if it.Last() && len(it.Key()) == 9 {
		d.nextNote.Store(idOf(it.Key()))
	}
	if err := it.Error(); err != nil {
		it.Close()
		return err
	}
	return it.Close()
}

// putNote stores a note, synced, and returns its id.
func (d *DB) putNote(n *note) (uint64, error) {
	id := d.nextNote.Add(1)
	if err := d.db.Set(noteKey(id), n.encode(), pebble.Sync); err != nil {
		return 0, err
	}
	return id, nil
}

// dropNote forgets a note. Unsynced: a note that comes back after a crash
// is replayed once more, which changes nothing.
func (d *DB) dropNote(id uint64) error {
	return d.db.Delete(noteKey(id), pebble.NoSync)
}

// notes returns every stored note, oldest first; corrupt ones are dropped.
func (d *DB) notes() ([]*note, error) {
	it, err := d.db.NewIter(&pebble.IterOptions{LowerBound: []byte{famNote}, UpperBound: []byte{famNote + 1}})
	if err != nil {
		return nil, err
	}
	var out []*note
	var bad []uint64
	for it.First(); it.Valid(); it.Next() {
		if len(it.Key()) != 9 {
			continue
		}
		id := idOf(it.Key())
		n, err := decodeNote(it.Value())
		if err != nil {
			bad = append(bad, id)
			continue
		}
		n.id = id
		out = append(out, n)
	}
	if err := it.Error(); err != nil {
		it.Close()
		return nil, err
	}
	if err := it.Close(); err != nil {
		return nil, err
	}
	for _, id := range bad {
		d.dropNote(id)
	}
	return out, nil
}

// Note implements store.Journal: it notes a change to an indexed volume,
// synced, and returns the note's id (0 when the change is not indexed).
func (x *Indexer) Note(e store.Event) (uint64, error) {
	vi := x.vols[e.Vol]
	if vi == nil || !indexed(e.Rel) || (e.Kind != store.Created && e.Kind != store.Removed) {
		return 0, nil
	}
	x.jmu.RLock()
	defer x.jmu.RUnlock()
	if x.jclosed {
		return 0, nil // stopping: the databases are about to close
	}
	n := &note{kind: e.Kind, rec: Record{Rel: e.Rel, Size: e.Size, Mtime: e.Mtime.UnixNano(), At: e.At.Unix(), Uploader: e.Uploader, IP: e.ClientIP, Wark: e.Wark, Chunks: e.Chunks}}
	if e.Mtime.IsZero() {
		n.rec.Mtime = 0
	}
	if e.At.IsZero() {
		n.rec.At = 0
	}
	return vi.db.putNote(n)
}

// Forget implements store.Journal.
func (x *Indexer) Forget(v *store.Volume, id uint64) {
	x.jmu.RLock()
	defer x.jmu.RUnlock()
	if vi := x.vols[v]; vi != nil && id != 0 && !x.jclosed {
		if err := vi.db.dropNote(id); err != nil {
			x.log.Debug("dropping a journal note failed", "id", id, "err", err)
		}
	}
}

// replay queues the notes a crash left in the volumes' databases, ahead of
// any new change; the volumes answer searches once they are indexed.
func (x *Indexer) replay() {
	done := map[*DB]bool{}
	for _, vi := range x.order {
		if done[vi.db] {
			continue
		}
		done[vi.db] = true
		ns, err := vi.db.notes()
		if err != nil {
			x.log.Error("reading the index journal failed; uploads of the moments before a crash may be missing from search until a scan", "volume", "/"+vi.v.VPath, "err", err)
			continue
		}
		if len(ns) == 0 {
			continue
		}
		x.log.Info("indexing the changes a crash left unindexed", "volume", "/"+vi.v.VPath, "changes", len(ns))
		vi.replaying.Add(int64(len(ns)))
		x.mu.Lock()
		for _, n := range ns {
			e := store.Event{Kind: n.kind, Vol: vi.v, Rel: n.rec.Rel, Size: n.rec.Size, Uploader: n.rec.Uploader, ClientIP: n.rec.IP, Wark: n.rec.Wark, Chunks: n.rec.Chunks, Note: n.id}
			if n.rec.Mtime != 0 {
				e.Mtime = time.Unix(0, n.rec.Mtime)
			}
			if n.rec.At != 0 {
				e.At = time.Unix(n.rec.At, 0)
			}
			x.queue = append(x.queue, queued{e: e, replay: true})
		}
		x.cond.Signal()
		x.mu.Unlock()
	}
}

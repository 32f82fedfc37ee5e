package idx

import (
	"encoding/binary"
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

// A note's value (key: noteKey): kind(1) flags(1) vol from-vol from
// record, the strings length-prefixed (uvarint), the record in record.go's
// encoding.

// note is one journal entry: a change to look at again.
type note struct {
	id      uint64
	kind    store.EventKind
	tree    bool   // rec.Rel (and from) are folders, with all below them
	vol     string // the volume's mount path (Event.Vol)
	hasFrom bool
	fromVol string // Event.FromVol's mount path, for a move or copy
	from    string
	rec     Record
}

const (
	noteTree = 1 << iota
	noteFrom
)

func (n *note) encode() []byte {
	var flags byte
	if n.tree {
		flags |= noteTree
	}
	if n.hasFrom {
		flags |= noteFrom
	}
	b := []byte{byte(n.kind), flags}
	for _, s := range []string{n.vol, n.fromVol, n.from} {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	return append(b, n.rec.encode()...)
}

var errBadNote = errors.New("idx: corrupt journal note")

func decodeNote(b []byte) (*note, error) {
	if len(b) < 2 || b[1]&^(noteTree|noteFrom) != 0 {
		return nil, errBadNote
	}
	n := &note{kind: store.EventKind(b[0]), tree: b[1]&noteTree != 0, hasFrom: b[1]&noteFrom != 0}
	switch n.kind {
	case store.Created, store.Removed, store.Touched:
		if n.hasFrom {
			return nil, errBadNote
		}
	case store.Moved, store.Copied:
		if !n.hasFrom {
			return nil, errBadNote
		}
	default:
		return nil, errBadNote
	}
	b = b[2:]
	var strs [3]string
	for i := range strs {
		l, k := binary.Uvarint(b)
		if k <= 0 || l > uint64(len(b)-k) {
			return nil, errBadNote
		}
		strs[i] = string(b[k : k+int(l)])
		b = b[k+int(l):]
	}
	n.vol, n.fromVol, n.from = strs[0], strs[1], strs[2]
	if !n.hasFrom && (n.fromVol != "" || n.from != "") {
		return nil, errBadNote
	}
	r, err := decodeRecord(b)
	if err != nil || (r.Rel == "" && !n.tree) {
		return nil, errBadNote
	}
	n.rec = *r
	return n, nil
}

// initNotes finds the last note id.
func (d *DB) initNotes() error {
	lo, hi := famRange(famNote)
	it, err := d.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return err
	}
	if it.Last() && len(it.Key()) == idLen {
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
	if err := d.writable(); err != nil {
		return 0, err
	}
	id := d.nextNote.Add(1)
	if err := d.db.Set(noteKey(id), n.encode(), pebble.Sync); err != nil {
		return 0, err
	}
	return id, nil
}

// dropNote forgets a note. Unsynced: a note that comes back after a crash
// is replayed once more, which changes nothing.
func (d *DB) dropNote(id uint64) error {
	if err := d.writable(); err != nil {
		return err // replayed once more, which changes nothing
	}
	return d.db.Delete(noteKey(id), pebble.NoSync)
}

// notes returns every stored note, oldest first; corrupt ones are dropped.
func (d *DB) notes() ([]*note, error) {
	if err := d.usable(); err != nil {
		return nil, err
	}
	lo, hi := famRange(famNote)
	it, err := d.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return nil, err
	}
	var out []*note
	var bad []uint64
	for it.First(); it.Valid(); it.Next() {
		if len(it.Key()) != idLen {
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
	x.jmu.RLock()
	defer x.jmu.RUnlock()
	db, n := x.prepNote(e)
	if db == nil {
		return 0, nil
	}
	return db.putNote(n)
}

// prepNote is the note of e and the database that keeps it; nil when e
// is not noted (not indexed, or the indexer is stopping). The caller
// holds jmu (read).
func (x *Indexer) prepNote(e store.Event) (*DB, *note) {
	switch e.Kind {
	case store.Created, store.Removed, store.Touched:
		if !indexed(e.Rel) {
			return nil, nil
		}
	case store.Moved, store.Copied:
		if isDotPath(e.Rel) && isDotPath(e.From) {
			return nil, nil
		}
	default:
		return nil, nil
	}
	db := x.noteDB(e)
	if db == nil || x.jclosed { // stopping: the databases are about to close
		return nil, nil
	}
	n := &note{kind: e.Kind, tree: e.Tree, vol: e.Vol.VPath, rec: Record{Rel: e.Rel, Size: e.Size, Mtime: e.Mtime.UnixNano(), At: e.At.Unix(), Uploader: e.Uploader, IP: e.ClientIP, Wark: e.Wark, Chunks: e.Chunks}}
	if e.Kind == store.Moved || e.Kind == store.Copied {
		n.hasFrom, n.from = true, e.From
		if e.FromVol != nil {
			n.fromVol = e.FromVol.VPath
		}
	}
	if e.Mtime.IsZero() {
		n.rec.Mtime = 0
	}
	if e.At.IsZero() {
		n.rec.At = 0
	}
	return db, n
}

// noteDB is the database that holds the note of a change: the one of its
// volume, or for a move out of an indexed volume the source's.
func (x *Indexer) noteDB(e store.Event) *DB {
	if vi := x.vol(e.Vol); vi != nil {
		return vi.db
	}
	if vi := x.vol(e.FromVol); vi != nil && e.FromVol != nil {
		return vi.db
	}
	return nil
}

// Forget implements store.Journal.
func (x *Indexer) Forget(v *store.Volume, id uint64) {
	x.jmu.RLock()
	defer x.jmu.RUnlock()
	if vi := x.vol(v); vi != nil && id != 0 && !x.jclosed {
		if err := vi.db.dropNote(id); err != nil {
			x.log.Debug("dropping a journal note failed", "id", id, "err", err)
		}
	}
}

// replay queues the notes a crash left in the volumes' databases (or, with
// only, in that one), ahead of any new change; the volumes answer
// searches once they are indexed. A database not open yet (its state
// folder is full) is replayed once it opens.
func (x *Indexer) replay(only *DB) {
	byPath := map[string]*store.Volume{}
	for _, v := range x.cfg.Store.Mounted() { // a volume a reload stopped serving keeps its notes
		byPath[v.VPath] = v
	}
	for _, vi := range x.list() { // a volume a reload adds is indexed before it is mounted
		byPath[vi.v.VPath] = vi.v
	}
	done := map[*DB]bool{}
	for _, vi := range x.list() {
		if done[vi.db] || only != nil && vi.db != only {
			continue
		}
		done[vi.db] = true
		if only == nil && vi.db.usable() != nil {
			x.wg.Add(1)
			go func(db *DB) {
				defer x.wg.Done()
				select {
				case <-db.Ready():
					x.replay(db)
				case <-x.ctx.Done():
				}
			}(vi.db)
			continue
		}
		ns, err := vi.db.notes()
		if err != nil {
			x.log.Error("reading the index journal failed; uploads of the moments before a crash may be missing from search until a scan", "volume", "/"+vi.v.VPath, "err", err)
			continue
		}
		if len(ns) == 0 {
			continue
		}
		x.log.Info("indexing the changes a crash left unindexed", "volume", "/"+vi.v.VPath, "changes", len(ns))
		x.mu.Lock()
		for _, n := range ns {
			e := store.Event{Kind: n.kind, Tree: n.tree, Vol: byPath[n.vol], Rel: n.rec.Rel, Size: n.rec.Size, Uploader: n.rec.Uploader, ClientIP: n.rec.IP, Wark: n.rec.Wark, Chunks: n.rec.Chunks, Note: n.id}
			if e.Vol == nil {
				vi.db.dropNote(n.id) // its volume is no longer mounted
				continue
			}
			if n.hasFrom {
				e.FromVol, e.From = byPath[n.fromVol], n.from
			}
			if n.rec.Mtime != 0 {
				e.Mtime = time.Unix(0, n.rec.Mtime)
			}
			if n.rec.At != 0 {
				e.At = time.Unix(n.rec.At, 0)
			}
			vi.replaying.Add(1)
			x.queue = append(x.queue, queued{e: e, replay: true, vi: vi, noteDB: vi.db})
		}
		x.cond.Signal()
		x.mu.Unlock()
	}
}

// replayNote takes in a change a crash left noted but unindexed, as the
// file system is now: a move or copy is applied to the records as it
// would have been, then both places are looked at again; a file is
// re-indexed (or forgotten) as it is; a tree is walked.
func (x *Indexer) replayNote(e store.Event) error {
	switch e.Kind {
	case store.Moved, store.Copied:
		err := x.applyManaged(x.evctx, e)
		if e.Kind == store.Moved && e.FromVol != nil {
			err = errors.Join(err, x.recheck(x.vol(e.FromVol), e.From, e.Tree))
		}
		return errors.Join(err, x.recheck(x.vol(e.Vol), e.Rel, e.Tree))
	}
	vi := x.vol(e.Vol)
	if vi == nil {
		return nil
	}
	if e.Tree {
		return x.recheck(vi, e.Rel, true)
	}
	return x.reindex(vi, &e)
}

// recheck makes the index agree with the file system at rel: a file, or
// with tree a folder and everything below it.
func (x *Indexer) recheck(vi *volIdx, rel string, tree bool) error {
	if vi == nil || (rel != "" && isDotPath(rel)) {
		return nil
	}
	if !tree {
		return x.reindex(vi, &store.Event{Vol: vi.v, Rel: rel})
	}
	if err := x.removeTree(x.evctx, vi, rel); err != nil || rel == "" {
		return err // the whole volume is a scan's job
	}
	return x.indexTree(x.evctx, vi, rel, func(p string) *Record {
		r, _ := vi.db.Record(p)
		return r
	})
}

package store

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Group commit of small uploads. A new file of at most SmallFile bytes is
// made durable by ONE synced write: its bytes and its record (with the
// index's note of it) go into the volume's state database as one batch,
// and the database commits concurrent synced batches together, one
// write-ahead-log flush for all of them. The file is then published as
// before (no-clobber link), with neither its own fsync nor its folder's.
// A background checkpoint (every checkpointEvery, or sooner once
// checkpointBytes, or the log's smaller SmallBudget, are waiting) flushes
// each volume's file system (syncfs: the files' bytes and names, on the
// volume's own file system even when the state folder is elsewhere) and
// then deletes the entries it covered, synced.
//
// At start, before anything is served, the entries a crash left are
// replayed (ReplaySmall): a file that is missing, or is still the very
// file of the entry (same device and inode) but with other bytes (short,
// zeroed), is written again from the entry, durably; a name that holds
// another file now is left alone. Then the entries are deleted.
//
// What a replay must never do is undo a later change made through hoard.
// So every change that can remove, move or overwrite a file (delete,
// move, copy over, replace, append, touch, expiry; WebDAV and up2k reach
// the same calls) first settles: when any entry is pending, it waits for
// the uploads committing and runs a checkpoint, so that no entry is left
// that the change could make wrong. Changes that remove names settle again
// afterwards when an upload was committed meanwhile (it may have been
// published just before the name was removed). A new small upload to a
// name that already has a pending entry goes the per-file way.
//
// Changes made outside hoard in the checkpoint window are not seen: a
// file deleted outside hoard less than a checkpoint before a crash comes
// back at start; one replaced outside hoard is left as it is (other inode).
//
// --no-group-sync turns all of this off: every file gets its own fsync
// and its folder's.

// SmallLog is the synced log that group commit writes to: idx implements
// it over the volume's state database; main wires it with SetSmallLog.
type SmallLog interface {
	// Commit stores rec under a new id, the index note of e (nil: none)
	// and the deletion of the entries drop, in one synced write; it
	// returns the entry's id and the note's (0: not noted).
	Commit(v *Volume, rec []byte, e *Event, drop []uint64) (id, note uint64, err error)
	// Retire deletes the entries ids, synced.
	Retire(v *Volume, ids []uint64) error
	// Each calls fn with every stored entry of v's database, oldest
	// first; entries of other volumes sharing the database too.
	Each(ctx context.Context, v *Volume, fn func(id uint64, rec []byte) error) error
}

// SmallFinisher is implemented by a SmallLog that can also write an up2k
// upload's finishing record (its session replaced by its file's record)
// in the entry's own synced write (idx): one write per small up2k file.
type SmallFinisher interface {
	// CommitFinish is Commit that also applies fin (nil: none) with the
	// file at e.Rel.
	CommitFinish(v *Volume, rec []byte, e *Event, drop []uint64, fin *SmallFinish) (id, note uint64, err error)
}

// SmallFinish is an up2k upload's finishing record, written with its
// group-commit entry (PublishOptions.Finish): its session Wark (and the
// session's chunk receipts, unless NoReceipts says it has none) replaced
// by the record Meta of the file at the event's path; Prev, when set, is
// a path of the same record to drop (the name the upload was committed
// under before a collision renamed it).
type SmallFinish struct {
	Wark       string
	Meta       []byte
	NoReceipts bool
	Prev       string
}

// SmallBudget is implemented by a SmallLog that knows how many bytes of
// entries should wait at most before a checkpoint (idx: a quarter of its
// memtables, so that entries are mostly deleted before their memtable is
// flushed, and only their tombstones reach a table on disk).
type SmallBudget interface {
	CheckpointBytes() int64
}

// A checkpoint runs every checkpointEvery, and sooner once checkpointBytes
// (or the log's SmallBudget, when smaller) of entries wait.
var (
	checkpointEvery       = time.Second
	checkpointBytes int64 = 4 << 20
)

// gcState is the store's group commit: the entries committed and not yet
// retired by a checkpoint.
type gcState struct {
	log SmallLog // nil: off

	mu       sync.Mutex
	changed  *sync.Cond           // an entry finished committing
	seq      atomic.Uint64        // registrations so far
	active   atomic.Int64         // entries registered and not yet retired, plus waiting volumes
	inflight map[uint64]bool      // registered, publish under way
	byPath   map[string]int       // pending entries by physical path (src NUL rel)
	done     []gcEntry            // published, waiting for the checkpoint
	bytes    int64                // their bytes
	cpBytes  int64                // a checkpoint starts once bytes reach this
	waiting  map[*Volume]bool     // volumes whose replay could not run yet
	cpMu     sync.Mutex           // guards cpFlight
	cpFlight flushGroup           // one checkpoint at a time, shared by those waiting
	kick     chan struct{}        // start a checkpoint now
	stop     chan struct{}        // closed by StopSmall
	stopped  chan struct{}        // closed when the loop ended
	failLog  RateLog              // commits that fell back
	cpErrLog RateLog              // checkpoints that failed
	flush    func(*os.File) error // tests replace syncfs
}

type gcEntry struct {
	v   *Volume // outer volume
	id  uint64
	key string
	n   int64
}

// SetSmallLog turns group commit on with l (not with --no-group-sync, nor
// where syncfs is missing). Call it before serving and before ReplaySmall.
func (s *Store) SetSmallLog(l SmallLog) {
	if s.noGroupSync || fsyncEachFile || l == nil {
		return
	}
	g := &s.gc
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.log != nil {
		return
	}
	g.log = l
	g.cpBytes = checkpointBytes
	if b, ok := l.(SmallBudget); ok {
		if n := b.CheckpointBytes(); n > 0 && n < g.cpBytes {
			g.cpBytes = n
		}
	}
	g.changed = sync.NewCond(&g.mu)
	g.inflight = map[uint64]bool{}
	g.byPath = map[string]int{}
	g.waiting = map[*Volume]bool{}
	g.kick = make(chan struct{}, 1)
	g.stop = make(chan struct{})
	g.stopped = make(chan struct{})
	g.failLog.Every, g.cpErrLog.Every = time.Minute, 10*time.Second
	go s.gcLoop()
}

// StopSmall ends the background checkpoints with a last one. Call it
// before the databases close.
func (s *Store) StopSmall() error {
	if !s.stopLoop() {
		return nil
	}
	return s.checkpoint()
}

// stopLoop ends the background checkpoints; false when they never ran or
// had ended.
func (s *Store) stopLoop() bool {
	g := &s.gc
	g.mu.Lock()
	if g.stop == nil {
		g.mu.Unlock()
		return false
	}
	select {
	case <-g.stop:
		g.mu.Unlock()
		<-g.stopped
		return false
	default:
	}
	close(g.stop)
	g.mu.Unlock()
	<-g.stopped
	return true
}

func (s *Store) gcLoop() {
	g := &s.gc
	defer close(g.stopped)
	t := time.NewTicker(checkpointEvery)
	defer t.Stop()
	for {
		select {
		case <-g.stop:
			return
		case <-t.C:
		case <-g.kick:
		}
		if err := s.checkpoint(); err != nil {
			g.cpErrLog.Log(s.log, slog.LevelError, "a group-commit checkpoint failed; its uploads stay in the state folder's journal and are checked again at start", "err", err)
		}
	}
}

// register notes that a small upload to the physical path key is about
// to be committed. It is refused when key already has a pending entry
// (the upload then goes the per-file way: two entries for one name could
// not be told apart by a replay).
func (g *gcState) register(key string) (uint64, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.byPath[key] > 0 {
		return 0, false
	}
	g.byPath[key]++
	seq := g.seq.Add(1)
	g.inflight[seq] = true
	g.active.Add(1)
	return seq, true
}

// finish ends the registration seq: with published entries (each keeps
// its path pending until a checkpoint retires it), or none (the upload
// went another way or failed; its path is free again).
func (g *gcState) finish(seq uint64, key string, ents ...gcEntry) {
	g.mu.Lock()
	delete(g.inflight, seq)
	kick := false
	if len(ents) == 0 {
		g.byPath[key]--
		if g.byPath[key] <= 0 {
			delete(g.byPath, key)
		}
		g.active.Add(-1)
	} else {
		g.done = append(g.done, ents...)
		for _, e := range ents {
			g.bytes += e.n
		}
		g.active.Add(int64(len(ents) - 1))
		kick = g.bytes >= g.cpBytes
	}
	g.changed.Broadcast()
	g.mu.Unlock()
	if kick {
		select {
		case g.kick <- struct{}{}:
		default:
		}
	}
}

// smallOn reports whether a small upload to v may be group-committed.
func (s *Store) smallOn(v *Volume) bool {
	if s.gc.log == nil || v.hist == "" || v.obj != nil {
		return false
	}
	o, _ := v.Outer()
	s.gc.mu.Lock()
	w := s.gc.waiting[o]
	s.gc.mu.Unlock()
	return !w
}

// errSettling is a change refused because a volume's group-commit
// journal could not be replayed yet (its state folder is full).
func errSettling(v *Volume) error {
	free, keep, _ := StateRoom(v.hist)
	return &StateFullError{Free: free, Keep: keep, Opening: free >= keep}
}

// settle prepares a change to the volumes vols that may remove, move or
// overwrite files: when entries are pending, it waits for the uploads
// committing now and runs a checkpoint, so that no replay can undo the
// change. after, called once the change is made, settles again when an
// upload was committed meanwhile (it may have been published just before
// the change removed its name).
func (s *Store) settle(vols ...*Volume) (after func() error, err error) {
	g := &s.gc
	if g.log == nil {
		return func() error { return nil }, nil
	}
	mark := g.seq.Load()
	after = func() error {
		if g.seq.Load() == mark && g.active.Load() == 0 {
			return nil
		}
		_, err := s.settleNow(nil)
		return err
	}
	if g.active.Load() == 0 {
		return after, nil
	}
	if _, err := s.settleNow(vols); err != nil {
		return nil, err
	}
	return after, nil
}

// settleNow waits for every upload registered so far to finish committing
// and runs a checkpoint; it fails when one of vols has an unreplayed
// journal.
func (s *Store) settleNow(vols []*Volume) (uint64, error) {
	g := &s.gc
	mark := g.seq.Load()
	g.mu.Lock()
	for _, v := range vols {
		if v == nil {
			continue
		}
		if o, _ := v.Outer(); g.waiting[o] {
			g.mu.Unlock()
			return 0, errSettling(o)
		}
	}
	for {
		busy := false
		for seq := range g.inflight {
			if seq <= mark {
				busy = true
				break
			}
		}
		if !busy {
			break
		}
		g.changed.Wait()
	}
	g.mu.Unlock()
	return mark, s.checkpoint()
}

// checkpoint flushes the file systems of the published entries and then
// retires them. On an error the entries stay (and are replayed at start).
// Callers that arrive while one runs share the next one (it starts after
// they arrived, so it covers what they need): many deletes during an
// upload load cost a checkpoint per flight, not one each.
func (s *Store) checkpoint() error {
	g := &s.gc
	if g.log == nil {
		return nil
	}
	return g.cpFlight.do(&g.cpMu, s.checkpointNow)
}

func (s *Store) checkpointNow() error {
	g := &s.gc
	g.mu.Lock()
	ents := g.done
	g.done = nil
	g.bytes = 0
	flush := g.flush
	g.mu.Unlock()
	if len(ents) == 0 {
		return nil
	}
	if flush == nil {
		flush = syncFS
	}
	// One flush per file system: a volume's own, whatever file system its
	// state folder is on.
	byVol := map[*Volume][]uint64{}
	var vols []*Volume
	for _, e := range ents {
		if byVol[e.v] == nil {
			vols = append(vols, e.v)
		}
		byVol[e.v] = append(byVol[e.v], e.id)
	}
	var err error
	flushed := map[uint64]error{}
	bad := map[*Volume]bool{}
	for _, v := range vols {
		f, oerr := v.root.Open(".")
		if oerr != nil {
			bad[v] = true
			err = errors.Join(err, oerr)
			continue
		}
		dev := uint64(0)
		if fi, serr := f.Stat(); serr == nil {
			dev = devOf(fi)
		}
		ferr, ok := flushed[dev]
		if !ok || dev == 0 {
			ferr = timed(func() error { return flush(f) })
			flushed[dev] = ferr
		}
		f.Close()
		if ferr != nil {
			bad[v] = true
			err = errors.Join(err, v.writeErr(ferr, 0))
		}
	}
	retired := map[*Volume]bool{}
	for _, v := range vols {
		if bad[v] {
			continue
		}
		if rerr := g.log.Retire(v, byVol[v]); rerr != nil {
			err = errors.Join(err, fmt.Errorf("retiring group-commit entries of /%s: %w", v.VPath, rerr))
			continue
		}
		retired[v] = true
	}
	g.mu.Lock()
	for _, e := range ents {
		if !retired[e.v] {
			g.done = append(g.done, e)
			g.bytes += e.n
			continue
		}
		g.byPath[e.key]--
		if g.byPath[e.key] <= 0 {
			delete(g.byPath, e.key)
		}
		g.active.Add(-1)
	}
	g.mu.Unlock()
	return err
}

// ---- entries ----------------------------------------------------------------

// smallRec is one group-committed upload: the file's bytes and what a
// replay needs to put them back.
type smallRec struct {
	Src      string // the volume's folder (Volume.Src)
	Rel      string // the file's path in it
	Dev, Ino uint64 // the file's identity when it was published
	Mtime    int64  // its mtime, Unix nanoseconds
	Data     []byte
}

const smallMagic = 0xa7 // first byte of an entry (and its version)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// header is the encoding of r without its data (n bytes) and trailer.
func (r *smallRec) header(b []byte, n int) []byte {
	b = append(b, smallMagic)
	b = binary.AppendUvarint(b, uint64(len(r.Src)))
	b = append(b, r.Src...)
	b = binary.AppendUvarint(b, uint64(len(r.Rel)))
	b = append(b, r.Rel...)
	b = binary.AppendUvarint(b, r.Dev)
	b = binary.AppendUvarint(b, r.Ino)
	b = binary.AppendVarint(b, r.Mtime)
	b = binary.AppendUvarint(b, uint64(n))
	return b
}

// encode is r's entry: the header, the data, a CRC-32C of both.
func (r *smallRec) encode() []byte {
	b := r.header(make([]byte, 0, 64+len(r.Src)+len(r.Rel)+len(r.Data)), len(r.Data))
	b = append(b, r.Data...)
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, crcTable))
}

var errBadSmall = errors.New("store: corrupt group-commit entry")

// decodeSmall parses an entry; Data aliases b.
func decodeSmall(b []byte) (*smallRec, error) {
	if len(b) < 5 || b[0] != smallMagic {
		return nil, errBadSmall
	}
	body, sum := b[:len(b)-4], binary.BigEndian.Uint32(b[len(b)-4:])
	if crc32.Checksum(body, crcTable) != sum {
		return nil, errBadSmall
	}
	p := body[1:]
	str := func() (string, bool) {
		l, k := binary.Uvarint(p)
		if k <= 0 || l > uint64(len(p)-k) {
			return "", false
		}
		s := string(p[k : k+int(l)])
		p = p[k+int(l):]
		return s, true
	}
	uv := func() (uint64, bool) {
		v, k := binary.Uvarint(p)
		if k <= 0 {
			return 0, false
		}
		p = p[k:]
		return v, true
	}
	r := &smallRec{}
	var ok bool
	if r.Src, ok = str(); !ok {
		return nil, errBadSmall
	}
	if r.Rel, ok = str(); !ok {
		return nil, errBadSmall
	}
	if r.Dev, ok = uv(); !ok {
		return nil, errBadSmall
	}
	if r.Ino, ok = uv(); !ok {
		return nil, errBadSmall
	}
	m, k := binary.Varint(p)
	if k <= 0 {
		return nil, errBadSmall
	}
	r.Mtime, p = m, p[k:]
	n, ok := uv()
	if !ok || n != uint64(len(p)) || n > SmallFile {
		return nil, errBadSmall
	}
	r.Data = p
	if r.Src == "" || r.Rel == "" {
		return nil, errBadSmall
	}
	if c, err := cleanRel(r.Rel); err != nil || c != r.Rel || c == "." {
		return nil, errBadSmall
	}
	return r, nil
}

// ---- publishing -------------------------------------------------------------

// publishSmall publishes the small new file t as name by group commit.
// ok is false when it did nothing (group commit is off for it, the name
// has a pending entry, or the journal refused the entry: a full state
// folder) and the caller publishes it the per-file way.
// With keep (PublishLinked), the work file stays a second name of the
// published file and open.
func (t *Temp) publishSmall(name string, opt PublishOptions, ev Event, tfi fs.FileInfo, life time.Duration, now time.Time, mtimeSet, keep bool) (rel string, fi fs.FileInfo, err error, ok bool) {
	v, s := t.v, t.v.store
	g := &s.gc
	size := tfi.Size()
	id, idok := idOf(tfi)
	if !idok || size > SmallFile || !s.smallOn(v) {
		return "", nil, nil, false
	}
	ov, _ := v.Outer()
	orel := v.outerRel(path.Join(t.dir, name))
	r := smallRec{Src: ov.Src, Rel: orel, Dev: id.dev, Ino: id.ino, Mtime: ev.Mtime.UnixNano()}
	// The entry is built in one buffer, the file's bytes read back into
	// it from the page cache.
	h := r.header(make([]byte, 0, 64+len(r.Src)+len(r.Rel)+int(size)+4), int(size))
	rec := h[:len(h)+int(size)]
	if n, rerr := t.File.ReadAt(rec[len(h):], 0); int64(n) != size || (rerr != nil && !errors.Is(rerr, io.EOF)) {
		return "", nil, nil, false
	}
	rec = binary.BigEndian.AppendUint32(rec, crc32.Checksum(rec, crcTable))
	key := ov.Src + "\x00" + orel
	seq, regd := g.register(key)
	if !regd {
		return "", nil, nil, false
	}
	// The up2k session's finishing record rides in the same write when
	// the journal can take it (then Temp.Finished).
	fin := opt.Finish
	sf, _ := g.log.(SmallFinisher)
	if sf == nil || v.outer != nil {
		fin = nil
	}
	commit := func(rec []byte, e *Event, drop []uint64, fin *SmallFinish) (uint64, uint64, error) {
		if fin != nil {
			return sf.CommitFinish(ov, rec, e, drop, fin)
		}
		return g.log.Commit(ov, rec, e, drop)
	}
	cev := canon(ev)
	eid, nid, cerr := commit(rec, &cev, nil, fin)
	if cerr != nil {
		g.finish(seq, key)
		g.failLog.Log(s.log, slog.LevelWarn, "group commit refused an upload; it is flushed on its own", "volume", "/"+ov.VPath, "err", cerr)
		return "", nil, nil, false
	}
	// Committed: the upload is durable from here on. What fails now
	// fails the request and retires the entry.
	fail := func(err error, tmp string) (string, fs.FileInfo, error, bool) {
		if tmp != "" {
			v.root.Remove(tmp)
		}
		t.done, t.linked = false, false
		t.Abort()
		if rerr := g.log.Retire(ov, []uint64{eid}); rerr != nil {
			// Left for the checkpoint; a replay may then bring the
			// file back (it was never acknowledged).
			g.finish(seq, key, gcEntry{v: ov, id: eid, key: key})
		} else {
			g.finish(seq, key)
		}
		s.forget(v, nid)
		return "", nil, err, true
	}
	// The work file stays open until it is published: its FileInfo is
	// then one fstat, with no walk to the file again.
	tmp := path.Join(t.dir, t.name)
	work := "" // Abort removes it on a failure
	var anon *os.File
	if t.anon {
		anon = t.File // linked by its descriptor; keep is false for it
	}
	if !mtimeSet {
		if t.anon {
			return fail(errors.New("store: could not set the mtime of an unnamed work file"), work)
		}
		if err := v.root.Chtimes(tmp, opt.Mtime, opt.Mtime); err != nil {
			return fail(mapErr(err), work)
		}
	}
	if life > 0 {
		if err := v.scheduleExpiry(ev.Rel, tfi, now.Add(life)); err != nil {
			return fail(err, work)
		}
	}
	final, err := v.place(tmp, t.dir, name, opt, keep, t.dirf, anon)
	if err != nil || !keep {
		t.releaseDir() // kept for DropWork otherwise
	}
	if err != nil {
		return fail(err, work)
	}
	if keep {
		t.done, t.linked = true, true
	}
	ent := gcEntry{v: ov, id: eid, key: key, n: size}
	if frel := relOf(final); frel != ev.Rel {
		// Renamed on a collision: the entry names the file's new name
		// (in place of the old entry, in one synced write) before the
		// upload is acknowledged.
		ev.Rel = frel
		r2 := r
		r2.Rel = v.outerRel(final)
		r2.Data = rec[len(h) : len(h)+int(size)]
		key2 := ov.Src + "\x00" + r2.Rel
		g.mu.Lock()
		g.byPath[key2]++
		g.mu.Unlock()
		cev := canon(ev)
		var fin2 *SmallFinish
		if fin != nil {
			f := *fin
			f.Prev = relOf(path.Join(t.dir, name))
			fin2 = &f
		}
		eid2, nid2, cerr := commit(r2.encode(), &cev, []uint64{eid}, fin2)
		if cerr != nil {
			g.mu.Lock()
			g.byPath[key2]--
			if g.byPath[key2] <= 0 {
				delete(g.byPath, key2)
			}
			g.mu.Unlock()
			return fail(fmt.Errorf("noting the renamed upload: %w", cerr), final)
		}
		s.forget(v, nid)
		nid = nid2
		// The old entry is gone with that write: its name is free.
		g.mu.Lock()
		g.byPath[key]--
		if g.byPath[key] <= 0 {
			delete(g.byPath, key)
		}
		g.mu.Unlock()
		ent = gcEntry{v: ov, id: eid2, key: key2, n: size}
		key = key2
	}
	g.finish(seq, key, ent)
	t.journaled, t.finished = true, fin != nil
	fi, err = t.File.Stat()
	if err != nil {
		return "", nil, mapErr(err), true
	}
	fi = namedInfo{fi, path.Base(final)}
	if !keep {
		t.done = true
		if !t.anon {
			s.tempLive(v, tmp, false)
		}
		if err := t.File.Close(); err != nil {
			return "", nil, v.writeErr(err, 0), true
		}
	}
	if life > 0 && relOf(final) != relOf(path.Join(t.dir, name)) {
		if err := v.scheduleExpiry(final, fi, now.Add(life)); err != nil {
			return "", nil, err, true
		}
	}
	ev.Size, ev.Mtime, ev.Note = fi.Size(), fi.ModTime(), nid
	s.emit(ev)
	return relOf(final), fi, nil, true
}

// Journaled reports whether t was published by group commit: durable by
// its journal entry in the volume's state database, which a replay at
// start puts back (so a record made after it in that database need not
// be synced on its own: the session's restart recovery closes an upload
// whose record a crash lost).
func (t *Temp) Journaled() bool { return t.journaled }

// Finished reports whether t's publish also wrote PublishOptions.Finish
// (in its group-commit entry's write).
func (t *Temp) Finished() bool { return t.finished }

// namedInfo is a file's FileInfo under the name it was published as (an
// fstat of the work file names the work file).
type namedInfo struct {
	fs.FileInfo
	name string
}

func (n namedInfo) Name() string { return n.name }

// ---- replay -----------------------------------------------------------------

// ReplaySmall puts back what a crash lost of the group-committed uploads
// of vols (nil: every mounted volume) and retires their entries. Call it
// before serving them. A volume whose journal cannot be read yet (its
// state folder is full) refuses changes that settle (deletes, moves,
// replaces) until it is replayed, which is tried again in the background.
func (s *Store) ReplaySmall(ctx context.Context, vols []*Volume) {
	g := &s.gc
	if g.log == nil {
		return
	}
	if vols == nil {
		vols = s.mounted()
	}
	seen := map[string]bool{}
	for _, v := range vols {
		if v.outer != nil || v.obj != nil || v.hist == "" {
			continue
		}
		if err := s.replayVol(ctx, v, seen); err != nil {
			var sf *StateFullError
			if !errors.As(err, &sf) {
				s.log.Error("replaying the group-commit journal failed; it is tried again at the next start", "volume", "/"+v.VPath, "err", err)
				continue
			}
			g.mu.Lock()
			g.waiting[v] = true
			g.active.Add(1)
			g.mu.Unlock()
			go s.replayLater(v)
		}
	}
}

// replayLater replays v once its journal can be read.
func (s *Store) replayLater(v *Volume) {
	g := &s.gc
	t := time.NewTicker(2 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-g.stop:
			return
		case <-t.C:
		}
		err := s.replayVol(context.Background(), v, map[string]bool{})
		var sf *StateFullError
		if errors.As(err, &sf) {
			continue
		}
		if err != nil {
			s.log.Error("replaying the group-commit journal failed; it is tried again at the next start", "volume", "/"+v.VPath, "err", err)
		}
		g.mu.Lock()
		delete(g.waiting, v)
		g.active.Add(-1)
		g.mu.Unlock()
		return
	}
}

// replayVol replays the entries of v's database that belong to v.
func (s *Store) replayVol(ctx context.Context, v *Volume, seen map[string]bool) error {
	var ids []uint64
	var errs []error
	fixed := 0
	err := s.gc.log.Each(ctx, v, func(id uint64, b []byte) error {
		r, err := decodeSmall(b)
		if err != nil {
			s.log.Warn("dropping a corrupt group-commit entry", "volume", "/"+v.VPath, "id", id)
			ids = append(ids, id)
			return nil
		}
		if r.Src != v.Src {
			return nil // another volume's (sharing the state folder)
		}
		k := fmt.Sprint(r.Src, "\x00", id)
		if seen[k] {
			return nil
		}
		seen[k] = true
		did, err := v.replayOne(r)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", r.Rel, err))
			return nil // kept for the next start
		}
		if did {
			fixed++
			s.log.Warn("a group-committed upload was written again from the journal (a crash lost it)", "volume", "/"+v.VPath, "path", r.Rel)
		}
		ids = append(ids, id)
		return nil
	})
	if err != nil {
		return err
	}
	if len(ids) > 0 {
		s.log.Info("replayed the group-commit journal", "volume", "/"+v.VPath, "entries", len(ids), "written_again", fixed)
		if err := s.gc.log.Retire(v, ids); err != nil {
			return err
		}
	}
	return errors.Join(errs...)
}

// replayOne puts r's file back when a crash lost it: the name missing, or
// the same file (device and inode) with other bytes. did reports a write.
func (v *Volume) replayOne(r *smallRec) (did bool, err error) {
	fi, err := v.root.Lstat(r.Rel)
	replace := false
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil && errors.Is(err, syscall.ENOTDIR):
		return false, nil // a file where a folder was: changed since
	case err != nil:
		return false, err
	case !fi.Mode().IsRegular():
		return false, nil // something else is there now
	default:
		id, ok := idOf(fi)
		if !ok || id.dev != r.Dev || id.ino != r.Ino {
			return false, nil // another file has the name now
		}
		same, err := v.sameContent(r)
		if err != nil {
			return false, err
		}
		if same {
			if fi.ModTime().UnixNano() != r.Mtime {
				t := time.Unix(0, r.Mtime)
				if err := v.root.Chtimes(r.Rel, t, t); err != nil {
					return false, err
				}
			}
			return false, nil
		}
		replace = true
	}
	dir, name := path.Split(r.Rel)
	dir = dotIfEmpty(path.Clean(dir))
	if dir == "./" {
		dir = "."
	}
	if checkName(name) != nil {
		return false, nil
	}
	dirf, _, err := v.mkdirs(dotIfEmpty(path.Clean(path.Dir(r.Rel))))
	if err != nil {
		return false, err
	}
	defer dirf.Close()
	tmp := newTempName()
	f, err := openFileAt(dirf, tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return false, err
	}
	_, err = f.Write(r.Data)
	if err == nil {
		err = setMtime(f, time.Unix(0, r.Mtime))
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		if replace {
			err = renameAt(dirf, tmp, dirf, name, true)
		} else if err = linkAt(dirf, tmp, dirf, name); err == nil || errors.Is(err, fs.ErrExist) {
			unlinkAt(dirf, tmp, false)
			if err != nil {
				return false, nil
			}
		} else if noLinks(err) {
			err = renameAt(dirf, tmp, dirf, name, false)
		}
	}
	if err != nil {
		unlinkAt(dirf, tmp, false)
		return false, err
	}
	if err := fsyncFile(dirf); err != nil && !errors.Is(err, syscall.EINVAL) {
		return true, err
	}
	return true, nil
}

// sameContent reports whether r's file holds exactly r's bytes.
func (v *Volume) sameContent(r *smallRec) (bool, error) {
	f, err := v.root.OpenFile(r.Rel, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return false, err
	}
	defer f.Close()
	b := make([]byte, len(r.Data)+1)
	n, err := io.ReadFull(f, b)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return false, err
	}
	return n == len(r.Data) && string(b[:n]) == string(r.Data), nil
}

package idx

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"hoard/store"
)

// Hasher computes a file's up2k identity: its wark and chunk hashes (an
// empty file gets the metadata wark of lmod, folder and name). main wires
// up2k's hashing in; idx does not import up2k.
type Hasher func(ctx context.Context, f io.ReaderAt, size, lmod int64, folder, name string) (wark string, chunks []string, err error)

// Prober reads an audio or video file's tags (ffprobe; see media.Probe).
type Prober func(ctx context.Context, f *os.File) (map[string]string, error)

// Config configures an Indexer.
type Config struct {
	Store  *store.Store
	DBs    map[*store.Volume]*DB // each indexed volume's database
	Hasher Hasher
	Prober Prober // nil: no tag indexing possible (no ffprobe)
	// ProbeObject reads the tags of an object of size bytes through r
	// (media.ProbeObject); nil: objects get no tags.
	ProbeObject func(ctx context.Context, r io.ReadSeeker, size int64) (map[string]string, error)
	// WarkOf is the up2k wark of a file of size bytes with these chunk
	// hashes (main wires up2k's): a chunk-hash list read from a bucket
	// is used only when it gives the wark the object names. nil: lists
	// are not trusted, objects are hashed.
	WarkOf func(size int64, chunks []string) string
	Rescan time.Duration // --re-maxage: rescan volumes this often; 0 never
	// Workers hash files during scans; 0 means every core.
	Workers int
	// SlowQuery is the rate limit's threshold (0.7 s when zero).
	SlowQuery time.Duration
	Logger    *slog.Logger
	// Progress is how often a running scan logs how far it is (5 s when
	// zero).
	Progress time.Duration
	// ScanDelay slows the scan by this much per file (tests only: main
	// sets it from HOARD_TEST_SCAN_DELAY).
	ScanDelay time.Duration
}

// Errors of Search and HashSearch.
var (
	ErrOff     = &store.Error{Kind: store.KindDisabled, Msg: "search is disabled: no volume you may read is indexed"}
	ErrNoTags  = &store.Error{Kind: store.KindDisabled, Msg: "tag search needs tag indexing and ffprobe (FFmpeg) on the server"}
	ErrBadHash = &store.Error{Kind: store.KindInvalid, Msg: "hash search: each hash must be 44 or more characters of URL-safe base64 (A-Z a-z 0-9 - _)"}
)

// BusyError is a search while a volume's first scan runs: how far the
// scan is, when one runs (else the journal is being replayed).
type BusyError struct {
	RetryAfter time.Duration
	Scanning   bool
	Files      int64 // files seen so far
	Bytes      int64 // their bytes
}

func (e *BusyError) Error() string {
	if e.Scanning {
		return scanMsg(e.Files, e.Bytes)
	}
	return "indexing in progress; the files are being scanned, please retry shortly"
}

// Class is store.KindUnavailable.
func (e *BusyError) Class() (store.Kind, string) { return store.KindUnavailable, e.Error() }

// Retry is when to come back.
func (e *BusyError) Retry() time.Duration { return e.RetryAfter }

// volIdx is one indexed volume.
type volIdx struct {
	v     *store.Volume
	db    *DB
	pre   string // lower-cased mount point with a trailing slash; "" at /
	scan  bool   // scan at start (-e2ds / -e2dsa)
	tags  bool   // index tags (-e2t…)
	retag bool   // -e2tsr: probe every file again in the first scan
	ready atomic.Bool
	// replaying counts the journal's notes still to be indexed at start
	// (journal.go); searches wait for them as for the first scan.
	replaying atomic.Int64
	prog      scanProgress // the running scan (progress.go)
	scanMu    sync.Mutex   // one scan at a time (a reload's first scan against the rescans)
}

// usable reports whether the volume answers searches.
func (vi *volIdx) usable() bool { return vi.ready.Load() && vi.replaying.Load() == 0 }

// Indexer keeps the file index of every indexed volume current and
// answers searches over them. It is safe for concurrent use.
type Indexer struct {
	cfg   Config
	log   *slog.Logger
	set   atomic.Pointer[volSet] // the indexed volumes; AddVolume replaces it whole
	Limit *Limiter

	mu       sync.Mutex
	cond     *sync.Cond
	queue    []queued
	applying []store.Event // the changes being applied (UploadOf looks at them)
	stop     bool

	ctx    context.Context // scans
	cancel context.CancelFunc
	evctx  context.Context // queued changes: cancelled only when draining takes too long
	evstop context.CancelFunc
	evwg   sync.WaitGroup
	wg     sync.WaitGroup
	seed   maphash.Seed

	jmu     sync.RWMutex // journal calls (journal.go) against Close
	jclosed bool

	started bool // Start found volumes to index (under mu)
}

// queued is a change waiting to be indexed; replay marks one read back
// from the journal at start.
type queued struct {
	e      store.Event
	replay bool
	vi     *volIdx // a replay's volume, whose database holds its note
	noteDB *DB
}

// drainMax bounds how long Close goes on indexing queued changes.
var drainMax = 30 * time.Second

// New prepares the indexer for every volume with a database and the e2d
// flag. Start begins indexing.
func New(cfg Config) *Indexer {
	x := &Indexer{cfg: cfg, log: cfg.Logger, seed: maphash.MakeSeed()}
	if x.log == nil {
		x.log = slog.Default()
	}
	x.log = x.log.With("pkg", "idx")
	if x.cfg.Workers <= 0 {
		x.cfg.Workers = runtime.GOMAXPROCS(0)
	}
	x.Limit = NewLimiter(cfg.SlowQuery)
	x.cond = sync.NewCond(&x.mu)
	x.ctx, x.cancel = context.WithCancel(context.Background())
	x.evctx, x.evstop = context.WithCancel(context.Background())
	set := &volSet{by: map[*store.Volume]*volIdx{}}
	for _, v := range cfg.Store.Mounted() {
		if vi := x.newVolIdx(v, cfg.DBs[v]); vi != nil {
			set = set.with(vi)
		}
	}
	x.set.Store(set)
	return x
}

// Enabled reports whether any volume is indexed.
func (x *Indexer) Enabled() bool { return len(x.list()) > 0 }

// Start subscribes to the store's changes and starts the scans.
func (x *Indexer) Start() {
	x.mu.Lock()
	if len(x.list()) == 0 || x.started {
		x.mu.Unlock()
		return
	}
	x.started = true
	x.mu.Unlock()
	x.replay(nil)
	x.cfg.Store.Subscribe(x.enqueue)
	x.cfg.Store.SetJournal(x)
	x.evwg.Add(1)
	go x.events()
	x.wg.Add(1)
	go x.scans()
}

// Close stops indexing and waits for it; call it before closing the
// databases, after the last change (the server is shut down). Scans stop
// at once; changes already queued are still indexed, for at most
// drainMax, so that a plain -e2d volume (no scan at start) does not lose
// the uploads of the last moment to a restart.
func (x *Indexer) Close() {
	x.jmu.Lock()
	x.jclosed = true // changes from here on are not noted
	x.jmu.Unlock()
	x.cancel()
	x.mu.Lock()
	x.stop = true
	left := len(x.queue)
	x.cond.Broadcast()
	x.mu.Unlock()
	x.wg.Wait()
	done := make(chan struct{})
	go func() { x.evwg.Wait(); close(done) }()
	t := time.NewTimer(drainMax)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		x.mu.Lock()
		left = len(x.queue)
		x.mu.Unlock()
		x.log.Warn("stopping with changes not indexed; a scan (-e2ds) finds them", "left", left)
		x.evstop()
		<-done
		return
	}
	x.evstop()
	if left > 0 {
		x.log.Info("indexed the queued changes before stopping", "changes", left)
	}
}

// Wait blocks until every volume's first scan is done (tests, benchmarks).
func (x *Indexer) Wait(ctx context.Context) error {
	for {
		done := true
		for _, vi := range x.list() {
			done = done && vi.usable()
		}
		if done {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// indexed reports whether the path is indexed at all: dotfiles are not
// (nor found by scans).
func indexed(rel string) bool {
	return !strings.HasPrefix(rel, ".") && !strings.Contains(rel, "/.")
}

func (x *Indexer) enqueue(e store.Event) {
	if e.Kind == store.Moved || e.Kind == store.Copied {
		x.enqueueManaged(e) // manage.go
		return
	}
	if x.vol(e.Vol) == nil || !indexed(e.Rel) {
		return
	}
	x.mu.Lock()
	x.queue = append(x.queue, queued{e: e, noteDB: x.noteDB(e)})
	x.cond.Signal()
	x.mu.Unlock()
}

// events applies store events in order, one batch per change (uploads
// queued together: one batch for them all, batchLen), until Close has
// been called and the queue is empty (or evctx is cancelled).
func (x *Indexer) events() {
	defer x.evwg.Done()
	for {
		x.mu.Lock()
		for len(x.queue) == 0 && !x.stop {
			x.cond.Wait()
		}
		if len(x.queue) == 0 || x.evctx.Err() != nil {
			x.mu.Unlock()
			return
		}
		n := x.batchLen()
		batch := slices.Clone(x.queue[:n])
		x.queue = x.queue[n:]
		x.applying = make([]store.Event, n)
		for i, q := range batch {
			x.applying[i] = q.e
		}
		x.mu.Unlock()
		if n > 1 {
			x.applyBatch(batch)
		} else {
			x.apply(batch[0])
		}
		x.mu.Lock()
		x.applying = nil
		x.mu.Unlock()
	}
}

// apply indexes one queued change.
func (x *Indexer) apply(q queued) {
	e := q.e
	vi := x.vol(e.Vol)
	var err error
	noteDropped := false
	switch {
	case q.replay:
		err = x.replayNote(e)
	case e.Kind == store.Moved || e.Kind == store.Copied:
		err = x.applyManaged(x.evctx, e) // manage.go
	case vi == nil: // re-pointed by a move to a volume without an index
	case e.Kind == store.Removed && e.Tree:
		err = x.removeTree(x.evctx, vi, e.Rel)
	case e.Kind == store.Removed:
		err = vi.db.DeleteRecord(e.Rel)
	case e.Kind == store.Created && !isDotPath(e.Rel):
		// The note is dropped in the record's own batch when both
		// live in one database.
		noteDropped, err = x.indexFileNote(x.evctx, vi, e.Rel, nil, &e, x.sameDBNote(q, vi))
	case e.Kind == store.Touched && !isDotPath(e.Rel):
		err = x.touch(vi, e.Rel)
	}
	x.applied(q, noteDropped, err)
}

// sameDBNote is q's journal note when it lives in vi's database (so the
// record's batch can drop it), else 0.
func (x *Indexer) sameDBNote(q queued, vi *volIdx) uint64 {
	ndb := q.noteDB
	if ndb == nil {
		ndb = x.noteDB(q.e)
	}
	if q.e.Note != 0 && ndb == vi.db {
		return q.e.Note
	}
	return 0
}

// applied finishes a change: its failure logged, its journal note dropped
// unless the record's batch did.
func (x *Indexer) applied(q queued, noteDropped bool, err error) {
	e := q.e
	if err != nil && x.evctx.Err() == nil {
		x.log.Warn("could not index a change", "change", e.Kind, "volume", "/"+e.Vol.VPath, "path", e.Rel, "err", err)
	}
	if e.Note != 0 && !noteDropped && x.evctx.Err() == nil {
		// After the record (in the write-ahead log's order): a crash
		// between the two replays the note once more.
		if db := q.noteDB; db != nil {
			db.dropNote(e.Note)
		} else if db := x.noteDB(e); db != nil {
			db.dropNote(e.Note)
		}
	}
	if q.replay {
		q.vi.replaying.Add(-1)
	}
}

// batchLen is how many queued changes from the front are indexed in one
// batch (x.mu held): uploads to one local volume, each path once, that
// carry their up2k identity or are small enough to hash at once (a PUT
// under ck=no or another checksum), with no tags to read. Anything else
// goes alone, so changes keep their order.
func (x *Indexer) batchLen() int {
	first := x.vol(x.queue[0].e.Vol)
	if first == nil || first.v.Remote() {
		return 1
	}
	var rels map[string]bool
	n := 0
	for n < len(x.queue) && n < maxBatch {
		q := &x.queue[n]
		e := &q.e
		if q.replay || e.Kind != store.Created || (e.Wark == "" && e.Size > batchHashMax) || isDotPath(e.Rel) || x.vol(e.Vol) != first ||
			(first.tags && mediaExts[ext(path.Base(e.Rel))]) || rels[e.Rel] {
			break
		}
		if rels == nil {
			rels = map[string]bool{}
		}
		rels[e.Rel] = true
		n++
	}
	return max(n, 1)
}

// batchHashMax is the largest upload without its up2k identity that is
// hashed in a batch: more would hold the batch's other uploads back.
const batchHashMax = 1 << 20

// applyBatch indexes uploads (batchLen's) with one PutRecords.
func (x *Indexer) applyBatch(batch []queued) {
	vi := x.vol(batch[0].e.Vol)
	recs := make([]*Record, 0, len(batch))
	notes := make([]uint64, 0, len(batch))
	in := make([]int, 0, len(batch)) // batch index of each record
	errs := make([]error, len(batch))
	var alone []int // deleted while hashed (a file changed since its upload): indexFileNote's retries
	for i := range batch {
		e := &batch[i].e
		rec, gone, err := x.localRecord(x.evctx, vi, e.Rel, nil, e)
		switch {
		case errors.Is(err, errGone):
			alone = append(alone, i)
		case gone:
			errs[i] = vi.db.DeleteRecord(e.Rel)
		case err != nil || rec == nil:
			errs[i] = err
		default:
			recs = append(recs, rec)
			notes = append(notes, x.sameDBNote(batch[i], vi))
			in = append(in, i)
		}
	}
	err := vi.db.PutRecords(recs, notes)
	dropped := make([]bool, len(batch))
	for k, i := range in {
		errs[i], dropped[i] = err, err == nil && notes[k] != 0
	}
	for _, i := range alone {
		q := batch[i]
		dropped[i], errs[i] = x.indexFileNote(x.evctx, vi, q.e.Rel, nil, &q.e, x.sameDBNote(q, vi))
	}
	for i, q := range batch {
		x.applied(q, dropped[i], errs[i])
	}
}

// reindex indexes a path named by a journal note as the path is now: the
// note's uploader, time and up2k identity are kept only when the file is
// still the one noted (same size and mtime); a file deleted since is
// forgotten.
func (x *Indexer) reindex(vi *volIdx, e *store.Event) error {
	fi, err := vi.v.Stat(e.Rel)
	if err != nil || !fi.Mode().IsRegular() {
		return x.indexFile(x.evctx, vi, e.Rel, nil, nil) // forgets it
	}
	old, _ := vi.db.Record(e.Rel)
	if e.Kind == store.Created && fi.Size() == e.Size && fi.ModTime().Equal(e.Mtime) {
		if old != nil && (old.Size != fi.Size() || old.Mtime != fi.ModTime().UnixNano()) {
			old = nil
		}
		if old != nil && old.Wark != "" && old.At == e.At.Unix() {
			return nil // indexed before the crash
		}
		return x.indexFile(x.evctx, vi, e.Rel, old, e)
	}
	return x.indexFile(x.evctx, vi, e.Rel, old, nil)
}

// touch takes in a new mtime of rel (store.Touched): its content is
// unchanged, so its record keeps its hashes, tags and upload facts and
// takes the file's size and mtime as they are now; a file the index does
// not know, whose size changed meanwhile, or that is empty (its wark is
// made of its mtime) is indexed afresh.
func (x *Indexer) touch(vi *volIdx, rel string) error {
	old, _ := vi.db.Record(rel)
	fi, err := vi.v.Stat(rel)
	if err != nil || !fi.Mode().IsRegular() || old == nil || old.Size != fi.Size() || old.Size == 0 {
		return x.indexFile(x.evctx, vi, rel, old, nil)
	}
	rec := *old
	rec.Mtime = fi.ModTime().UnixNano()
	return vi.db.PutRecord(&rec)
}

// compactAfter is how many files a scan must have indexed before the
// index is compacted at its end.
const compactAfter = 10000

// mediaExts are the extensions whose tags are probed.
var mediaExts = map[string]bool{"mp3": true, "flac": true, "ogg": true, "opus": true, "m4a": true, "aac": true, "wav": true, "wma": true, "mp4": true, "mkv": true, "webm": true, "avi": true, "mov": true, "m4v": true, "aiff": true, "aif": true, "ape": true, "wv": true, "mka": true, "alac": true, "mpc": true}

// indexFile (re)indexes rel: hashes it (unless old describes the same
// size and mtime), probes its tags, and writes its record. e carries the
// uploader of an upload.
func (x *Indexer) indexFile(ctx context.Context, vi *volIdx, rel string, old *Record, e *store.Event) error {
	_, err := x.indexFileNote(ctx, vi, rel, old, e, 0)
	return err
}

// indexFileNote is indexFile that, when note is not 0, drops that journal
// note of vi's database in the batch that writes the record; dropped
// reports whether it did.
func (x *Indexer) indexFileNote(ctx context.Context, vi *volIdx, rel string, old *Record, e *store.Event, note uint64) (dropped bool, err error) {
	if vi.v.Remote() {
		return x.indexObject(ctx, vi, rel, nil, old, e, note) // objscan.go
	}
	// A file deleted while it is hashed stops the hashing (goneReader):
	// what is at rel now is indexed instead, a file or nothing.
	for range 3 {
		dropped, err = x.indexLocal(ctx, vi, rel, old, e, note)
		if !errors.Is(err, errGone) {
			break
		}
	}
	return dropped, err
}

// errGone is a file that lost its last name while the indexer hashed it.
var errGone = errors.New("the file was deleted while being hashed")

// goneEvery is how many bytes the hasher reads between two looks at
// whether the file it reads still has a name.
const goneEvery = 32 << 20

// goneReader is a file being hashed that fails with errGone once it has
// been deleted: an upload removed just after it landed (a temporary
// file, a harness's round) is not read and hashed to its end for a
// record nobody can use, on cores the uploads arriving meanwhile need
// (issue 19: a 1 GiB PUT's second reading was up to a CPU-second).
type goneReader struct {
	f    *os.File
	read atomic.Int64
}

// RandomAccess tells the hasher that reads may jump at no cost (a local
// file: up2k.RandomAccess; idx does not import up2k).
func (g *goneReader) RandomAccess() {}

func (g *goneReader) ReadAt(p []byte, off int64) (int, error) {
	after := g.read.Add(int64(len(p)))
	if after/goneEvery != (after-int64(len(p)))/goneEvery {
		if fi, err := g.f.Stat(); err == nil && store.Links(fi) == 0 {
			return 0, errGone
		}
	}
	return g.f.ReadAt(p, off)
}

// indexLocal is indexFileNote for a file of a local volume.
func (x *Indexer) indexLocal(ctx context.Context, vi *volIdx, rel string, old *Record, e *store.Event, note uint64) (dropped bool, err error) {
	rec, gone, err := x.localRecord(ctx, vi, rel, old, e)
	if gone {
		return false, vi.db.DeleteRecord(rel)
	}
	if err != nil || rec == nil {
		return false, err
	}
	if note != 0 {
		err = vi.db.PutRecordDropNote(rec, note)
		return err == nil, err
	}
	return false, vi.db.PutRecord(rec)
}

// localRecord makes the record of the file rel as it is now; gone when
// there is none, rec nil when it is no regular file.
func (x *Indexer) localRecord(ctx context.Context, vi *volIdx, rel string, old *Record, e *store.Event) (rec *Record, gone bool, err error) {
	f, fi, err := vi.v.Open(rel)
	if errors.Is(err, store.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
		return nil, true, nil
	}
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	if !fi.Mode().IsRegular() {
		return nil, false, nil
	}
	rec = &Record{Rel: rel, Size: fi.Size(), Mtime: fi.ModTime().UnixNano()}
	if e != nil {
		rec.At, rec.Uploader, rec.IP = e.At.Unix(), e.Uploader, e.ClientIP
	} else if old != nil {
		rec.At, rec.Uploader, rec.IP = old.At, old.Uploader, old.IP
	}
	if old != nil && old.Size == rec.Size && old.Mtime == rec.Mtime && old.Wark != "" {
		rec.Wark, rec.Chunks, rec.Tags = old.Wark, old.Chunks, old.Tags
	} else if e != nil && e.Wark != "" && e.Size == rec.Size && e.Mtime.UnixNano() == rec.Mtime {
		// An up2k upload: its chunks were verified on the way in.
		rec.Wark, rec.Chunks = e.Wark, e.Chunks
	} else if x.cfg.Hasher != nil {
		dir := path.Dir(rel)
		if dir == "." {
			dir = ""
		}
		rec.Wark, rec.Chunks, err = x.cfg.Hasher(ctx, &goneReader{f: f}, rec.Size, fi.ModTime().Unix(), dir, path.Base(rel))
		if err != nil {
			return nil, false, fmt.Errorf("hashing: %w", err)
		}
	}
	if vi.tags && rec.Tags == nil && mediaExts[ext(path.Base(rel))] {
		pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		tags, err := x.cfg.Prober(pctx, f)
		cancel()
		if err != nil {
			x.log.Debug("no tags", "path", rel, "err", err)
		}
		rec.Tags = tags
	}
	return rec, false, nil
}

// scans runs the first scan of every scanning volume, then the periodic
// rescans.
func (x *Indexer) scans() {
	defer x.wg.Done()
	var later []*volIdx
	for _, vi := range x.list() {
		if vi.db.usable() == nil {
			vi.db.countFiles() // for the metrics
		}
	}
	for _, vi := range x.list() {
		if !vi.scan {
			continue
		}
		if vi.db.usable() != nil {
			later = append(later, vi) // its state folder is full: it opens later
			continue
		}
		x.scanVol(vi, true)
	}
	for _, vi := range later {
		select {
		case <-vi.db.Ready():
		case <-x.ctx.Done():
			return
		}
		vi.db.countFiles()
		x.scanVol(vi, true)
	}
	if x.cfg.Rescan <= 0 {
		return
	}
	t := time.NewTicker(x.cfg.Rescan)
	defer t.Stop()
	for {
		select {
		case <-x.ctx.Done():
			return
		case <-t.C:
		}
		for _, vi := range x.list() {
			x.scanVol(vi, false)
		}
	}
}

// scanVol walks the volume, indexes new and changed files on all cores and
// forgets files that are gone. It marks the volume ready when done.
func (x *Indexer) scanVol(vi *volIdx, first bool) {
	vi.scanMu.Lock()
	defer vi.scanMu.Unlock()
	if vi.v.Remote() {
		x.scanObjects(vi, first) // objscan.go
		return
	}
	ctx := x.ctx
	start := time.Now()
	log := x.log.With("volume", "/"+vi.v.VPath)
	if err := vi.db.Unavailable(); err != nil {
		log.Warn("not scanning the volume now", "err", err)
		return
	}
	var full atomic.Bool // the state folder filled up: stop
	log.Info("scanning the volume")
	vi.prog.begin(start)
	complete := false
	defer func() { vi.prog.end(complete) }()
	watching := make(chan struct{})
	defer close(watching)
	go x.watch(&vi.prog, log, watching)
	seen := map[uint64]struct{}{}
	jobs := make(chan string, 256)
	var wg sync.WaitGroup
	var hashed, failed atomic.Int64
	for range x.cfg.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for rel := range jobs {
				old, _ := vi.db.Record(rel)
				if first && vi.retag && old != nil {
					old.Tags = nil
					old.Wark = "" // re-hash too: -e2tsr is a full re-index
				}
				if err := x.indexFile(ctx, vi, rel, old, nil); err != nil {
					if errors.As(err, new(*store.StateFullError)) {
						full.Store(true)
					} else if ctx.Err() == nil {
						failed.Add(1)
						log.Warn("could not index a file", "path", rel, "err", err)
					}
					continue
				}
				hashed.Add(1)
			}
		}()
	}
	files := 0
	dirs := []string{"."}
	var walkErr error
	for len(dirs) > 0 && ctx.Err() == nil && !full.Load() {
		if vi.db.Unavailable() != nil {
			full.Store(true)
			break
		}
		dir := dirs[len(dirs)-1]
		dirs = dirs[:len(dirs)-1]
		ents, err := vi.v.List(ctx, dir, store.ListOptions{})
		if err != nil {
			if dir == "." {
				walkErr = err
			}
			log.Debug("cannot list a folder", "path", dir, "err", err)
			continue
		}
		for i := len(ents) - 1; i >= 0; i-- {
			en := ents[i]
			rel := en.Name
			if dir != "." {
				rel = dir + "/" + en.Name
			}
			if en.Dir {
				if !en.Link { // linked folders could loop
					dirs = append(dirs, rel)
				}
				continue
			}
			files++
			vi.prog.files.Add(1)
			vi.prog.bytes.Add(en.Size)
			if d := x.cfg.ScanDelay; d > 0 {
				select {
				case <-time.After(d):
				case <-ctx.Done():
				}
			}
			seen[maphash.String(x.seed, rel)] = struct{}{}
			old, err := vi.db.Record(rel)
			if err == nil && old != nil && old.Size == en.Size && old.Mtime == en.Mtime.UnixNano() && !(first && vi.retag) &&
				!(vi.tags && old.Tags == nil && mediaExts[ext(en.Name)] && first) {
				continue
			}
			select {
			case jobs <- rel:
			case <-ctx.Done():
			}
		}
	}
	close(jobs)
	wg.Wait()
	if ctx.Err() != nil {
		return
	}
	if full.Load() {
		log.Warn("the scan stopped: the state folder is full; the next scan goes on once space is freed", "files", files, "indexed", hashed.Load())
		vi.ready.Store(true)
		return
	}
	// Forget what is gone (a record written during the scan for a file
	// that exists is kept: the file is looked at before it is dropped).
	var gone []string
	if walkErr == nil {
		vi.db.Rels(func(rel string) error {
			if _, ok := seen[maphash.String(x.seed, rel)]; !ok {
				gone = append(gone, rel)
			}
			return nil
		})
	}
	for _, rel := range gone {
		if fi, err := vi.v.Stat(rel); err == nil && fi.Mode().IsRegular() {
			continue
		}
		if err := vi.db.DeleteRecord(rel); err != nil {
			log.Warn("could not forget a file", "path", rel, "err", err)
		}
	}
	vi.ready.Store(true)
	complete = walkErr == nil
	if n := hashed.Load(); n >= compactAfter {
		// A bulk load leaves many level-0 tables that every lookup
		// visits; compact the file index now rather than over the next
		// minutes of searches.
		if err := vi.db.compactFiles(ctx); err != nil && ctx.Err() == nil {
			log.Warn("compacting the index after the scan failed", "err", err)
		}
	}
	log.Info("scan done", "files", files, "indexed", hashed.Load(), "failed", failed.Load(), "forgotten", len(gone), "took", time.Since(start).Round(time.Millisecond))
}

// Hit is one search result.
type Hit struct {
	Vol *store.Volume
	*Record
}

// Result is a search's answer.
type Result struct {
	Hits  []Hit
	Trunc bool     // more hits existed than were asked for
	Plans []string // each searched volume's plan, "/vpath:name"
}

// usable returns the indexed volumes among vols, or ErrOff / *BusyError.
func (x *Indexer) usable(vols []*store.Volume) ([]*volIdx, error) {
	var out []*volIdx
	for _, v := range vols {
		if vi := x.vol(v); vi != nil {
			if !vi.usable() || vi.db.usable() != nil {
				return nil, vi.busy()
			}
			out = append(out, vi)
		}
	}
	if len(out) == 0 {
		return nil, ErrOff
	}
	slices.SortFunc(out, func(a, b *volIdx) int { return strings.Compare(a.v.VPath, b.v.VPath) })
	return out, nil
}

// Search runs the query q over the given volumes (those the user may
// read) and returns at most n hits, sorted by path.
func (x *Indexer) Search(ctx context.Context, vols []*store.Volume, q string, n int) (*Result, error) {
	query, err := Parse(q)
	if err != nil {
		return nil, err
	}
	return x.SearchQuery(ctx, vols, query, n)
}

// SearchQuery is Search with a parsed query.
func (x *Indexer) SearchQuery(ctx context.Context, vols []*store.Volume, query *Query, n int) (*Result, error) {
	vis, err := x.usable(vols)
	if err != nil {
		return nil, err
	}
	for _, t := range query.Terms {
		if t.isTag() {
			tagged := false
			for _, vi := range vis {
				tagged = tagged || vi.tags
			}
			if !tagged {
				return nil, ErrNoTags
			}
		}
	}
	res := &Result{Hits: []Hit{}}
	for _, vi := range vis {
		if len(res.Hits) > n {
			break
		}
		snap := vi.db.db.NewSnapshot()
		shadows := x.shadows(vi.v)
		p, err := makePlan(snap, vi.db.db, vi.pre, query.Terms)
		if err == nil {
			res.Plans = append(res.Plans, "/"+vi.v.VPath+":"+p.Name())
			err = p.run(ctx, snap, vi.pre, query.Terms, func(c *cand) bool {
				if store.UnderAny(c.rec.Rel, shadows) {
					return true // another volume's by URL
				}
				res.Hits = append(res.Hits, Hit{Vol: vi.v, Record: c.rec})
				return len(res.Hits) <= n
			})
		}
		snap.Close()
		if err != nil {
			return nil, err
		}
	}
	return finish(res, n), nil
}

func finish(res *Result, n int) *Result {
	if len(res.Hits) > n {
		res.Hits, res.Trunc = res.Hits[:n], true
	}
	slices.SortFunc(res.Hits, func(a, b Hit) int {
		if c := strings.Compare(a.Vol.VPath, b.Vol.VPath); c != 0 {
			return c
		}
		return strings.Compare(a.Rel, b.Rel)
	})
	return res
}

// HashSearch returns files having any of the given chunk hashes (or whose
// wark is one of them), at most n.
func (x *Indexer) HashSearch(ctx context.Context, vols []*store.Volume, hashes []string, n int) (*Result, error) {
	keys := make([]string, 0, len(hashes))
	for _, h := range hashes {
		h = strings.TrimRight(h, "=")
		if len(h) < warkLen || len(h) > 86 || strings.Trim(h, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") != "" {
			return nil, ErrBadHash
		}
		keys = append(keys, h[:warkLen])
	}
	vis, err := x.usable(vols)
	if err != nil {
		return nil, err
	}
	res := &Result{Hits: []Hit{}}
	for _, vi := range vis {
		snap := vi.db.db.NewSnapshot()
		shadows := x.shadows(vi.v)
		seen := map[uint64]bool{}
		err := func() error {
			for _, k := range keys {
				for _, fam := range []byte{famHash, famWark} {
					opts := prefixOpts(contentPrefix(fam, k))
					it, err := snap.NewIter(&opts)
					if err != nil {
						return err
					}
					for ok := it.First(); ok && len(res.Hits) <= n; ok = it.Next() {
						id := idOf(it.Key())
						if seen[id] {
							continue
						}
						seen[id] = true
						rec, err := recordByID(snap, id)
						if err != nil {
							it.Close()
							return err
						}
						if rec != nil && !store.UnderAny(rec.Rel, shadows) {
							res.Hits = append(res.Hits, Hit{Vol: vi.v, Record: rec})
						}
					}
					if err := it.Close(); err != nil {
						return err
					}
					if err := ctx.Err(); err != nil {
						return err
					}
				}
			}
			return nil
		}()
		snap.Close()
		if err != nil {
			return nil, err
		}
	}
	return finish(res, n), nil
}

// shadows are the folders of v where other volumes are mounted
// (store.Store.Shadows): v's files there are indexed with v, since they
// are on its disk, but by URL they are not v's, so no search names them
// (a client who may read v may not read what is mounted there, and one
// who may would find them twice).
func (x *Indexer) shadows(v *store.Volume) []string {
	if x.cfg.Store == nil {
		return nil
	}
	return x.cfg.Store.Shadows(v)
}

// Indexed reports whether the files of v are indexed.
func (x *Indexer) Indexed(v *store.Volume) bool { return x != nil && x.vol(v) != nil }

// Uploads calls fn with the records of files uploaded into v (upload time
// and client address known), newest first, until fn returns false.
func (x *Indexer) Uploads(v *store.Volume, fn func(*Record) bool) error {
	vi := x.vol(v)
	if vi == nil {
		return nil
	}
	return vi.db.Uploads(fn)
}

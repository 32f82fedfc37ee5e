package idx

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/vfs"

	"hoard/store"
)

// ErrLocked is a database that another process has open.
var ErrLocked = errors.New("idx: the database is in use by another process (is another hoard serving this volume?)")

// Cache is a block cache shared by every database of the process.
type Cache struct {
	c    *pebble.Cache
	size int64
}

// NewCache makes a block cache of the given size (--db-cache).
func NewCache(bytes int64) *Cache { return &Cache{c: pebble.NewCache(bytes), size: bytes} }

// memTableSize is the memtable size of a database using a block cache of
// cache bytes: a sixteenth of it, 256 KiB to 32 MiB. Pebble reserves each
// memtable's full size in the block cache, and after a bulk load the
// memtables have grown to their limit: with 32 MiB memtables (one live,
// one flushing) the default 64 MiB cache had no room left for blocks, and
// every search read its blocks from disk, several times slower, until a
// restart. A memtable is also memory the process touches in full (a small
// upload's bytes pass through it in the group-commit journal): with the
// default cache, an eighth (8 MiB, two of them under a stream of small
// PUTs) was 8 MiB of hoard's 71 MiB peak RSS (issue 19); a sixteenth costs
// no measurable put-small throughput.
func memTableSize(cache int64) uint64 {
	return uint64(min(max(cache/16, 256<<10), 32<<20))
}

// Release drops the caller's reference; databases opened with the cache
// keep theirs until they close.
func (c *Cache) Release() { c.c.Unref() }

// Options configure Open.
type Options struct {
	Cache  *Cache       // nil: a private 8 MiB cache
	Logger *slog.Logger // nil: slog.Default()
	fs     vfs.FS       // tests: an in-memory file system
}

// DB is one volume's database. It is safe for concurrent use.
//
// When the state folder's file system is too full to open the database
// (Pebble would retry its start-up flush forever), Open returns a DB that
// is not open yet: its methods return a *store.StateFullError, and it
// opens in the background once there is room again (Ready is closed
// then). An open DB refuses writes that add data while the file system
// has less room than it keeps free (store.StateRoom), so that Pebble,
// which takes a failed write-ahead log write for fatal, does not meet a
// full disk.
type DB struct {
	db  *pebble.DB // set once, before ready is closed
	log *slog.Logger
	dir string
	mem int64 // its memtables' size

	ready  chan struct{} // closed once db is open
	quit   chan struct{} // closed by Close
	omu    sync.Mutex    // orders a late open against Close
	closed bool
	full   store.RateLog // the "state folder is full" warning

	wmu       sync.Mutex    // serializes file-index writes (read old record, replace)
	nextID    atomic.Uint64 // last file id handed out
	nextNote  atomic.Uint64 // last journal note id handed out (journal.go)
	nextSmall atomic.Uint64 // last small-upload entry id handed out (small.go)

	// files is how many file records the index holds, for the metrics:
	// counted once at start (countFiles), then kept by every write.
	files   atomic.Int64
	counted atomic.Bool
}

// debugOpen, set by a profiling build, hears of every database opened.
var debugOpen func(*DB)

// retryOpen is how often a DB that could not be opened for lack of room
// looks at its file system again.
var retryOpen = time.Second

// Open opens (creating when needed) the database in dir with production
// settings: the shared block cache, bloom filters on every level, the
// newest on-disk format, memtables sized to the cache (memTableSize) and
// compactions sized for bulk ingest. When dir's file system is too full
// to open it, the DB returned opens later (see DB).
func Open(dir string, opt Options) (*DB, error) {
	log := opt.Logger
	if log == nil {
		log = slog.Default()
	}
	log = log.With("pkg", "idx", "db", dir)
	d := &DB{log: log, dir: dir, ready: make(chan struct{}), quit: make(chan struct{}), full: store.RateLog{Every: time.Minute}}
	o := &pebble.Options{
		FormatMajorVersion: pebble.FormatNewest,
		MemTableSize:       memTableSize(8 << 20),
		Merger:             merger, // block postings (postings.go)
		Logger:             &logger{l: log, bg: store.RateLog{Every: 10 * time.Second}},
		CompactionConcurrencyRange: func() (int, int) {
			return 1, max(1, runtime.GOMAXPROCS(0)/2)
		},
		// Level 0 gathers eight sublevels (Pebble's default: two) before
		// they are compacted into the base level. Under small uploads the
		// memtables (a few MiB) flush several times a second, and their
		// keys (records, postings, sessions) are spread over the whole key
		// space, so every compaction of level 0 rewrites the whole base
		// level: with the default, 30,000 up2k files of 1-64 KiB wrote the
		// 13 MB base level 1.2 GB over (Pebble's compactions 40 % of the
		// server's CPU); with this, 0.37 GB (17 %, +20 % files/s). Point
		// reads go through the tables' bloom filters; scans merge a few
		// more small tables while a burst lasts.
		L0CompactionThreshold: 16,
		L0StopWritesThreshold: 40,
	}
	// No compactions for tombstone density: under small uploads the tables
	// flushed to level 0 are mostly the tombstones of group-commit entries
	// and sessions, and each such compaction rewrote the base level once
	// more (34 of 53 compactions in 30,000 up2k files); level 0's own
	// compactions drop them soon enough (-35 % bytes compacted, up2k-many
	// +7 % in an A/B run).
	o.Experimental.TombstoneDenseCompactionThreshold = -1
	if opt.Cache != nil {
		o.Cache = opt.Cache.c
		o.MemTableSize = memTableSize(opt.Cache.size)
	}
	for i := range o.Levels {
		o.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
	}
	d.mem = int64(o.MemTableSize)
	if opt.fs != nil {
		o.FS = opt.fs
		if err := d.open(o); err != nil {
			return nil, err
		}
		return d, nil
	}
	// Should the disk fill up under a flush or compaction anyway, Pebble
	// retries it at once, forever: pace it.
	o.FS = vfs.OnDiskFull(vfs.Default, func() { time.Sleep(time.Second) })
	err := os.MkdirAll(dir, 0o700)
	if err == nil {
		if d.roomToOpen() {
			if err = d.open(o); err == nil || !noSpace(err) {
				return d, err
			}
		} else {
			err = store.CheckStateRoom(dir, 0)
		}
	}
	if err != nil && !noSpace(err) && !errors.As(err, new(*store.StateFullError)) {
		return nil, fmt.Errorf("idx: %w", err)
	}
	if opt.Cache != nil {
		opt.Cache.c.Ref() // for the late open; the caller may release its own
	}
	go d.openLater(o, opt.Cache)
	return d, nil
}

// open opens the database with o and makes the DB ready.
func (d *DB) open(o *pebble.Options) error {
	db, err := pebble.Open(d.dir, o)
	if errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EWOULDBLOCK) {
		return fmt.Errorf("%w: %s (%v)", ErrLocked, d.dir, err)
	}
	if err != nil {
		return fmt.Errorf("idx: opening %s: %w", d.dir, err)
	}
	d.db = db
	if debugOpen != nil {
		debugOpen(d)
	}
	if err := d.checkSchema(); err != nil {
		db.Close()
		return err
	}
	if err := d.initFiles(); err != nil {
		db.Close()
		return err
	}
	if err := d.initNotes(); err != nil {
		db.Close()
		return err
	}
	if err := d.initSmall(); err != nil {
		db.Close()
		return err
	}
	d.omu.Lock()
	defer d.omu.Unlock()
	if d.closed {
		db.Close()
		return errors.New("idx: closed")
	}
	close(d.ready)
	return nil
}

// roomToOpen reports whether the file system has room to open the
// database: what it keeps free, plus the write-ahead logs that the open
// flushes, plus a little for the files an open writes.
func (d *DB) roomToOpen() bool {
	free, keep, err := store.StateRoom(d.dir)
	if err != nil {
		return true // let the open say what is wrong
	}
	need := keep + 64<<10
	if des, err := os.ReadDir(d.dir); err == nil {
		for _, de := range des {
			if fi, err := de.Info(); err == nil && strings.HasSuffix(de.Name(), ".log") {
				need += uint64(fi.Size())
			}
		}
	}
	return free >= need
}

// openLater opens the database once its file system has room.
func (d *DB) openLater(o *pebble.Options, c *Cache) {
	if c != nil {
		defer c.c.Unref()
	}
	t := time.NewTicker(retryOpen)
	defer t.Stop()
	for {
		if d.roomToOpen() {
			err := d.open(o)
			if err == nil {
				d.log.Info("the state folder has room again; the index is open")
				return
			}
			if !noSpace(err) {
				d.log.Error("cannot open the index; uploads into its volumes are refused until hoard is restarted", "err", err)
				return
			}
		}
		free, keep, _ := store.StateRoom(d.dir)
		d.full.Log(d.log, slog.LevelWarn, "the state folder is full; hoard serves downloads, but the index stays closed and uploads are refused until space is freed there",
			"free", store.HumanSize(int64(free)), "keep", store.HumanSize(int64(keep)))
		select {
		case <-d.quit:
			return
		case <-t.C:
		}
	}
}

func noSpace(err error) bool { return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) }

// Ready is closed once the database is open.
func (d *DB) Ready() <-chan struct{} { return d.ready }

// usable returns nil when the database is open, else why not (a
// *store.StateFullError).
func (d *DB) usable() error {
	select {
	case <-d.ready:
		return nil
	default:
	}
	free, keep, err := store.StateRoom(d.dir)
	return &store.StateFullError{Free: free, Keep: keep, Opening: err == nil && free >= keep}
}

// Unavailable returns nil when the database can take writes that add
// data, else a *store.StateFullError saying why not.
func (d *DB) Unavailable() error {
	if err := d.usable(); err != nil {
		return err
	}
	err := store.CheckStateRoom(d.dir, 0)
	if err != nil {
		d.full.Log(d.log, slog.LevelWarn, "the state folder is full; uploads are refused until space is freed there", "err", err)
	}
	return err
}

// writable returns nil when the database can take a small write: it is
// open and its file system has a quarter of what it keeps free. (New
// uploads stop at Unavailable's limit; the rest of that room is for the
// receipts, records and deletions of the work in progress.)
func (d *DB) writable() error {
	if err := d.usable(); err != nil {
		return err
	}
	free, keep, err := store.StateRoom(d.dir)
	if err != nil || free >= keep/4 {
		return nil
	}
	d.full.Log(d.log, slog.LevelWarn, "the state folder is full; index writes are refused until space is freed there", "free", store.HumanSize(int64(free)))
	return &store.StateFullError{Free: free, Keep: keep}
}

func (d *DB) checkSchema() error {
	v, closer, err := d.db.Get(schemaKey)
	if errors.Is(err, pebble.ErrNotFound) {
		return d.db.Set(schemaKey, []byte(schemaVersion), pebble.Sync)
	}
	if err != nil {
		return fmt.Errorf("idx: reading the schema version: %w", err)
	}
	got := string(v)
	closer.Close()
	if got != schemaVersion {
		return fmt.Errorf("idx: database schema version %q; this hoard writes %q", got, schemaVersion)
	}
	return nil
}

// Close closes the database (or stops waiting to open it).
func (d *DB) Close() error {
	d.omu.Lock()
	defer d.omu.Unlock()
	if d.closed {
		return nil
	}
	d.closed = true
	close(d.quit)
	select {
	case <-d.ready:
		return d.db.Close()
	default:
		return nil
	}
}

// logger adapts slog to Pebble's Logger. Pebble's info lines (flushes,
// compactions) go to debug; its background errors, which it repeats as
// it retries, are logged at most once per interval.
type logger struct {
	l  *slog.Logger
	bg store.RateLog
}

func (g *logger) Infof(format string, args ...any) { g.l.Debug(fmt.Sprintf(format, args...)) }
func (g *logger) Errorf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if strings.HasPrefix(msg, "background error") {
		g.bg.Log(g.l, slog.LevelError, msg)
		return
	}
	g.l.Error(msg)
}
func (g *logger) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	g.l.Error("pebble fatal error", "msg", msg)
	panic("idx: pebble: " + msg)
}

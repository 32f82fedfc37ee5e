package idx

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/vfs"
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
// cache bytes: an eighth of it, 256 KiB to 32 MiB. Pebble reserves each
// memtable's full size in the block cache, and after a bulk load the
// memtables have grown to their limit: with 32 MiB memtables (one live,
// one flushing) the default 64 MiB cache had no room left for blocks, and
// every search read its blocks from disk, several times slower, until a
// restart. An eighth leaves at least three quarters of the cache to blocks.
func memTableSize(cache int64) uint64 {
	return uint64(min(max(cache/8, 256<<10), 32<<20))
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
type DB struct {
	db  *pebble.DB
	log *slog.Logger

	wmu      sync.Mutex    // serializes file-index writes (read old record, replace)
	nextID   atomic.Uint64 // last file id handed out
	nextNote atomic.Uint64 // last journal note id handed out (journal.go)
}

// Open opens (creating when needed) the database in dir with production
// settings: the shared block cache, bloom filters on every level, the
// newest on-disk format, memtables sized to the cache (memTableSize) and
// compactions sized for bulk ingest.
func Open(dir string, opt Options) (*DB, error) {
	log := opt.Logger
	if log == nil {
		log = slog.Default()
	}
	log = log.With("pkg", "idx", "db", dir)
	o := &pebble.Options{
		FormatMajorVersion: pebble.FormatNewest,
		MemTableSize:       memTableSize(8 << 20),
		Merger:             merger, // block postings (postings.go)
		Logger:             logger{log},
		CompactionConcurrencyRange: func() (int, int) {
			return 1, max(1, runtime.GOMAXPROCS(0)/2)
		},
	}
	if opt.Cache != nil {
		o.Cache = opt.Cache.c
		o.MemTableSize = memTableSize(opt.Cache.size)
	}
	for i := range o.Levels {
		o.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
	}
	if opt.fs != nil {
		o.FS = opt.fs
	} else if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("idx: %w", err)
	}
	db, err := pebble.Open(dir, o)
	if errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EWOULDBLOCK) {
		return nil, fmt.Errorf("%w: %s (%v)", ErrLocked, dir, err)
	}
	if err != nil {
		return nil, fmt.Errorf("idx: opening %s: %w", dir, err)
	}
	d := &DB{db: db, log: log}
	if err := d.checkSchema(); err != nil {
		db.Close()
		return nil, err
	}
	if err := d.initFiles(); err != nil {
		db.Close()
		return nil, err
	}
	if err := d.initNotes(); err != nil {
		db.Close()
		return nil, err
	}
	return d, nil
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

// Close flushes and closes the database.
func (d *DB) Close() error { return d.db.Close() }

// logger adapts slog to Pebble's Logger. Pebble's info lines (flushes,
// compactions) go to debug.
type logger struct{ l *slog.Logger }

func (g logger) Infof(format string, args ...any)  { g.l.Debug(fmt.Sprintf(format, args...)) }
func (g logger) Errorf(format string, args ...any) { g.l.Error(fmt.Sprintf(format, args...)) }
func (g logger) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	g.l.Error("pebble fatal error", "msg", msg)
	panic("idx: pebble: " + msg)
}

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	srvhttp "hoard/http"
	"hoard/idx"
	"hoard/internal/metrics"
	"hoard/media"
	"hoard/store"
	"hoard/up2k"
)

// closers is a stack of Close functions: each service, once open, pushes
// its own, and close runs them in reverse order, so that a service closes
// before those it uses. It runs on every path out of run, whether a later
// service failed to open or the server stopped.
type closers struct {
	log *slog.Logger
	fns []closer
}

type closer struct {
	what string
	fn   func() error
}

// push adds the Close of what (named in the log when it fails).
func (c *closers) push(what string, fn func() error) {
	c.fns = append(c.fns, closer{what, fn})
}

// close closes everything pushed, last first, and returns their errors
// joined (each is logged too).
func (c *closers) close() error {
	var errs []error
	for i := len(c.fns) - 1; i >= 0; i-- {
		f := c.fns[i]
		if err := f.fn(); err != nil {
			c.log.Error("closing failed", "what", f.what, "err", err)
			errs = append(errs, fmt.Errorf("closing %s: %w", f.what, err))
		}
	}
	c.fns = nil
	return errors.Join(errs...)
}

// services are what the server serves with.
type services struct {
	store *store.Store
	dbs   map[*store.Volume]*idx.DB // each volume's database; volumes sharing a state folder share it
	index *idx.Indexer
	small *idx.SmallLog // group commit's journal (store.SmallLog)
	up2k  *up2k.Manager
	media *media.Service
	extra srvhttp.ExtraConfig
	stats *metrics.Metrics // nil without --stats
	log   *slog.Logger

	// The databases by folder, with their block cache: a reload opens
	// those of the volumes it adds (reload.go) here, and closes them with
	// the ones opened at start, in the closers' order.
	dbMu    sync.Mutex
	byDir   map[string]*idx.DB
	cache   *idx.Cache
	reDBs   []*idx.DB // opened by reloads
	dbsDone bool      // closed: reloads open no more
}

// openServices opens the services in the order they depend on each other,
// pushing each one's Close on cl. On an error, what is open stays on cl
// for the caller to close.
func openServices(o *options, cfg store.Config, cl *closers, log *slog.Logger) (*services, error) {
	s := &services{log: log, byDir: map[string]*idx.DB{}}
	var err error
	if o.stats {
		s.stats = metrics.New() // first: it times the fsyncs of what follows
		cl.push("the metrics", s.stats.Close)
	}
	if s.store, err = store.Open(cfg); err != nil {
		return nil, err
	}
	cl.push("the store", s.store.Close)
	s.cache = idx.NewCache(int64(o.dbCache) << 20)
	cl.push("the index cache", func() error { s.cache.Release(); return nil }) // after every database
	cl.push("the indexes of volumes added by reloads", s.closeReloadDBs)
	if s.dbs, err = s.openDBs(cl); err != nil {
		return nil, err
	}
	// Small uploads are group-committed into the databases (store/
	// gcommit.go): what a crash lost of them is written again before
	// anything reads the volumes, the index's replay included. The last
	// checkpoint runs before the databases close.
	s.small = idx.NewSmallLog(s.dbs, nil)
	s.store.SetSmallLog(s.small)
	s.store.ReplaySmall(context.Background(), nil)
	cl.push("the group commit", s.store.StopSmall)
	// The index starts first: its journal replays what a crash left, and
	// it hears of uploads that up2k finds published at start. It closes
	// before the databases.
	s.index = startIndex(s.store, s.dbs, o, log)
	s.small.SetIndexer(s.index) // index notes ride in the same batches
	cl.push("the indexer", func() error { s.index.Close(); return nil })
	sessions := map[*store.Volume]up2k.SessionStore{}
	for v, db := range s.dbs {
		sessions[v] = db
	}
	s.up2k, err = up2k.New(up2k.Config{Store: s.store, DBs: sessions, Salt: o.warksalt, Drop: snapDropTime(o.snapDrop), SingleHash: o.singleHash, MaxUnfinished: o.regCap, MaxUnfinishedIP: o.regCapIP, Logger: log})
	if err != nil {
		return nil, err
	}
	cl.push("up2k", s.up2k.Close)
	if err := s.up2k.Load(context.Background()); err != nil {
		return nil, err
	}
	s.store.SweepLeftovers(s.up2k.Owns) // what a crash left, once up2k knows its sessions
	if s.index.Enabled() {
		s.store.SetUploadLookup(s.index) // who uploaded what, for unpost
	}
	s.media = media.New(media.Config{
		Workers: o.thMT, Timeout: time.Duration(o.thConvt) * time.Second, QueueWait: time.Duration(o.thQueue) * time.Second,
		CacheMax: int64(o.thCacheMax) << 20, MaxPixels: int64(o.thMaxMpx) * 1000 * 1000, FFmpeg: o.ffmpeg, FFprobe: o.ffprobe, Logger: log,
	})
	cl.push("media", s.media.Close)
	if s.extra, err = o.extraConfig(s.store, log); err != nil {
		return nil, err
	}
	return s, nil
}

// openDBs opens the database of every volume's state folder (volumes that
// share a folder share the database), with one block cache for all, and
// pushes each database's Close on cl.
func (s *services) openDBs(cl *closers) (map[*store.Volume]*idx.DB, error) {
	out := map[*store.Volume]*idx.DB{}
	for _, v := range s.store.Volumes() {
		db, fresh, err := s.openDB(v)
		if err != nil {
			return nil, err
		}
		if fresh {
			cl.push("the index of "+filepath.Join(v.HistPath(), "idx"), db.Close)
		}
		if db != nil {
			out[v] = db
		}
	}
	return out, nil
}

// openDB opens the database of v's state folder, or finds it open
// (fresh is false then); nil without an error when v has none (no state
// folder, or one another hoard uses for a read-only volume).
func (s *services) openDB(v *store.Volume) (db *idx.DB, fresh bool, err error) {
	if v.HistPath() == "" {
		return nil, false, nil // up2k keeps this volume's sessions in memory, and says so
	}
	dir := filepath.Join(v.HistPath(), "idx")
	s.dbMu.Lock()
	db = s.byDir[dir]
	s.dbMu.Unlock()
	if db != nil {
		return db, false, nil
	}
	db, err = idx.Open(dir, idx.Options{Cache: s.cache, Logger: s.log})
	if errors.Is(err, idx.ErrLocked) && !v.Writable() {
		// Another hoard serves this folder too (its state folder
		// lock lets servers that only read share it): serve it
		// without the index.
		s.log.Warn("the volume's index is in use by another process; this read-only volume is served without it", "volume", "/"+v.VPath, "err", err)
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	s.dbMu.Lock()
	s.byDir[dir] = db
	s.dbMu.Unlock()
	return db, true, nil
}

// startIndex starts the file index of the volumes with e2d, hashing with
// up2k's chunk hashes and reading tags with ffprobe (when installed).
func startIndex(st *store.Store, dbs map[*store.Volume]*idx.DB, o *options, log *slog.Logger) *idx.Indexer {
	cfg := idx.Config{
		Store:     st,
		DBs:       map[*store.Volume]*idx.DB{},
		Rescan:    time.Duration(o.reMaxAge) * time.Second,
		SlowQuery: max(time.Nanosecond, time.Duration(o.srchSlowMS)*time.Millisecond),
		Logger:    log,
		ScanDelay: testScanDelay(log),
		Hasher: func(ctx context.Context, f io.ReaderAt, size, lmod int64, folder, name string) (string, []string, error) {
			return up2k.HashFile(ctx, f, size, o.warksalt, lmod, folder, name)
		},
		WarkOf: func(size int64, chunks []string) string { return up2k.Wark(o.warksalt, size, chunks) },
	}
	if cfg.ScanDelay > 0 {
		cfg.Progress = time.Second // a slowed scan is watched by a test
	}
	tags := false
	for _, v := range st.Volumes() {
		if db := dbs[v]; db != nil && v.Flags().E2D {
			cfg.DBs[v] = db
		} else if v.Flags().E2D {
			log.Warn("the volume has no writable state folder; it is not indexed", "volume", "/"+v.VPath)
		}
		tags = tags || v.Flags().E2T
	}
	if media.HaveFFprobe() { // for a volume a reload adds too
		cfg.Prober = func(ctx context.Context, f *os.File) (map[string]string, error) { return media.ProbeFile(ctx, f) }
		cfg.ProbeObject = func(ctx context.Context, r io.ReadSeeker, size int64) (map[string]string, error) {
			return media.ProbeObject(ctx, r, size)
		}
	} else if tags {
		log.Warn("tag indexing (-e2t/-e2ts) needs ffprobe, which is not installed: tags are not indexed and tag searches answer with an error")
	}
	ix := idx.New(cfg)
	ix.Start()
	return ix
}

// closeListeners closes the listeners that the server has not closed.
func closeListeners(ls []net.Listener) func() error {
	return func() error {
		var errs []error
		for _, l := range ls {
			if err := l.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
				errs = append(errs, err)
			}
		}
		return errors.Join(errs...)
	}
}

// testScanDelay is HOARD_TEST_SCAN_DELAY (a duration): tests slow the
// scan with it to watch its progress. Nothing else should set it.
func testScanDelay(log *slog.Logger) time.Duration {
	v := os.Getenv("HOARD_TEST_SCAN_DELAY")
	if v == "" {
		return 0
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		log.Warn("HOARD_TEST_SCAN_DELAY is not a duration; ignored", "value", v)
		return 0
	}
	log.Warn("HOARD_TEST_SCAN_DELAY slows every scan (tests only)", "per_file", d)
	return d
}

// closeReloadDBs closes the databases reloads opened (after the indexer
// and up2k, which use them: it is pushed before them).
func (s *services) closeReloadDBs() error {
	s.dbMu.Lock()
	dbs := s.reDBs
	s.reDBs, s.dbsDone = nil, true
	s.dbMu.Unlock()
	var errs []error
	for _, db := range slices.Backward(dbs) {
		if err := db.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// reload takes up a configuration read again (SIGHUP): the store mounts
// the volumes new to this process (store.PrepareReload); each one's
// database is opened (when it has a state folder) and its unfinished
// uploads read; then, with nothing left that can fail, up2k takes up
// their sessions, the indexer their index (replay, first scan), and the
// store serves the new configuration in one swap, after which what a
// crash left in them is swept. On an error nothing changes: what was
// opened for the new volumes is closed and the error names the volume.
func (s *services) reload(ctx context.Context, cfg store.Config) (store.ReloadResult, error) {
	p, err := s.store.PrepareReload(cfg)
	if err != nil {
		return store.ReloadResult{}, err
	}
	added := p.Added()
	var fresh []*idx.DB
	fail := func(err error) (store.ReloadResult, error) {
		for _, v := range added {
			s.small.Remove(v)
		}
		s.dbMu.Lock()
		for dir, db := range s.byDir {
			if slices.Contains(fresh, db) {
				delete(s.byDir, dir)
			}
		}
		s.dbMu.Unlock()
		for _, db := range fresh {
			db.Close()
		}
		p.Abort()
		return store.ReloadResult{}, err
	}
	s.dbMu.Lock()
	done := s.dbsDone
	s.dbMu.Unlock()
	if done && len(added) > 0 {
		return fail(errors.New("the server is stopping"))
	}
	dbs := map[*store.Volume]*idx.DB{}
	for _, v := range added {
		db, isNew, err := s.openDB(v)
		if err != nil {
			return fail(fmt.Errorf("volume /%s (%s): %w", v.VPath, v.Src, err))
		}
		if isNew {
			fresh = append(fresh, db)
		}
		if db != nil {
			dbs[v] = db
		}
	}
	// What a crash lost of their group-committed uploads is written again
	// before up2k or the index looks at them (store/gcommit.go).
	for v, db := range dbs {
		s.small.Add(v, db)
	}
	s.store.ReplaySmall(ctx, added)
	var commits []func()
	var later []*store.Volume // volumes sharing a database read for another
	read := map[*idx.DB]bool{}
	for _, v := range added {
		db := dbs[v]
		var ss up2k.SessionStore
		if db != nil {
			if read[db] {
				later = append(later, v)
				continue
			}
			read[db] = true
			ss = db
		}
		c, err := s.up2k.PrepareVolume(ctx, v, ss)
		if err != nil {
			return fail(fmt.Errorf("volume /%s (%s): %w", v.VPath, v.Src, err))
		}
		commits = append(commits, c)
	}
	// Nothing fails from here on.
	s.dbMu.Lock()
	s.reDBs = append(s.reDBs, fresh...)
	s.dbMu.Unlock()
	for _, c := range commits {
		c()
	}
	for _, v := range later {
		if c, err := s.up2k.PrepareVolume(ctx, v, dbs[v]); err == nil { // its store is known now: nothing to read
			c()
		} else {
			s.log.Error("reload: the volume's uploads could not be taken up", "volume", "/"+v.VPath, "err", err)
		}
	}
	wasIndexing := s.index.Enabled()
	for _, v := range added {
		if !v.Flags().E2D {
			continue
		}
		if db := dbs[v]; db == nil || !s.index.AddVolume(v, db) {
			s.log.Warn("the volume has no writable state folder; it is not indexed", "volume", "/"+v.VPath)
		} else if v.Flags().E2T && !media.HaveFFprobe() {
			s.log.Warn("tag indexing (-e2t/-e2ts) needs ffprobe, which is not installed: tags are not indexed", "volume", "/"+v.VPath)
		}
	}
	if !wasIndexing && s.index.Enabled() {
		s.store.SetUploadLookup(s.index) // who uploaded what, for unpost
	}
	res := p.Commit()
	if len(added) > 0 {
		s.store.SweepLeftoversOf(added, s.up2k.Owns)
	}
	return res, nil
}

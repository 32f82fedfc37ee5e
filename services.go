package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
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
	up2k  *up2k.Manager
	media *media.Service
	extra srvhttp.ExtraConfig
	stats *metrics.Metrics // nil without --stats
}

// openServices opens the services in the order they depend on each other,
// pushing each one's Close on cl. On an error, what is open stays on cl
// for the caller to close.
func openServices(o *options, cfg store.Config, cl *closers, log *slog.Logger) (*services, error) {
	s := &services{}
	var err error
	if o.stats {
		s.stats = metrics.New() // first: it times the fsyncs of what follows
		cl.push("the metrics", s.stats.Close)
	}
	if s.store, err = store.Open(cfg); err != nil {
		return nil, err
	}
	cl.push("the store", s.store.Close)
	if s.dbs, err = openDBs(s.store, int64(o.dbCache)<<20, cl, log); err != nil {
		return nil, err
	}
	// The index starts first: its journal replays what a crash left, and
	// it hears of uploads that up2k finds published at start. It closes
	// before the databases.
	s.index = startIndex(s.store, s.dbs, o, log)
	cl.push("the indexer", func() error { s.index.Close(); return nil })
	sessions := map[*store.Volume]up2k.SessionStore{}
	for v, db := range s.dbs {
		sessions[v] = db
	}
	s.up2k, err = up2k.New(up2k.Config{Store: s.store, DBs: sessions, Salt: o.warksalt, Drop: time.Duration(o.snapDrop) * time.Minute, SingleHash: o.singleHash, MaxUnfinished: o.regCap, MaxUnfinishedIP: o.regCapIP, Logger: log})
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
func openDBs(st *store.Store, cache int64, cl *closers, log *slog.Logger) (map[*store.Volume]*idx.DB, error) {
	c := idx.NewCache(cache)
	defer c.Release()
	byDir := map[string]*idx.DB{}
	out := map[*store.Volume]*idx.DB{}
	for _, v := range st.Volumes() {
		if v.HistPath() == "" {
			continue // up2k keeps this volume's sessions in memory, and says so
		}
		dir := filepath.Join(v.HistPath(), "idx")
		db := byDir[dir]
		if db == nil {
			var err error
			db, err = idx.Open(dir, idx.Options{Cache: c, Logger: log})
			if errors.Is(err, idx.ErrLocked) && !v.Writable() {
				// Another hoard serves this folder too (its state folder
				// lock lets servers that only read share it): serve it
				// without the index.
				log.Warn("the volume's index is in use by another process; this read-only volume is served without it", "volume", "/"+v.VPath, "err", err)
				continue
			}
			if err != nil {
				return nil, err
			}
			cl.push("the index of "+dir, db.Close)
			byDir[dir] = db
		}
		out[v] = db
	}
	return out, nil
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
		Hasher: func(ctx context.Context, f *os.File, size, lmod int64, folder, name string) (string, []string, error) {
			return up2k.HashFile(ctx, f, size, o.warksalt, lmod, folder, name)
		},
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
	if tags {
		if media.HaveFFprobe() {
			cfg.Prober = func(ctx context.Context, f *os.File) (map[string]string, error) { return media.ProbeFile(ctx, f) }
		} else {
			log.Warn("tag indexing (-e2t/-e2ts) needs ffprobe, which is not installed: tags are not indexed and tag searches answer with an error")
		}
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

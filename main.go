// Command hoard is an HTTP file server that speaks copyparty's interface:
// PUT and multipart uploads, range downloads by sendfile, listings.
//
// With no flags it serves the current folder at / on port 3923, readable
// and writable by everyone. See README.md for the flags.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	srvhttp "hoard/http"
	"hoard/idx"
	"hoard/media"
	"hoard/store"
	"hoard/up2k"
)

type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, " ") }
func (l *listFlag) Set(s string) error { *l = append(*l, s); return nil }

// options are the parsed command line.
type options struct {
	ports, addrs            string
	accounts, volumes       listFlag
	e2d, e2ds, e2dsa        bool
	e2t, e2ts, e2tsr        bool
	e2s, e2a                bool
	dedup, singleHash       bool
	srchHits, srchMax       int
	hist, warksalt, df      string
	snapDrop, dbCache, thMT int
	reMaxAge                int
	srchSlowMS              int
	maxRanges               int
	archMT                  int
	logLevel                string
	tailTmax, tailCmax      int
	upsRing                 int
	unpost                  int
	shr                     string
	thConvt, thQueue        int
	thCacheMax, thMaxMpx    int
	ffmpeg, ffprobe         string
	prod                    prodOptions // cli.go, tls.go, config.go
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("hoard", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	fs.StringVar(&o.ports, "p", "3923", "TCP port(s) to listen on, comma-separated; 0 picks a free one")
	fs.StringVar(&o.addrs, "i", "::", "address(es) to listen on, comma-separated; :: is every interface")
	fs.Var(&o.accounts, "a", "account USER:PASS (repeatable)")
	fs.Var(&o.volumes, "v", "volume SRC:DST:PERMS[:PERMS...][:c,FLAG[=VAL]...] (repeatable); PERMS = letters of rwmdgGha.A, optionally followed by ,user,user")
	fs.BoolVar(&o.e2d, "e2d", false, "index files (search, dedup, lifetimes)")
	fs.BoolVar(&o.e2ds, "e2ds", false, "-e2d, and scan writable volumes at start")
	fs.BoolVar(&o.e2dsa, "e2dsa", false, "-e2ds, and scan every volume at start")
	fs.BoolVar(&o.e2t, "e2t", false, "index audio/video tags")
	fs.BoolVar(&o.e2ts, "e2ts", false, "-e2t, and scan tags at start")
	fs.BoolVar(&o.e2tsr, "e2tsr", false, "-e2ts, rescanning every file's tags")
	fs.BoolVar(&o.e2s, "e2s", false, "enable search (implies -e2d)")
	fs.BoolVar(&o.e2a, "e2a", false, "every indexing feature (-e2dsa -e2ts)")
	fs.BoolVar(&o.dedup, "dedup", false, "link duplicate uploads to the existing file instead of copying it")
	fs.IntVar(&o.srchHits, "srch-hits", 200, "default number of search hits")
	fs.IntVar(&o.srchMax, "srch-max", 10000, "largest number of search hits a client may ask for")
	fs.StringVar(&o.hist, "hist", "", "keep every volume's state (.hist) below this folder instead")
	fs.StringVar(&o.warksalt, "warksalt", "hunter2", "salt of up2k file identifiers (warks)")
	fs.BoolVar(&o.singleHash, "single-hash", false, "hash every up2k chunk with crypto/sha512 on its own goroutine, never in the AVX-512 SHA-512 lanes")
	fs.StringVar(&o.df, "df", "", "keep this much disk free on every volume (plain number: GiB)")
	fs.IntVar(&o.snapDrop, "snap-drop", 1440, "minutes before an idle unfinished up2k upload is discarded")
	fs.IntVar(&o.dbCache, "db-cache", 64, "index block cache, MiB")
	fs.IntVar(&o.thMT, "th-mt", runtime.NumCPU(), "thumbnail and transcode workers")
	fs.IntVar(&o.thConvt, "th-convt", 60, "seconds a thumbnail or transcode may take before ffmpeg is killed")
	fs.IntVar(&o.thQueue, "th-queue", 30, "seconds a thumbnail or transcode may wait for a worker before the request gets 503")
	fs.IntVar(&o.thCacheMax, "th-cache-max", 1024, "MiB of thumbnails and transcodes kept per state folder (.hist/th) before the least recently used go")
	fs.IntVar(&o.thMaxMpx, "th-max-mpx", 64, "largest image (megapixels) decoded for a thumbnail")
	fs.StringVar(&o.ffmpeg, "ffmpeg", "ffmpeg", "FFmpeg program for video, audio and WebP thumbnails, waveforms and transcodes")
	fs.StringVar(&o.ffprobe, "ffprobe", "ffprobe", "ffprobe program (media durations and tags)")
	fs.IntVar(&o.reMaxAge, "re-maxage", 0, "rescan volumes every this many seconds (0: never)")
	fs.IntVar(&o.srchSlowMS, "srch-slow-ms", 700, "a search slower than this many milliseconds earns its client the 0.7 s rate-limit penalty (0: every search; for tests)")
	fs.IntVar(&o.maxRanges, "max-ranges", 16, "most byte ranges served in one request")
	fs.IntVar(&o.archMT, "arch-mt", runtime.NumCPU(), "archives compressing at once with xz, bz2 or gz level 6+ (more get 503)")
	fs.StringVar(&o.logLevel, "log-level", "info", "debug, info, warn or error")
	fs.IntVar(&o.tailTmax, "tail-tmax", 0, "end a ?tail stream after this many seconds (0: never)")
	fs.IntVar(&o.tailCmax, "tail-cmax", 16, "most ?tail streams at once (503 beyond)")
	fs.IntVar(&o.upsRing, "ups-ring", 4096, "recent uploads kept in memory for ?ups and ?ru")
	fs.IntVar(&o.unpost, "unpost", 43200, "seconds after an upload that its uploader may still delete it without the d permission (needs -e2d; 0: off)")
	fs.StringVar(&o.shr, "shr", "/shr/", "URL folder where share links are served (empty: sharing off)")
	o.prod.register(fs)
	if code, exit := parseArgs(fs, &o.prod, args, stdout, stderr); exit {
		return code
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(o.logLevel)); err != nil {
		fmt.Fprintf(stderr, "hoard: %s\n", o.prod.locate(fmt.Sprintf("--log-level %q: want debug, info, warn or error", o.logLevel)))
		return 2
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	slog.SetDefault(log)

	cfg, err := o.storeConfig(log)
	if err != nil {
		fmt.Fprintf(stderr, "hoard: %s\n", o.prod.locate(strings.TrimPrefix(err.Error(), "store: ")))
		return 2
	}
	tl, err := newTLSSetup(&o.prod, log)
	if err != nil {
		fmt.Fprintf(stderr, "hoard: %v\n", err)
		return 2
	}
	listeners, err := listen(o.addrs, o.ports)
	if err != nil {
		fmt.Fprintf(stderr, "hoard: %v\n", err)
		return 2
	}
	st, err := store.Open(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "hoard: %v\n", err)
		return 1
	}
	defer st.Close()
	dbs, err := openDBs(st, int64(o.dbCache)<<20, log)
	if err != nil {
		fmt.Fprintf(stderr, "hoard: %v\n", err)
		return 1
	}
	defer closeDBs(dbs, log)
	// The index starts first: its journal replays what a crash left, and
	// it hears of uploads that up2k finds published at start.
	ix := startIndex(st, dbs, o, log)
	defer ix.Close() // before the databases close
	up, err := up2k.New(up2k.Config{Store: st, DBs: dbs, Salt: o.warksalt, Drop: time.Duration(o.snapDrop) * time.Minute, SingleHash: o.singleHash, Logger: log})
	if err != nil {
		fmt.Fprintf(stderr, "hoard: %v\n", err)
		return 1
	}
	defer up.Close()
	if err := up.Load(context.Background()); err != nil {
		fmt.Fprintf(stderr, "hoard: %v\n", err)
		return 1
	}
	st.SweepLeftovers(up.Owns) // what a crash left, once up2k knows its sessions
	if ix.Enabled() {
		st.SetUploadLookup(ix) // who uploaded what, for unpost
	}

	med := media.New(media.Config{
		Workers: o.thMT, Timeout: time.Duration(o.thConvt) * time.Second, QueueWait: time.Duration(o.thQueue) * time.Second,
		CacheMax: int64(o.thCacheMax) << 20, MaxPixels: int64(o.thMaxMpx) * 1000 * 1000, FFmpeg: o.ffmpeg, FFprobe: o.ffprobe, Logger: log,
	})
	defer med.Close()

	extra, err := o.extraConfig(st, log)
	if err != nil {
		fmt.Fprintf(stderr, "hoard: %v\n", err)
		return 1
	}
	handler := srvhttp.New(srvhttp.Config{Store: st, Logger: log, MaxRanges: o.maxRanges, Up2k: up, ArchMT: o.archMT, Index: ix, SrchHits: o.srchHits, SrchMax: o.srchMax, Media: med, ArchTransform: med.Transform, Extra: extra})
	srv := &http.Server{
		Handler:           withTLSState(handler),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		// Every request reaches the handler (OPTIONS * too), which
		// checks each one's framing against what the connection carried.
		ConnContext:                  tlsConnContext, // and framing's
		DisableGeneralOptionsHandler: true,
	}
	srv.RegisterOnShutdown(handler.StopStreams)
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	var wg sync.WaitGroup
	serveErr := make(chan error, len(listeners))
	for _, ln := range listeners {
		for _, scheme := range tl.schemes() {
			fmt.Fprintf(stdout, "listening on %s://%s\n", scheme, ln.Addr()) // tests read the first
		}
		for _, l := range tl.wrap(ln) { // framing over TLS over TCP (tls.go)
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
					serveErr <- err
				}
			}()
		}
	}
	code := 0
	select {
	case sig := <-sigs:
		log.Info("shutting down", "signal", sig.String())
	case err := <-serveErr:
		log.Error("server failed", "err", err)
		code = 1
	}
	go func() {
		<-sigs
		log.Warn("second signal; exiting at once")
		os.Exit(1)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		log.Warn("shutdown did not finish in time; closing connections", "err", err)
		srv.Close()
	}
	wg.Wait()
	// Deferred, in this order: up2k stops, the databases close, the store
	// closes.
	return code
}

// startIndex starts the file index of the volumes with e2d, hashing with
// up2k's chunk hashes and reading tags with ffprobe (when installed).
func startIndex(st *store.Store, dbs map[*store.Volume]up2k.SessionStore, o options, log *slog.Logger) *idx.Indexer {
	cfg := idx.Config{
		Store:     st,
		DBs:       map[*store.Volume]*idx.DB{},
		Rescan:    time.Duration(o.reMaxAge) * time.Second,
		SlowQuery: max(time.Nanosecond, time.Duration(o.srchSlowMS)*time.Millisecond),
		Logger:    log,
		Hasher: func(ctx context.Context, f *os.File, size, lmod int64, folder, name string) (string, []string, error) {
			return up2k.HashFile(ctx, f, size, o.warksalt, lmod, folder, name)
		},
	}
	tags := false
	for _, v := range st.Volumes() {
		if db, ok := dbs[v].(*idx.DB); ok && v.Flags.E2D {
			cfg.DBs[v] = db
		} else if v.Flags.E2D {
			log.Warn("the volume has no writable state folder; it is not indexed", "volume", "/"+v.VPath)
		}
		tags = tags || v.Flags.E2T
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

// openDBs opens the database of every volume's state folder (volumes that
// share a folder share the database), with one block cache for all.
func openDBs(st *store.Store, cache int64, log *slog.Logger) (map[*store.Volume]up2k.SessionStore, error) {
	c := idx.NewCache(cache)
	defer c.Release()
	byDir := map[string]*idx.DB{}
	out := map[*store.Volume]up2k.SessionStore{}
	for _, v := range st.Volumes() {
		if v.HistPath() == "" {
			continue // up2k keeps this volume's sessions in memory, and says so
		}
		dir := filepath.Join(v.HistPath(), "idx")
		db := byDir[dir]
		if db == nil {
			var err error
			db, err = idx.Open(dir, idx.Options{Cache: c, Logger: log})
			if errors.Is(err, idx.ErrLocked) {
				// Another hoard serves this folder too. Serve anyway; this
				// volume's up2k sessions then live in memory only.
				log.Warn("the volume's index is in use by another process; unfinished uploads here will not survive a restart", "volume", "/"+v.VPath, "err", err)
				continue
			}
			if err != nil {
				closeDBs(out, log)
				return nil, err
			}
			byDir[dir] = db
		}
		out[v] = db
	}
	return out, nil
}

func closeDBs(dbs map[*store.Volume]up2k.SessionStore, log *slog.Logger) {
	done := map[up2k.SessionStore]bool{}
	for _, db := range dbs {
		if done[db] {
			continue
		}
		done[db] = true
		if err := db.(*idx.DB).Close(); err != nil {
			log.Error("closing the index failed", "err", err)
		}
	}
}

// storeConfig turns the flags into store's configuration.
func (o *options) storeConfig(log *slog.Logger) (store.Config, error) {
	cfg := store.Config{Hist: o.hist, Logger: log, Unpost: time.Duration(o.unpost) * time.Second}
	for _, a := range o.accounts {
		acc, err := store.ParseAccount(a)
		if err != nil {
			return cfg, fmt.Errorf("-a: %w", err)
		}
		cfg.Accounts = append(cfg.Accounts, acc)
	}
	for _, v := range o.volumes {
		spec, err := store.ParseVolume(v)
		if err != nil {
			return cfg, fmt.Errorf("-v: %w", err)
		}
		cfg.Volumes = append(cfg.Volumes, spec)
	}
	if len(cfg.Volumes) == 0 {
		log.Warn("no -v given: serving the current folder at / with read and write access for everyone")
		cfg.Volumes = []store.VolumeSpec{{Src: ".", Perms: map[string]store.Perm{"*": store.PermRead | store.PermWrite}}}
	}
	ph, err := o.prod.pwHash()
	if err != nil {
		return cfg, err
	}
	cfg.PwHash = ph
	g := &cfg.Global
	g.Dedup = o.dedup
	g.E2D = o.e2d || o.e2ds || o.e2dsa || o.e2t || o.e2ts || o.e2tsr || o.e2s || o.e2a
	g.E2DS = o.e2ds || o.e2dsa || o.e2a
	g.E2DSA = o.e2dsa || o.e2a
	g.E2T = o.e2t || o.e2ts || o.e2tsr || o.e2a
	g.E2TS = o.e2ts || o.e2tsr || o.e2a
	g.E2TSR = o.e2tsr
	if o.df != "" {
		n, err := store.ParseSize(o.df, 1<<30)
		if err != nil {
			return cfg, fmt.Errorf("--df: %w", err)
		}
		g.DF = n
	}
	switch {
	case o.srchHits < 1:
		return cfg, fmt.Errorf("--srch-hits %d: want at least 1", o.srchHits)
	case o.srchMax < o.srchHits:
		return cfg, fmt.Errorf("--srch-max %d: want at least --srch-hits (%d)", o.srchMax, o.srchHits)
	case o.snapDrop < 1:
		return cfg, fmt.Errorf("--snap-drop %d: want at least 1 minute", o.snapDrop)
	case o.dbCache < 1:
		return cfg, fmt.Errorf("--db-cache %d: want at least 1 MiB", o.dbCache)
	case o.thMT < 1:
		return cfg, fmt.Errorf("--th-mt %d: want at least 1 worker", o.thMT)
	case o.thConvt < 1, o.thQueue < 1, o.thCacheMax < 1, o.thMaxMpx < 1:
		return cfg, fmt.Errorf("--th-convt, --th-queue, --th-cache-max and --th-max-mpx want at least 1 (got %d, %d, %d, %d)", o.thConvt, o.thQueue, o.thCacheMax, o.thMaxMpx)
	case o.reMaxAge < 0:
		return cfg, fmt.Errorf("--re-maxage %d: want 0 or more seconds", o.reMaxAge)
	case o.srchSlowMS < 0:
		return cfg, fmt.Errorf("--srch-slow-ms %d: want 0 or more", o.srchSlowMS)
	case o.maxRanges < 1:
		return cfg, fmt.Errorf("--max-ranges %d: want at least 1", o.maxRanges)
	case o.tailTmax < 0:
		return cfg, fmt.Errorf("--tail-tmax %d: want 0 or more seconds", o.tailTmax)
	case o.tailCmax < 1:
		return cfg, fmt.Errorf("--tail-cmax %d: want at least 1", o.tailCmax)
	case o.unpost < 0:
		return cfg, fmt.Errorf("--unpost %d: want 0 (off) or more seconds", o.unpost)
	case o.upsRing < 1:
		return cfg, fmt.Errorf("--ups-ring %d: want at least 1", o.upsRing)
	case strings.ContainsAny(strings.Trim(o.shr, "/"), "/\\?#%"):
		return cfg, fmt.Errorf("--shr %q: want one folder name, like /shr/", o.shr)
	case o.warksalt == "":
		return cfg, errors.New("--warksalt: must not be empty")
	}
	return cfg, cfg.Validate()
}

// extraConfig is the configuration of ?tail, ?ups/?ru and shares. Shares
// are kept in shares.json in --hist, or else in the state folder of the
// volume mounted nearest the root.
func (o *options) extraConfig(st *store.Store, log *slog.Logger) (srvhttp.ExtraConfig, error) {
	e := srvhttp.ExtraConfig{TailMax: o.tailCmax, TailTime: time.Duration(o.tailTmax) * time.Second, RecentMax: o.upsRing, ShrPrefix: o.shr}
	name := strings.Trim(o.shr, "/")
	if name == "" {
		return e, nil
	}
	for _, v := range st.Volumes() {
		if v.VPath == name || strings.HasPrefix(v.VPath, name+"/") {
			log.Warn("shares are served at this path, so the volume there is out of reach; choose another --shr", "shr", "/"+name+"/", "volume", "/"+v.VPath)
		}
	}
	dir := o.hist
	if dir == "" {
		vols := st.Volumes()
		for i := len(vols) - 1; i >= 0 && dir == ""; i-- {
			dir = vols[i].HistPath()
		}
	}
	if dir == "" {
		log.Warn("no state folder to keep shares in; sharing is off")
		return e, nil
	}
	sh, err := store.OpenShares(filepath.Join(dir, "shares.json"), nil)
	if err != nil {
		return e, err
	}
	st.Subscribe(sh.Follow) // shares of deleted or moved folders stop resolving
	e.Shares = sh
	return e, nil
}

// listen opens one listener per address and port.
func listen(addrs, ports string) ([]net.Listener, error) {
	var out []net.Listener
	for _, p := range strings.Split(ports, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || n < 0 || n > 65535 {
			closeAll(out)
			return nil, fmt.Errorf("-p %q: bad port %q", ports, p)
		}
		for _, a := range strings.Split(addrs, ",") {
			a = strings.Trim(strings.TrimSpace(a), "[]")
			if a == "::" || a == "0.0.0.0" {
				a = ""
			}
			ln, err := net.Listen("tcp", net.JoinHostPort(a, strconv.Itoa(n)))
			if err != nil {
				closeAll(out)
				return nil, fmt.Errorf("listen on %s port %d: %w", a, n, err)
			}
			out = append(out, ln)
		}
	}
	return out, nil
}

func closeAll(ls []net.Listener) {
	for _, l := range ls {
		l.Close()
	}
}

// Command hoard is an HTTP file server that speaks copyparty's interface:
// PUT and multipart uploads, range downloads by sendfile, listings.
//
// With no flags it serves the current folder at / on port 3923, readable
// and writable by everyone. docs/flags.md lists the flags.
//
// The program runs in four steps: the flags are registered (flags.go) and
// parsed with the config files (cli.go, config.go); their values are
// validated (validate, here); the services are opened, each pushing its
// Close on one stack (services.go); the server serves until a signal
// (serve.go). Then the stack closes everything in reverse order.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	srvhttp "hoard/http"
	"hoard/idx"
	"hoard/internal/logbuf"
	"hoard/s3"
	"hoard/store"
	"hoard/up2k"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is the whole program; its result is the exit status: 2 for flags or
// a configuration hoard refuses (another process writing the same state
// folder included), 1 for a failure to start, to serve or to close
// cleanly.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "up" {
		return runUp(args[1:], stdout, stderr) // the bulk uploader (up.go)
	}
	fs, o := newFlags()
	if code, exit := parseArgs(fs, &o.prod, args, stdout, stderr); exit {
		return code
	}
	if err := o.validate(); err != nil {
		fmt.Fprintf(stderr, "hoard: %s\n", o.prod.locate(err.Error()))
		return 2
	}
	// Every log line goes through one batching writer (internal/logbuf):
	// access lines in batches, the rest at once, none waiting for stderr.
	var logp atomic.Pointer[slog.Logger]
	lw := logbuf.New(stderr, logbuf.Options{Dropped: func(n uint64) {
		logp.Load().Warn("log lines dropped: standard error did not keep up", "dropped", n)
	}})
	log := newLogger(o.logLevel, o.logFormat, lw.Urgent())
	logp.Store(newLogger(o.logLevel, o.logFormat, lw.Report()))
	slog.SetDefault(log)
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		lw.Close(ctx) // the last lines out, unless nobody reads them
	}()
	stderr = flushFirst{stderr, lw} // a direct line comes after the log's
	stdout = flushFirst{stdout, lw} // the listening line after start-up warnings
	// A SIGHUP while starting (systemctl reload too early) must not end
	// the process; serve takes them up as reloads.
	signal.Ignore(syscall.SIGHUP)

	cfg, err := o.storeConfig(log)
	if err != nil {
		fmt.Fprintf(stderr, "hoard: %s\n", o.prod.locate(err.Error()))
		return 2
	}
	tl, err := newTLSSetup(&o.prod, log)
	if err != nil {
		fmt.Fprintf(stderr, "hoard: %v\n", err)
		return 2
	}
	cl := &closers{log: log}
	listeners, err := listen(o.addrs, o.ports)
	if err != nil {
		fmt.Fprintf(stderr, "hoard: %v\n", err)
		return 2
	}
	cl.push("the listeners", closeListeners(listeners))
	svc, err := openServices(o, cfg, cl, log)
	code := 0
	if err != nil {
		fmt.Fprintf(stderr, "hoard: %s\n", err)
		code = 1
		if _, ok := errors.AsType[*store.LockedError](err); ok || errors.Is(err, idx.ErrLocked) {
			code = 2 // another hoard writes here: a configuration to change, not a failure
		}
	} else {
		access := &srvhttp.AccessLog{W: lw, JSON: o.logFormat == "json"}
		code = serve(newServer(svc, o, log, access), listeners, tl, stdout, log, func() {
			lw.Kick() // lines so far out before the reload's
			reload(args, fs, svc, log)
		})
	}
	if err := cl.close(); err != nil && code == 0 {
		code = 1
	}
	return code
}

// reload is SIGHUP: the command line and its config files are read
// again, and the accounts, volumes and shares they give replace those
// served (store.Reload says what needs a restart instead). Any error is
// logged, with its file and line, and the configuration served stays.
func reload(args []string, running *flagSet, svc *services, log *slog.Logger) {
	log.Info("SIGHUP: reloading the configuration")
	var errb strings.Builder
	fs, o := newFlags()
	if code, exit := parseArgs(fs, &o.prod, args, io.Discard, &errb); exit {
		log.Error("reload refused; the configuration served is unchanged", "code", code, "err", strings.TrimSpace(strings.TrimPrefix(errb.String(), "hoard: ")))
		return
	}
	fail := func(err error) {
		log.Error("reload refused; the configuration served is unchanged", "err", o.prod.locate(err.Error()))
	}
	if err := o.validate(); err != nil {
		fail(err)
		return
	}
	cfg, err := o.storeConfig(log)
	if err != nil {
		fail(err)
		return
	}
	if _, err := svc.reload(context.Background(), cfg); err != nil {
		fail(err)
		return
	}
	for _, name := range restartOptions(running, fs) {
		log.Warn("reload: needs a restart: --" + name + "; the value it started with stays") // values unsaid: some are secrets
	}
	if sh := svc.extra.Shares; sh != nil {
		if n, err := sh.Reload(); err != nil {
			log.Error("reload: the shares file could not be read again; the shares in memory stay", "err", err)
		} else {
			log.Info("shares reloaded", "shares", n)
		}
	}
}

// flushFirst is a writer whose writes come after the log lines taken
// so far (they wait for stderr: used at start-up and exit only).
type flushFirst struct {
	w  io.Writer
	lw *logbuf.Writer
}

func (f flushFirst) Write(p []byte) (int, error) {
	f.lw.Flush()
	return f.w.Write(p)
}

// reloadedOptions are the flags a reload takes up: the accounts and
// volumes, the config files naming them, and the global options that are
// volume flags too (store.Reload says which of those need a restart) or
// that shape the accounts.
var reloadedOptions = map[string]bool{
	"c": true, "a": true, "v": true, "ah-alg": true, "ah-salt": true,
	"e2d": true, "e2ds": true, "e2dsa": true, "e2t": true, "e2ts": true, "e2tsr": true, "e2s": true, "e2a": true,
	"dedup": true, "df": true,
}

// restartOptions names the flags whose value differs between the
// running configuration and the one read again, but which only a
// restart takes up (ports, TLS, logging, limits…).
func restartOptions(running, now *flagSet) []string {
	var out []string
	running.VisitAll(func(f *flag.Flag) {
		if reloadedOptions[f.Name] {
			return
		}
		if g := now.Lookup(f.Name); g != nil && g.Value.String() != f.Value.String() {
			out = append(out, f.Name)
		}
	})
	return out
}

// newLogger is the logger of level (validated) writing to w.
func newLogger(level, format string, w io.Writer) *slog.Logger {
	var l slog.Level
	l.UnmarshalText([]byte(level))
	if format == "json" {
		return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: l}))
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l}))
}

// validate checks the flags' values, each error naming its flag.
func (o *options) validate() error {
	var level slog.Level
	if err := level.UnmarshalText([]byte(o.logLevel)); err != nil {
		return fmt.Errorf("--log-level %q: want debug, info, warn or error", o.logLevel)
	}
	if o.logFormat != "text" && o.logFormat != "json" {
		return fmt.Errorf("--log-format %q: want text or json", o.logFormat)
	}
	if _, err := o.proxyConfig(); err != nil {
		return err
	}
	if _, err := parsePorts(o.ports); err != nil {
		return err
	}
	if o.df != "" {
		if _, err := store.ParseSize(o.df, 1<<30); err != nil {
			return fmt.Errorf("--df: %w", err)
		}
	}
	switch {
	case o.srchHits < 1:
		return fmt.Errorf("--srch-hits %d: want at least 1", o.srchHits)
	case o.srchMax < o.srchHits:
		return fmt.Errorf("--srch-max %d: want at least --srch-hits (%d)", o.srchMax, o.srchHits)
	case o.regCap < 1:
		return fmt.Errorf("--reg-cap %d: want at least 1", o.regCap)
	case o.regCapIP < 1:
		return fmt.Errorf("--reg-cap-ip %d: want at least 1", o.regCapIP)
	case !(o.snapDrop >= minSnapDrop && o.snapDrop <= maxSnapDrop): // NaN too
		return fmt.Errorf("--snap-drop %v: want %v to %v minutes", o.snapDrop, minSnapDrop, maxSnapDrop)
	case o.dbCache < 1:
		return fmt.Errorf("--db-cache %d: want at least 1 MiB", o.dbCache)
	case o.thMT < 1:
		return fmt.Errorf("--th-mt %d: want at least 1 worker", o.thMT)
	case o.thConvt < 1:
		return fmt.Errorf("--th-convt %d: want at least 1 second", o.thConvt)
	case o.thQueue < 1:
		return fmt.Errorf("--th-queue %d: want at least 1 second", o.thQueue)
	case o.thCacheMax < 1:
		return fmt.Errorf("--th-cache-max %d: want at least 1 MiB", o.thCacheMax)
	case o.thMaxMpx < 1:
		return fmt.Errorf("--th-max-mpx %d: want at least 1 megapixel", o.thMaxMpx)
	case o.reMaxAge < 0:
		return fmt.Errorf("--re-maxage %d: want 0 or more seconds", o.reMaxAge)
	case o.srchSlowMS < 0:
		return fmt.Errorf("--srch-slow-ms %d: want 0 or more", o.srchSlowMS)
	case o.maxRanges < 1:
		return fmt.Errorf("--max-ranges %d: want at least 1", o.maxRanges)
	case o.archMT < 1:
		return fmt.Errorf("--arch-mt %d: want at least 1", o.archMT)
	case o.tailTmax < 0:
		return fmt.Errorf("--tail-tmax %d: want 0 or more seconds", o.tailTmax)
	case o.tailCmax < 1:
		return fmt.Errorf("--tail-cmax %d: want at least 1", o.tailCmax)
	case o.unpost < 0:
		return fmt.Errorf("--unpost %d: want 0 (off) or more seconds", o.unpost)
	case o.upsRing < 1:
		return fmt.Errorf("--ups-ring %d: want at least 1", o.upsRing)
	case strings.ContainsAny(strings.Trim(o.shr, "/"), "/\\?#%"):
		return fmt.Errorf("--shr %q: want one folder name, like /shr/", o.shr)
	case o.warksalt == "":
		return errors.New("--warksalt: must not be empty")
	}
	return nil
}

// --snap-drop's range, in minutes: 6 s (the expiry sweeps every eighth
// of it, at least a second apart) to about two years.
const (
	minSnapDrop = 0.1
	maxSnapDrop = 1e6
)

// snapDropTime is --snap-drop (validated) as a duration.
func snapDropTime(minutes float64) time.Duration {
	return time.Duration(minutes * float64(time.Minute))
}

// parsePorts reads -p: comma-separated ports, 0 to 65535.
func parsePorts(ports string) ([]int, error) {
	var out []int
	for _, p := range strings.Split(ports, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || n < 0 || n > 65535 {
			return nil, fmt.Errorf("-p %q: bad port %q", ports, p)
		}
		out = append(out, n)
	}
	return out, nil
}

// storeConfig turns the flags (validated) into store's configuration,
// with the accounts and volumes parsed and checked.
func (o *options) storeConfig(log *slog.Logger) (store.Config, error) {
	cfg := store.Config{Hist: o.hist, Logger: log, Unpost: time.Duration(o.unpost) * time.Second, NoGroupSync: o.noGroupSync}
	salt := o.warksalt
	cfg.Identify = func(sum []byte, size int64) (string, []string) { return up2k.Identify(salt, sum, size) }
	s3c := s3.FromEnv(o.s3Endpoint)
	s3c.CallTimeout = time.Duration(o.s3Timeout) * time.Second
	cfg.Objects = s3.Opener(s3c) // volumes with flag s3= (docs/s3.md)
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

// proxyConfig is --xff-src, --xff-hdr and --rp-loc for the http layer.
func (o *options) proxyConfig() (srvhttp.ProxyConfig, error) {
	trusted, err := srvhttp.ParseTrusted(o.xffSrc)
	if err != nil {
		return srvhttp.ProxyConfig{}, err
	}
	loc, err := srvhttp.ParseLoc(o.rpLoc)
	if err != nil {
		return srvhttp.ProxyConfig{}, err
	}
	hdr := strings.TrimSpace(o.xffHdr)
	if hdr == "" || strings.ContainsAny(hdr, " :\t\r\n") {
		return srvhttp.ProxyConfig{}, fmt.Errorf("--xff-hdr %q: want a header name", o.xffHdr)
	}
	return srvhttp.ProxyConfig{Trusted: trusted, Header: hdr, Loc: loc}, nil
}

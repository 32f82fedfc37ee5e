package main

// The flags: every one is registered here, one line each, under the -h
// group it is listed in (docs/flags.md has the same groups, checked by
// TestFlagsDocumented). Config files (-c, config.go) set the same FlagSet
// by name.

import (
	"flag"
	"runtime"
	"strings"

	"hoard/up2k"
)

type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, " ") }
func (l *listFlag) Set(s string) error { *l = append(*l, s); return nil }

// options are the parsed command line and config files.
type options struct {
	ports, addrs          string
	accounts, volumes     listFlag
	e2d, e2ds, e2dsa      bool
	e2t, e2ts, e2tsr      bool
	e2s, e2a              bool
	dedup, singleHash     bool
	noGroupSync           bool
	srchHits, srchMax     int
	hist, warksalt, df    string
	dbCache, thMT         int
	snapDrop              float64 // minutes
	reMaxAge              int
	srchSlowMS            int
	maxRanges             int
	archMT                int
	logLevel, logFormat   string
	stats                 bool
	xffSrc, xffHdr, rpLoc string
	tailTmax, tailCmax    int
	upsRing               int
	unpost                int
	noDav, davInf         bool
	shr                   string
	s3Endpoint            string
	s3Timeout             int
	thConvt, thQueue      int
	thCacheMax, thMaxMpx  int
	ffmpeg, ffprobe       string
	regCap, regCapIP      int
	prod                  prodOptions // cli.go, tls.go, config.go
}

// flagGroup is one heading of -h and docs/flags.md, with its flags in the
// order they are listed.
type flagGroup struct {
	name  string
	flags []string
}

// flagSet is hoard's FlagSet with its flags in groups.
type flagSet struct {
	*flag.FlagSet
	groups []flagGroup
	args   map[string]string // flag name → its value's name in -h
}

// group starts a heading: the flags registered after it are listed under
// it, up to the next.
func (f *flagSet) group(name string) { f.groups = append(f.groups, flagGroup{name: name}) }

func (f *flagSet) listed(name, arg string) {
	g := &f.groups[len(f.groups)-1]
	g.flags = append(g.flags, name)
	if f.args == nil {
		f.args = map[string]string{}
	}
	f.args[name] = arg
}

// str registers a string flag whose value -h calls arg.
func (f *flagSet) str(p *string, name, arg, def, usage string) {
	f.StringVar(p, name, def, usage)
	f.listed(name, arg)
}

// num registers a number flag (N in -h).
func (f *flagSet) num(p *int, name string, def int, usage string) {
	f.IntVar(p, name, def, usage)
	f.listed(name, "N")
}

// dec registers a decimal number (copyparty's integer flags that take a
// fraction here too).
func (f *flagSet) dec(p *float64, name string, def float64, usage string) {
	f.Float64Var(p, name, def, usage)
	f.listed(name, "N")
}

// bool registers a switch, off by default.
func (f *flagSet) bool(p *bool, name, usage string) {
	f.BoolVar(p, name, false, usage)
	f.listed(name, "")
}

// list registers a repeatable flag whose value -h calls arg.
func (f *flagSet) list(p *listFlag, name, arg, usage string) {
	f.Var(p, name, usage)
	f.listed(name, arg)
}

// newFlags registers every flag of hoard on a new FlagSet whose values
// land in the returned options.
func newFlags() (*flagSet, *options) {
	o := &options{}
	p := &o.prod
	f := &flagSet{FlagSet: flag.NewFlagSet("hoard", flag.ContinueOnError)}

	f.group("general")
	f.list(&p.configs, "c", "FILE", "read options, accounts and volumes from this config file (copyparty's format; repeatable; a folder reads its *.conf); it wins over the command line")
	f.bool(&p.version, "version", "print the version and exit")
	f.str(&o.logLevel, "log-level", "LEVEL", "info", "debug, info, warn or error")
	f.str(&o.logFormat, "log-format", "FMT", "text", "log lines as text or json")
	f.bool(&o.stats, "stats", "serve Prometheus/OpenMetrics metrics at /.cpr/metrics to admins (permission a)")

	f.group("network")
	f.str(&o.ports, "p", "PORTS", "3923", "TCP port(s) to listen on, comma-separated; 0 picks a free one")
	f.str(&o.addrs, "i", "ADDRS", "::", "address(es) to listen on, comma-separated; :: is every interface")

	f.group("reverse proxy")
	f.str(&o.xffSrc, "xff-src", "CIDR", "127.0.0.0/8,::1", "comma-separated peers whose --xff-hdr and X-Forwarded-Proto/-Host are believed; lan adds the private ranges, none trusts no one")
	f.str(&o.xffHdr, "xff-hdr", "NAME", "x-forwarded-for", "header a trusted proxy puts the client chain in; its right-most address outside --xff-src is the client")
	f.str(&o.rpLoc, "rp-loc", "PATH", "", "URL prefix the reverse proxy serves hoard under (example: /files); every URL hoard emits starts with it")

	f.group("TLS")
	f.str(&p.cert, "cert", "PATH", "", "serve HTTPS too, with this PEM file's certificate chain (and key, unless --key); reloaded when the file changes")
	f.str(&p.key, "key", "PATH", "", "the private key's PEM file, when --cert holds none")
	f.bool(&p.httpOnly, "http-only", "plain HTTP only, even with --cert")
	f.bool(&p.httpsOnly, "https-only", "HTTPS only: plain HTTP clients get a 400 (needs --cert)")
	f.bool(&p.h2, "h2", "offer HTTP/2 over TLS (HTTP/1.1 only by default: HTTP/2 slows big uploads)")

	f.group("accounts and volumes")
	f.list(&o.accounts, "a", "USER:PASS", "account USER:PASS (repeatable)")
	f.list(&o.volumes, "v", "SRC:DST:PERMS", "volume SRC:DST:PERMS[:PERMS...][:c,FLAG[=VAL]...] (repeatable); PERMS = letters of rwmdgGha.A, optionally followed by ,user,user")
	f.str(&p.ahAlg, "ah-alg", "ALG", "none", "account passwords are hashes made with: argon2, scrypt, sha2 or none, each optionally followed by ,PARAMS (copyparty's)")
	f.str(&p.ahSalt, "ah-salt", "SALT", "", "salt of --ah-alg (default: a random one kept in ~/.config/hoard/ah-salt.txt)")
	f.str(&p.ahGen, "ah-gen", "PW", "", "print the hash of this password (- reads passwords from stdin, one per line) and exit")
	f.str(&o.hist, "hist", "DIR", "", "keep every volume's state (.hist) below this folder instead")
	f.str(&o.shr, "shr", "PATH", "/shr/", "URL folder where share links are served (empty: sharing off)")
	f.str(&o.s3Endpoint, "s3-endpoint", "URL", "", "object store of volumes with flag s3=BUCKET[/PREFIX] (default: $AWS_ENDPOINT_URL; keys from $AWS_ACCESS_KEY_ID, $AWS_SECRET_ACCESS_KEY)")
	f.num(&o.s3Timeout, "s3-timeout", 30, "seconds a request waits on the object store without progress before it answers 503")

	f.group("uploads")
	f.bool(&o.dedup, "dedup", "link duplicate uploads to the existing file instead of copying it")
	f.str(&o.warksalt, "warksalt", "SALT", "hunter2", "salt of up2k file identifiers (warks)")
	f.str(&o.df, "df", "SIZE", "", "keep this much disk free on every volume (plain number: GiB)")
	f.dec(&o.snapDrop, "snap-drop", 1440, "minutes before an idle unfinished up2k upload is discarded (a decimal: 0.5 is 30 s; at least 0.1)")
	f.num(&o.regCap, "reg-cap", up2k.DefaultMaxUnfinished, "most unfinished up2k uploads in all (503 beyond)")
	f.num(&o.regCapIP, "reg-cap-ip", up2k.DefaultMaxUnfinishedIP, "most unfinished up2k uploads from one client address, an IPv6 client's /64 (429 beyond)")
	f.num(&o.unpost, "unpost", 43200, "seconds after an upload that its uploader may still delete it without the d permission (needs -e2d; 0: off)")
	f.num(&o.upsRing, "ups-ring", 4096, "recent uploads kept in memory for ?ups and ?ru")
	f.bool(&o.singleHash, "single-hash", "hash every up2k chunk with crypto/sha512 on its own goroutine, never in the AVX-512 SHA-512 lanes")
	f.bool(&o.noGroupSync, "no-group-sync", "fsync every finished upload and its folder on its own, instead of group-committing the small ones (≤ 256 KiB: one synced write of their bytes into the state database, checkpointed about once a second)")

	f.group("WebDAV")
	f.bool(&o.noDav, "no-dav", "turn WebDAV off (PROPFIND, MKCOL, COPY, MOVE, DELETE, LOCK ... answer 405)")
	f.bool(&o.davInf, "dav-inf", "let PROPFIND list a whole tree (Depth: infinity); otherwise it gets 403 propfind-finite-depth")

	f.group("indexing and search")
	f.bool(&o.e2d, "e2d", "index files (search, dedup, lifetimes)")
	f.bool(&o.e2ds, "e2ds", "-e2d, and scan writable volumes at start")
	f.bool(&o.e2dsa, "e2dsa", "-e2ds, and scan every volume at start")
	f.bool(&o.e2t, "e2t", "index audio/video tags")
	f.bool(&o.e2ts, "e2ts", "-e2t, and scan tags at start")
	f.bool(&o.e2tsr, "e2tsr", "-e2ts, rescanning every file's tags")
	f.bool(&o.e2s, "e2s", "enable search (implies -e2d)")
	f.bool(&o.e2a, "e2a", "every indexing feature (-e2dsa -e2ts)")
	f.num(&o.reMaxAge, "re-maxage", 0, "rescan volumes every this many seconds (0: never)")
	f.num(&o.dbCache, "db-cache", 64, "index block cache, MiB")
	f.num(&o.srchHits, "srch-hits", 200, "default number of search hits")
	f.num(&o.srchMax, "srch-max", 10000, "largest number of search hits a client may ask for")
	f.num(&o.srchSlowMS, "srch-slow-ms", 700, "a search slower than this many milliseconds earns its client the 0.7 s rate-limit penalty (0: every search; for tests)")

	f.group("downloads and archives")
	f.num(&o.maxRanges, "max-ranges", 16, "most byte ranges served in one request")
	f.num(&o.archMT, "arch-mt", runtime.NumCPU(), "archives compressing at once with xz, bz2 or gz level 6+ (more get 503)")
	f.num(&o.tailTmax, "tail-tmax", 0, "end a ?tail stream after this many seconds (0: never)")
	f.num(&o.tailCmax, "tail-cmax", 16, "most ?tail streams at once (503 beyond)")

	f.group("thumbnails and transcodes")
	f.num(&o.thMT, "th-mt", runtime.NumCPU(), "thumbnail and transcode workers")
	f.num(&o.thConvt, "th-convt", 60, "seconds a thumbnail or transcode may take before ffmpeg is killed")
	f.num(&o.thQueue, "th-queue", 30, "seconds a thumbnail or transcode may wait for a worker before the request gets 503")
	f.num(&o.thCacheMax, "th-cache-max", 1024, "MiB of thumbnails and transcodes kept per state folder (.hist/th) before the least recently used go")
	f.num(&o.thMaxMpx, "th-max-mpx", 64, "largest image (megapixels) decoded for a thumbnail")
	f.str(&o.ffmpeg, "ffmpeg", "PROGRAM", "ffmpeg", "FFmpeg program for video, audio and WebP thumbnails, waveforms and transcodes")
	f.str(&o.ffprobe, "ffprobe", "PROGRAM", "ffprobe", "ffprobe program (media durations and tags)")
	return f, o
}

// helpName is how -h and docs/flags.md name a flag: dashed, and followed
// by its value's name.
func (f *flagSet) helpName(fl *flag.Flag) string {
	if arg := f.args[fl.Name]; arg != "" {
		return dashed(fl.Name) + " " + arg
	}
	return dashed(fl.Name)
}

// dashed is a flag's name as copyparty spells it: one dash for a letter
// and for the -e2 family, two for the rest (either works).
func dashed(name string) string {
	if len(name) == 1 || strings.HasPrefix(name, "e2") {
		return "-" + name
	}
	return "--" + name
}

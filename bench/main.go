// Command bench is hoard's load harness: a black-box HTTP client that drives
// a running file server (hoard, copyparty, nginx, anything that speaks the
// same interface) through a set of scenarios and reports throughput, latency
// percentiles and the server's memory and CPU use.
//
//	go run ./bench -spawn -scenario all -rounds 1
//	go run ./bench -dir /srv/data -compare 'hoard=spawn,nginx=http://127.0.0.1:3925,copyparty=http://127.0.0.1:3924' -rounds 3
//
// Every target serves the same folder (-dir) at its root; the harness puts
// its fixtures there (deterministic from -seed), uploads into hb-up/<target>/
// and removes what it created when it ends. With -compare each scenario runs
// against each target in turn, round after round (A B C, B C A, ...), and
// the report gives the median, min and max per figure and the ratio of the
// first target to each other one.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// config is the parsed command line.
type config struct {
	scenarios []string
	rounds    int
	duration  time.Duration
	conns     int
	jobs      int
	seed      uint64
	big       int64
	smallN    int
	smallSize int
	manyN     int
	manyMax   int
	searchN   int
	davN      int // dav-propfind, dav-move-delete
	syncN     int // rclone-sync
	rangeSize int64
	jsonOut   bool
	dir       string
	prepare   bool
	keep      bool
	limits    bool
	prefault  bool
	hoardBin  string
	hoardArgs string
	quiet     bool
	stdClient bool
}

// byteSize is a flag value in bytes with an optional K, M, G suffix (KiB…).
type byteSize int64

func (b *byteSize) String() string { return strconv.FormatInt(int64(*b), 10) }
func (b *byteSize) Set(s string) error {
	v, err := parseSize(s)
	if err != nil {
		return err
	}
	*b = byteSize(v)
	return nil
}

func parseSize(s string) (int64, error) {
	t := strings.TrimSuffix(strings.TrimSuffix(strings.ToUpper(strings.TrimSpace(s)), "B"), "I")
	mul := int64(1)
	if n := len(t); n > 0 {
		switch t[n-1] {
		case 'K':
			mul, t = 1<<10, t[:n-1]
		case 'M':
			mul, t = 1<<20, t[:n-1]
		case 'G':
			mul, t = 1<<30, t[:n-1]
		}
	}
	v, err := strconv.ParseInt(t, 10, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("size %q: want a number with an optional K, M or G suffix", s)
	}
	return v * mul, nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		c                       config
		scen, target, cmp, pids string
		spawn                   bool
		big, small, many, rng   = byteSize(256 << 20), byteSize(4096), byteSize(64 << 10), byteSize(64 << 10)
	)
	fs.StringVar(&scen, "scenario", "all", "comma-separated scenarios, or all: "+strings.Join(scenarioNames(), ","))
	fs.BoolVar(&spawn, "spawn", false, "build hoard from this module and start it on a free loopback port (with -compare: the target URL \"spawn\")")
	fs.StringVar(&target, "target", "", "base URL of a running server that serves -dir at its root")
	fs.StringVar(&cmp, "compare", "", "name=URL,... targets measured in alternation; URL \"spawn\" = a spawned hoard")
	fs.StringVar(&pids, "pid", "", "server process ids for RSS/CPU from /proc: name=PID,... (or one PID with -target)")
	fs.IntVar(&c.rounds, "rounds", 3, "rounds per scenario and target")
	fs.DurationVar(&c.duration, "duration", 5*time.Second, "time per measurement (at least one operation always completes)")
	fs.IntVar(&c.conns, "c", 32, "connections for the small-request scenarios")
	fs.IntVar(&c.jobs, "j", 4, "parallel connections for get-large, up2k-large and up2k-many")
	seed := fs.Uint64("seed", 1, "seed of the generated data")
	fs.Var(&big, "big", "size of the big file (get-large, range, put-large, up2k-large, tar/zip of a big folder)")
	fs.IntVar(&c.smallN, "small-n", 1000, "number of small files (get-small, tar/zip of many files)")
	fs.Var(&small, "small-size", "size of each small file and of put-small uploads")
	fs.IntVar(&c.manyN, "many-n", 2000, "files per up2k-many upload batch")
	fs.Var(&many, "many-max", "largest file of up2k-many (sizes 1 KiB up to this)")
	fs.IntVar(&c.searchN, "search-n", 5000, "files in the search corpus")
	fs.IntVar(&c.davN, "dav-n", 10000, "files in the folder of dav-propfind and dav-move-delete")
	fs.IntVar(&c.syncN, "sync-n", 5000, "small files rclone-sync uploads")
	fs.Var(&rng, "range-size", "bytes per range request")
	fs.BoolVar(&c.jsonOut, "json", false, "print the results as JSON instead of a table")
	fs.StringVar(&c.dir, "dir", "", "the folder every target serves at its root (fixtures go to DIR/hb-fix, uploads to DIR/hb-up); default with -spawn: a temporary folder")
	fs.BoolVar(&c.prepare, "prepare", false, "only create the fixtures in -dir and exit (start peers after this so they index them)")
	fs.BoolVar(&c.keep, "keep", false, "keep the fixtures in -dir when done")
	fs.BoolVar(&c.limits, "limits", false, "also measure the machine's limits: loopback TCP, SHA-512 per core, disk write with fdatasync")
	fs.BoolVar(&c.prefault, "prefault", true, "before each timed large upload, write and delete an untimed scratch file twice its size (VMs that hand idle memory back to the host)")
	fs.StringVar(&c.hoardBin, "hoard-bin", "", "use this hoard binary for -spawn instead of building one")
	fs.StringVar(&c.hoardArgs, "hoard-args", "", "extra flags for the spawned hoard (space-separated)")
	fs.BoolVar(&c.quiet, "q", false, "no progress line")
	fs.BoolVar(&c.stdClient, "stdclient", false, "get-small and range through net/http's client instead of the harness's lean HTTP/1.1 one")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "bench: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	c.seed, c.big, c.smallSize, c.manyMax, c.rangeSize = *seed, int64(big), int(small), int(many), int64(rng)
	var err error
	if c.scenarios, err = parseScenarios(scen); err != nil {
		fmt.Fprintf(stderr, "bench: %v\n", err)
		return 2
	}
	if err := c.check(); err != nil {
		fmt.Fprintf(stderr, "bench: %v\n", err)
		return 2
	}
	specs, err := parseTargets(spawn, target, cmp, pids)
	if err != nil && !c.prepare {
		fmt.Fprintf(stderr, "bench: %v\n", err)
		return 2
	}
	if c.prepare && c.dir == "" {
		fmt.Fprintln(stderr, "bench: -prepare needs -dir")
		return 2
	}
	if err := runBench(ctx, &c, specs, stdout, stderr); err != nil {
		fmt.Fprintf(stderr, "bench: %v\n", err)
		if ctx.Err() != nil {
			return 130
		}
		return 1
	}
	return 0
}

func (c *config) check() error {
	switch {
	case c.rounds < 1:
		return errors.New("-rounds must be at least 1")
	case c.duration <= 0:
		return errors.New("-duration must be positive")
	case c.conns < 1 || c.conns > 4096:
		return errors.New("-c must be 1..4096")
	case c.jobs < 1 || c.jobs > 256:
		return errors.New("-j must be 1..256")
	case c.big < 1<<20:
		return errors.New("-big must be at least 1M")
	case c.smallN < 1 || c.smallSize < 1:
		return errors.New("-small-n and -small-size must be positive")
	case c.manyN < 1 || c.manyMax < 1024:
		return errors.New("-many-n must be positive and -many-max at least 1K")
	case c.searchN < 10:
		return errors.New("-search-n must be at least 10")
	case c.davN < 1 || c.syncN < 1:
		return errors.New("-dav-n and -sync-n must be positive")
	case c.rangeSize < 1 || c.rangeSize > c.big:
		return errors.New("-range-size must be 1..-big")
	}
	return nil
}

// targetSpec is one server named on the command line.
type targetSpec struct {
	name, url string // url "spawn": build and start hoard
	pid       int
}

func parseTargets(spawn bool, target, cmp, pids string) ([]targetSpec, error) {
	var specs []targetSpec
	switch {
	case cmp != "":
		if target != "" {
			return nil, errors.New("-target and -compare exclude each other")
		}
		seen := map[string]bool{}
		for _, part := range strings.Split(cmp, ",") {
			name, url, ok := strings.Cut(strings.TrimSpace(part), "=")
			if !ok || name == "" || url == "" || strings.ContainsAny(name, "/ ") {
				return nil, fmt.Errorf("-compare: %q is not name=URL", part)
			}
			if seen[name] {
				return nil, fmt.Errorf("-compare: name %q twice", name)
			}
			seen[name] = true
			specs = append(specs, targetSpec{name: name, url: strings.TrimSuffix(url, "/")})
		}
		if spawn && !seen["hoard"] {
			specs = append([]targetSpec{{name: "hoard", url: "spawn"}}, specs...)
		}
	case target != "":
		if spawn {
			specs = append(specs, targetSpec{name: "hoard", url: "spawn"})
		}
		specs = append(specs, targetSpec{name: "target", url: strings.TrimSuffix(target, "/")})
	case spawn:
		specs = append(specs, targetSpec{name: "hoard", url: "spawn"})
	default:
		return nil, errors.New("no target: use -spawn, -target URL or -compare name=URL[,name=URL]")
	}
	for _, s := range specs {
		if s.url != "spawn" && !strings.HasPrefix(s.url, "http://") && !strings.HasPrefix(s.url, "https://") {
			return nil, fmt.Errorf("target %s: URL %q is not http:// or https://", s.name, s.url)
		}
	}
	if pids != "" {
		for _, part := range strings.Split(pids, ",") {
			name, num, ok := strings.Cut(part, "=")
			if !ok {
				name, num = "", part
			}
			p, err := strconv.Atoi(strings.TrimSpace(num))
			if err != nil || p <= 0 {
				return nil, fmt.Errorf("-pid: %q is not a process id", part)
			}
			found := false
			for i := range specs {
				if specs[i].name == name || (name == "" && len(specs) == 1) || (name == "" && specs[i].name == "target") {
					specs[i].pid, found = p, true
					break
				}
			}
			if !found {
				return nil, fmt.Errorf("-pid: no target named %q", name)
			}
		}
	}
	return specs, nil
}

// runBench prepares the data, starts what must be spawned, runs every
// scenario round by round and prints the report. Whatever it created is
// removed on the way out, also after SIGINT.
func runBench(ctx context.Context, c *config, specs []targetSpec, stdout, stderr io.Writer) (err error) {
	prog := newProgress(stderr, c.quiet)
	defer prog.stop()
	tmp, err := os.MkdirTemp("", "hoard-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	dir := c.dir
	if dir == "" {
		for _, s := range specs {
			if s.url != "spawn" {
				return fmt.Errorf("target %s needs -dir: the folder it serves at its root, where the fixtures go", s.name)
			}
		}
		dir = filepath.Join(tmp, "vol")
		if err := os.Mkdir(dir, 0o755); err != nil {
			return err
		}
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return err
	}
	prog.logf("fixtures in %s (seed %d)", dir, c.seed)
	if td, err := os.MkdirTemp(filepath.Dir(dir), ".hoard-bench-trash-"); err == nil {
		trashDir = td
		defer func() { os.RemoveAll(td); trashDir = "" }()
	}
	fx, err := makeFixtures(ctx, c, dir)
	if err != nil {
		return err
	}
	if c.prepare {
		prog.logf("fixtures ready; start the peers now (copyparty: -e2dsa so it indexes them)")
		return nil
	}
	if !c.keep || c.dir == "" {
		defer fx.remove()
	}
	var targets []*target
	defer func() {
		for _, t := range targets {
			t.stop()
			// every measurement removes its own upload folder; what is left
			// is empty unless another harness process uploads there too
			os.Remove(filepath.Join(fx.upRoot, t.name))
		}
		os.Remove(fx.upRoot)
	}()
	for _, s := range specs {
		t := &target{name: s.name, url: s.url, pid: s.pid}
		if s.url == "spawn" {
			prog.logf("building and starting hoard")
			if err := t.spawn(ctx, c, tmp, dir); err != nil {
				return fmt.Errorf("spawn hoard: %w", err)
			}
			prog.logf("hoard up at %s (pid %d)", t.url, t.pid)
		}
		targets = append(targets, t)
		if err := t.ping(ctx, fx); err != nil {
			return err
		}
	}
	// servers that index at start (copyparty -e2dsa, hoard -e2dsa) hash
	// every fixture first; measuring meanwhile would charge that to the
	// first scenarios
	for _, t := range targets {
		if t.pid > 0 {
			prog.begin("waiting for " + t.name + " to go idle (start-up indexing)")
			if err := waitQuiet(ctx, t.pid, 180*time.Second); err != nil {
				return err
			}
		}
	}
	rep := &report{Machine: machineFacts(), Started: time.Now(), Args: os.Args[1:]}
	for _, t := range targets {
		rep.Targets = append(rep.Targets, targetInfo{Name: t.name, URL: t.url, PID: t.pid, Spawned: t.cmd != nil})
	}
	if c.limits {
		prog.logf("measuring the machine's limits")
		rep.Limits, err = measureLimits(ctx, fx, prog)
		if err != nil {
			return err
		}
	}
	runErr := runScenarios(ctx, c, fx, targets, rep, prog)
	for _, t := range targets {
		if t.pid > 0 {
			rep.PeakRSS = append(rep.PeakRSS, peakRSS{Target: t.name, MiB: vmHWM(t.pid)})
		}
	}
	rep.Finished = time.Now()
	prog.stop()
	if c.jsonOut {
		rep.writeJSON(stdout)
	} else {
		rep.writeTable(stdout, c)
	}
	return runErr
}

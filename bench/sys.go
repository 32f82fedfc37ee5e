package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha512"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// ---------------------------------------------------------------- progress

// progress prints what runs now: on a terminal one line rewritten twice a
// second, otherwise one line per measurement.
type progress struct {
	w      io.Writer
	tty    bool
	quiet  bool
	mu     sync.Mutex
	label  string
	t0     time.Time
	start  time.Time
	ops    atomic.Int64
	bytes  atomic.Int64
	done   chan struct{}
	closed bool
}

func newProgress(w io.Writer, quiet bool) *progress {
	p := &progress{w: w, quiet: quiet, start: time.Now(), done: make(chan struct{})}
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			p.tty = true
		}
	}
	if p.tty && !quiet {
		go p.loop()
	}
	return p
}

func (p *progress) loop() {
	tk := time.NewTicker(500 * time.Millisecond)
	defer tk.Stop()
	for {
		select {
		case <-p.done:
			return
		case <-tk.C:
			p.mu.Lock()
			if p.label != "" {
				fmt.Fprintf(p.w, "\r\033[K[%4.0fs] %s  %.1fs  %d ops  %.0f MB", time.Since(p.start).Seconds(), p.label,
					time.Since(p.t0).Seconds(), p.ops.Load(), float64(p.bytes.Load())/1e6)
			}
			p.mu.Unlock()
		}
	}
}

func (p *progress) begin(label string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.label, p.t0 = label, time.Now()
	p.ops.Store(0)
	p.bytes.Store(0)
	if !p.tty && !p.quiet {
		fmt.Fprintf(p.w, "[%4.0fs] %s\n", time.Since(p.start).Seconds(), label)
	}
}

func (p *progress) add(ops, n int64) {
	p.ops.Add(ops)
	p.bytes.Add(n)
}

func (p *progress) logf(format string, args ...any) {
	if p.quiet {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty {
		fmt.Fprint(p.w, "\r\033[K")
	}
	fmt.Fprintf(p.w, "[%4.0fs] %s\n", time.Since(p.start).Seconds(), fmt.Sprintf(format, args...))
}

func (p *progress) stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.closed {
		p.closed = true
		close(p.done)
		if p.tty && !p.quiet {
			fmt.Fprint(p.w, "\r\033[K")
		}
		p.label = ""
	}
}

// ---------------------------------------------------------------- /proc

var clkTck = 100.0 // USER_HZ; 100 on every Linux architecture Go supports

// procTree is pid and its descendants (nginx: master and workers).
func procTree(pid int) []int {
	kids := map[int][]int{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if f := procStat(p); len(f) > 2 {
			pp, _ := strconv.Atoi(f[1])
			kids[pp] = append(kids[pp], p)
		}
	}
	out := []int{pid}
	for i := 0; i < len(out); i++ {
		out = append(out, kids[out[i]]...)
	}
	return out
}

// procStat returns the fields of /proc/pid/stat after the command name:
// [0] state, [1] ppid, ... [11] utime, [12] stime.
func procStat(pid int) []string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return nil
	}
	return strings.Fields(string(b[i+1:]))
}

// cpuSeconds is the user+system time of the processes.
func cpuSeconds(pids []int) float64 {
	var t float64
	for _, p := range pids {
		if f := procStat(p); len(f) > 12 {
			u, _ := strconv.ParseFloat(f[11], 64)
			s, _ := strconv.ParseFloat(f[12], 64)
			t += (u + s) / clkTck
		}
	}
	return t
}

// statusKiB reads one "Key: N kB" line of /proc/pid/status.
func statusKiB(pid int, key string) int64 {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), key+":"); ok {
			v, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return v
		}
	}
	return 0
}

func rssMiB(pids []int) float64 {
	var k int64
	for _, p := range pids {
		k += statusKiB(p, "VmRSS")
	}
	return float64(k) / 1024
}

// vmHWM is the peak RSS over the whole run, summed over the process tree.
func vmHWM(pid int) float64 {
	var k int64
	for _, p := range procTree(pid) {
		k += statusKiB(p, "VmHWM")
	}
	return float64(k) / 1024
}

// meter accumulates the timed windows of one measurement: wall time, the
// server's CPU and the harness's own CPU in them, and samples the server's
// RSS every 100 ms while the measurement runs.
type meter struct {
	pid                 int
	pids                []int
	wall, srv, cli      float64
	t0                  time.Time
	srv0, cli0          float64
	peak                atomic.Uint64 // MiB * 1000
	stopSample, stopped chan struct{}
}

func newMeter(pid int) *meter {
	m := &meter{pid: pid, stopSample: make(chan struct{}), stopped: make(chan struct{})}
	if pid > 0 {
		m.pids = procTree(pid)
		go func() {
			defer close(m.stopped)
			tk := time.NewTicker(100 * time.Millisecond)
			defer tk.Stop()
			for {
				m.sample()
				select {
				case <-m.stopSample:
					return
				case <-tk.C:
				}
			}
		}()
	} else {
		close(m.stopped)
	}
	return m
}

func (m *meter) sample() {
	v := uint64(rssMiB(m.pids) * 1000)
	for {
		old := m.peak.Load()
		if v <= old || m.peak.CompareAndSwap(old, v) {
			return
		}
	}
}

func (m *meter) start() {
	m.t0 = time.Now()
	m.cli0 = clientCPU()
	if m.pid > 0 {
		m.srv0 = cpuSeconds(m.pids)
	}
}

func (m *meter) stop() {
	m.wall += time.Since(m.t0).Seconds()
	m.cli += clientCPU() - m.cli0
	if m.pid > 0 {
		m.srv += cpuSeconds(m.pids) - m.srv0
	}
}

func (m *meter) close() {
	if m.pid > 0 {
		close(m.stopSample)
	}
	<-m.stopped
}

// ---------------------------------------------------------------- machine

type machine struct {
	CPUs    int    `json:"cpus"`
	Model   string `json:"cpu_model"`
	Kernel  string `json:"kernel"`
	Go      string `json:"go"`
	MemMiB  int64  `json:"mem_mib"`
	LoadAvg string `json:"loadavg_at_start"`
}

func machineFacts() machine {
	m := machine{CPUs: runtime.NumCPU(), Go: runtime.Version()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "model name"); ok {
				m.Model = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		m.LoadAvg = strings.Join(strings.Fields(string(b))[:3], " ")
	}
	m.MemMiB = statusMeminfo("MemTotal") / 1024
	return m
}

func statusMeminfo(key string) int64 {
	b, _ := os.ReadFile("/proc/meminfo")
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, key+":"); ok {
			v, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return v
		}
	}
	return 0
}

// ---------------------------------------------------------------- limits

type limit struct {
	Name  string  `json:"name"`
	Unit  string  `json:"unit"`
	Value float64 `json:"value"`
}

// measureLimits measures what the machine can do without a file server:
// loopback TCP (memory to memory, and sendfile of the big fixture), SHA-512
// on one core and on all, and disk writes with and without fdatasync.
func measureLimits(ctx context.Context, fx *fixtures, prog *progress) ([]limit, error) {
	var out []limit
	add := func(name, unit string, v float64) { out = append(out, limit{name, unit, v}) }
	d := min(2*time.Second, max(fx.cfg.duration, 250*time.Millisecond))

	prog.begin("limit: loopback TCP")
	v, err := loopback(ctx, d, nil)
	if err != nil {
		return nil, err
	}
	add("loopback TCP, 1 stream, memory to memory", "MB/s", v)
	prog.begin("limit: loopback sendfile")
	if v, err = loopback(ctx, d, fx.big); err != nil {
		return nil, err
	}
	add("loopback TCP, 1 stream, sendfile of the big file (page cache)", "MB/s", v)

	prog.begin("limit: SHA-512")
	add("SHA-512, 1 core", "MB/s", shaRate(ctx, 1, d))
	add(fmt.Sprintf("SHA-512, %d goroutines", runtime.NumCPU()), "MB/s", shaRate(ctx, runtime.NumCPU(), d))

	prog.begin("limit: disk write")
	n := min(fx.cfg.big, 512<<20)
	for _, sync := range []bool{false, true} {
		prefault(fx, n)
		v, err := diskWrite(fx, n, sync)
		if err != nil {
			return nil, err
		}
		if sync {
			add(fmt.Sprintf("disk write %d MiB + fdatasync", n>>20), "MB/s", v)
		} else {
			add(fmt.Sprintf("page-cache write %d MiB (no sync)", n>>20), "MB/s", v)
		}
	}
	return out, nil
}

// loopback sends for d over one 127.0.0.1 connection, from memory or from
// the file by sendfile, and returns what the reader got per second.
func loopback(ctx context.Context, d time.Duration, f *os.File) (float64, error) {
	send := func(c net.Conn) {
		buf := make([]byte, 1<<20)
		for {
			if _, err := c.Write(buf); err != nil {
				return
			}
		}
	}
	if f != nil {
		path := f.Name()
		send = func(c net.Conn) {
			for {
				g, err := os.Open(path)
				if err != nil {
					return
				}
				_, err = io.Copy(c, g) // *net.TCPConn.ReadFrom(*os.File): sendfile
				g.Close()
				if err != nil {
					return
				}
			}
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		send(c)
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		return 0, err
	}
	defer c.Close()
	return readFor(ctx, c, d), nil
}

func readFor(ctx context.Context, c net.Conn, d time.Duration) float64 {
	buf := make([]byte, 1<<20)
	var n int64
	t0 := time.Now()
	c.SetReadDeadline(t0.Add(d))
	for ctx.Err() == nil {
		k, err := c.Read(buf)
		n += int64(k)
		if err != nil {
			break
		}
	}
	return float64(n) / time.Since(t0).Seconds() / 1e6
}

func shaRate(ctx context.Context, g int, d time.Duration) float64 {
	buf := make([]byte, 1<<20)
	var total atomic.Int64
	var wg sync.WaitGroup
	t0 := time.Now()
	for range g {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := sha512.New()
			for time.Since(t0) < d && ctx.Err() == nil {
				h.Write(buf)
				total.Add(int64(len(buf)))
			}
		}()
	}
	wg.Wait()
	return float64(total.Load()) / time.Since(t0).Seconds() / 1e6
}

// diskWrite writes n bytes in 1 MiB blocks into the served folder's file
// system, with fdatasync at the end when sync is set.
func diskWrite(fx *fixtures, n int64, sync bool) (float64, error) {
	if err := os.MkdirAll(fx.upRoot, 0o777); err != nil {
		return 0, err
	}
	p := filepath.Join(fx.upRoot, "limit-"+fx.nonce+".bin")
	defer os.Remove(p)
	f, err := os.Create(p)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	stream(1, "disk").Read(buf)
	t0 := time.Now()
	for left := n; left > 0; left -= int64(len(buf)) {
		if _, err := f.Write(buf[:min(left, int64(len(buf)))]); err != nil {
			return 0, err
		}
	}
	if sync {
		if err := fdatasync(f); err != nil {
			return 0, err
		}
	}
	return float64(n) / time.Since(t0).Seconds() / 1e6, nil
}

// waitQuiet waits until the process tree uses less than 5 % of a core over
// a second, or max has passed.
func waitQuiet(ctx context.Context, pid int, max time.Duration) error {
	deadline := time.Now().Add(max)
	for time.Now().Before(deadline) {
		pids := procTree(pid)
		c0 := cpuSeconds(pids)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
		if cpuSeconds(pids)-c0 < 0.05 {
			return nil
		}
	}
	return nil
}

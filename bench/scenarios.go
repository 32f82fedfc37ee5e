package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// figure is one measured number.
type figure struct {
	Name  string  `json:"name"`
	Unit  string  `json:"unit"`
	Value float64 `json:"value"`
	Lower bool    `json:"lower_is_better,omitempty"`
}

// errUnsupported marks a scenario the target does not offer (no search, no
// archives, no up2k): reported as unsupported, not as a failure.
type errUnsupported struct{ why string }

func (e *errUnsupported) Error() string { return "unsupported: " + e.why }

func unsupportedf(format string, args ...any) error {
	return &errUnsupported{fmt.Sprintf(format, args...)}
}

// env is what a scenario gets for one measurement.
type env struct {
	ctx   context.Context
	c     *config
	fx    *fixtures
	t     *target
	round int
	prog  *progress
	m     *meter
	state map[string]any // per target, kept across rounds (search dialect)
}

type scenario struct {
	name string
	run  func(e *env) ([]figure, error)
}

var scenarios = []scenario{
	{"get-large", getLarge},
	{"get-small", getSmall},
	{"range", rangeGet},
	{"put-large", putLarge},
	{"put-small", putSmall},
	{"up2k-large", up2kLarge},
	{"up2k-many", up2kMany},
	{"tar", func(e *env) ([]figure, error) { return archive(e, "tar") }},
	{"zip", func(e *env) ([]figure, error) { return archive(e, "zip") }},
	{"search", search},
	{"mixed", mixed},
	{"dav-propfind", davPropfind},      // dav.go
	{"dav-move-delete", davMoveDelete}, // dav.go
	{"rclone-sync", rcloneSync},        // dav.go
}

func scenarioNames() []string {
	var s []string
	for _, sc := range scenarios {
		s = append(s, sc.name)
	}
	return s
}

func parseScenarios(s string) ([]string, error) {
	if s == "all" {
		return scenarioNames(), nil
	}
	var out []string
	for _, n := range strings.Split(s, ",") {
		n = strings.TrimSpace(n)
		if !slices.Contains(scenarioNames(), n) {
			return nil, fmt.Errorf("unknown scenario %q (have: all,%s)", n, strings.Join(scenarioNames(), ","))
		}
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out, nil
}

// ---------------------------------------------------------------- load loop

type loadStats struct {
	ops, bytes int64
	lat        []time.Duration
	elapsed    time.Duration
}

func (s *loadStats) perSec(v int64) float64 { return float64(v) / s.elapsed.Seconds() }

// pct is the p-th percentile of the latencies in milliseconds.
func (s *loadStats) pct(p float64) float64 {
	if len(s.lat) == 0 {
		return 0
	}
	slices.Sort(s.lat)
	i := int(p / 100 * float64(len(s.lat)-1))
	return float64(s.lat[i].Microseconds()) / 1000
}

// load runs op on workers goroutines until -duration has passed (every
// worker completes at least one op). With cut, ops still running at the
// deadline are cancelled and count the bytes they moved until then (op adds
// them through the counter it gets); without, the elapsed time runs until
// the last op ends. The first error stops the run.
func load(e *env, workers int, cut bool, op func(ctx context.Context, w, i int, moved *atomic.Int64) error) (*loadStats, error) {
	ctx, cancel := context.WithCancel(e.ctx)
	defer cancel()
	var (
		mu       sync.Mutex
		st       = &loadStats{}
		firstErr error
		ops      atomic.Int64
		moved    atomic.Int64
		wg       sync.WaitGroup
	)
	e.m.start()
	t0 := time.Now()
	deadline := t0.Add(e.c.duration)
	if cut {
		tm := time.AfterFunc(e.c.duration, cancel)
		defer tm.Stop()
	}
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var lat []time.Duration
			for i := 0; i == 0 || time.Now().Before(deadline); i++ {
				s := time.Now()
				before := moved.Load()
				err := op(ctx, w, i, &moved)
				if err != nil {
					if cut && ctx.Err() != nil && e.ctx.Err() == nil {
						break // cut at the deadline
					}
					mu.Lock()
					if firstErr == nil && e.ctx.Err() == nil {
						firstErr = err
					}
					mu.Unlock()
					cancel()
					break
				}
				lat = append(lat, time.Since(s))
				ops.Add(1)
				e.prog.add(1, moved.Load()-before)
			}
			mu.Lock()
			st.lat = append(st.lat, lat...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	st.elapsed = time.Since(t0)
	e.m.stop()
	if err := e.ctx.Err(); err != nil {
		return nil, err
	}
	if firstErr != nil {
		return nil, firstErr
	}
	st.ops, st.bytes = ops.Load(), moved.Load()
	return st, nil
}

// ---------------------------------------------------------------- helpers

func (e *env) url(rel string) string { return e.t.url + "/" + rel }

// get fetches u and counts the body's bytes into moved; it fails unless the
// status is want and the body has exactly n bytes (n < 0: any length).
func (e *env) get(ctx context.Context, u string, hdr http.Header, want int, n int64, moved *atomic.Int64, buf []byte) error {
	req, err := http.NewRequestWithContext(ctx, "GET", u, nil)
	if err != nil {
		return err
	}
	maps(req.Header, hdr)
	resp, err := e.t.client().Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != want {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 300))
		return fmt.Errorf("GET %s: %s (want %d): %s", u, resp.Status, want, clipBytes(b))
	}
	var got int64
	for {
		k, err := resp.Body.Read(buf)
		got += int64(k)
		moved.Add(int64(k))
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
	}
	if n >= 0 && got != n {
		return fmt.Errorf("GET %s: %d bytes, want %d", u, got, n)
	}
	return nil
}

func maps(dst, src http.Header) {
	for k, v := range src {
		dst[k] = v
	}
}

// put uploads body (n bytes) to u and wants a 2xx answer.
func (e *env) put(ctx context.Context, u string, body io.Reader, n int64) error {
	req, err := http.NewRequestWithContext(ctx, "PUT", u, body)
	if err != nil {
		return err
	}
	req.ContentLength = n
	if n == 0 {
		req.Body = http.NoBody
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	resp, err := e.t.client().Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		if resp.StatusCode == 405 || resp.StatusCode == 501 {
			return unsupportedf("PUT answered %s", resp.Status)
		}
		return fmt.Errorf("PUT %s: %s: %s", u, resp.Status, clipBytes(b))
	}
	return nil
}

// settle leaves the disk alone for the next measurement: the uploads are
// removed and everything written so far reaches the disk (untimed).
// A folder of uploads is moved into the trash folder (when one is set and
// on the same file system) and deleted when the run ends: on ext4 without
// a journal, creating thousands of files within 30 s of deleting
// thousands makes the kernel's inode allocator skip each recently freed
// inode (find_inode_bit -> recently_deleted), and whichever target comes
// right after a deletion would pay for the one before it.
func settle(abs string) {
	if fi, err := os.Lstat(abs); err == nil && fi.IsDir() && trashDir != "" {
		to := filepath.Join(trashDir, fmt.Sprint(trashN.Add(1)))
		if os.Rename(abs, to) == nil {
			syncAll()
			return
		}
	}
	os.RemoveAll(abs)
	syncAll()
}

// trashDir is where settle moves folders of uploads (runBench sets it,
// next to the served folder, and removes it at the end).
var (
	trashDir string
	trashN   atomic.Int64
)

// prefault writes and deletes an untimed scratch file of 2n bytes next to
// the uploads: on VMs that hand memory idle for a while back to the host,
// the first large write into the page cache after a pause otherwise pays
// for faulting that memory in again, and whichever target comes first
// after a pause would be charged for it.
func (e *env) prefault(n int64) {
	if e.c.prefault {
		prefault(e.fx, n)
	}
}

func prefault(fx *fixtures, n int64) {
	os.MkdirAll(fx.upRoot, 0o777)
	p := filepath.Join(fx.upRoot, "prefault-"+fx.nonce+".tmp")
	f, err := os.Create(p)
	if err != nil {
		return
	}
	buf := make([]byte, 1<<20)
	for left := 2 * n; left > 0; left -= int64(len(buf)) {
		if _, err := f.Write(buf); err != nil {
			break
		}
	}
	f.Close()
	os.Remove(p)
}

// ---------------------------------------------------------------- GET

func getLarge(e *env) ([]figure, error) {
	size := e.c.big
	u := e.url(e.fx.bigPath())
	st, err := load(e, e.c.jobs, true, func(ctx context.Context, w, i int, moved *atomic.Int64) error {
		return e.get(ctx, u, nil, 200, size, moved, make([]byte, 1<<20))
	})
	if err != nil {
		return nil, err
	}
	return []figure{
		{Name: fmt.Sprintf("%d readers", e.c.jobs), Unit: "MB/s", Value: st.perSec(st.bytes) / 1e6},
	}, nil
}

func getSmall(e *env) ([]figure, error) {
	n, size := e.c.smallN, int64(e.c.smallSize)
	rp, err := newRawPool(e.t.url)
	if err != nil {
		return nil, err
	}
	defer rp.close()
	st, err := load(e, e.c.conns, false, func(ctx context.Context, w, i int, moved *atomic.Int64) error {
		k := (w*7919 + i*104729) % n
		if e.c.stdClient {
			return e.get(ctx, e.url(e.fx.smallPath(k)), nil, 200, size, moved, make([]byte, 32<<10))
		}
		return rp.get(ctx, w, "/"+e.fx.smallPath(k), "", 200, size, moved)
	})
	if err != nil {
		return nil, err
	}
	return []figure{
		{Name: fmt.Sprintf("%d B files, %d conns", e.c.smallSize, e.c.conns), Unit: "req/s", Value: st.perSec(st.ops)},
		{Name: "latency p50", Unit: "ms", Value: st.pct(50), Lower: true},
		{Name: "latency p99", Unit: "ms", Value: st.pct(99), Lower: true},
	}, nil
}

func rangeGet(e *env) ([]figure, error) {
	size, rs := e.c.big, e.c.rangeSize
	u := e.url(e.fx.bigPath())
	rp, err := newRawPool(e.t.url)
	if err != nil {
		return nil, err
	}
	defer rp.close()
	path := "/" + e.fx.bigPath()
	st, err := load(e, e.c.conns, false, func(ctx context.Context, w, i int, moved *atomic.Int64) error {
		r := rand.New(rand.NewPCG(uint64(w), uint64(i)))
		a := r.Int64N(size - rs + 1)
		if e.c.stdClient {
			h := http.Header{"Range": {fmt.Sprintf("bytes=%d-%d", a, a+rs-1)}}
			return e.get(ctx, u, h, 206, rs, moved, make([]byte, 64<<10))
		}
		return rp.get(ctx, w, path, fmt.Sprintf("Range: bytes=%d-%d\r\n", a, a+rs-1), 206, rs, moved)
	})
	if err != nil {
		return nil, err
	}
	return []figure{
		{Name: fmt.Sprintf("%d KiB ranges, %d conns", rs>>10, e.c.conns), Unit: "req/s", Value: st.perSec(st.ops)},
		{Name: "throughput", Unit: "MB/s", Value: st.perSec(st.bytes) / 1e6},
		{Name: "latency p50", Unit: "ms", Value: st.pct(50), Lower: true},
		{Name: "latency p99", Unit: "ms", Value: st.pct(99), Lower: true},
	}, nil
}

// ---------------------------------------------------------------- PUT

// putLarge uploads the big file with one PUT at a time until -duration of
// upload time has passed; each upload is checked on disk, then removed and
// synced outside the timed part.
func putLarge(e *env) ([]figure, error) {
	rel, abs, err := e.fx.upDir(e.t, "put-large", e.round)
	if err != nil {
		return nil, err
	}
	defer settle(abs)
	size := e.c.big
	var total time.Duration
	var n int
	for n == 0 || total < e.c.duration {
		e.prefault(size)
		name := fmt.Sprintf("pl-%d.bin", n)
		e.m.start()
		t0 := time.Now()
		err := e.put(e.ctx, e.url(rel+"/"+name), io.NewSectionReader(e.fx.big, 0, size), size)
		total += time.Since(t0)
		e.m.stop()
		if err != nil {
			return nil, err
		}
		e.prog.add(1, size)
		if err := checkSize(filepath.Join(abs, name), size); err != nil {
			return nil, err
		}
		os.Remove(filepath.Join(abs, name))
		syncAll()
		n++
	}
	return []figure{{Name: "1 upload at a time", Unit: "MB/s", Value: float64(size) * float64(n) / total.Seconds() / 1e6}}, nil
}

// checkSize makes sure an upload landed whole. A server may store it under
// another name (copyparty renames on collision), so a missing file is only
// an error when the folder has no file of that size at all.
func checkSize(p string, size int64) error {
	if st, err := os.Stat(p); err == nil && st.Size() == size {
		return nil
	}
	ents, _ := os.ReadDir(filepath.Dir(p))
	for _, d := range ents {
		if fi, err := d.Info(); err == nil && fi.Mode().IsRegular() && fi.Size() == size {
			return nil
		}
	}
	return fmt.Errorf("upload %s: no file of %d bytes on disk afterwards", p, size)
}

func putSmall(e *env) ([]figure, error) {
	rel, abs, err := e.fx.upDir(e.t, "put-small", e.round)
	if err != nil {
		return nil, err
	}
	defer settle(abs)
	body := make([]byte, e.c.smallSize)
	stream(e.c.seed, "put-small").Read(body)
	st, err := load(e, e.c.conns, false, func(ctx context.Context, w, i int, moved *atomic.Int64) error {
		err := e.put(ctx, e.url(fmt.Sprintf("%s/w%03d-%06d.bin", rel, w, i)), bytes.NewReader(body), int64(len(body)))
		if err == nil {
			moved.Add(int64(len(body)))
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if err := checkSize(filepath.Join(abs, "w000-000000.bin"), int64(len(body))); err != nil {
		return nil, err
	}
	return []figure{
		{Name: fmt.Sprintf("%d B files, %d conns", len(body), e.c.conns), Unit: "req/s", Value: st.perSec(st.ops)},
		{Name: "latency p50", Unit: "ms", Value: st.pct(50), Lower: true},
		{Name: "latency p99", Unit: "ms", Value: st.pct(99), Lower: true},
	}, nil
}

// ---------------------------------------------------------------- archives

// archive downloads the big folder and the folder of small files as one
// tar or zip each, one request at a time, half of -duration each.
func archive(e *env, kind string) ([]figure, error) {
	var figs []figure
	half := *e.c
	half.duration = e.c.duration / 2
	e2 := *e
	e2.c = &half
	for _, f := range []struct {
		dir   string
		files int
		bytes int64
		what  string
	}{
		{fixDir + "/large/", 1, e.c.big, "big folder"},
		{fixDir + "/small/", e.c.smallN, int64(e.c.smallN) * int64(e.c.smallSize), "many files"},
	} {
		u := e.url(f.dir + "?" + kind)
		if err := probeArchive(e, u, kind, f.bytes); err != nil {
			return nil, err
		}
		st, err := load(&e2, 1, false, func(ctx context.Context, w, i int, moved *atomic.Int64) error {
			return e.get(ctx, u, nil, 200, -1, moved, make([]byte, 1<<20))
		})
		if err != nil {
			return nil, err
		}
		if st.bytes/st.ops < f.bytes {
			return nil, fmt.Errorf("%s of %s: %d bytes, less than the %d bytes of its files", kind, f.dir, st.bytes/st.ops, f.bytes)
		}
		if f.files == 1 {
			figs = append(figs, figure{Name: f.what, Unit: "MB/s", Value: float64(f.bytes) * float64(st.ops) / st.elapsed.Seconds() / 1e6})
		} else {
			figs = append(figs, figure{Name: fmt.Sprintf("%s (%d x %d B)", f.what, f.files, e.c.smallSize), Unit: "files/s", Value: float64(f.files) * float64(st.ops) / st.elapsed.Seconds()})
		}
	}
	return figs, nil
}

// probeArchive fetches the start of the archive: a target without archives
// answers an error, its HTML listing or the folder's plain listing, none of
// which starts like a tar or a zip.
func probeArchive(e *env, u, kind string, min int64) error {
	req, _ := http.NewRequestWithContext(e.ctx, "GET", u, nil)
	resp, err := e.t.client().Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	head := make([]byte, 512)
	n, _ := io.ReadFull(resp.Body, head)
	head = head[:n]
	io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != 200 {
		return unsupportedf("GET ?%s answered %s", kind, resp.Status)
	}
	switch kind {
	case "tar":
		if len(head) < 512 || !bytes.HasPrefix(head[257:], []byte("ustar")) {
			return unsupportedf("GET ?tar answered 200 but not a tar (%s)", resp.Header.Get("Content-Type"))
		}
	case "zip":
		if !bytes.HasPrefix(head, []byte("PK\x03\x04")) {
			return unsupportedf("GET ?zip answered 200 but not a zip (%s)", resp.Header.Get("Content-Type"))
		}
	}
	return nil
}

// ---------------------------------------------------------------- mixed

// mixed runs at once: j readers of the big file, c/2 small-file readers,
// 4 small-file writers and one big-file writer.
func mixed(e *env) ([]figure, error) {
	rel, abs, err := e.fx.upDir(e.t, "mixed", e.round)
	if err != nil {
		return nil, err
	}
	defer settle(abs)
	e.prefault(e.c.big)
	body := make([]byte, e.c.smallSize)
	stream(e.c.seed, "mixed").Read(body)
	big, n := e.c.big, e.c.smallN
	type part struct {
		workers int
		cut     bool
		op      func(ctx context.Context, w, i int, moved *atomic.Int64) error
	}
	parts := []part{
		{e.c.jobs, true, func(ctx context.Context, w, i int, moved *atomic.Int64) error {
			return e.get(ctx, e.url(e.fx.bigPath()), nil, 200, big, moved, make([]byte, 1<<20))
		}},
		{max(1, e.c.conns/2), false, func(ctx context.Context, w, i int, moved *atomic.Int64) error {
			return e.get(ctx, e.url(e.fx.smallPath((w*7919+i*104729)%n)), nil, 200, int64(e.c.smallSize), moved, make([]byte, 32<<10))
		}},
		{4, false, func(ctx context.Context, w, i int, moved *atomic.Int64) error {
			err := e.put(ctx, e.url(fmt.Sprintf("%s/s%03d-%06d.bin", rel, w, i)), bytes.NewReader(body), int64(len(body)))
			if err == nil {
				moved.Add(int64(len(body)))
			}
			return err
		}},
		{1, false, func(ctx context.Context, w, i int, moved *atomic.Int64) error {
			err := e.put(ctx, e.url(fmt.Sprintf("%s/big-%d.bin", rel, i)), io.NewSectionReader(e.fx.big, 0, big), big)
			if err == nil {
				moved.Add(big)
			}
			return err
		}},
	}
	stats := make([]*loadStats, len(parts))
	errs := make([]error, len(parts))
	var wg sync.WaitGroup
	e.m.start()
	for i, p := range parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pe := *e
			pe.m = newMeter(0) // the whole run is metered once, below
			stats[i], errs[i] = load(&pe, p.workers, p.cut, p.op)
			pe.m.close()
		}()
	}
	wg.Wait()
	e.m.stop()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return []figure{
		{Name: fmt.Sprintf("GET big, %d readers", parts[0].workers), Unit: "MB/s", Value: stats[0].perSec(stats[0].bytes) / 1e6},
		{Name: fmt.Sprintf("GET small, %d conns", parts[1].workers), Unit: "req/s", Value: stats[1].perSec(stats[1].ops)},
		{Name: "GET small, latency p99", Unit: "ms", Value: stats[1].pct(99), Lower: true},
		{Name: "PUT small, 4 conns", Unit: "req/s", Value: stats[2].perSec(stats[2].ops)},
		{Name: "PUT big, 1 conn", Unit: "MB/s", Value: stats[3].perSec(stats[3].bytes) / 1e6},
	}, nil
}

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// TestUIBench is the browser half of the load harness (bench/ui.sh runs
// it; it skips in the normal suite): hashing throughput of one Web Worker
// with WebCrypto and with hoard's JavaScript SHA-512, and the time from
// drop to done for the same files through hoard's page and copyparty's
// own web UI in the same headless Chromium. Sizes: HOARD_UI_BENCH_BIG
// (bytes of the big file, default 1 GiB), HOARD_UI_BENCH_SMALL (number of
// 4-64 KiB files, default 2000), HOARD_UI_BENCH_HASH (MiB hashed per
// measurement, default 64: Chromium pages a bigger Blob to disk, and its
// worker then fails to read slices back). copyparty runs from COPYPARTY_SRC when set.
func TestUIBench(t *testing.T) {
	if os.Getenv("HOARD_UI_BENCH") == "" {
		t.Skip("a benchmark: run bench/ui.sh (sets HOARD_UI_BENCH=1)")
	}
	envInt := func(k string, def int) int {
		if v, err := strconv.Atoi(os.Getenv(k)); err == nil && v > 0 {
			return v
		}
		return def
	}
	big, small, hashMiB := envInt("HOARD_UI_BENCH_BIG", 1<<30), envInt("HOARD_UI_BENCH_SMALL", 2000), envInt("HOARD_UI_BENCH_HASH", 64)

	rounds := envInt("HOARD_UI_BENCH_ROUNDS", 3)
	parts := os.Getenv("HOARD_UI_BENCH_PARTS") // hash,drop,list; empty: all
	want := func(p string) bool { return parts == "" || strings.Contains(parts, p) }
	// 1. hashing, one worker, on hoard's page
	s := start(t, "-v", t.TempDir()+":/:rw")
	b := newBrowser(t, 1280, 800)
	if want("hash") {
		b.do(t, chromedp.Navigate(s.URL+"/"))
		_, pg := s.do(t, "GET", "/", nil)
		js := uiScriptRE.FindStringSubmatch(string(pg))[1]
		base := js[:strings.LastIndexByte(js, '/')+1]
		for _, c := range []struct {
			fallback bool
			span     int // MiB read at once (the page reads 16 MiB spans)
		}{{false, 1}, {false, 16}, {true, 16}} {
			mbs := evalJS[float64](t, b, fmt.Sprintf(`(async () => {
				const mib = %d, fallback = %v, span = %d;
				const piece = crypto.getRandomValues(new Uint8Array(65536));
				// one buffer, not a Blob of thousands of parts: Chromium's worker
				// cannot always read slices of those back ("could not be read")
				const buf = new Uint8Array(mib << 20); for (let o = 0; o < buf.length; o += piece.length) buf.set(piece, o);
				const blob = new Blob([buf]);
				const w = new Worker('%shashw.js', { type: 'module' });
				const one = (id, start, end) => new Promise((res, rej) => { w.onmessage = (e) => e.data.error ? rej(new Error(e.data.error)) : res(e.data); w.postMessage({ id, file: blob, start, end, cs: 1 << 20, fallback }); });
				await one(0, 0, 1 << 20); // warm up
				const t0 = performance.now();
				for (let i = 0; i < mib; i += span) await one(i + 1, i << 20, Math.min(mib, i + span) << 20);
				const s = (performance.now() - t0) / 1000;
				w.terminate();
				return mib / s;
			})()`, hashMiB, c.fallback, c.span, base))
			name := fmt.Sprintf("WebCrypto, %d MiB per read", c.span)
			if c.fallback {
				name = "JS SHA-512 (fallback)"
			}
			t.Logf("hashing, one worker, %s: %.1f MB/s (MiB/s)", name, mbs)
		}
	}

	cp := os.Getenv("COPYPARTY_SRC")
	if cp == "" {
		t.Log("copyparty: skipped (set COPYPARTY_SRC to a copyparty source tree)")
	}
	type server struct {
		name  string
		url   func(t *testing.T, dir string) (string, int) // and the server's pid
		setup string                                       // JavaScript run on the page before a drop
	}
	startHoard := func(t *testing.T, dir string) (string, int) {
		s := start(t, "-v", dir+":/:rw")
		return s.URL + "/", s.cmd.Process.Pid
	}
	servers := []server{{"hoard", startHoard, ""}}
	// HOARD_UI_BENCH_VARIANTS: more runs of hoard's page in the same
	// alternating rounds with its tuning knobs set, e.g. "w3=workers:3,conns:6 c6=conns:6"
	// (localStorage hoard.workers, hoard.conns: hashing workers, chunk connections)
	for _, v := range strings.Fields(os.Getenv("HOARD_UI_BENCH_VARIANTS")) {
		name, knobs, ok := strings.Cut(v, "=")
		if !ok {
			t.Fatalf("HOARD_UI_BENCH_VARIANTS: %q is not name=knob:value,...", v)
		}
		js := ""
		for _, kv := range strings.Split(knobs, ",") {
			k, val, _ := strings.Cut(kv, ":")
			if _, err := strconv.Atoi(val); err != nil || (k != "workers" && k != "conns") {
				t.Fatalf("HOARD_UI_BENCH_VARIANTS: %q: knobs are workers:N and conns:N", kv)
			}
			js += fmt.Sprintf("localStorage.setItem('hoard.%s', '%s'), ", k, val)
		}
		servers = append(servers, server{"hoard-" + name, startHoard, js})
	}
	if cp != "" {
		servers = append(servers, server{"copyparty", func(t *testing.T, dir string) (string, int) { return startCopyparty(t, cp, dir) }, ""})
	}
	browserPID := chromedp.FromContext(b.ctx).Browser.Process().Pid
	if want("drop") {
		// 2. drop to done, the big file and the small files apart, each round
		// on fresh servers (a new port is a new origin: no cached assets, no
		// remembered hashes), hoard and copyparty alternating.
		src := t.TempDir()
		writeFile(t, src, "big/big.bin", seededBytes(1, big))
		wantBig := map[string]int64{"big/big.bin": int64(big)}
		wantSmall := map[string]int64{}
		for i := range small {
			n := 4<<10 + (i*7919)%(60<<10)
			rel := fmt.Sprintf("small/d%02d/f%05d.bin", i%40, i)
			writeFile(t, src, rel, seededBytes(uint64(10+i), n))
			wantSmall[rel] = int64(n)
		}
		for _, set := range []struct {
			name string
			want map[string]int64
		}{{fmt.Sprintf("1 file of %d bytes", big), wantBig}, {fmt.Sprintf("%d files of 4-64 KiB", small), wantSmall}} {
			folder := filepath.Join(src, strings.SplitN(firstKey(set.want), "/", 2)[0])
			times := map[string][]time.Duration{}
			for r := range rounds {
				for _, sv := range servers {
					dst := t.TempDir()
					url, pid := sv.url(t, dst)
					var cpu [2]time.Duration // server, browser (all its processes) over the drop
					d := dropToDone(t, b, url, sv.setup, folder, dst, set.want, func(start bool) {
						now := [2]time.Duration{cpuTree(pid), cpuTree(browserPID)}
						if start {
							cpu = now
						} else {
							cpu = [2]time.Duration{now[0] - cpu[0], now[1] - cpu[1]}
						}
					})
					times[sv.name] = append(times[sv.name], d)
					t.Logf("round %d: %s: drop to done %v for %s; CPU over it: server %v, browser %v (2 cores: %.0f%% busy with these two)", r+1, sv.name, d, set.name,
						cpu[0].Round(time.Millisecond), cpu[1].Round(time.Millisecond), 100*(cpu[0]+cpu[1]).Seconds()/(2*d.Seconds()))
					if strings.HasPrefix(sv.name, "hoard") {
						// where the page's time went: the workers' reading and
						// digesting (summed over workers), and the first file's steps
						t.Logf("round %d: hoard's page: %s", r+1, evalJS[string](t, b, `(() => {
							const u = window.hoardUp, s = u.stats, j = u.jobs[0].tm, ms = (x) => x === undefined ? '-' : Math.round(x - j.add) + ' ms';
							return 'workers read ' + Math.round(s.read) + ' ms, digest ' + Math.round(s.digest) + ' ms for ' + (s.hashed >> 20) + ' MiB (' + Math.round((s.hashed / 1048576) / ((s.read + s.digest) / 1000)) + ' MB/s per worker busy); ' +
								u.pool.n + ' workers, ' + u.conns + ' connections; first file: hashing from ' + ms(j.hash) + ', hashed ' + ms(j.hashed) + ', handshake answered ' + ms(j.shaken) + ', done ' + ms(j.done) + '; ' + s.posts + ' posts';
						})()`))
					}
					os.RemoveAll(dst)
				}
			}
			summarize(t, "drop to done, "+set.name, times, "s")
		}
	}

	if want("list") {
		// 3. a 10,000-entry folder: page weight and the time from navigation
		// to the whole listing in the page.
		entries := envInt("HOARD_UI_BENCH_ENTRIES", 10000)
		last := fmt.Sprintf("f%05d.bin", entries-1)
		b.do(t, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := cdp.Call(ctx, tg, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: `(() => {
				const want = 'a[href*="f00000.bin"]', all = 'a[href*="` + last + `"]';
				window.__lsFirst = 0; window.__lsAll = 0; window.__lsLast = 0;
				new MutationObserver(() => {
					const t = performance.now();
					window.__lsLast = t;
					if (!window.__lsFirst && document.querySelector(want)) window.__lsFirst = t;
					if (!window.__lsAll && document.querySelector(all)) window.__lsAll = t;
				}).observe(document, { childList: true, subtree: true });
			})()`})
			return err
		}))
		weight, full, settled := map[string][]time.Duration{}, map[string][]time.Duration{}, map[string][]time.Duration{}
		for r := range rounds {
			for _, sv := range servers {
				if sv.setup != "" {
					continue // the knobs are the uploader's
				}
				// each server and round on its own copy: a second hoard may
				// not share a state folder with the one still running
				lsDir := t.TempDir()
				for i := range entries {
					writeFile(t, lsDir, fmt.Sprintf("many/f%05d.bin", i), []byte("x"))
				}
				u, _ := sv.url(t, lsDir)
				url := u + "many/"
				b.do(t, chromedp.Navigate(url))
				// settled: no change to the page for 1 s
				for prev := -1.0; ; {
					time.Sleep(time.Second)
					l := evalJS[float64](t, b, `window.__lsLast`)
					if l == prev {
						break
					}
					prev = l
				}
				m := evalJS[map[string]float64](t, b, `(() => {
					const nav = performance.getEntriesByType('navigation')[0];
					let bytes = nav.transferSize, body = nav.decodedBodySize;
					for (const e of performance.getEntriesByType('resource')) { bytes += e.transferSize; body += e.decodedBodySize; }
					return { bytes, body, first: window.__lsFirst, all: window.__lsAll, last: window.__lsLast, n: document.querySelectorAll('a[href*=".bin"]').length };
				})()`)
				if m["first"] == 0 {
					b.screenshot(t, "bench-listing-"+sv.name)
					t.Fatalf("%s: the listing never showed its first entry (links: %v)", sv.name, m["n"])
				}
				ms := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
				weight[sv.name] = append(weight[sv.name], time.Duration(m["bytes"]))
				full[sv.name] = append(full[sv.name], ms(m["first"]))
				settled[sv.name] = append(settled[sv.name], ms(m["last"]))
				t.Logf("round %d: %s: %d-entry folder: %.0f bytes transferred (%.0f decoded), first entry shown at %v, last entry at %v (0: not rendered; %v entries in the page), settled at %v", r+1, sv.name, entries, m["bytes"], m["body"], ms(m["first"]), ms(m["all"]), m["n"], ms(m["last"]))
			}
		}
		summarize(t, fmt.Sprintf("%d-entry folder, bytes transferred", entries), weight, "bytes")
		summarize(t, fmt.Sprintf("%d-entry folder, navigation to first listing", entries), full, "s")
		summarize(t, fmt.Sprintf("%d-entry folder, navigation to settled page", entries), settled, "s")
	}
}

func firstKey(m map[string]int64) string {
	for k := range m {
		return k
	}
	return ""
}

// summarize logs each server's median and hoard's ratio to copyparty (for
// times: copyparty / hoard, so > 1 means hoard is faster; for bytes the
// same: copyparty's bytes / hoard's).
func summarize(t *testing.T, what string, vals map[string][]time.Duration, unit string) {
	t.Helper()
	med := map[string]time.Duration{}
	for k, v := range vals {
		v = slices.Clone(v)
		slices.Sort(v)
		med[k] = v[len(v)/2]
	}
	show := func(d time.Duration) string {
		if unit == "bytes" {
			return fmt.Sprintf("%d bytes", int64(d))
		}
		return d.Round(time.Millisecond).String()
	}
	line := fmt.Sprintf("median %s: hoard %s", what, show(med["hoard"]))
	var variants []string
	for k := range med {
		if strings.HasPrefix(k, "hoard-") {
			variants = append(variants, k)
		}
	}
	slices.Sort(variants)
	for _, k := range variants {
		line += fmt.Sprintf(", %s %s (%.2fx hoard's)", k, show(med[k]), float64(med["hoard"])/float64(med[k]))
	}
	if c, ok := med["copyparty"]; ok {
		line += fmt.Sprintf(", copyparty %s, copyparty/hoard %.2fx", show(c), float64(c)/float64(med["hoard"]))
		for _, k := range variants {
			line += fmt.Sprintf(", copyparty/%s %.2fx", k, float64(c)/float64(med[k]))
		}
	}
	t.Log(line)
}

// startCopyparty runs copyparty from its source tree on a free loopback
// port, serving dir read-write for everyone, and returns its URL.
func startCopyparty(t *testing.T, src, dir string) (string, int) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	py := os.Getenv("PY")
	if py == "" {
		py = "python3"
	}
	cmd := exec.Command(py, "-m", "copyparty", "-p", strconv.Itoa(port), "-i", "127.0.0.1", "-q", "-v", dir+"::rw")
	cmd.Env = append(os.Environ(), "PYTHONPATH="+src)
	cmd.Dir = t.TempDir()
	out := &syncBuf{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	for i := 0; ; i++ {
		if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			c.Close()
			break
		}
		if i > 600 {
			t.Fatalf("copyparty did not start:\n%s", out)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Sprintf("http://127.0.0.1:%d/", port), cmd.Process.Pid
}

// cpuTree is the CPU time (user and system) used so far by process pid and
// every process below it, as /proc tells; 0 off Linux.
func cpuTree(pid int) time.Duration {
	type proc struct{ ppid, ticks int64 }
	procs := map[int64]proc{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		id, err := strconv.ParseInt(e.Name(), 10, 64)
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// the fields after the command's closing parenthesis: state ppid ...
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if len(f) < 13 {
			continue
		}
		ppid, _ := strconv.ParseInt(f[1], 10, 64)
		ut, _ := strconv.ParseInt(f[11], 10, 64)
		st, _ := strconv.ParseInt(f[12], 10, 64)
		procs[id] = proc{ppid, ut + st}
	}
	var ticks int64
	for id, p := range procs {
		for q, n := id, 0; n < 64; n++ { // up the parents to pid, or not
			if q == int64(pid) {
				ticks += p.ticks
				break
			}
			pp, ok := procs[q]
			if !ok {
				break
			}
			q = pp.ppid
		}
	}
	return time.Duration(ticks) * time.Second / 100 // USER_HZ is 100 on Linux
}

// dropToDone loads the page, drops folder onto it and waits until every
// file of want has its size in dst and no partial file is left.
func dropToDone(t *testing.T, b *browser, url, setup, folder, dst string, want map[string]int64, mark func(start bool)) time.Duration {
	t.Helper()
	b.do(t, chromedp.Navigate(url))
	// copyparty's page asks before an upload starts; this skips the question
	evalJS[bool](t, b, `(localStorage.setItem('ask_up', '0'), `+setup+` true)`)
	b.do(t, chromedp.Navigate(url))
	time.Sleep(500 * time.Millisecond)
	mark(true)
	t0 := time.Now()
	b.drop(t, folder)
	deadline := t0.Add(30 * time.Minute)
	for {
		evalJS[bool](t, b, `(() => { const o = document.getElementById('modal-ok'); if (o) o.click(); return true; })()`)
		if treeDone(dst, want) {
			d := time.Since(t0)
			mark(false)
			return d
		}
		if time.Now().After(deadline) {
			b.screenshot(t, "bench-stuck")
			t.Fatalf("%s: not done after 30 min", url)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func treeDone(dst string, want map[string]int64) bool {
	n := 0
	partial := false
	filepath.WalkDir(dst, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if strings.HasSuffix(p, ".PARTIAL") {
			partial = true
		}
		rel, _ := filepath.Rel(dst, p)
		if sz, ok := want[filepath.ToSlash(rel)]; ok {
			if fi, err := d.Info(); err == nil && fi.Size() == sz {
				n++
			}
		}
		return nil
	})
	return !partial && n == len(want)
}

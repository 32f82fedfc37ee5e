package e2e

import (
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestUIBench is the browser half of the load harness (bench/ui.sh runs
// it; it skips in the normal suite): hashing throughput of one Web Worker
// with WebCrypto and with hoard's JavaScript SHA-512, and the time from
// drop to done for the same files through hoard's page and copyparty's
// own web UI in the same headless Chromium. Sizes: HOARD_UI_BENCH_BIG
// (bytes of the big file, default 1 GiB), HOARD_UI_BENCH_SMALL (number of
// 4-64 KiB files, default 2000), HOARD_UI_BENCH_HASH (MiB hashed per
// measurement, default 256). copyparty runs from COPYPARTY_SRC when set.
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
	big, small, hashMiB := envInt("HOARD_UI_BENCH_BIG", 1<<30), envInt("HOARD_UI_BENCH_SMALL", 2000), envInt("HOARD_UI_BENCH_HASH", 256)

	// 1. hashing, one worker, on hoard's page
	s := start(t, "-v", t.TempDir()+":/:rw")
	b := newBrowser(t, 1280, 800)
	b.do(t, chromedp.Navigate(s.URL+"/"))
	_, page := s.do(t, "GET", "/", nil)
	js := uiScriptRE.FindStringSubmatch(string(page))[1]
	base := js[:strings.LastIndexByte(js, '/')+1]
	for _, fallback := range []bool{false, true} {
		mbs := evalJS[float64](t, b, fmt.Sprintf(`(async () => {
			const mib = %d, fallback = %v;
			const piece = crypto.getRandomValues(new Uint8Array(65536));
			const parts = []; for (let i = 0; i < mib * 16; i++) parts.push(piece);
			const blob = new Blob(parts);
			const w = new Worker('%shashw.js', { type: 'module' });
			const one = (id, start, end) => new Promise((res) => { w.onmessage = (e) => res(e.data); w.postMessage({ id, file: blob, start, end, fallback }); });
			await one(0, 0, 1 << 20); // warm up
			const t0 = performance.now();
			for (let i = 0; i < mib; i++) await one(i + 1, i << 20, (i + 1) << 20);
			const s = (performance.now() - t0) / 1000;
			w.terminate();
			return mib / s;
		})()`, hashMiB, fallback, base))
		name := "WebCrypto"
		if fallback {
			name = "JS SHA-512 (fallback)"
		}
		t.Logf("hashing, one worker, %s: %.1f MB/s (MiB/s)", name, mbs)
	}

	// 2. drop to done: hoard, then copyparty
	src := t.TempDir()
	writeFile(t, src, "drop/big.bin", seededBytes(1, big))
	want := map[string]int64{"drop/big.bin": int64(big)}
	for i := range small {
		n := 4<<10 + (i*7919)%(60<<10)
		rel := fmt.Sprintf("drop/d%02d/f%05d.bin", i%40, i)
		writeFile(t, src, rel, seededBytes(uint64(10+i), n))
		want[rel] = int64(n)
	}
	hoardDst := t.TempDir()
	hs := start(t, "-v", hoardDst+":/:rw")
	t.Logf("hoard: drop to done %v for %d bytes + %d small files", dropToDone(t, b, hs.URL+"/", filepath.Join(src, "drop"), hoardDst, want), big, small)

	cp := os.Getenv("COPYPARTY_SRC")
	if cp == "" {
		t.Log("copyparty: skipped (set COPYPARTY_SRC to a copyparty source tree)")
		return
	}
	cpDst := t.TempDir()
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
	cmd := exec.Command(py, "-m", "copyparty", "-p", strconv.Itoa(port), "-i", "127.0.0.1", "-q", "-v", cpDst+"::rw")
	cmd.Env = append(os.Environ(), "PYTHONPATH="+cp)
	cmd.Dir = t.TempDir()
	out := &syncBuf{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	url := fmt.Sprintf("http://127.0.0.1:%d/", port)
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
	b.do(t, chromedp.Navigate(url))
	evalJS[bool](t, b, `(localStorage.setItem('ask_up', '0'), true)`)
	t.Logf("copyparty: drop to done %v for %d bytes + %d small files", dropToDone(t, b, url, filepath.Join(src, "drop"), cpDst, want), big, small)
}

// dropToDone loads the page, drops folder onto it and waits until every
// file of want has its size in dst and no partial file is left.
func dropToDone(t *testing.T, b *browser, url, folder, dst string, want map[string]int64) time.Duration {
	t.Helper()
	b.do(t, chromedp.Navigate(url))
	time.Sleep(500 * time.Millisecond)
	t0 := time.Now()
	b.drop(t, folder)
	deadline := t0.Add(30 * time.Minute)
	for {
		evalJS[bool](t, b, `(() => { const o = document.getElementById('modal-ok'); if (o) o.click(); return true; })()`)
		if treeDone(dst, want) {
			return time.Since(t0)
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

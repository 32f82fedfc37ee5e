package e2e

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestUIBrowserRedrawRate: the upload panel redraws at most about ten
// times a second however often the uploader reports a change (every
// chunk post's progress event did, and the panel was rebuilt in every
// frame: CPU a big file's hashing and sending need on a 2-core machine),
// and still shows the upload through to its end.
func TestUIBrowserRedrawRate(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	data := seededBytes(17, 3<<20)
	writeFile(t, src, "redraw.bin", data)
	s := start(t, "-v", dst+":/:rw")
	b := newBrowser(t, 1280, 800)
	b.do(t, chromedp.Navigate(s.URL+"/"))
	b.waitJS(t, "the drop zone", `!!document.querySelector('#up')`, 10*time.Second)
	evalJS[bool](t, b, `(window.hoardUp.setPaused(true), true)`)
	b.dropUntilQueued(t, filepath.Join(src, "redraw.bin"))
	b.waitJS(t, "the upload panel", `!!document.getElementById('upstate')`, 10*time.Second)

	// a change reported every few milliseconds for two seconds: count the
	// panel's redraws (each replaces #upstate)
	got := evalJS[map[string]float64](t, b, `(async () => {
		let redraws = 0, reports = 0;
		const mo = new MutationObserver((ms) => { for (const m of ms) for (const n of m.addedNodes) if (n.id === 'upstate') redraws++; });
		mo.observe(document.body, { childList: true, subtree: true });
		const t0 = performance.now();
		while (performance.now() - t0 < 2000) { window.hoardUp.onchange(); reports++; await new Promise((r) => setTimeout(r, 2)); }
		await new Promise((r) => setTimeout(r, 300));
		mo.disconnect();
		return { redraws, reports, secs: (performance.now() - t0) / 1000 };
	})()`)
	rate := got["redraws"] / got["secs"]
	t.Logf("%v reports of a change, %v redraws in %.2f s: %.1f a second", got["reports"], got["redraws"], got["secs"], rate)
	if got["reports"] < 100 {
		t.Fatalf("only %v reports in 2 s: the test did not press the panel", got["reports"])
	}
	if got["redraws"] < 4 {
		t.Errorf("%v redraws in %.1f s of changes: the panel is not kept up to date", got["redraws"], got["secs"])
	}
	if rate > 12 {
		t.Errorf("the upload panel redrew %.1f times a second, want at most about 10", rate)
	}

	// the upload goes on and the panel shows its end
	evalJS[bool](t, b, `(window.hoardUp.setPaused(false), true)`)
	b.waitJS(t, "the upload to finish", `window.hoardUp.totals().done === 1`, time.Minute)
	b.waitJS(t, "the panel to show the end", `/100%/.test(document.getElementById('upstat').textContent)`, 10*time.Second)
	wantFile(t, dst, "redraw.bin", data)
	b.quiet(t)
}

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// TestUIBrowserBigFolder: a folder of 10,000 entries shows its first rows
// at once and puts only a screenful or so of rows in the page (the rest
// follow on scroll), while sorting, select-all and the keyboard cover
// every entry, including those not yet in the page.
func TestUIBrowserBigFolder(t *testing.T) {
	const n = 10000
	dir := t.TempDir()
	// distinct sizes 1..n in a scrambled order (37 is prime to n)
	big, small := "", ""
	bySize := map[int]string{}
	for i := range n {
		sz := 1 + (i*37)%n
		name := fmt.Sprintf("f%05d.bin", i)
		bySize[sz] = name
		writeFile(t, dir, "many/"+name, make([]byte, sz))
		if sz == n {
			big = name
		}
		if sz == 1 {
			small = name
		}
	}
	s := start(t, "-v", dir+":/:rwmd")
	b := newBrowser(t, 1280, 800)
	// when the script's listing first shows a row, in ms since navigation
	b.do(t, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: `(() => {
			window.__firstRow = 0;
			new MutationObserver(() => {
				if (!window.__firstRow && document.body && document.body.classList.contains('js') && document.querySelector('table.ls tbody a.f')) window.__firstRow = performance.now();
			}).observe(document, { childList: true, subtree: true });
		})()`})
		return err
	}))
	b.do(t, chromedp.Navigate(s.URL+"/many/"))
	b.waitJS(t, "the listing", `window.__firstRow > 0`, 30*time.Second)
	time.Sleep(time.Second) // let it settle: whatever it renders, it has rendered
	first := evalJS[float64](t, b, `window.__firstRow`)
	rows := evalJS[int](t, b, `document.querySelectorAll('table.ls tbody tr[data-i]').length`)
	t.Logf("%d entries: the script's listing showed its first row %.0f ms after navigation, %d rows in the page", n, first, rows)
	if rows < 30 || rows > 1000 {
		t.Errorf("%d rows in the page for %d entries: want a screenful or so (30-1000), the rest on scroll", rows, n)
	}
	if first > 5000 {
		t.Errorf("the first row took %.0f ms", first)
	}
	b.shots(t, "big-folder")
	t.Logf("the HTML was parsed %.0f ms after navigation", evalJS[float64](t, b, `performance.getEntriesByType("navigation")[0].domInteractive`))

	rowCount := func() int { return evalJS[int](t, b, `document.querySelectorAll('table.ls tbody tr[data-i]').length`) }
	focused := func() string {
		return evalJS[string](t, b, `document.activeElement ? document.activeElement.textContent : ''`)
	}
	blur := func() { evalJS[bool](t, b, `(document.activeElement && document.activeElement.blur(), true)`) }

	// select all: every entry, not only those in the page
	b.do(t, chromedp.Click(chromedp.CSS(`input[aria-label="select all"]`)))
	b.waitJS(t, "all selected", fmt.Sprintf(`document.querySelector('.info').textContent.includes('%d selected')`, n), 5*time.Second)
	b.clickButton(t, "delete")
	b.waitJS(t, "the confirmation", `!!document.querySelector('dialog[open]')`, 5*time.Second)
	if title := evalJS[string](t, b, `document.querySelector('dialog[open] h2').textContent`); title != fmt.Sprintf("delete %d item(s)?", n) {
		t.Errorf("delete of select-all asks %q", title)
	}
	b.clickButton(t, "no")
	b.waitJS(t, "the dialog closed", `!document.querySelector('dialog[open]')`, 5*time.Second)
	b.do(t, chromedp.Click(chromedp.CSS(`input[aria-label="select all"]`)))
	b.waitJS(t, "none selected", `!document.querySelector('.info').textContent.includes('selected')`, 5*time.Second)
	blur()
	b.do(t, chromedp.KeyEvent("a", chromedp.KeyModifiers(chromedp.ModifierCtrl)))
	b.waitJS(t, "all selected by ctrl+a", fmt.Sprintf(`document.querySelector('.info').textContent.includes('%d selected')`, n), 5*time.Second)
	if c, all := evalJS[int](t, b, `document.querySelectorAll('table.ls tbody tr.sel').length`), rowCount(); c != all {
		t.Errorf("%d of the %d rows in the page show as selected", c, all)
	}

	// scrolling to the end brings more rows, selected like the rest
	before := rowCount()
	evalJS[bool](t, b, `(window.scrollTo(0, document.body.scrollHeight), true)`)
	b.waitJS(t, "more rows on scroll", fmt.Sprintf(`document.querySelectorAll('table.ls tbody tr[data-i]').length > %d`, before), 10*time.Second)
	if c, all := evalJS[int](t, b, `document.querySelectorAll('table.ls tbody tr.sel').length`), rowCount(); c != all || all >= n {
		t.Errorf("after a scroll %d of the %d rows in the page show as selected (of %d entries)", c, all, n)
	}
	if !strings.Contains(b.text(t), fmt.Sprintf("show all %d", n)) {
		t.Error("no show-all button while rows wait")
	}

	// sort by size, largest first: the largest entry was not in the page
	b.clickButton(t, "size")
	b.waitJS(t, "sorted by size", `document.querySelector('th[aria-sort=ascending]') !== null`, 5*time.Second)
	b.do(t, chromedp.Click(chromedp.CSS(`th[aria-sort=ascending] button`)))
	b.waitJS(t, "sorted by size, descending", `document.querySelector('th[aria-sort=descending]') !== null`, 5*time.Second)
	if got := evalJS[string](t, b, `document.querySelector('table.ls tbody a.f').textContent`); got != big {
		t.Errorf("first row sorted by size descending: %q, want the largest, %q", got, big)
	}
	// keyboard: End reaches the last entry of all, Home the first, and
	// stepping down walks past the rows first put in the page
	blur()
	b.do(t, chromedp.KeyEvent(kb.End))
	b.waitJS(t, "End focused an entry", `document.activeElement && document.activeElement.matches('a.f')`, 5*time.Second)
	if got := focused(); got != small {
		t.Errorf("End focused %q, want the smallest, %q", got, small)
	}
	b.do(t, chromedp.KeyEvent(kb.Home))
	if got := focused(); got != big {
		t.Errorf("Home focused %q, want %q", got, big)
	}
	for range 250 {
		b.do(t, chromedp.KeyEvent("j"))
	}
	want := bySize[n-250]
	if got := focused(); got != want || got == "" {
		t.Errorf("after 250 steps down the focus is on %q, want %q", got, want)
	}

	// End put every row in the page: all selected, nothing left to show
	if c := evalJS[int](t, b, `document.querySelectorAll('table.ls tbody tr.sel').length`); c != n {
		t.Errorf("%d of %d rows show as selected once all are in the page", c, n)
	}
	if strings.Contains(b.text(t), "show all") {
		t.Error("the show-all button stays after every row is shown")
	}
	b.quiet(t)
}

// TestUIListingNoscript: the HTML listing of a big folder puts its first
// rows in a table and the rest in a <noscript>, so a browser running the
// script does not build and lay out thousands of rows it replaces at once,
// while a browser without script still shows every entry.
func TestUIListingNoscript(t *testing.T) {
	const n = 3000
	dir := t.TempDir()
	for i := range n {
		writeFile(t, dir, fmt.Sprintf("many/g%04d <i>.txt", i), []byte("x"))
	}
	s := start(t, "-v", dir+":/:r")
	_, body := s.do(t, "GET", "/many/", nil)
	page := string(body)
	head, tail, ok := strings.Cut(page, "<noscript>")
	if !ok {
		t.Fatalf("no <noscript> in the listing of %d entries", n)
	}
	if c := strings.Count(head, "<tr>"); c > 300 {
		t.Errorf("%d rows outside the <noscript>", c)
	}
	for i := range n {
		if !strings.Contains(page, fmt.Sprintf(`g%04d &lt;i&gt;.txt</a>`, i)) {
			t.Fatalf("entry %d missing from the HTML listing", i)
		}
	}
	if !strings.Contains(tail, "</noscript>") {
		t.Error("the <noscript> is not closed")
	}
	// a small folder has no <noscript>
	writeFile(t, dir, "few/a.txt", []byte("a"))
	if _, body := s.do(t, "GET", "/few/", nil); strings.Contains(string(body), "noscript") {
		t.Error("a small folder's listing has a <noscript>")
	}

	// Chromium without script shows all of them; with script, the page
	// holds no table of them, only the script's first rows.
	b := newBrowser(t, 1280, 800)
	b.do(t, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true})
		return err
	}))
	b.do(t, chromedp.Navigate(s.URL+"/many/"))
	if c := evalJS[int](t, b, `document.querySelectorAll('table.ls a').length`); c != n+1 {
		t.Errorf("without script the page shows %d links, want %d entries and ../", c, n)
	}
	b.screenshot(t, "noscript")
	evalJS[bool](t, b, `(window.scrollTo(0, 6000), true)`)
	b.screenshot(t, "noscript-seam")
	b.do(t, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: false})
		return err
	}))
	b.do(t, chromedp.Navigate(s.URL+"/many/"))
	b.waitJS(t, "the script's listing", `!!document.querySelector('#rows a.f')`, 20*time.Second)
	if c := evalJS[int](t, b, `document.querySelectorAll('a').length`); c > 1000 {
		t.Errorf("with script the page holds %d links for %d entries", c, n)
	}
	b.quiet(t)
}

// TestUIBrowserFindAll: in a folder of 10,000 entries, of which only the
// first rows are in the page, the page's filter box finds an entry far
// past them (it looks at every entry, not the page), and the browser's own
// find (Ctrl+F) gets every row put in the page before its bar opens.
func TestUIBrowserFindAll(t *testing.T) {
	const n = 10000
	dir := t.TempDir()
	for i := range n {
		writeFile(t, dir, fmt.Sprintf("many/f%05d.bin", i), []byte("x"))
	}
	writeFile(t, dir, "many/<img src=x onerror=alert(1)> & co.txt", []byte("y"))
	s := start(t, "-v", dir+":/:rwmd")
	b := newBrowser(t, 1280, 800)
	b.do(t, chromedp.Navigate(s.URL+"/many/"))
	rows := `document.querySelectorAll('table.ls tbody tr[data-i]').length`
	b.waitJS(t, "the listing", rows+` > 0 && !!document.getElementById('filt')`, 30*time.Second)
	if c := evalJS[int](t, b, rows); c >= n {
		t.Fatalf("%d rows in the page at first: the test needs a folder shown in slices", c)
	}
	if evalJS[bool](t, b, `document.body.innerText.includes('f09876.bin')`) {
		t.Fatal("f09876.bin is in the page before any search")
	}
	// the filter box: an entry far past the rows in the page
	b.do(t, chromedp.Click(chromedp.ID("filt")), chromedp.SendKeys(chromedp.ID("filt"), "f0987"))
	b.waitJS(t, "the filter's rows", rows+` === 10`, 10*time.Second)
	got := evalJS[[]string](t, b, `[...document.querySelectorAll('table.ls tbody a.f')].map((a) => a.textContent)`)
	for i, g := range got {
		if want := fmt.Sprintf("f0987%d.bin", i); g != want {
			t.Errorf("filtered row %d: %q, want %q", i, g, want)
		}
	}
	if !strings.Contains(b.text(t), fmt.Sprintf("10 of %d entries match", n+1)) {
		t.Errorf("the page does not say how many match:\n%.400s", b.text(t))
	}
	if id := evalJS[string](t, b, `document.activeElement.id`); id != "filt" {
		t.Errorf("typing in the filter moved the focus to %q", id)
	}
	b.shots(t, "filter")
	// a name with markup is matched and shown as text
	clear := func() { evalJS[bool](t, b, `(document.getElementById('filt').value = '', true)`) }
	clear()
	b.do(t, chromedp.SendKeys(chromedp.ID("filt"), "<img src"))
	b.waitJS(t, "the odd name", rows+` === 1`, 10*time.Second)
	if got := evalJS[string](t, b, `document.querySelector('table.ls tbody a.f').textContent`); got != "<img src=x onerror=alert(1)> & co.txt" {
		t.Errorf("the odd name shows as %q", got)
	}
	if evalJS[int](t, b, `document.querySelectorAll('table.ls tbody img').length`) != 0 {
		t.Error("a name's markup became an element")
	}
	// nothing matches: said so
	b.do(t, chromedp.SendKeys(chromedp.ID("filt"), "zzz"))
	b.waitJS(t, "no match", `document.body.innerText.includes('nothing here matches the filter')`, 10*time.Second)
	// cleared: the folder again, in slices
	clear()
	b.do(t, chromedp.SendKeys(chromedp.ID("filt"), "f"), chromedp.SendKeys(chromedp.ID("filt"), kb.Backspace))
	b.waitJS(t, "the whole folder again", rows+` > 0 && `+rows+` < `+fmt.Sprint(n), 10*time.Second)
	// Ctrl+F: every row in the page, for the browser's own find
	evalJS[bool](t, b, `(document.activeElement && document.activeElement.blur(), true)`)
	b.do(t, chromedp.KeyEvent("f", chromedp.KeyModifiers(chromedp.ModifierCtrl)))
	b.waitJS(t, "every row after Ctrl+F", rows+` === `+fmt.Sprint(n+1), 20*time.Second)
	if !evalJS[bool](t, b, `document.body.innerText.includes('f09876.bin')`) {
		t.Error("after Ctrl+F the page's text lacks f09876.bin")
	}
	b.quiet(t)
}

// TestUIBrowserToastsCapped: a move of seven files that all fail (each
// name is taken in the destination) says so per file, but the page shows
// at most five messages at once, the newest; a click dismisses one; and
// nothing moved on disk.
func TestUIBrowserToastsCapped(t *testing.T) {
	dir := t.TempDir()
	for i := 1; i <= 7; i++ {
		writeFile(t, dir, fmt.Sprintf("x%d.txt", i), []byte("src"))
		writeFile(t, dir, fmt.Sprintf("dst/x%d.txt", i), []byte("dst"))
	}
	s := start(t, "-v", dir+":/:rwmd")
	b := newBrowser(t, 1280, 800)
	b.do(t, chromedp.Navigate(s.URL+"/"))
	for i := 1; i <= 7; i++ {
		b.selectRow(t, fmt.Sprintf("x%d.txt", i))
	}
	// the most toasts the page ever held, counted as they come
	evalJS[bool](t, b, `(() => { window.__maxToasts = 0; new MutationObserver(() => {
		const n = document.querySelectorAll('.toasts .toast').length;
		if (n > window.__maxToasts) window.__maxToasts = n; }).observe(document.body, { childList: true, subtree: true }); return true; })()`)
	b.clickButton(t, "move")
	b.answer(t, "/dst/")
	b.waitJS(t, "the last file's error", `[...document.querySelectorAll('.toasts .toast.bad')].some((x) => x.textContent.startsWith('x7.txt: '))`, 10*time.Second)
	if n := evalJS[int](t, b, `window.__maxToasts`); n != 5 {
		t.Errorf("the page held up to %d toasts at once, want 5 (seven failures, capped)", n)
	}
	// in the bottom right corner, clear of the middle of the listing: the
	// names (left) and the grid's first tiles stay visible
	if where := evalJS[string](t, b, `(() => { const r = document.querySelector('.toasts').getBoundingClientRect();
		const bad = [];
		if (r.left < innerWidth / 2) bad.push('starts at x=' + Math.round(r.left) + ' of ' + innerWidth);
		if (r.bottom > innerHeight || r.right > innerWidth) bad.push('runs off the page');
		if (r.width > 420) bad.push('is ' + Math.round(r.width) + ' px wide');
		const nm = document.querySelector('table.ls tbody tr td a');
		if (nm) { const n = nm.getBoundingClientRect(); if (n.right > r.left && n.left < r.right && n.bottom > r.top && n.top < r.bottom) bad.push('covers the first name'); }
		if ([...document.querySelectorAll('.toasts .toast.bad')].some((x) => x.getAttribute('role') !== 'alert')) bad.push('an error is not role=alert');
		return bad.join(', '); })()`); where != "" {
		t.Errorf("the messages' box %s", where)
	}
	first := evalJS[string](t, b, `document.querySelector('.toasts .toast').textContent`)
	if !strings.HasPrefix(first, "x3.txt: ") {
		t.Errorf("oldest toast shown is %q, want x3.txt's (x1 and x2 dropped first)", first)
	}
	evalJS[bool](t, b, `(document.querySelector('.toasts .toast').click(), true)`)
	if n := evalJS[int](t, b, `document.querySelectorAll('.toasts .toast').length`); n != 4 {
		t.Errorf("%d toasts after a click dismissed one, want 4", n)
	}
	for i := 1; i <= 7; i++ {
		wantFile(t, dir, fmt.Sprintf("x%d.txt", i), []byte("src"))
		wantFile(t, dir, fmt.Sprintf("dst/x%d.txt", i), []byte("dst"))
	}
}

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// The browser UI driven by a real headless Chromium over the DevTools
// protocol. Tests skip when no chromium is installed (.ci/run installs
// Debian's).

// chromiumPath is the browser the UI tests drive: $HOARD_CHROMIUM, or
// chromium on the PATH.
func chromiumPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("HOARD_CHROMIUM"); p != "" {
		return p
	}
	for _, n := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	t.Skip("no chromium installed (apt-get install chromium, or set HOARD_CHROMIUM): the browser UI tests need a real browser")
	return ""
}

// browser is one headless Chromium with one tab, and what the page did
// that a test may forbid: dialogs, console calls, uncaught exceptions.
type browser struct {
	ctx  context.Context
	mu   sync.Mutex
	logs []string // console calls and exceptions, in order
	dlgs []string // JavaScript dialogs opened
	shot string   // folder for screenshots
}

// newBrowser starts Chromium with the network closed to the outside, a
// temporary profile and a window of w×h CSS pixels.
func newBrowser(t *testing.T, w, h int) *browser {
	t.Helper()
	exe := chromiumPath(t)
	profile := t.TempDir()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(exe),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(profile),
		chromedp.WindowSize(w, h),
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelB := chromedp.NewContext(actx)
	ctx, cancelT := context.WithTimeout(ctx, 10*time.Minute)
	b := &browser{ctx: ctx, shot: t.TempDir()}
	t.Cleanup(func() { cancelT(); cancelB(); cancelA() })
	if err := chromedp.Listen(ctx, b.event); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(int64(w), int64(h))); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshots of this test go to %s", b.shot)
	return b
}

func (b *browser) event(ev any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch e := ev.(type) {
	case *runtime.EventConsoleAPICalled:
		var args []string
		for _, a := range e.Args {
			args = append(args, string(a.Value)+a.Description)
		}
		b.logs = append(b.logs, fmt.Sprintf("console.%s(%s)", e.Type, strings.Join(args, ", ")))
	case *runtime.EventExceptionThrown:
		msg := e.ExceptionDetails.Text
		if e.ExceptionDetails.Exception != nil {
			msg += " " + e.ExceptionDetails.Exception.Description
		}
		b.logs = append(b.logs, "exception: "+msg)
	case *page.EventJavascriptDialogOpening:
		// "Leave the page while uploading?" is the page's own question
		// (a reload in a test says yes); any other dialog is a fault.
		leave := e.Type == page.DialogTypeBeforeunload
		if !leave {
			b.dlgs = append(b.dlgs, string(e.Type)+": "+e.Message)
		}
		go cdp.Call(b.ctx, chromedp.FromContext(b.ctx).Target, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: leave})
	}
}

// quiet fails the test if the page opened a dialog, called the console or
// threw.
func (b *browser) quiet(t *testing.T) {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.dlgs) > 0 || len(b.logs) > 0 {
		t.Errorf("the page was not quiet:\ndialogs: %q\nconsole/exceptions: %q", b.dlgs, b.logs)
	}
}

func (b *browser) do(t *testing.T, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(b.ctx, steps...); err != nil {
		b.mu.Lock()
		logs := b.logs
		b.mu.Unlock()
		b.screenshot(t, "failure")
		t.Fatalf("browser: %v\npage console: %q", err, logs)
	}
}

// eval runs a JavaScript expression (promises awaited) and returns its
// value as T.
func evalJS[T any](t *testing.T, b *browser, js string) T {
	t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[T](js, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("evaluating %s: %v", js, err)
	}
	return v
}

// waitJS polls a JavaScript condition until it is true.
// waitUntil polls cond (something outside the page: a proxy's counts)
// for up to a minute; on a timeout it saves a screenshot "stuck" and
// fails the test.
func (b *browser) waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			b.screenshot(t, "stuck")
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func (b *browser) waitJS(t *testing.T, what, js string, limit time.Duration) {
	t.Helper()
	end := time.Now().Add(limit)
	for {
		ok, err := chromedp.Run(b.ctx, chromedp.Evaluate[bool](js))
		if err == nil && ok {
			return
		}
		if time.Now().After(end) {
			b.screenshot(t, "timeout")
			b.mu.Lock()
			logs := b.logs
			b.mu.Unlock()
			t.Fatalf("waited %v for %s (%s): err %v\nconsole: %q", limit, what, js, err, logs)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// screenshot saves the viewport as <name>.png into the test's folder and
// copies it to /tmp/hoard-ui-shots for people to look at.
func (b *browser) screenshot(t *testing.T, name string) {
	t.Helper()
	png, err := chromedp.Run(b.ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Logf("screenshot %s: %v", name, err)
		return
	}
	p := filepath.Join(b.shot, name+".png")
	if err := os.WriteFile(p, png, 0o644); err != nil {
		t.Fatal(err)
	}
	if os.MkdirAll("/tmp/hoard-ui-shots", 0o755) == nil {
		os.WriteFile(filepath.Join("/tmp/hoard-ui-shots", t.Name()+"-"+name+".png"), png, 0o644)
	}
	t.Logf("screenshot: %s", p)
}

// drop drags the files or folders at paths (on this machine) onto the
// page and drops them, as a person would from a file manager.
func (b *browser) drop(t *testing.T, paths ...string) {
	t.Helper()
	data := &input.DragData{Items: []*input.DragDataItem{}, Files: paths, DragOperationsMask: 1}
	b.do(t, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		for _, typ := range []input.DispatchDragEventType{input.DispatchDragEventTypeDragEnter, input.DispatchDragEventTypeDragOver, input.DispatchDragEventTypeDrop} {
			if _, err := cdp.Call(ctx, tg, input.DispatchDragEvent, input.DispatchDragEventParams{Type: typ, X: 300, Y: 300, Data: data}); err != nil {
				return fmt.Errorf("%s: %w", typ, err)
			}
		}
		return nil
	}))
}

// shots saves the page at 1280×800 and at a phone's 390×844.
func (b *browser) shots(t *testing.T, name string) {
	t.Helper()
	b.do(t, chromedp.EmulateViewport(1280, 800))
	time.Sleep(150 * time.Millisecond)
	b.screenshot(t, name+"-1280x800")
	b.do(t, chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile))
	time.Sleep(150 * time.Millisecond)
	b.screenshot(t, name+"-390x844")
	if w := evalJS[float64](t, b, `document.documentElement.scrollWidth`); w > 392 {
		t.Errorf("at 390 px the page is %v px wide: it scrolls sideways", w)
	}
	b.do(t, chromedp.EmulateViewport(1280, 800))
}

// text is the page's visible text.
func (b *browser) text(t *testing.T) string {
	t.Helper()
	return evalJS[string](t, b, `document.body.innerText`)
}

func TestUIBrowserLoginLogout(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "private.txt", []byte("p"))
	s := start(t, "-a", "alice:wonder land", "-v", dir+":/:rwmd,alice")
	b := newBrowser(t, 1280, 800)
	b.do(t, chromedp.Navigate(s.URL+"/"))
	if txt := b.text(t); !strings.Contains(txt, "log in") || strings.Contains(txt, "private.txt") {
		t.Fatalf("an anonymous visitor should see a login form and no files, got:\n%s", txt)
	}
	b.shots(t, "login")
	b.do(t, chromedp.SendKeys(chromedp.ID("cppwd"), "wonder land"), chromedp.Submit(chromedp.ID("cppwd")))
	b.waitJS(t, "the listing after login", `document.body.innerText.includes('private.txt') && /logged in as\s+alice/.test(document.body.innerText)`, 10*time.Second)
	b.waitJS(t, "the tools", `!!document.querySelector('#up') && document.querySelector('.info').innerText.includes('delete')`, 10*time.Second)
	b.shots(t, "logged-in")
	// The cookie is HttpOnly: the page's script cannot read it.
	if c := evalJS[string](t, b, `document.cookie`); strings.Contains(c, "cppwd") {
		t.Errorf("the page's script can read the password cookie: %q", c)
	}
	// A share link for one file, fetched without any login.
	b.selectRow(t, "private.txt")
	b.clickButton(t, "share")
	b.answer(t, "60")
	b.waitJS(t, "the share link", `!!document.querySelector('dialog[open] input[readonly]')`, 10*time.Second)
	link := evalJS[string](t, b, `document.querySelector('dialog[open] input[readonly]').value`)
	if !strings.HasPrefix(link, s.URL+"/") {
		t.Fatalf("share link %q is not on this server", link)
	}
	resp, body := s.do(t, "GET", strings.TrimPrefix(link, s.URL), nil)
	if resp.StatusCode != 200 || string(body) != "p" {
		t.Errorf("share link %s: %d %q", link, resp.StatusCode, body)
	}
	b.clickButton(t, "close")
	b.do(t, chromedp.Click(chromedp.CSS(`.acct button`)))
	b.waitJS(t, "the login form after logout", `!!document.getElementById('cppwd') && !document.body.innerText.includes('private.txt')`, 10*time.Second)
	b.quiet(t)
}

// uiTree writes the tree the upload tests drop: one big file and n small
// ones, with spaces, unicode and HTML characters in the names.
func uiTree(t *testing.T, root string, big, n int) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	add := func(rel string, data []byte) {
		writeFile(t, root, rel, data)
		files[rel] = data
	}
	add("drop/big file.bin", seededBytes(1, big))
	names := []string{"plain", "with space", "ünïcödé ✓", "<b>bold</b> & \"q\"", "<img src=x onerror=alert(1)>", "日本語"}
	for i := range n {
		dir := fmt.Sprintf("drop/sub %d/%s", i%7, names[i%len(names)])
		add(fmt.Sprintf("%s/f%03d %s.txt", dir, i, names[(i+1)%len(names)]), seededBytes(uint64(100+i), 1+(i*7919)%5000))
	}
	add("drop/empty.txt", nil)
	return files
}

func TestUIBrowserUploadTree(t *testing.T) {
	big, n := 50<<20, 500
	if testing.Short() {
		big, n = 3<<20, 40
	}
	src, dst := t.TempDir(), t.TempDir()
	files := uiTree(t, src, big, n)
	s := start(t, "-v", dst+":/:rwmd")
	b := newBrowser(t, 1280, 800)
	b.do(t, chromedp.Navigate(s.URL+"/"))
	b.waitJS(t, "the drop zone", `!!document.querySelector('#up')`, 10*time.Second)
	b.drop(t, filepath.Join(src, "drop"))
	b.waitJS(t, "the queue", fmt.Sprintf(`window.hoardUp.jobs.length === %d`, len(files)), 30*time.Second)
	time.Sleep(300 * time.Millisecond)
	b.shots(t, "uploading")
	b.waitJS(t, "every upload done", fmt.Sprintf(`window.hoardUp.totals().done === %d`, len(files)), 5*time.Minute)
	for rel, want := range files {
		wantFile(t, dst, rel, want)
	}
	wantNoPartial(t, dst)
	// the listing itself (the upload panel's lines say "drop/..." too,
	// which let this pass while the list still said the folder was empty)
	b.waitJS(t, "the listing to show the new folder", `[...document.querySelectorAll('table.ls tbody a')].some((a) => a.textContent === 'drop/')`, 10*time.Second)
	// and the folder tree (it was fetched once per folder: a folder made by
	// an upload, or by "new folder", never showed there)
	b.waitJS(t, "the tree to show the new folder", `[...document.querySelectorAll('nav.tree a')].some((a) => a.textContent === 'drop')`, 10*time.Second)
	b.shots(t, "uploaded")
	b.quiet(t)
}

// chunkProxy stands between the browser and hoard and watches up2k: it
// records the hashes of every chunk POST and its status, and the need list
// of every handshake; it can corrupt the first chunk POST and hold every
// chunk POST after the first few successes (an upload cut off mid-way).
type chunkProxy struct {
	URL string

	mu       sync.Mutex
	phase    int
	posts    []chunkPost
	needs    map[int][][]string // phase → need lists of the handshakes
	corrupt  bool               // flip a byte in the next chunk POST
	holdFrom int                // hold chunk POSTs once this many succeeded (0: never)
	acks     int
	seen     map[string]bool // chunk hashes posted so far
	release  chan struct{}   // closed when the test ends: held posts give up
}

type chunkPost struct {
	phase  int
	hashes []string
	status int
	body   string
}

func newChunkProxy(t *testing.T, target string) *chunkProxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &chunkProxy{needs: map[int][][]string{}, phase: 1, seen: map[string]bool{}, release: make(chan struct{})}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.ModifyResponse = func(resp *http.Response) error {
		r := resp.Request
		if r.Method != http.MethodPost {
			return nil
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		resp.Body = io.NopCloser(bytes.NewReader(body))
		p.mu.Lock()
		defer p.mu.Unlock()
		if h := r.Header.Get("X-Up2k-Hash"); h != "" {
			p.posts = append(p.posts, chunkPost{phase: p.phase, hashes: strings.Split(h, ","), status: resp.StatusCode, body: string(body)})
			if resp.StatusCode == 200 {
				p.acks++
			}
		} else if strings.HasPrefix(r.Header.Get("Content-Type"), "text/plain") && resp.StatusCode == 200 {
			var rep struct{ Hash []string }
			if json.Unmarshal(body, &rep) == nil {
				p.needs[p.phase] = append(p.needs[p.phase], rep.Hash)
			}
		}
		return nil
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.Header.Get("X-Up2k-Hash") != "" {
			p.mu.Lock()
			// Held: every post once enough got through, and every retry
			// (so the corrupted run is never finished before the cut,
			// however slow the others are).
			retry := false
			for _, h := range strings.Split(r.Header.Get("X-Up2k-Hash"), ",") {
				retry = retry || p.seen[h]
				p.seen[h] = true
			}
			hold := p.holdFrom > 0 && p.phase == 1 && (p.acks >= p.holdFrom || retry)
			bad := p.corrupt
			p.corrupt = false
			p.mu.Unlock()
			if hold {
				// until the page goes away (a reload), or the test ends: a
				// request whose body is unread may never see its client go
				select {
				case <-r.Context().Done():
				case <-p.release:
				}
				return
			}
			if bad {
				r.Body = &flipReader{r: r.Body, at: 1000}
			}
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { close(p.release); srv.Close() })
	p.URL = srv.URL
	return p
}

// flipReader inverts the byte at offset at of the stream.
type flipReader struct {
	r  io.ReadCloser
	n  int64
	at int64
}

func (f *flipReader) Read(b []byte) (int, error) {
	n, err := f.r.Read(b)
	if f.at >= f.n && f.at < f.n+int64(n) {
		b[f.at-f.n] ^= 0xff
	}
	f.n += int64(n)
	return n, err
}

func (f *flipReader) Close() error { return f.r.Close() }

func TestUIBrowserResumeAfterReload(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	data := seededBytes(7, 40<<20) // 40 chunks of 1 MiB
	writeFile(t, src, "resume me.bin", data)
	s := start(t, "-v", dst+":/:rw")
	px := newChunkProxy(t, s.URL)
	px.corrupt, px.holdFrom = true, 2
	b := newBrowser(t, 1280, 800)
	b.do(t, chromedp.Navigate(px.URL+"/"))
	b.waitJS(t, "the drop zone", `!!document.querySelector('#up')`, 10*time.Second)
	b.drop(t, filepath.Join(src, "resume me.bin"))
	// Wait until two chunk posts got through and the rest are held.
	b.waitUntil(t, "two chunk posts to get through", func() bool {
		px.mu.Lock()
		defer px.mu.Unlock()
		return px.acks >= 2
	})
	time.Sleep(300 * time.Millisecond)
	b.screenshot(t, "before-reload")
	b.do(t, chromedp.Reload())
	px.mu.Lock()
	px.phase = 2
	px.mu.Unlock()
	b.waitJS(t, "the unfinished-upload notice", `document.body.innerText.includes('not finished')`, 10*time.Second)
	b.shots(t, "after-reload")
	b.drop(t, filepath.Join(src, "resume me.bin"))
	b.waitJS(t, "the upload to finish", `window.hoardUp.totals().done === 1`, 2*time.Minute)
	wantFile(t, dst, "resume me.bin", data)
	wantNoPartial(t, dst)

	px.mu.Lock()
	defer px.mu.Unlock()
	all := newUp2kFile(data).hashes
	acked := map[string]bool{}
	corrupted := false
	for _, p := range px.posts {
		if p.phase == 1 && p.status == 200 {
			for _, h := range p.hashes {
				acked[h] = true
			}
		}
		if p.phase == 1 && p.status == 400 && strings.Contains(p.body, "corrupted") {
			corrupted = true
		}
	}
	if !corrupted {
		t.Errorf("the corrupted chunk was not refused as corrupted: %+v", px.posts)
	}
	if len(acked) == 0 || len(acked) == len(all) {
		t.Fatalf("%d of %d chunks acknowledged before the reload: the test did not cut the upload", len(acked), len(all))
	}
	if len(px.needs[2]) == 0 {
		t.Fatal("no handshake after the reload")
	}
	need := map[string]bool{}
	for _, h := range px.needs[2][0] {
		need[h] = true
		if acked[h] {
			t.Errorf("after the reload the server asked again for a chunk it had acknowledged: %s", h)
		}
	}
	for _, h := range all {
		if !acked[h[:44]] && !need[h[:44]] {
			t.Errorf("chunk %s neither acknowledged nor asked for", h)
		}
	}
	sent := 0
	for _, p := range px.posts {
		if p.phase != 2 {
			continue
		}
		for _, h := range p.hashes {
			sent++
			if !need[h] {
				t.Errorf("after the reload the page sent chunk %s that the server did not ask for", h)
			}
		}
	}
	t.Logf("%d chunks; %d acknowledged before the reload; %d asked for after it; %d sent after it", len(all), len(acked), len(need), sent)
	b.quiet(t)
}

// clickText clicks the first button whose text is label.
func (b *browser) clickButton(t *testing.T, label string) {
	t.Helper()
	ok := evalJS[bool](t, b, fmt.Sprintf(`(() => { const x = [...document.querySelectorAll('button')].find((e) => e.textContent.trim() === %q && !e.disabled); if (x) x.click(); return !!x; })()`, label))
	if !ok {
		b.screenshot(t, "nobutton")
		t.Fatalf("no enabled button %q on the page:\n%s", label, b.text(t))
	}
}

// selectRow ticks the checkbox of the entry named name.
func (b *browser) selectRow(t *testing.T, name string) {
	t.Helper()
	b.waitJS(t, "entry "+name, fmt.Sprintf(`!!document.querySelector('input[aria-label=%q]')`, "select "+name), 10*time.Second)
	evalJS[bool](t, b, fmt.Sprintf(`(() => { const x = document.querySelector('input[aria-label=%q]'); x.click(); return x.checked; })()`, "select "+name))
}

// answer fills the page's open dialog and presses its ok button.
func (b *browser) answer(t *testing.T, value string) {
	t.Helper()
	b.waitJS(t, "the dialog", `!!document.querySelector('dialog[open]')`, 5*time.Second)
	evalJS[bool](t, b, fmt.Sprintf(`(() => { const d = document.querySelector('dialog[open]'); const i = d.querySelector('input'); if (i) i.value = %q; d.querySelector('button[value=ok]').click(); return true; })()`, value))
}

func TestUIBrowserManageAndSearch(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "alpha report.txt", []byte("a"))
	writeFile(t, dir, "beta.txt", []byte("b"))
	writeFile(t, dir, "gamma.txt", []byte("g"))
	writeFile(t, dir, "sub/keep.txt", []byte("k"))
	s := start(t, "-e2dsa", "-v", dir+":/:rwmd")
	b := newBrowser(t, 1280, 800)
	b.do(t, chromedp.Navigate(s.URL+"/"))
	// rename
	b.selectRow(t, "alpha report.txt")
	b.clickButton(t, "rename")
	b.answer(t, "renamed <é>.txt")
	b.waitJS(t, "the renamed file", `document.body.innerText.includes('renamed <é>.txt')`, 10*time.Second)
	wantFile(t, dir, "renamed <é>.txt", []byte("a"))
	// move into sub/
	b.selectRow(t, "beta.txt")
	b.clickButton(t, "move")
	b.answer(t, "/sub/")
	b.waitJS(t, "beta gone from the folder", `!document.body.innerText.includes('beta.txt')`, 10*time.Second)
	wantFile(t, dir, "sub/beta.txt", []byte("b"))
	// delete
	b.selectRow(t, "gamma.txt")
	b.clickButton(t, "delete")
	b.waitJS(t, "the confirmation", `!!document.querySelector('dialog[open]')`, 5*time.Second)
	b.screenshot(t, "confirm-delete")
	b.answer(t, "")
	b.waitJS(t, "gamma gone", `!document.body.innerText.includes('gamma.txt')`, 10*time.Second)
	if pathExists(dir, "gamma.txt") {
		t.Error("gamma.txt is still on disk after delete")
	}
	// new folder
	b.clickButton(t, "new folder")
	b.answer(t, "fresh folder")
	b.waitJS(t, "the new folder", `document.body.innerText.includes('fresh folder/')`, 10*time.Second)
	if fi, err := os.Stat(filepath.Join(dir, "fresh folder")); err != nil || !fi.IsDir() {
		t.Errorf("new folder not on disk: %v", err)
	}
	// search: a hit, then a bad query's message
	b.do(t, chromedp.SendKeys(chromedp.ID("q"), "keep\r"))
	b.waitJS(t, "a search hit", `!!document.querySelector('.results a[href$="keep.txt"]')`, 20*time.Second)
	b.shots(t, "search")
	b.do(t, chromedp.SetValue(chromedp.ID("q"), "\"unterminated"), chromedp.SendKeys(chromedp.ID("q"), "\r"))
	b.waitJS(t, "the error of a bad query", `!!document.querySelector('.results .err')`, 10*time.Second)
	msg := evalJS[string](t, b, `document.querySelector('.results .err').textContent`)
	resp, body := s.do(t, "POST", "/", []byte(`{"q":"\"unterminated"}`), "Content-Type: application/json")
	if resp.StatusCode != 400 || !strings.Contains(string(body), strings.TrimSpace(msg)) {
		t.Errorf("page shows %q for a bad query; the server says %d %s", msg, resp.StatusCode, body)
	}
	// keyboard: down to the first entry, grid view with g, back
	b.do(t, chromedp.Click(chromedp.CSS(`.results h2 button`)))
	evalJS[bool](t, b, `(document.activeElement.blur(), true)`)
	b.do(t, chromedp.KeyEvent("j"), chromedp.KeyEvent("g"))
	b.waitJS(t, "grid view", `!!document.querySelector('ul.grid')`, 5*time.Second)
	b.shots(t, "grid")
	b.quiet(t)
}

func TestUIBrowserWriteOnly(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	writeFile(t, dst, "someone else's.txt", []byte("x"))
	data := seededBytes(3, 3<<20+5)
	writeFile(t, src, "mine.bin", data)
	s := start(t, "-v", dst+":/:w")
	b := newBrowser(t, 1280, 800)
	b.do(t, chromedp.Navigate(s.URL+"/"))
	// Hash with hoard's own JavaScript SHA-512 here, as a page that is not
	// a secure context would.
	evalJS[bool](t, b, `(localStorage.setItem('hoard.nosubtle', '1'), true)`)
	b.do(t, chromedp.Reload())
	b.waitJS(t, "the drop zone", `!!document.querySelector('#up') && window.hoardUp.fallback`, 10*time.Second)
	if txt := b.text(t); strings.Contains(txt, "someone else") || !strings.Contains(txt, "not see what is here") || strings.Contains(txt, "zip") {
		t.Errorf("a write-only folder should show only the drop zone:\n%s", txt)
	}
	b.drop(t, filepath.Join(src, "mine.bin"))
	b.waitJS(t, "the upload", `window.hoardUp.totals().done === 1`, time.Minute)
	wantFile(t, dst, "mine.bin", data)
	b.waitJS(t, "the upload in 'your recent uploads'", `document.querySelector('.ups') && document.querySelector('.ups').innerText.includes('mine.bin')`, 10*time.Second)
	b.shots(t, "write-only")
	b.quiet(t)
}

// TestUIBrowserSHA512 checks the page's JavaScript SHA-512 against the
// standard's vectors, against WebCrypto on random data of awkward
// lengths, and the up2k chunk hash against the server's.
func TestUIBrowserSHA512(t *testing.T) {
	s := start(t, "-v", t.TempDir()+":/:r")
	b := newBrowser(t, 800, 600)
	b.do(t, chromedp.Navigate(s.URL+"/"))
	js := uiScriptRE.FindStringSubmatch(string(func() []byte { _, body := s.do(t, "GET", "/", nil); return body }()))[1]
	base := js[:strings.LastIndexByte(js, '/')+1]
	got := evalJS[map[string]string](t, b, `(async () => {
		const { sha512, SHA512 } = await import('`+base+`sha512.js');
		const hex = (b) => [...b].map((x) => x.toString(16).padStart(2, '0')).join('');
		const enc = (s) => new TextEncoder().encode(s);
		const out = {
			empty: hex(sha512(new Uint8Array(0))),
			abc: hex(sha512(enc('abc'))),
			long: hex(sha512(enc('abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu'))),
			million: hex(sha512(new Uint8Array(1000000).fill(97))),
		};
		let bad = [];
		for (const n of [1, 111, 112, 113, 127, 128, 129, 255, 256, 1000, 65537, 1 << 20]) {
			const d = crypto.getRandomValues(new Uint8Array(Math.min(n, 65536)));
			const full = new Uint8Array(n);
			for (let i = 0; i < n; i += d.length) full.set(d.subarray(0, Math.min(d.length, n - i)), i);
			const h = new SHA512();
			for (let i = 0; i < n; i += 1000) h.update(full.subarray(i, Math.min(n, i + 1000)));
			const want = hex(new Uint8Array(await crypto.subtle.digest('SHA-512', full)));
			if (hex(sha512(full)) !== want || hex(h.digest()) !== want) bad.push(n);
		}
		out.bad = bad.join(',');
		return out;
	})()`)
	want := map[string]string{
		"empty":   "cf83e1357eefb8bdf1542850d66d8007d620e4050b5715dc83f4a921d36ce9ce47d0d13c5d85f2b0ff8318d2877eec2f63b931bd47417a81a538327af927da3e",
		"abc":     "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f",
		"long":    "8e959b75dae313da8cf4f72814fc143f8f7779c6eb9f7fa17299aeadb6889018501d289e4900f7e4331b99dec4b5433ac7d329eeb6dd26545e96e55b874be909",
		"million": "e718483d0ce769644e2e42c7bc15b4638e1f98b13b2044285632a803afa973ebde0ff244877ea60a4cb0432ce577c31beb009c5c2c49aa2e4eadb217ad8cc09b",
		"bad":     "",
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: got %q, want %q", k, got[k], w)
		}
	}
	b.quiet(t)
}

// TestUIBrowserXSS feeds hostile names, Markdown, SVG and text through
// every view of the UI: list, grid with thumbnails, breadcrumb, search
// results, gallery, text and Markdown previews, upload queue. No script
// of theirs may run: no dialog, no console call, no exception.
func TestUIBrowserXSS(t *testing.T) {
	dir, src := t.TempDir(), t.TempDir()
	hostile := []string{
		"<img src=x onerror=alert(1)>.png",
		"<script>alert(2).txt",
		`"><svg onload=console.log(3)>.jpg`,
		"'><img src=x onerror=console.error(4)>.mp4",
		"javascript:alert(5)",
		"a&amp;b &lt;i&gt;.txt",
		"{{7*7}} ${alert(8)}.md",
	}
	for _, n := range hostile {
		writeFile(t, dir, n, []byte("<script>alert('body')</script><img src=x onerror=alert('body')>"))
	}
	writeFile(t, dir, "<svg onload=alert(9)>/inner <b>.txt", []byte("x"))
	writeFile(t, dir, "evil.svg", []byte(`<svg xmlns="http://www.w3.org/2000/svg" onload="alert(10)"><script>alert(11)</script><rect width="10" height="10"/></svg>`))
	writeFile(t, dir, "notes.md", []byte("# hi <script>alert(12)</script>\n\n<img src=x onerror=alert(13)>\n\n[js](javascript:alert(14)) ![svg](data:image/svg+xml,<svg onload=alert(15)>)\n\n| a | b |\n|---|---|\n| <b onmouseover=alert(16)>1</b> | 2 |\n"))
	writeFile(t, src, "<img src=x onerror=alert(17)>.txt", []byte("up"))
	s := start(t, "-e2dsa", "-v", dir+":/:rw")
	b := newBrowser(t, 1280, 800)
	b.do(t, chromedp.Navigate(s.URL+"/"))
	b.waitJS(t, "the listing", `!!document.querySelector('table.ls tbody a.f')`, 10*time.Second)
	txt := b.text(t)
	for _, n := range hostile {
		if !strings.Contains(txt, n) {
			t.Errorf("name %q is not shown as text", n)
		}
	}
	// list → grid (thumbnails) → open every previewable file → folder → search
	b.do(t, chromedp.KeyEvent("g"))
	b.waitJS(t, "grid view", `!!document.querySelector('ul.grid')`, 5*time.Second)
	time.Sleep(500 * time.Millisecond)
	b.shots(t, "hostile-grid")
	n := evalJS[int](t, b, `document.querySelectorAll('ul.grid a.f').length`)
	for i := range n {
		evalJS[bool](t, b, fmt.Sprintf(`(document.querySelectorAll('ul.grid a.f')[%d].click(), true)`, i))
		time.Sleep(250 * time.Millisecond)
		if i == 0 {
			b.screenshot(t, "hostile-preview")
		}
		evalJS[bool](t, b, `(document.dispatchEvent(new KeyboardEvent('keydown', {key: 'ArrowRight'})), document.dispatchEvent(new KeyboardEvent('keydown', {key: 'Escape'})), true)`)
	}
	b.do(t, chromedp.KeyEvent("g"))
	b.waitJS(t, "list view", `!!document.querySelector('table.ls')`, 5*time.Second)
	evalJS[bool](t, b, `([...document.querySelectorAll('a.d')].find((a) => a.textContent.startsWith('<svg')).click(), true)`)
	b.waitJS(t, "the hostile folder", `document.querySelector('.crumbs').textContent.includes('<svg onload=alert(9)>') && document.body.innerText.includes('inner <b>.txt')`, 10*time.Second)
	b.drop(t, filepath.Join(src, "<img src=x onerror=alert(17)>.txt"))
	b.waitJS(t, "the upload", `window.hoardUp.totals().done === 1`, 30*time.Second)
	wantFile(t, dir, "<svg onload=alert(9)>/<img src=x onerror=alert(17)>.txt", []byte("up"))
	b.do(t, chromedp.SendKeys(chromedp.ID("q"), "onerror\r"))
	b.waitJS(t, "search hits", `document.querySelectorAll('.results tbody tr').length >= 2`, 20*time.Second)
	b.shots(t, "hostile-search")
	if n := evalJS[int](t, b, `document.querySelectorAll('img[src="x"], script:not([type=module]), [onerror], [onload]').length`); n != 0 {
		t.Errorf("%d elements from names became markup", n)
	}
	time.Sleep(300 * time.Millisecond)
	b.quiet(t)
}

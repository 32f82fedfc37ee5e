package e2e

import (
	"context"
	"fmt"
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
		b.dlgs = append(b.dlgs, string(e.Type)+": "+e.Message)
		go cdp.Call(b.ctx, chromedp.FromContext(b.ctx).Target, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: false})
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
	b.waitJS(t, "the listing to show the new folder", `document.body.innerText.includes('drop/')`, 10*time.Second)
	b.shots(t, "uploaded")
	b.quiet(t)
}

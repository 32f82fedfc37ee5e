package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/accessibility"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// tinyPNG is a w×h PNG of one colour.
func tinyPNG(t *testing.T, w, h int, c color.RGBA) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, c)
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// touch sends one touch event with the given points (none: the last
// finger lifted).
func (b *browser) touch(t *testing.T, typ input.DispatchTouchEventType, pts ...[2]float64) {
	t.Helper()
	tp := []*input.TouchPoint{}
	for i, p := range pts {
		id := float64(i)
		tp = append(tp, &input.TouchPoint{X: p[0], Y: p[1], ID: &id})
	}
	b.do(t, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, input.DispatchTouchEvent, input.DispatchTouchEventParams{Type: typ, TouchPoints: tp})
		return err
	}))
}

// swipe moves one finger from (x0, y0) to (x1, y1) in a few steps.
func (b *browser) swipe(t *testing.T, x0, y0, x1, y1 float64) {
	t.Helper()
	b.touch(t, input.DispatchTouchEventTypeTouchStart, [2]float64{x0, y0})
	for i := 1; i <= 4; i++ {
		f := float64(i) / 4
		b.touch(t, input.DispatchTouchEventTypeTouchMove, [2]float64{x0 + (x1-x0)*f, y0 + (y1-y0)*f})
	}
	b.touch(t, input.DispatchTouchEventTypeTouchEnd)
	time.Sleep(150 * time.Millisecond)
}

// TestUIBrowserGallerySwipe: on a phone, the image gallery goes to the
// next picture with a swipe to the left and back with one to the right,
// wrapping round; a mostly vertical swipe (a scroll) and a two-finger
// pinch do not change the picture.
func TestUIBrowserGallerySwipe(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "a red.png", tinyPNG(t, 40, 30, color.RGBA{200, 30, 30, 255}))
	writeFile(t, dir, "b green.png", tinyPNG(t, 30, 40, color.RGBA{30, 160, 60, 255}))
	writeFile(t, dir, "c blue.png", tinyPNG(t, 40, 40, color.RGBA{30, 60, 200, 255}))
	writeFile(t, dir, "notes.txt", []byte("not a picture"))
	s := start(t, "-v", dir+":/:r")
	b := newBrowser(t, 390, 844)
	b.do(t, chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile, chromedp.EmulateTouch))
	b.do(t, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, emulation.SetTouchEmulationEnabled, emulation.SetTouchEmulationEnabledParams{Enabled: true, MaxTouchPoints: 5})
		return err
	}))
	b.do(t, chromedp.Navigate(s.URL+"/"))
	b.waitJS(t, "the listing", `!!document.querySelector('#rows a.f')`, 10*time.Second)
	evalJS[bool](t, b, `([...document.querySelectorAll('#rows a.f')].find((a) => a.textContent === 'a red.png').click(), true)`)
	b.waitJS(t, "the gallery", `!!document.querySelector('.viewer.img img')`, 5*time.Second)
	shown := func() string { return evalJS[string](t, b, `document.querySelector('.viewer .vbar .nm').textContent`) }
	want := func(what, name string) {
		t.Helper()
		for end := time.Now().Add(2 * time.Second); shown() != name && time.Now().Before(end); {
			time.Sleep(50 * time.Millisecond)
		}
		if got := shown(); got != name {
			t.Errorf("%s: the gallery shows %q, want %q", what, got, name)
		}
	}
	stays := func(what, name string) {
		t.Helper()
		time.Sleep(300 * time.Millisecond)
		if got := shown(); got != name {
			t.Errorf("%s: the gallery shows %q, want it to stay on %q", what, got, name)
		}
	}
	want("opened", "a red.png (1/3)")
	b.swipe(t, 320, 420, 80, 430)
	want("swipe left", "b green.png (2/3)")
	b.screenshot(t, "gallery-390x844")
	b.swipe(t, 80, 420, 320, 410)
	want("swipe right", "a red.png (1/3)")
	b.swipe(t, 250, 650, 170, 250) // mostly up: a scroll
	stays("vertical swipe", "a red.png (1/3)")
	b.swipe(t, 300, 420, 60, 420)
	want("swipe left", "b green.png (2/3)")
	b.swipe(t, 300, 420, 60, 420)
	want("second swipe left", "c blue.png (3/3)")
	b.swipe(t, 300, 420, 60, 420)
	want("past the last", "a red.png (1/3)")
	// a pinch: two fingers apart, sideways
	b.touch(t, input.DispatchTouchEventTypeTouchStart, [2]float64{180, 400}, [2]float64{210, 400})
	for i := 1; i <= 4; i++ {
		d := float64(i) * 30
		b.touch(t, input.DispatchTouchEventTypeTouchMove, [2]float64{180 - d, 400}, [2]float64{210 + d, 400})
	}
	b.touch(t, input.DispatchTouchEventTypeTouchEnd, [2]float64{60, 400})
	b.touch(t, input.DispatchTouchEventTypeTouchEnd)
	stays("pinch", "a red.png (1/3)")
	b.do(t, chromedp.KeyEvent(kb.Escape))
	b.waitJS(t, "the gallery closed", `!document.querySelector('.viewer')`, 5*time.Second)
	if f := evalJS[string](t, b, `document.activeElement.textContent`); f != "a red.png" {
		t.Errorf("after the gallery the focus is on %q, want the picture shown last", f)
	}
	b.quiet(t)
}

// dropUntilQueued drops paths on the page and waits for the uploader to
// queue them, dropping again when a drop got lost (now and then, on a
// busy machine, Chromium's synthetic drag ends without its drop event).
func (b *browser) dropUntilQueued(t *testing.T, paths ...string) {
	t.Helper()
	for try := 0; ; try++ {
		n := evalJS[int](t, b, `window.hoardUp.jobs.length`)
		b.drop(t, paths...)
		end := time.Now().Add(5 * time.Second)
		for time.Now().Before(end) && evalJS[int](t, b, `window.hoardUp.jobs.length`) == n {
			time.Sleep(100 * time.Millisecond)
		}
		if evalJS[int](t, b, `window.hoardUp.jobs.length`) > n {
			return
		}
		if try == 2 {
			b.screenshot(t, "drop-lost")
			t.Fatalf("three drops of %v queued nothing", paths)
		}
		t.Logf("a drop of %v queued nothing; again", paths)
	}
}

// axNode is one node of Chromium's accessibility tree: its role and
// accessible name.
type axNode struct{ role, name string }

func (b *browser) axTree(t *testing.T) []axNode {
	t.Helper()
	var out []axNode
	b.do(t, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		res, err := cdp.Call(ctx, tg, accessibility.GetFullAXTree, accessibility.GetFullAXTreeParams{})
		if err != nil {
			return err
		}
		str := func(v *accessibility.Value) string {
			if v == nil {
				return ""
			}
			var s string
			if json.Unmarshal([]byte(v.Value), &s) != nil {
				return ""
			}
			return s
		}
		for _, n := range res.Nodes {
			if !n.Ignored {
				out = append(out, axNode{str(n.Role), strings.TrimSpace(str(n.Name))})
			}
		}
		return nil
	}))
	return out
}

// TestUIBrowserAccessibility checks the page as a screen reader gets it:
// the accessible names and roles of the main controls (from Chromium's
// accessibility tree), that no control is nameless, the focus order from
// the skip link into the files, that the keyboard focus stays on the
// upload's pause button while the upload's progress is redrawn, and that
// the live region tells an upload's start and end.
func TestUIBrowserAccessibility(t *testing.T) {
	dir, src := t.TempDir(), t.TempDir()
	writeFile(t, dir, "sub/a.txt", []byte("a"))
	writeFile(t, dir, "sub/b <i>.txt", []byte("b"))
	writeFile(t, dir, "sub/deeper/c.txt", []byte("c"))
	for i := range 3 {
		writeFile(t, src, fmt.Sprintf("drop/s%d.txt", i), []byte(strings.Repeat("x", 100+i)))
	}
	big := seededBytes(5, 12<<20)
	writeFile(t, src, "held.bin", big)
	s := start(t, "-v", dir+":/:rwmd")
	// made before the browser, so that the browser is gone (and the
	// proxy's held request with it) before the proxy shuts down
	px := newChunkProxy(t, s.URL)
	b := newBrowser(t, 1280, 800)
	b.do(t, chromedp.Navigate(s.URL+"/sub/"))
	b.waitJS(t, "the listing", `!!document.querySelector('#rows a.f')`, 10*time.Second)
	b.waitJS(t, "the folder tree", `!!document.querySelector('nav.tree a[aria-current]')`, 10*time.Second)

	nodes := b.axTree(t)
	has := func(role, name string) bool {
		for _, n := range nodes {
			if n.role == role && n.name == name {
				return true
			}
		}
		return false
	}
	for _, w := range []axNode{
		{"link", "skip to the files"},
		{"navigation", "breadcrumb"},
		{"navigation", "folder tree"},
		{"search", ""},
		{"searchbox", "search"},
		{"button", "search"},
		{"DisclosureTriangle", "search help"},
		{"textbox", "password"},
		{"button", "log in"},
		{"main", ""},
		{"toolbar", "folder tools"},
		{"button", "new folder"},
		{"button", "rename"},
		{"button", "delete"},
		{"link", "folder as zip"},
		{"button", "grid view"},
		{"region", "upload"},
		{"button", "pick files"},
		{"button", "pick a folder"},
		{"combobox", "if the name is taken:"},
		{"checkbox", "select all"},
		{"button", "sort by name"},
		{"button", "sort by size"},
		{"button", "sort by date"},
		{"link", "parent folder"},
		{"checkbox", "select a.txt"},
		{"checkbox", "select b <i>.txt"},
		{"link", "b <i>.txt"},
		{"link", "deeper/"},
		{"status", ""},
	} {
		if !has(w.role, w.name) {
			t.Errorf("no %s named %q in the accessibility tree", w.role, w.name)
		}
	}
	for _, n := range nodes {
		switch n.role {
		case "button", "link", "checkbox", "textbox", "searchbox", "combobox", "progressbar", "DisclosureTriangle", "menuitem", "slider":
			if n.name == "" {
				t.Errorf("a %s without an accessible name", n.role)
			}
		}
	}

	// focus order: the skip link first, then into the files
	evalJS[bool](t, b, `(document.activeElement && document.activeElement.blur(), window.scrollTo(0, 0), true)`)
	b.do(t, chromedp.KeyEvent(kb.Tab))
	if f := evalJS[string](t, b, `document.activeElement.textContent`); f != "skip to the files" {
		t.Errorf("the first Tab reaches %q, want the skip link", f)
	}
	b.do(t, chromedp.KeyEvent(kb.Enter))
	b.do(t, chromedp.KeyEvent(kb.Tab))
	if in := evalJS[bool](t, b, `document.getElementById('app').contains(document.activeElement) && document.activeElement !== document.getElementById('app')`); !in {
		t.Errorf("after the skip link, Tab reaches %q, outside the files", evalJS[string](t, b, `document.activeElement.outerHTML.slice(0, 80)`))
	}

	// the live region tells an upload's start and end
	evalJS[bool](t, b, `(() => { window.__said = []; new MutationObserver(() => window.__said.push(document.querySelector('[role=status][aria-live]').textContent)).observe(document.querySelector('[role=status][aria-live]'), { childList: true, characterData: true, subtree: true }); return true; })()`)
	b.dropUntilQueued(t, filepath.Join(src, "drop"))
	b.waitJS(t, "the end of the upload told", `window.__said.includes('upload finished: all 3 files done')`, 30*time.Second)
	said := evalJS[[]string](t, b, `window.__said`)
	if !strings.Contains(strings.Join(said, "\n"), "files") {
		t.Errorf("the live region said %q", said)
	}
	t.Logf("the live region said: %q", said)
	wantFile(t, dir, "sub/drop/s2.txt", []byte(strings.Repeat("x", 102)))

	// an upload that hangs: the pause button keeps the focus while its
	// panel is redrawn, and the progress bars have names
	px.mu.Lock()
	px.corrupt, px.holdFrom = true, 1 // the corrupted post's retry hangs
	px.mu.Unlock()
	b.do(t, chromedp.Navigate(px.URL+"/sub/"))
	b.waitJS(t, "the drop zone", `!!document.querySelector('#up')`, 10*time.Second)
	b.dropUntilQueued(t, filepath.Join(src, "held.bin"))
	b.waitJS(t, "the pause button", `[...document.querySelectorAll('#up button')].some((x) => x.textContent === 'pause')`, 30*time.Second)
	evalJS[bool](t, b, `([...document.querySelectorAll('#up button')].find((x) => x.textContent === 'pause').focus(), true)`)
	time.Sleep(2500 * time.Millisecond) // the panel redraws every second while busy
	if f := evalJS[string](t, b, `document.activeElement ? document.activeElement.textContent : ''`); f != "pause" {
		t.Errorf("while uploading, the focus moved from the pause button to %q", f)
	}
	nodes = b.axTree(t)
	if !has("progressbar", "total progress") || !has("progressbar", "progress of held.bin") || !has("button", "cancel held.bin") {
		t.Errorf("the upload's progress bars or cancel button lack their names")
	}
	b.do(t, chromedp.KeyEvent(kb.Enter)) // pause, from the keyboard
	b.waitJS(t, "paused", `window.hoardUp.paused && document.activeElement.textContent === 'resume'`, 5*time.Second)
	b.shots(t, "upload-paused")
	b.quiet(t)
}

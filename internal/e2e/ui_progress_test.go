package e2e

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// failProxy stands between the page and hoard. While fail is set, it reads
// each chunk post's body whole (so the browser has sent every byte of it),
// holds it until gate closes, then answers 500 without passing it on.
type failProxy struct {
	URL     string
	mu      sync.Mutex
	fail    bool
	arrived int // chunk posts read whole while failing
	gate    chan struct{}
}

func newFailProxy(t *testing.T, target string) *failProxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &failProxy{fail: true, gate: make(chan struct{})}
	rp := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.Header.Get("X-Up2k-Hash") != "" {
			buf, err := io.ReadAll(r.Body)
			if err != nil {
				return
			}
			p.mu.Lock()
			fail := p.fail
			if fail {
				p.arrived++
			}
			p.mu.Unlock()
			if fail {
				select {
				case <-p.gate:
				case <-r.Context().Done():
					return
				}
				http.Error(w, "proxy: injected failure", http.StatusInternalServerError)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(buf))
			r.ContentLength = int64(len(buf))
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	p.URL = srv.URL
	return p
}

// TestUIBrowserProgressConfirmed: the page's progress counts the bytes the
// server confirmed (a chunk post's 200), not the bytes sent: while every
// byte of a file is sent and no post is answered, the bar stays at 0 and
// the page says what is sent and not confirmed; a post that fails (500)
// does not count as done; once the retries get through, 100%.
func TestUIBrowserProgressConfirmed(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	data := seededBytes(11, 2<<20) // two chunks of 1 MiB, two posts
	writeFile(t, src, "progress.bin", data)
	s := start(t, "-v", dst+":/:rw")
	px := newFailProxy(t, s.URL)
	b := newBrowser(t, 1280, 800)
	b.do(t, chromedp.Navigate(px.URL+"/"))
	b.waitJS(t, "the drop zone", `!!document.querySelector('#up')`, 10*time.Second)
	b.drop(t, filepath.Join(src, "progress.bin"))

	b.waitUntil(t, "two chunk posts to reach the proxy whole", func() bool {
		px.mu.Lock()
		defer px.mu.Unlock()
		return px.arrived >= 2
	})
	// every byte is sent (the browser's upload progress says so), none confirmed
	b.waitJS(t, "the page to see its bytes sent", `window.hoardUp.jobs[0].inflight === 2 * 1048576`, 10*time.Second)
	time.Sleep(1200 * time.Millisecond) // past a redraw, also the once-a-second one
	bar := `document.querySelector('progress[aria-label="total progress"]').value`
	stat := `document.getElementById('upstat').textContent`
	if v := evalJS[float64](t, b, bar); v != 0 {
		t.Errorf("sent and unanswered: the total progress shows %v%%, want 0 (nothing confirmed)", v)
	}
	if got := evalJS[string](t, b, stat); !bytes.Contains([]byte(got), []byte("0 B of 2.00 MiB stored · 0%")) || !bytes.Contains([]byte(got), []byte("2.00 MiB sent, not confirmed yet")) {
		t.Errorf("sent and unanswered, the page says %q", got)
	}
	b.shots(t, "progress-unconfirmed")

	// the posts fail: still nothing done, nothing in flight
	close(px.gate)
	b.waitJS(t, "the failure seen", `window.hoardUp.jobs[0].err.startsWith('retrying') && window.hoardUp.totals().inflight === 0`, 20*time.Second)
	if v := evalJS[float64](t, b, bar); v != 0 {
		t.Errorf("after failed posts the total progress shows %v%%, want 0", v)
	}
	if c := evalJS[float64](t, b, `window.hoardUp.totals().conf`); c != 0 {
		t.Errorf("after failed posts %v bytes count as confirmed", c)
	}
	if st := evalJS[string](t, b, `window.hoardUp.jobs[0].state`); st == "done" {
		t.Error("a file whose posts failed shows as done")
	}

	// the retries get through
	px.mu.Lock()
	px.fail = false
	px.mu.Unlock()
	b.waitJS(t, "the upload to finish", `window.hoardUp.totals().done === 1`, time.Minute)
	time.Sleep(300 * time.Millisecond)
	if v := evalJS[float64](t, b, bar); v != 100 {
		t.Errorf("done: the total progress shows %v%%", v)
	}
	wantFile(t, dst, "progress.bin", data)
	b.quiet(t)
}

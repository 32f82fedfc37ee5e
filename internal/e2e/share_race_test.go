//go:build linux

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	_ "image/jpeg"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestShareSwapRace: a folder inside a share (or the shared folder itself)
// is swapped, atomically and over and over (renameat2 RENAME_EXCHANGE),
// with a symbolic link to a sibling folder outside the share, while
// downloads, listings, ranges, text, zip and thumbnail views, tails,
// archives and uploads (PUT, into new folders, appends, multipart, up2k)
// run through /shr/<key>/. Nothing from the sibling may be served, and
// nothing may be written into it: not a file, not a folder, not a work
// file.
func TestShareSwapRace(t *testing.T) {
	t.Parallel()
	t.Run("a folder inside the share", func(t *testing.T) { shareSwapRace(t, false) })
	t.Run("the shared folder", func(t *testing.T) { shareSwapRace(t, true) })
}

func shareSwapRace(t *testing.T, swapBase bool) {
	dir := t.TempDir()
	pad := strings.Repeat("x", 64)
	writeFile(t, dir, "proj/in/f.txt", []byte("INSIDE-"+pad))
	writeFile(t, dir, "proj/in/z.zip", makeZip(t, [][2]string{{"inside.txt", "INSIDE"}}, time.Now()))
	writeFile(t, dir, "proj/keep.txt", []byte("KEEP"))
	writeFile(t, dir, "out/f.txt", []byte("OUTSIDE"+pad))
	writeFile(t, dir, "out/z.zip", makeZip(t, [][2]string{{"outside.txt", "OUTSIDE"}}, time.Now()))
	writeFile(t, dir, "out/only-out.txt", []byte("OUTSIDE"))
	// Pictures for ?th: red inside, blue outside; a thumbnail tells them apart.
	solid := func(c color.RGBA) image.Image {
		m := image.NewRGBA(image.Rect(0, 0, 64, 48))
		draw.Draw(m, m.Bounds(), &image.Uniform{c}, image.Point{}, draw.Src)
		return m
	}
	writeFile(t, dir, "proj/in/p.png", encodePNG(t, solid(color.RGBA{255, 0, 0, 255})))
	writeFile(t, dir, "out/p.png", encodePNG(t, solid(color.RGBA{0, 0, 255, 255})))
	// The same names outside, one level down, for the shared folder's swap.
	for _, n := range []string{"f.txt", "z.zip", "only-out.txt", "p.png"} {
		b, _ := os.ReadFile(filepath.Join(dir, "out", n))
		writeFile(t, dir, "outer/in/"+n, b)
	}
	in, swap, target := filepath.Join(dir, "proj", "in"), filepath.Join(dir, "proj", "in.swap"), "../out"
	if swapBase {
		in, swap, target = filepath.Join(dir, "proj"), filepath.Join(dir, "proj.swap"), "outer"
	}
	if err := os.Symlink(target, swap); err != nil {
		t.Fatal(err)
	}
	if err := unix.Renameat2(unix.AT_FDCWD, in, unix.AT_FDCWD, swap, unix.RENAME_EXCHANGE); err != nil {
		t.Skipf("renameat2(RENAME_EXCHANGE) unsupported here: %v", err)
	}
	unix.Renameat2(unix.AT_FDCWD, in, unix.AT_FDCWD, swap, unix.RENAME_EXCHANGE)
	outBefore, outerBefore := tree(t, filepath.Join(dir, "out")), tree(t, filepath.Join(dir, "outer"))

	s := start(t, "-a", "alice:apw", "-v", dir+"::rwmd,alice")
	makeShare(t, s, "apw", map[string]any{"k": "race", "vp": []string{"/proj/"}, "perms": []string{"read", "write", "delete"}}, 201)

	window := 4 * time.Second
	if testing.Short() {
		window = time.Second // the fast tier; the full run swaps for 4 s
	}
	ctx, cancel := context.WithTimeout(context.Background(), window)
	defer cancel()
	var swaps atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			if unix.Renameat2(unix.AT_FDCWD, in, unix.AT_FDCWD, swap, unix.RENAME_EXCHANGE) == nil {
				swaps.Add(1)
			}
		}
		if fi, err := os.Lstat(in); err == nil && fi.Mode()&os.ModeSymlink != 0 {
			unix.Renameat2(unix.AT_FDCWD, in, unix.AT_FDCWD, swap, unix.RENAME_EXCHANGE)
		}
	}()

	type raceProbe struct {
		method, path, ct string
		body             func(n int64) []byte
		hdr              []string
		tail             bool
	}
	mp := func(n int64) []byte {
		var b bytes.Buffer
		mw := multipart.NewWriter(&b)
		w, _ := mw.CreateFormFile("f", fmt.Sprintf("mp-%d.txt", n))
		io.WriteString(w, "MP")
		mw.Close()
		return b.Bytes()
	}
	probes := []raceProbe{
		{method: "GET", path: "/shr/race/in/f.txt"},
		{method: "GET", path: "/shr/race/in/f.txt", hdr: []string{"Range: bytes=0-9"}},
		{method: "GET", path: "/shr/race/in/f.txt", hdr: []string{"Range: bytes=0-3,5-9"}},
		{method: "HEAD", path: "/shr/race/in/f.txt"},
		{method: "GET", path: "/shr/race/in/f.txt?txt"},
		{method: "GET", path: "/shr/race/in/f.txt?txt=iso-8859-1"},
		{method: "GET", path: "/shr/race/in/f.txt?v"},
		{method: "GET", path: "/shr/race/in/f.txt?dl"},
		{method: "GET", path: "/shr/race/in/f.txt?tail", tail: true},
		{method: "GET", path: "/shr/race/in/p.png?th"},
		{method: "GET", path: "/shr/race/in/p.png?th=w200"},
		{method: "GET", path: "/shr/race/in/?ls"},
		{method: "GET", path: "/shr/race/in/?ls=t"},
		{method: "GET", path: "/shr/race/in/"},
		{method: "GET", path: "/shr/race/in/z.zip?zls"},
		{method: "GET", path: "/shr/race/in/z.zip?zget=outside.txt"},
		{method: "GET", path: "/shr/race/in/?tar"},
		{method: "GET", path: "/shr/race/in/?zip"},
		{method: "POST", path: "/shr/race/in/?tar", ct: "application/json", body: func(int64) []byte { return []byte(`["f.txt","only-out.txt"]`) }},
		{method: "PUT", path: "/shr/race/in/up-%d.txt", body: func(int64) []byte { return []byte("UP") }},
		{method: "PUT", path: "/shr/race/in/new-%d/deep/x.txt", body: func(int64) []byte { return []byte("UP") }},
		{method: "PUT", path: "/shr/race/in/", body: func(int64) []byte { return []byte("NAMELESS") }},
		{method: "PUT", path: "/shr/race/in/f.txt?apnd", body: func(int64) []byte { return []byte("APPEND") }},
		{method: "POST", path: "/shr/race/in/", ct: "multipart", body: mp},
		{method: "POST", path: "/shr/race/in/", ct: "application/json", body: func(n int64) []byte {
			return []byte(fmt.Sprintf(`{"name":"u2k-%d.bin","size":0,"lmod":1700000000,"hash":[]}`, n))
		}},
	}
	hc := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	var seq, reqs, ok200, escapes atomic.Int64
	var mu sync.Mutex
	var leaks []string
	statuses := map[string]int{}
	for w := 0; w < 6; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				n := seq.Add(1)
				p := probes[int(n)%len(probes)]
				target := p.path
				if strings.Contains(target, "%d") {
					target = fmt.Sprintf(target, n)
				}
				var body io.Reader
				var raw []byte
				if p.body != nil {
					raw = p.body(n)
					body = bytes.NewReader(raw)
				}
				rctx := context.Background()
				var rcancel context.CancelFunc = func() {}
				if p.tail {
					rctx, rcancel = context.WithTimeout(rctx, 150*time.Millisecond)
				}
				req, _ := http.NewRequestWithContext(rctx, p.method, s.URL+target, body)
				for _, h := range p.hdr {
					k, v, _ := strings.Cut(h, ":")
					req.Header.Set(k, strings.TrimSpace(v))
				}
				switch p.ct {
				case "multipart":
					i := bytes.Index(raw, []byte("\r\n"))
					req.Header.Set("Content-Type", "multipart/form-data; boundary="+string(raw[2:i]))
				case "":
				default:
					req.Header.Set("Content-Type", p.ct)
				}
				t0 := time.Now()
				resp, err := hc.Do(req)
				if d := time.Since(t0); d > time.Second && os.Getenv("RACE_LOGS") != "" {
					t.Logf("slow: %s %s %v %v", p.method, target, d, err)
				}
				if err != nil {
					rcancel()
					continue
				}
				rb, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				rcancel()
				reqs.Add(1)
				mu.Lock()
				statuses[fmt.Sprintf("%s %s %d", p.method, strings.SplitN(p.path, "%", 2)[0], resp.StatusCode)]++
				mu.Unlock()
				if resp.StatusCode == 200 {
					ok200.Add(1)
				}
				if resp.StatusCode == 200 && strings.HasPrefix(resp.Header.Get("Content-Type"), "image/") {
					if m, _, err := image.Decode(bytes.NewReader(rb)); err == nil {
						if r, _, b, _ := m.At(m.Bounds().Dx()/2, m.Bounds().Dy()/2).RGBA(); b > r {
							rb = []byte("OUTSIDE picture")
						}
					}
				}
				if bytes.Contains(rb, []byte("OUTSIDE")) || resp.StatusCode < 300 && (bytes.Contains(rb, []byte("only-out")) || bytes.Contains(rb, []byte("outside.txt"))) {
					escapes.Add(1)
					mu.Lock()
					if len(leaks) < 5 {
						leaks = append(leaks, fmt.Sprintf("%s %s: %d %.120q", p.method, target, resp.StatusCode, rb))
					}
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	t.Logf("%d swaps, %d requests, %d answered 200, %d escapes", swaps.Load(), reqs.Load(), ok200.Load(), escapes.Load())
	t.Logf("answers: %v", statuses)
	if os.Getenv("RACE_LOGS") != "" {
		t.Logf("server log:\n%s", s.logs)
	}
	if swaps.Load() < 1000 || reqs.Load() < 200 || ok200.Load() < 50 {
		t.Fatalf("the race was not exercised: %d swaps, %d requests, %d of them 200", swaps.Load(), reqs.Load(), ok200.Load())
	}
	if escapes.Load() > 0 {
		t.Errorf("%d responses carried the sibling folder's content, e.g.\n%s", escapes.Load(), strings.Join(leaks, "\n"))
	}
	if got := tree(t, filepath.Join(dir, "out")); !slices.Equal(got, outBefore) {
		t.Errorf("the folder outside the share changed: %v, was %v", got, outBefore)
	}
	if got := tree(t, filepath.Join(dir, "outer")); !slices.Equal(got, outerBefore) {
		t.Errorf("the folder outside the share changed: %v, was %v", got, outerBefore)
	}
	for _, f := range []string{"out/f.txt", "outer/in/f.txt"} {
		if b, _ := os.ReadFile(filepath.Join(dir, f)); string(b) != "OUTSIDE"+pad {
			t.Errorf("the file outside the share was written to: %q", b)
		}
	}
	// The share still works once the swapping stops.
	resp, body := s.do(t, "GET", "/shr/race/in/z.zip?zls", nil)
	wantStatus(t, resp, body, 200)
	if !strings.Contains(string(body), "inside.txt") {
		t.Fatalf("?zls after the race: %s", body)
	}
}

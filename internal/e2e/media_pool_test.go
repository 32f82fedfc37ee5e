package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Identical concurrent requests make one thumbnail.
func TestMediaCoalescing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, dir, "a.jpg", encodeJPEG(t, twoToneImage(640, 480)))
	wd := t.TempDir()
	s := start(t, "--ffmpeg", ffmpegWrapper(t, wd, "1"), "-v", dir+"::r")
	const n = 12
	var wg sync.WaitGroup
	hows := make([]string, n)
	bodies := make([][]byte, n)
	for i := range n {
		wg.Go(func() {
			code, h, b, err := s.getCtx(t.Context(), thumbURL("a.jpg", "w"))
			if err != nil || code != 200 {
				t.Errorf("request %d: %d %v", i, code, err)
				return
			}
			hows[i], bodies[i] = h.Get("X-Hoard-Thumb"), b
		})
	}
	wg.Wait()
	runs, _ := wrapperStats(t, wd)
	if runs != 1 {
		t.Errorf("%d ffmpeg runs for %d identical requests, want 1", runs, n)
	}
	made := 0
	for i, h := range hows {
		if h == "made" {
			made++
		} else if h != "shared" && h != "cached" {
			t.Errorf("request %d: %q", i, h)
		}
		if string(bodies[i]) != string(bodies[0]) {
			t.Errorf("request %d got other bytes", i)
		}
	}
	if made != 1 {
		t.Errorf("%d requests made the thumbnail, want 1 (%v)", made, hows)
	}
}

// A burst of 200 concurrent thumbnail requests (25 files, 8 requests
// each): never more ffmpeg processes than --th-mt, one run per file,
// every request answered.
func TestMediaPoolLimitBurst(t *testing.T) {
	if testing.Short() {
		t.Skip("a 200-request burst (slow; -short)")
	}
	t.Parallel()
	dir := t.TempDir()
	img := encodePNG(t, twoToneImage(64, 48))
	const n, files = 200, 25
	for i := range files {
		writeFile(t, dir, "p"+strconv.Itoa(i)+".png", img)
	}
	wd := t.TempDir()
	s := start(t, "--th-mt", "2", "--th-queue", "120", "--ffmpeg", ffmpegWrapper(t, wd, "0"), "-v", dir+"::r")
	var wg sync.WaitGroup
	var mu sync.Mutex
	codes := map[int]int{}
	for i := range n {
		wg.Go(func() {
			code, h, b, err := s.getCtx(t.Context(), thumbURL("p"+strconv.Itoa(i%files)+".png", "w"))
			if err == nil && code == 200 && (h.Get("Content-Type") != "image/webp" || len(b) < 20 || string(b[8:12]) != "WEBP") {
				t.Errorf("p%d: %s %.20q", i, h.Get("Content-Type"), b)
			}
			mu.Lock()
			codes[code]++
			mu.Unlock()
			if err != nil {
				t.Errorf("p%d: %v", i, err)
			}
		})
	}
	wg.Wait()
	runs, peak := wrapperStats(t, wd)
	t.Logf("%d requests: statuses %v, %d ffmpeg runs, at most %d at once", n, codes, runs, peak)
	if codes[200] != n {
		t.Errorf("statuses %v, want %d × 200", codes, n)
	}
	if runs != files {
		t.Errorf("%d ffmpeg runs, want %d", runs, files)
	}
	if peak > 2 || peak < 1 {
		t.Errorf("at most %d ffmpeg processes at once, want 1..2 (--th-mt 2)", peak)
	}
}

// Past the queue deadline a request gets 503 with Retry-After.
func TestMediaQueueDeadline(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out a queue deadline behind a 4 s ffmpeg (slow; -short)")
	}
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, dir, "a.png", encodePNG(t, twoToneImage(64, 48)))
	writeFile(t, dir, "b.png", encodePNG(t, twoToneImage(48, 64)))
	wd := t.TempDir()
	s := start(t, "--th-mt", "1", "--th-queue", "1", "--ffmpeg", ffmpegWrapper(t, wd, "4"), "-v", dir+"::r")
	var wg sync.WaitGroup
	var mu sync.Mutex
	var got []string
	for _, f := range []string{"a.png", "b.png"} {
		wg.Go(func() {
			code, h, b, err := s.getCtx(t.Context(), thumbURL(f, "w"))
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			got = append(got, strconv.Itoa(code)+" "+h.Get("Retry-After")+" "+strings.TrimSpace(string(b[:min(len(b), 60)])))
			mu.Unlock()
		})
		time.Sleep(200 * time.Millisecond)
	}
	wg.Wait()
	ok, busy := 0, 0
	for _, g := range got {
		switch {
		case strings.HasPrefix(g, "200 "):
			ok++
		case strings.HasPrefix(g, "503 5 the thumbnailer is busy"):
			busy++
		}
	}
	if ok != 1 || busy != 1 {
		t.Errorf("answers %q, want one 200 and one 503 with Retry-After", got)
	}
}

// aliveWrappers lists the wrapper processes still running (their pid files).
func aliveWrappers(dir string) []int {
	var out []int
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if pid, ok := strings.CutPrefix(e.Name(), "run."); ok {
			n, _ := strconv.Atoi(pid)
			if n > 0 && syscall.Kill(n, 0) == nil {
				out = append(out, n)
			}
		}
	}
	return out
}

// A client that leaves stops its job (ffmpeg killed); a conversion over
// --th-convt is killed too.
func TestMediaCancelAndTimeout(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for ffmpeg timeouts (slow; -short)")
	}
	t.Parallel()
	ffmpegPath(t)
	dir := t.TempDir()
	makeMedia(t, filepath.Join(dir, "tone.flac"), "-f", "lavfi", "-i", "sine=d=3")
	writeFile(t, dir, "a.png", encodePNG(t, twoToneImage(64, 48)))
	wd := t.TempDir()
	long := start(t, "--th-convt", "30", "--ffmpeg", ffmpegWrapper(t, wd, "60"), "-v", dir+"::r")
	waitGone := func(what string, within time.Duration) {
		t.Helper()
		deadline := time.Now().Add(within)
		for len(aliveWrappers(wd)) > 0 && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		if a := aliveWrappers(wd); len(a) > 0 {
			t.Errorf("%s: ffmpeg processes %v still running", what, a)
		}
	}
	// The client leaves after 700 ms: a streamed transcode, and a
	// thumbnail (waited for whole).
	for _, th := range []string{"opus", "w"} {
		file := "tone.flac"
		if th == "w" {
			file = "a.png"
		}
		ctx, cancel := context.WithTimeout(t.Context(), 700*time.Millisecond)
		_, _, _, err := long.getCtx(ctx, thumbURL(file, th))
		cancel()
		if err == nil {
			t.Fatalf("?th=%s finished although ffmpeg sleeps", th)
		}
		waitGone("client left ?th="+th, 3*time.Second) // long before --th-convt
	}
	if runs, _ := wrapperStats(t, wd); runs != 2 {
		t.Errorf("%d runs, want 2", runs)
	}

	wd = t.TempDir()
	s := start(t, "--th-convt", "2", "--ffmpeg", ffmpegWrapper(t, wd, "60"), "-v", dir+"::r")

	// A hanging conversion: the thumbnail falls back to the icon, the
	// transcode fails with 500, both after about --th-convt.
	start := time.Now()
	code, h, _, err := s.getCtx(t.Context(), thumbURL("a.png", "w"))
	if err != nil || code != 200 || h.Get("X-Hoard-Thumb") != "icon" {
		t.Errorf("hanging WebP thumbnail: %d %q %v", code, h.Get("X-Hoard-Thumb"), err)
	}
	code, _, b, err := s.getCtx(t.Context(), thumbURL("tone.flac", "caf"))
	if err != nil || code != 500 || !strings.Contains(string(b), "transcoding tone.flac failed") {
		t.Errorf("hanging transcode: %d %q %v", code, b, err)
	}
	if d := time.Since(start); d < 4*time.Second || d > 15*time.Second {
		t.Errorf("two timed-out conversions took %v, want about 2 × 2 s", d)
	}
	waitGone("timeout", 3*time.Second)
	if !strings.Contains(s.logs.String(), "did not finish within 2s") {
		t.Errorf("log does not name the timeout:\n%s", s.logs)
	}
}

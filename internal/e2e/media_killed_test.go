package e2e

import (
	"os"
	"path/filepath"
	"testing"
)

// An ffmpeg killed by a signal (the OOM killer, an operator) says nothing
// about the file: the request gets the icon, but the next one tries again
// instead of a remembered failure.
func TestMediaKilledFFmpegNotRemembered(t *testing.T) {
	t.Parallel()
	dir, wd := t.TempDir(), t.TempDir()
	makeMedia(t, filepath.Join(dir, "clip.mp4"), "-f", "lavfi", "-i", "testsrc=d=1:s=320x240:r=10", "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p")
	script := "#!/bin/sh\nif [ ! -e '" + wd + "/killed' ]; then : > '" + wd + "/killed'; kill -9 $$; fi\nexec '" + ffmpegPath(t) + "' \"$@\"\n"
	wrapper := filepath.Join(wd, "ffmpeg")
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	s := start(t, "--ffmpeg", wrapper, "-v", dir+"::r")
	resp, body := s.do(t, "GET", "/clip.mp4?th", nil)
	wantStatus(t, resp, body, 200)
	if how := resp.Header.Get("X-Hoard-Thumb"); how != "icon" {
		t.Fatalf("killed ffmpeg: X-Hoard-Thumb %q, want icon", how)
	}
	resp, body = s.do(t, "GET", "/clip.mp4?th", nil)
	wantStatus(t, resp, body, 200)
	if how := resp.Header.Get("X-Hoard-Thumb"); how != "made" {
		t.Fatalf("after a killed ffmpeg: X-Hoard-Thumb %q (%d bytes), want a thumbnail made now", how, len(body))
	}
	if w, h, _ := imageDims(t, body); w == 0 || h == 0 {
		t.Fatalf("thumbnail is %d×%d", w, h)
	}
}

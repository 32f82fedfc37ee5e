package e2e

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestMediaPixelCapFFmpeg: --th-max-mpx bounds what a thumbnail decodes,
// also when FFmpeg decodes it: a video, or a picture FFmpeg reads under a
// video's name (its png_pipe demuxer), with frames over the cap gets the
// icon instead of a frame that size held in FFmpeg's memory and then in
// the server's (a crafted file of tiny size can declare a frame of
// gigabytes). Frames within the cap still make thumbnails.
func TestMediaPixelCapFFmpeg(t *testing.T) {
	t.Parallel()
	ffmpegPath(t)
	dir := t.TempDir()
	// 2000×1000 = 2 megapixels, over a cap of 1; 640×360 is under it.
	makeMedia(t, filepath.Join(dir, "big.mp4"), "-f", "lavfi", "-i", "testsrc=d=1:s=2000x1000:r=2", "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p")
	makeMedia(t, filepath.Join(dir, "bigpng.mkv"), "-f", "lavfi", "-i", "testsrc=d=1:s=2000x1000:r=1", "-frames:v", "1", "-c:v", "png", "-f", "image2pipe")
	makeMedia(t, filepath.Join(dir, "small.mp4"), "-f", "lavfi", "-i", "testsrc=d=1:s=640x360:r=2", "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p")
	s := start(t, "-v", dir+"::r", "--th-max-mpx", "1")
	for _, name := range []string{"big.mp4", "bigpng.mkv"} {
		for _, th := range []string{"", "w"} {
			resp, body := s.do(t, "GET", thumbURL(name, th), nil)
			wantStatus(t, resp, body, 200)
			if got := resp.Header.Get("X-Hoard-Thumb"); got != "icon" {
				t.Errorf("%s ?th=%s: %q (%s), want the icon: its frames are over --th-max-mpx", name, th, got, resp.Header.Get("Content-Type"))
			}
		}
	}
	resp, body := s.do(t, "GET", thumbURL("small.mp4", ""), nil)
	wantStatus(t, resp, body, 200)
	if got := resp.Header.Get("X-Hoard-Thumb"); got == "icon" {
		t.Errorf("small.mp4: the icon, want a thumbnail")
	} else if w, h, _ := imageDims(t, body); w != 320 || h != 256 {
		t.Errorf("small.mp4: %d×%d", w, h)
	}
}

// TestMediaFFmpegEnvironment: FFmpeg and ffprobe get none of the server's
// environment but PATH. FFREPORT in it made every FFmpeg run write a
// report (its arguments, its log) to a file of the operator's naming; the
// server's may hold secrets (AWS_SECRET_ACCESS_KEY) besides.
func TestMediaFFmpegEnvironment(t *testing.T) {
	t.Parallel()
	ffmpegPath(t)
	dir, rep := t.TempDir(), t.TempDir()
	makeMedia(t, filepath.Join(dir, "v.mp4"), "-f", "lavfi", "-i", "testsrc=d=1:s=320x240:r=2", "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p")
	withEnv(t, "FFREPORT=file="+filepath.Join(rep, "ffreport-%p.log")+":level=32")
	s := start(t, "-v", dir+"::r", "-e2dsa", "-e2ts")
	resp, body := s.do(t, "GET", thumbURL("v.mp4", ""), nil)
	wantStatus(t, resp, body, 200)
	if got := resp.Header.Get("X-Hoard-Thumb"); got == "icon" {
		t.Fatalf("no thumbnail made (%s)", got)
	}
	time.Sleep(500 * time.Millisecond) // the tag prober runs in the background
	if left, _ := os.ReadDir(rep); len(left) != 0 {
		t.Errorf("FFmpeg wrote %d report files from the server's FFREPORT: %v", len(left), left[0].Name())
	}
}

package e2e

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"image"
	"image/color"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// mediaDir fills a folder with small generated media.
func mediaDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	writeFile(t, dir, "photo.jpg", encodeJPEG(t, twoToneImage(800, 600)))
	writeFile(t, dir, "notes.txt", []byte("not media\n"))
	makeMedia(t, filepath.Join(dir, "clip.mp4"), "-f", "lavfi", "-i", "testsrc=d=2:s=640x360:r=10", "-f", "lavfi", "-i", "sine=f=440:d=2", "-shortest", "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-c:a", "aac")
	makeMedia(t, filepath.Join(dir, "tone.flac"), "-f", "lavfi", "-i", "sine=f=330:d=6")
	return dir
}

func TestMediaThumbForms(t *testing.T) {
	t.Parallel()
	ffmpegPath(t)
	dir := mediaDir(t)
	s := start(t, "-v", dir+"::r")
	for _, tc := range []struct {
		file, th, ctype, kind string
		w, h                  int
	}{
		{file: "photo.jpg", th: "", ctype: "image/jpeg", kind: "jpeg", w: 320, h: 256},      // default box, cropped
		{file: "photo.jpg", th: "j", ctype: "image/jpeg", kind: "jpeg", w: 320, h: 256},     // same as empty
		{file: "photo.jpg", th: "jf", ctype: "image/jpeg", kind: "jpeg", w: 320, h: 240},    // fit, no crop
		{file: "photo.jpg", th: "w100", ctype: "image/jpeg", kind: "jpeg", w: 100, h: 75},   // width 100
		{file: "photo.jpg", th: "h100", ctype: "image/jpeg", kind: "jpeg", w: 133, h: 100},  // height 100
		{file: "photo.jpg", th: "w2000", ctype: "image/jpeg", kind: "jpeg", w: 800, h: 600}, // never enlarged
		{file: "photo.jpg", th: "3", ctype: "image/jpeg", kind: "jpeg", w: 800, h: 600},     // 3× box is bigger than the photo
		{file: "photo.jpg", th: "w", ctype: "image/webp", kind: "webp", w: 320, h: 256},
		{file: "photo.jpg", th: "wf", ctype: "image/webp", kind: "webp", w: 320, h: 240},
		{file: "photo.jpg", th: "w3", ctype: "image/webp", kind: "webp", w: 800, h: 600},
		{file: "clip.mp4", th: "", ctype: "image/jpeg", kind: "jpeg", w: 320, h: 256},
		{file: "clip.mp4", th: "f", ctype: "image/jpeg", kind: "jpeg", w: 320, h: 180},
		{file: "clip.mp4", th: "w", ctype: "image/webp", kind: "webp", w: 320, h: 256},
		{file: "clip.mp4", th: "w160", ctype: "image/jpeg", kind: "jpeg", w: 160, h: 90},
		{file: "tone.flac", th: "", ctype: "image/jpeg", kind: "jpeg", w: 320, h: 256}, // spectrogram
		{file: "clip.mp4", th: "p", ctype: "image/png", kind: "png", w: 2048, h: 64},   // waveform
		{file: "tone.flac", th: "p", ctype: "image/png", kind: "png", w: 2048, h: 64},
	} {
		resp, body := s.do(t, "GET", thumbURL(tc.file, tc.th), nil)
		wantStatus(t, resp, body, 200)
		if ct := resp.Header.Get("Content-Type"); ct != tc.ctype {
			t.Errorf("%s ?th=%s: Content-Type %q, want %q", tc.file, tc.th, ct, tc.ctype)
		}
		w, h, kind := imageDims(t, body)
		if w != tc.w || h != tc.h || kind != tc.kind {
			t.Errorf("%s ?th=%s: %s %d×%d, want %s %d×%d", tc.file, tc.th, kind, w, h, tc.kind, tc.w, tc.h)
		}
	}
	// A text file: the generic icon, 200.
	resp, body := s.do(t, "GET", thumbURL("notes.txt", ""), nil)
	wantStatus(t, resp, body, 200)
	if resp.Header.Get("Content-Type") != "image/svg+xml" || !bytes.Contains(body, []byte("<svg")) || !bytes.Contains(body, []byte(">txt<")) {
		t.Errorf("icon for notes.txt: %s %q", resp.Header.Get("Content-Type"), body)
	}
	// No waveform of a picture; no transcode of a text file.
	resp, body = s.do(t, "GET", thumbURL("photo.jpg", "p"), nil)
	wantStatus(t, resp, body, 404)
	resp, body = s.do(t, "GET", thumbURL("notes.txt", "opus"), nil)
	wantStatus(t, resp, body, 415)
	// HEAD gets the headers only.
	resp, body = s.do(t, "HEAD", thumbURL("photo.jpg", ""), nil)
	wantStatus(t, resp, body, 200)
	if len(body) != 0 || resp.Header.Get("Content-Type") != "image/jpeg" {
		t.Errorf("HEAD: %d bytes, %s", len(body), resp.Header.Get("Content-Type"))
	}
}

func TestMediaEXIFOrientation(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// 400×200 stored, red left; orientation 6 shows it 200×400 with the
	// red half on top, 8 with the red half at the bottom.
	writeFile(t, dir, "six.jpg", jpegWithOrientation(t, twoToneImage(400, 200), 6))
	writeFile(t, dir, "eight.jpg", jpegWithOrientation(t, twoToneImage(400, 200), 8))
	writeFile(t, dir, "three.jpg", jpegWithOrientation(t, twoToneImage(400, 200), 3))
	s := start(t, "-v", dir+"::r")
	red := func(c color.Color) bool { r, g, b, _ := c.RGBA(); return r > 0xC000 && g < 0x5000 && b < 0x5000 }
	blue := func(c color.Color) bool { r, g, b, _ := c.RGBA(); return b > 0xC000 && g < 0x5000 && r < 0x5000 }
	for _, tc := range []struct {
		file       string
		w, h       int
		redX, redY int
		bluX, bluY int
	}{
		{file: "six.jpg", w: 100, h: 200, redX: 50, redY: 20, bluX: 50, bluY: 180},
		{file: "eight.jpg", w: 100, h: 200, redX: 50, redY: 180, bluX: 50, bluY: 20},
		{file: "three.jpg", w: 100, h: 50, redX: 90, redY: 25, bluX: 10, bluY: 25},
	} {
		resp, body := s.do(t, "GET", thumbURL(tc.file, "w100"), nil)
		wantStatus(t, resp, body, 200)
		img, _, err := image.Decode(bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if b := img.Bounds(); b.Dx() != tc.w || b.Dy() != tc.h {
			t.Fatalf("%s: %v, want %d×%d", tc.file, b, tc.w, tc.h)
		}
		if !red(img.At(tc.redX, tc.redY)) || !blue(img.At(tc.bluX, tc.bluY)) {
			t.Errorf("%s: not turned upright: (%d,%d)=%v (%d,%d)=%v", tc.file, tc.redX, tc.redY, img.At(tc.redX, tc.redY), tc.bluX, tc.bluY, img.At(tc.bluX, tc.bluY))
		}
	}
}

func TestMediaTranscodes(t *testing.T) {
	t.Parallel()
	ffmpegPath(t)
	dir := mediaDir(t)
	// A name beginning with "-" must not become an ffmpeg option.
	makeMedia(t, filepath.Join(dir, "-i.flac"), "-f", "lavfi", "-i", "sine=f=500:d=5")
	s := start(t, "-v", dir+"::r")
	for _, tc := range []struct {
		file, th, ctype, format, codec string
		dur                            float64
	}{
		{file: "tone.flac", th: "opus", ctype: "audio/webm; codecs=opus", format: "matroska,webm", codec: "opus", dur: 6},
		{file: "tone.flac", th: "caf", ctype: "audio/x-caf", format: "caf", codec: "opus", dur: 6},
		{file: "tone.flac", th: "mp3", ctype: "audio/mpeg", format: "mp3", codec: "mp3", dur: 6},
		{file: "clip.mp4", th: "opus", ctype: "audio/webm; codecs=opus", format: "matroska,webm", codec: "opus", dur: 2},
		{file: "-i.flac", th: "opus", ctype: "audio/webm; codecs=opus", format: "matroska,webm", codec: "opus", dur: 5},
		{file: "-i.flac", th: "mp3", ctype: "audio/mpeg", format: "mp3", codec: "mp3", dur: 5},
	} {
		for round := range 2 { // made, then cached
			resp, body := s.do(t, "GET", thumbURL(tc.file, tc.th), nil)
			wantStatus(t, resp, body, 200)
			if ct := resp.Header.Get("Content-Type"); ct != tc.ctype {
				t.Errorf("%s ?th=%s: Content-Type %q, want %q", tc.file, tc.th, ct, tc.ctype)
			}
			if how := resp.Header.Get("X-Hoard-Thumb"); round == 1 && how != "cached" {
				t.Errorf("%s ?th=%s second request: %q, want cached", tc.file, tc.th, how)
			}
			p := probeMedia(t, body)
			if p.Format.FormatName != tc.format || len(p.Streams) != 1 || p.Streams[0].CodecName != tc.codec || p.Streams[0].CodecType != "audio" {
				t.Fatalf("%s ?th=%s: ffprobe says %+v", tc.file, tc.th, p)
			}
			if d := p.duration(); d < tc.dur-0.3 || d > tc.dur+0.3 {
				t.Errorf("%s ?th=%s: duration %v, want %v", tc.file, tc.th, d, tc.dur)
			}
			// Opus is asked for at 128 kbit/s (VBR); MP3 at LAME's -q:a 2
			// (about 190 kbit/s, less for a sine). Measured from the size.
			kbps := float64(len(body)) * 8 / tc.dur / 1000
			lo, hi := 100.0, 170.0
			if tc.codec == "mp3" {
				lo, hi = 40, 260
			}
			if kbps < lo || kbps > hi {
				t.Errorf("%s ?th=%s: %.0f kbit/s, want %v–%v", tc.file, tc.th, kbps, lo, hi)
			}
		}
	}
}

func TestMediaCacheHit(t *testing.T) {
	t.Parallel()
	ffmpegPath(t)
	dir := mediaDir(t)
	wd := t.TempDir()
	s := start(t, "--ffmpeg", ffmpegWrapper(t, wd, "0"), "-v", dir+"::r")
	for _, tc := range []struct{ file, th string }{{file: "photo.jpg", th: ""}, {file: "photo.jpg", th: "w"}, {file: "clip.mp4", th: "w200"}, {file: "tone.flac", th: "p"}} {
		resp, first := s.do(t, "GET", thumbURL(tc.file, tc.th), nil)
		wantStatus(t, resp, first, 200)
		if how := resp.Header.Get("X-Hoard-Thumb"); how != "made" {
			t.Errorf("%s ?th=%s first: %q, want made", tc.file, tc.th, how)
		}
		runs, _ := wrapperStats(t, wd)
		resp, second := s.do(t, "GET", thumbURL(tc.file, tc.th), nil)
		wantStatus(t, resp, second, 200)
		if how := resp.Header.Get("X-Hoard-Thumb"); how != "cached" {
			t.Errorf("%s ?th=%s second: %q, want cached", tc.file, tc.th, how)
		}
		if again, _ := wrapperStats(t, wd); again != runs {
			t.Errorf("%s ?th=%s: the cached request ran ffmpeg (%d → %d runs)", tc.file, tc.th, runs, again)
		}
		if !bytes.Equal(first, second) {
			t.Errorf("%s ?th=%s: cached bytes differ", tc.file, tc.th)
		}
		// A range of the cached output.
		resp, part := s.do(t, "GET", thumbURL(tc.file, tc.th), nil, "Range: bytes=0-9")
		wantStatus(t, resp, part, 206)
		if !bytes.Equal(part, first[:10]) {
			t.Errorf("range of cached thumbnail differs")
		}
	}
	// The cache lives under the volume's .hist/th and is never listed.
	n := 0
	filepath.WalkDir(filepath.Join(dir, ".hist", "th"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && !strings.Contains(p, string(filepath.Separator)+"w"+string(filepath.Separator)) {
			n++
		}
		return nil
	})
	if n != 4 {
		t.Errorf("%d files in .hist/th, want 4", n)
	}
	resp, body := s.do(t, "GET", "/?ls", nil)
	wantStatus(t, resp, body, 200)
	if bytes.Contains(body, []byte(".hist")) {
		t.Errorf("listing shows .hist: %s", body)
	}
	// A changed file gets a new thumbnail.
	writeFile(t, dir, "photo.jpg", encodeJPEG(t, twoToneImage(600, 600)))
	resp, body = s.do(t, "GET", thumbURL("photo.jpg", "f"), nil)
	wantStatus(t, resp, body, 200)
	if w, h, _ := imageDims(t, body); w != 256 || h != 256 || resp.Header.Get("X-Hoard-Thumb") != "made" {
		t.Errorf("after a change: %d×%d %s", w, h, resp.Header.Get("X-Hoard-Thumb"))
	}
}

func TestMediaCacheCap(t *testing.T) {
	if testing.Short() {
		t.Skip("seven large noise thumbnails (slow; -short)")
	}
	t.Parallel()
	dir := t.TempDir()
	// Noise compresses badly: each 960×768 thumbnail is a few hundred KiB,
	// seven of them more than the 1 MiB cap.
	makeMedia(t, filepath.Join(dir, "n%d.png"), "-f", "lavfi", "-i", "nullsrc=s=960x768,geq=lum='random(1)*255':cb='random(2)*255':cr=128", "-start_number", "0", "-frames:v", "7")
	s := start(t, "--th-cache-max", "1", "-v", dir+"::r")
	var wg sync.WaitGroup
	for i := range 7 {
		wg.Go(func() {
			code, _, body, err := s.getCtx(t.Context(), thumbURL("n"+strconv.Itoa(i)+".png", "3"))
			if err != nil || code != 200 {
				t.Errorf("n%d: %d %v", i, code, err)
			} else if len(body) < 150<<10 {
				t.Errorf("thumbnail of noise is only %d bytes; the test needs big ones", len(body))
			}
		})
	}
	wg.Wait()
	// Eviction runs in the background; it keeps the cache under its cap.
	var total int64
	for range 50 {
		total = 0
		filepath.WalkDir(filepath.Join(dir, ".hist", "th"), func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				if fi, err := d.Info(); err == nil {
					total += fi.Size()
				}
			}
			return nil
		})
		if total <= 1<<20 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if total > 1<<20 || total == 0 {
		t.Errorf("cache holds %d bytes, want 0 < size ≤ 1 MiB", total)
	}
	// Evicted thumbnails are made again (which ones went depends on the
	// order the concurrent requests finished in).
	made := 0
	for i := range 7 {
		resp, body := s.do(t, "GET", thumbURL("n"+strconv.Itoa(i)+".png", "3"), nil)
		wantStatus(t, resp, body, 200)
		if resp.Header.Get("X-Hoard-Thumb") == "made" {
			made++
		}
	}
	if made == 0 {
		t.Errorf("every thumbnail came from the cache although it was over its cap")
	}
}

func TestMediaBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := encodeJPEG(t, twoToneImage(200, 100))
	writeFile(t, dir, "good.jpg", good)
	writeFile(t, dir, "bomb.png", pngHeaderOnly(50000, 50000))
	writeFile(t, dir, "truncated.jpg", good[:len(good)/2])
	corrupt := bytes.Clone(good)
	for i := 200; i < len(corrupt)-2; i += 3 {
		corrupt[i] = 0xFF
	}
	writeFile(t, dir, "corrupt.jpg", corrupt)
	writeFile(t, dir, "empty.png", nil)
	writeFile(t, dir, "-vf.jpg", good)
	ffmpegPath(t)
	makeMedia(t, filepath.Join(dir, "clip.mp4"), "-f", "lavfi", "-i", "testsrc=d=2:s=320x240:r=10", "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p")
	clip, err := os.ReadFile(filepath.Join(dir, "clip.mp4"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "truncated.mp4", clip[:len(clip)/3])
	writeFile(t, dir, "garbage.mkv", bytes.Repeat([]byte("not a video "), 1000))
	// A playlist posing as media must not make ffmpeg read another file
	// of the server (here: a real audio file outside the volume).
	outside := t.TempDir()
	makeMedia(t, filepath.Join(outside, "secret.flac"), "-f", "lavfi", "-i", "sine=d=5")
	writeFile(t, dir, "hls.mp3", []byte("#EXTM3U\n#EXT-X-TARGETDURATION:10\n#EXTINF:5,\n"+filepath.Join(outside, "secret.flac")+"\n#EXT-X-ENDLIST\n"))
	writeFile(t, dir, "concat.mkv", []byte("ffconcat version 1.0\nfile "+filepath.Join(outside, "secret.flac")+"\n"))
	before := tree(t, dir)
	s := start(t, "-v", dir+"::r")
	for _, v := range []string{"w0", "w99999", "h0", "h5000", "w15", "x", "jj", "fj", "w100f", "opus1", "%00", "-i", "w-1"} {
		resp, body := s.do(t, "GET", "/good.jpg?th="+v, nil)
		wantStatus(t, resp, body, 400)
		if !strings.Contains(string(body), "?th") {
			t.Errorf("?th=%s: message %q does not say what was wrong", v, body)
		}
	}
	for _, name := range []string{"bomb.png", "truncated.jpg", "corrupt.jpg", "empty.png", "truncated.mp4", "garbage.mkv"} {
		for range 2 { // the second answer comes from the remembered failure
			resp, body := s.do(t, "GET", thumbURL(name, ""), nil)
			wantStatus(t, resp, body, 200)
			if resp.Header.Get("Content-Type") != "image/svg+xml" || resp.Header.Get("X-Hoard-Thumb") != "icon" {
				t.Errorf("%s: %s %s, want the icon", name, resp.Header.Get("Content-Type"), resp.Header.Get("X-Hoard-Thumb"))
			}
		}
	}
	for _, name := range []string{"hls.mp3", "concat.mkv"} {
		for _, th := range []string{"mp3", "opus", "p"} {
			resp, body := s.do(t, "GET", thumbURL(name, th), nil)
			wantStatus(t, resp, body, 500)
		}
		resp, body := s.do(t, "GET", thumbURL(name, ""), nil)
		wantStatus(t, resp, body, 200)
		if resp.Header.Get("X-Hoard-Thumb") != "icon" {
			t.Errorf("%s: spectrogram of another file (%s)", name, resp.Header.Get("X-Hoard-Thumb"))
		}
	}
	// Transcoding a file FFmpeg cannot read: 500 with a message.
	resp, body := s.do(t, "GET", thumbURL("garbage.mkv", "opus"), nil)
	wantStatus(t, resp, body, 500)
	if !strings.Contains(string(body), "transcoding garbage.mkv failed") {
		t.Errorf("garbage.mkv opus: %q", body)
	}
	resp, body = s.do(t, "GET", thumbURL("-vf.jpg", "w50"), nil)
	wantStatus(t, resp, body, 200)
	if w, h, _ := imageDims(t, body); w != 50 || h != 25 {
		t.Errorf("-vf.jpg: %d×%d", w, h)
	}
	// Missing file, and nothing in the volume changed (the cache is in .hist).
	resp, body = s.do(t, "GET", thumbURL("nope.jpg", ""), nil)
	wantStatus(t, resp, body, 404)
	after := []string{}
	for _, p := range tree(t, dir) {
		if p != ".hist" && !strings.HasPrefix(p, ".hist/") {
			after = append(after, p)
		}
	}
	if strings.Join(after, ",") != strings.Join(before, ",") {
		t.Errorf("volume changed: %v → %v", before, after)
	}
	if lg := s.logs.String(); strings.Contains(lg, "panic") {
		t.Errorf("server log has a panic:\n%s", lg)
	}
}

func TestMediaPermissions(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, dir, "a.jpg", encodeJPEG(t, twoToneImage(100, 100)))
	s := start(t, "-a", "r:pw-r", "-a", "w:pw-w", "-a", "g:pw-g", "-v", dir+"::r,r:w,w:g,g")
	resp, body := s.do(t, "GET", thumbURL("a.jpg", ""), nil)
	wantStatus(t, resp, body, 401)
	resp, body = s.do(t, "GET", thumbURL("a.jpg", ""), nil, "PW: pw-w")
	wantStatus(t, resp, body, 403)
	for _, pw := range []string{"pw-r", "pw-g"} {
		resp, body = s.do(t, "GET", thumbURL("a.jpg", ""), nil, "PW: "+pw)
		wantStatus(t, resp, body, 200)
		if resp.Header.Get("Content-Type") != "image/jpeg" {
			t.Errorf("%s: %s", pw, resp.Header.Get("Content-Type"))
		}
	}
}

func TestMediaNoFFmpeg(t *testing.T) {
	t.Parallel()
	ffmpegPath(t)
	dir := mediaDir(t)
	s := start(t, "--ffmpeg", filepath.Join(t.TempDir(), "no-such-ffmpeg"), "-v", dir+"::r")
	for _, tc := range []struct{ file, th string }{{file: "tone.flac", th: "opus"}, {file: "tone.flac", th: "mp3"}, {file: "tone.flac", th: "caf"}, {file: "tone.flac", th: "p"}, {file: "clip.mp4", th: ""}, {file: "photo.jpg", th: "w"}} {
		resp, body := s.do(t, "GET", thumbURL(tc.file, tc.th), nil)
		wantStatus(t, resp, body, 500)
		if !strings.Contains(string(body), "FFmpeg is not installed") {
			t.Errorf("%s ?th=%s: %q", tc.file, tc.th, body)
		}
	}
	// Pure-Go thumbnails still work.
	resp, body := s.do(t, "GET", thumbURL("photo.jpg", ""), nil)
	wantStatus(t, resp, body, 200)
	if w, h, _ := imageDims(t, body); w != 320 || h != 256 {
		t.Errorf("photo without ffmpeg: %d×%d", w, h)
	}
	if !strings.Contains(s.logs.String(), "FFmpeg not found") {
		t.Errorf("no startup warning about FFmpeg")
	}
	_ = http.StatusOK
	_ = os.Getpid
}

func TestMediaFolderThumb(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, dir, "album/cover.jpg", encodeJPEG(t, twoToneImage(600, 600)))
	writeFile(t, dir, "album/x.txt", []byte("x"))
	writeFile(t, dir, "empty/x.txt", []byte("x"))
	s := start(t, "-v", dir+"::r")
	resp, body := s.do(t, "GET", "/album/?th", nil)
	wantStatus(t, resp, body, 200)
	if w, h, k := imageDims(t, body); w != 320 || h != 256 || k != "jpeg" {
		t.Errorf("album cover: %s %d×%d", k, w, h)
	}
	resp, body = s.do(t, "GET", "/empty/?th=w", nil)
	wantStatus(t, resp, body, 200)
	if resp.Header.Get("Content-Type") != "image/svg+xml" || !bytes.Contains(body, []byte(">folder<")) {
		t.Errorf("folder without cover: %s %q", resp.Header.Get("Content-Type"), body)
	}
	resp, body = s.do(t, "GET", "/empty/?th=w0", nil)
	wantStatus(t, resp, body, 400)
}

// ---- generated images ----

// jpegWithOrientation is m as a JPEG with a hand-written EXIF APP1 segment giving
// orientation o (little-endian TIFF).
func jpegWithOrientation(t testing.TB, m image.Image, o uint16) []byte {
	j := encodeJPEG(t, m)
	le := binary.LittleEndian
	tiff := []byte("II*\x00")
	tiff = le.AppendUint32(tiff, 8)
	tiff = le.AppendUint16(tiff, 1)
	tiff = le.AppendUint16(tiff, 0x0112)
	tiff = le.AppendUint16(tiff, 3)
	tiff = le.AppendUint32(tiff, 1)
	tiff = le.AppendUint16(tiff, o)
	tiff = le.AppendUint16(tiff, 0)
	tiff = le.AppendUint32(tiff, 0)
	app1 := append([]byte("Exif\x00\x00"), tiff...)
	out := []byte{0xFF, 0xD8, 0xFF, 0xE1}
	out = binary.BigEndian.AppendUint16(out, uint16(len(app1)+2))
	out = append(out, app1...)
	return append(out, j[2:]...)
}

// pngHeaderOnly is a PNG signature and a valid IHDR chunk for w×h only.
func pngHeaderOnly(w, h uint32) []byte {
	b := []byte("\x89PNG\r\n\x1a\n")
	ihdr := []byte("IHDR")
	ihdr = binary.BigEndian.AppendUint32(ihdr, w)
	ihdr = binary.BigEndian.AppendUint32(ihdr, h)
	ihdr = append(ihdr, 8, 6, 0, 0, 0)
	b = binary.BigEndian.AppendUint32(b, 13)
	b = append(b, ihdr...)
	b = binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(ihdr))
	return append(b, make([]byte, 64)...)
}

package e2e

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"hash/crc32"
	"image"
	"image/color"
	_ "image/gif"
	"image/jpeg"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	_ "golang.org/x/image/webp"
)

// ffmpegPath is the real ffmpeg; the media tests need it (CI installs it).
func ffmpegPath(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("ffmpeg")
	if err != nil {
		t.Fatalf("the media tests need ffmpeg and ffprobe (apt-get install ffmpeg): %v", err)
	}
	return p
}

// makeMedia makes a media file at out with ffmpeg's generated sources, e.g.
// makeMedia(t, out, "-f", "lavfi", "-i", "sine=d=2").
func makeMedia(t testing.TB, out string, args ...string) {
	t.Helper()
	cmd := exec.Command(ffmpegPath(t), append(append([]string{"-nostdin", "-v", "error", "-y"}, args...), out)...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("ffmpeg %v: %v\n%s", args, err, b)
	}
}

// mediaProbe is what ffprobe says about a file.
type mediaProbe struct {
	Streams []struct {
		CodecName string `json:"codec_name"`
		CodecType string `json:"codec_type"`
		Width     int    `json:"width"`
		Height    int    `json:"height"`
	} `json:"streams"`
	Format struct {
		FormatName string `json:"format_name"`
		Duration   string `json:"duration"`
		BitRate    string `json:"bit_rate"`
		Size       string `json:"size"`
	} `json:"format"`
}

func probeMedia(t testing.TB, data []byte) mediaProbe {
	t.Helper()
	f := filepath.Join(t.TempDir(), "probe.bin")
	if err := os.WriteFile(f, data, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("ffprobe", "-v", "error", "-of", "json", "-show_streams", "-show_format", f).Output()
	if err != nil {
		t.Fatalf("ffprobe: %v", err)
	}
	var p mediaProbe
	if err := json.Unmarshal(out, &p); err != nil {
		t.Fatal(err)
	}
	return p
}

func (p mediaProbe) duration() float64 {
	d, _ := strconv.ParseFloat(p.Format.Duration, 64)
	return d
}

// twoToneImage is a w×h JPEG, red in its left half and blue in its right.
func twoToneImage(w, h int) image.Image {
	m := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			c := color.RGBA{255, 0, 0, 255}
			if x >= w/2 {
				c = color.RGBA{0, 0, 255, 255}
			}
			m.SetRGBA(x, y, c)
		}
	}
	return m
}

func encodeJPEG(t testing.TB, m image.Image) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := jpeg.Encode(&b, m, &jpeg.Options{Quality: 90}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

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

// imageDims decodes an image's header: width, height, format.
func imageDims(t testing.TB, b []byte) (int, int, string) {
	t.Helper()
	cfg, kind, err := image.DecodeConfig(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("not an image (%v): %.80q", err, b)
	}
	return cfg.Width, cfg.Height, kind
}

// ffmpegWrapper writes a script to use as --ffmpeg: it records each run
// (one line in dir/runs), the number of runs alive at its start (dir/conc)
// and its pid while alive (dir/run.PID), sleeps pre seconds, then runs the
// real ffmpeg.
func ffmpegWrapper(t testing.TB, dir string, pre string) string {
	t.Helper()
	real := ffmpegPath(t)
	script := `#!/bin/sh
d='` + dir + `'
echo $$ > "$d/run.$$"
echo x >> "$d/runs"
ls "$d" | grep -c '^run\.' >> "$d/conc"
sleep ` + pre + `
'` + real + `' "$@"
rc=$?
rm -f "$d/run.$$"
exit $rc
`
	p := filepath.Join(dir, "ffmpeg-wrapper.sh")
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// wrapperStats reads the wrapper's records: runs and the highest
// concurrency seen.
func wrapperStats(t testing.TB, dir string) (runs, maxConc int) {
	t.Helper()
	b, _ := os.ReadFile(filepath.Join(dir, "runs"))
	runs = strings.Count(string(b), "\n")
	c, _ := os.ReadFile(filepath.Join(dir, "conc"))
	for _, l := range strings.Fields(string(c)) {
		n, _ := strconv.Atoi(l)
		maxConc = max(maxConc, n)
	}
	return runs, maxConc
}

func encodePNG(t testing.TB, m image.Image) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, m); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

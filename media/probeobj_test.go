package media

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"
)

// The stand-in of a file larger than two spans holds only its ends, yet
// ffprobe reads the same tags and duration from it as from the file:
// an MP3's ID3v2 tags and Xing frame at its start, an Ogg's comments at
// its start and its duration from its last page (at the end).
func TestProbeStandIn(t *testing.T) {
	needFFmpeg(t)
	dir := t.TempDir()
	for _, c := range []struct{ name, codec string }{{"n.ogg", "libvorbis"}, {"n.mp3", "libmp3lame"}} {
		out := filepath.Join(dir, c.name)
		cmd := exec.Command("ffmpeg", "-v", "error", "-f", "lavfi", "-i", "anoisesrc=duration=12:sample_rate=44100",
			"-c:a", c.codec, "-b:a", "192k", "-metadata", "artist=Stand In", "-metadata", "title=Noise", "-metadata", "date=1999", out)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Skipf("ffmpeg cannot make %s: %v: %s", c.name, err, b)
		}
		data, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		const span = 64 << 10
		if len(data) < 4*span {
			t.Fatalf("%s: %d bytes, too small to leave a hole", c.name, len(data))
		}
		f, err := os.Open(out)
		if err != nil {
			t.Fatal(err)
		}
		want, err := ProbeFile(context.Background(), f)
		f.Close()
		if err != nil || want["artist"] != "Stand In" || want["dur"] == "" {
			t.Fatalf("%s: the whole file probes as %v, %v", c.name, want, err)
		}
		si, err := anonFile()
		if err != nil {
			t.Fatal(err)
		}
		defer si.Close()
		if err := fillStandIn(context.Background(), si, bytes.NewReader(data), int64(len(data)), span); err != nil {
			t.Fatal(err)
		}
		if fi, _ := si.Stat(); fi.Size() != int64(len(data)) {
			t.Fatalf("%s: stand-in of %d bytes, want %d", c.name, fi.Size(), len(data))
		}
		got, err := ProbeFile(context.Background(), si)
		if err != nil {
			t.Fatalf("%s: stand-in: %v", c.name, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: the stand-in probes as %v, the file as %v", c.name, got, want)
		}
	}
	// Through ProbeObject, a whole small object.
	data, _ := os.ReadFile(filepath.Join(dir, "n.ogg"))
	if got, err := ProbeObject(context.Background(), bytes.NewReader(data), int64(len(data))); err != nil || got["title"] != "Noise" {
		t.Errorf("ProbeObject: %v, %v", got, err)
	}
	// An object shorter than it said: an error, no tags.
	if got, err := ProbeObject(context.Background(), bytes.NewReader(data[:1000]), int64(len(data))); err == nil {
		t.Errorf("a short object probed as %v", got)
	}
}

// probeRanges: inside the object, in order, not overlapping, the whole
// of a small object, both ends of a large one.
func FuzzProbeRanges(f *testing.F) {
	for _, s := range [][2]int64{{0, 4}, {1, 4}, {8, 4}, {9, 4}, {100, 0}, {1 << 40, ProbeSpan}, {-5, 3}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, size, span int64) {
		if span > 1<<50 || span < -1<<50 {
			return
		}
		rs := probeRanges(size, span)
		var end, total int64
		for i, r := range rs {
			if r[0] < end || r[1] <= 0 || r[0]+r[1] > size {
				t.Fatalf("size %d span %d: range %d %v (after %d)", size, span, i, r, end)
			}
			end = r[0] + r[1]
			total += r[1]
		}
		switch {
		case size <= 0:
			if len(rs) != 0 {
				t.Fatalf("size %d: %v", size, rs)
			}
		case span <= 0 || size <= 2*span:
			if total != size {
				t.Fatalf("size %d span %d: %v is not the whole", size, span, rs)
			}
		default:
			if len(rs) != 2 || rs[0][0] != 0 || end != size || total != 2*span {
				t.Fatalf("size %d span %d: %v, want both ends", size, span, rs)
			}
		}
	})
}

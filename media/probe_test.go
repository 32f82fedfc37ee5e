package media

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"
)

func TestParseFFprobe(t *testing.T) {
	for _, c := range []struct {
		name, in string
		want     Tags
	}{
		{"mp3 id3", `{"format":{"duration":"245.123456","bit_rate":"320000","tags":{"ARTIST":"Daft Punk","album_artist":"Various","album":"Discovery","title":"One More Time","track":"1/14","date":"2001-03-12","genre":"House"}}}`,
			Tags{"artist": "Daft Punk", "album": "Discovery", "title": "One More Time", "track": "1", "year": "2001", "genre": "House", "dur": "245.123", "rate": "320"}},
		{"ogg stream tags, composer only", `{"format":{"duration":"2.5"},"streams":[{"codec_type":"audio","bit_rate":"96000","tags":{"COMPOSER":"Bach","TITLE":"Air"}}]}`,
			Tags{"artist": "Bach", "title": "Air", "dur": "2.5", "rate": "96"}},
		{"bad year dropped", `{"format":{"tags":{"date":"19"}}}`, Tags{}},
		{"nothing", `{}`, Tags{}},
	} {
		got, err := parseFFprobe([]byte(c.in))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
	if _, err := parseFFprobe([]byte("not json")); err == nil {
		t.Error("bad JSON accepted")
	}
}

func TestProbeReal(t *testing.T) {
	needFFmpeg(t)
	dir := t.TempDir()
	for _, name := range []string{"a.mp3", "b.m4a", "c.opus"} {
		p := filepath.Join(dir, name)
		out, err := exec.Command("ffmpeg", "-v", "error", "-f", "lavfi", "-i", "sine=duration=2", "-metadata", "artist=Nina Simone",
			"-metadata", "title=Sinnerman", "-metadata", "date=1965", p).CombinedOutput()
		if err != nil {
			t.Fatalf("ffmpeg %s: %v %s", name, err, out)
		}
		tags, err := Probe(context.Background(), p)
		if err != nil {
			t.Fatalf("Probe(%s): %v", name, err)
		}
		if tags["artist"] != "Nina Simone" || tags["title"] != "Sinnerman" || tags["year"] != "1965" || tags["dur"] == "" {
			t.Errorf("Probe(%s) = %v", name, tags)
		}
	}
	p := filepath.Join(dir, "not-media.mp3")
	exec.Command("sh", "-c", "echo hello > "+p).Run()
	if _, err := Probe(context.Background(), p); err == nil {
		t.Error("Probe of a text file succeeded")
	}
}

// TestProbeRefusesPlaylists: an HLS playlist or ffconcat list saved as an
// mp3 must not make ffprobe read another file of the server (whose tags
// would then land in the index).
func TestProbeRefusesPlaylists(t *testing.T) {
	needFFmpeg(t)
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret.mp3")
	if out, err := exec.Command("ffmpeg", "-v", "error", "-f", "lavfi", "-i", "sine=duration=1",
		"-metadata", "artist=Leaked Artist", secret).CombinedOutput(); err != nil {
		t.Fatalf("ffmpeg: %v %s", err, out)
	}
	lists := map[string]string{
		"hls.mp3":    "#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXTINF:1,\nfile:" + secret + "\n#EXT-X-ENDLIST\n",
		"concat.mp3": "ffconcat version 1.0\nfile '" + secret + "'\n",
	}
	for name, body := range lists {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		tags, _ := Probe(context.Background(), p)
		if tags["artist"] != "" {
			t.Errorf("%s: ffprobe followed the playlist to another file: tags %v", name, tags)
		}
	}
}

// needFFmpeg skips the test where ffprobe or ffmpeg (which makes its
// media) is not installed.
func needFFmpeg(t *testing.T) {
	t.Helper()
	if !HaveFFprobe() {
		t.Skip("ffprobe is not installed")
	}
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		t.Skip("ffmpeg is not installed")
	}
}

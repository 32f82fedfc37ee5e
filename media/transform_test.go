package media

import (
	"bytes"
	"context"
	"image/jpeg"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

func TestTransform(t *testing.T) {
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		t.Fatalf("needs ffmpeg (apt-get install ffmpeg): %v", err)
	}
	dir := t.TempDir()
	gen := func(name string, args ...string) {
		out, err := exec.Command("ffmpeg", append(append([]string{"-nostdin", "-v", "error", "-y"}, args...), filepath.Join(dir, name))...).CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %s", err, out)
		}
	}
	gen("a.flac", "-f", "lavfi", "-i", "sine=d=2")
	gen("b.mp3", "-f", "lavfi", "-i", "sine=d=1")
	var jb bytes.Buffer
	jpeg.Encode(&jb, twoTone(640, 480), nil)
	os.WriteFile(filepath.Join(dir, "c.jpg"), jb.Bytes(), 0o644)
	os.WriteFile(filepath.Join(dir, "d.txt"), []byte("text"), 0o644)
	s := New(Config{Workers: 2})
	defer s.Close()
	for _, tc := range []struct {
		file, mod, newName string // "" = kept
		magic              string
	}{
		{"a.flac", "opus", "dir/a.opus", "OggS"},
		{"a.flac", "mp3", "dir/a.mp3", "ID3"},
		{"a.flac", "p", "dir/a.png", "\x89PNG"},
		{"b.mp3", "opus", "", ""}, // already compressed audio stays
		{"b.mp3", "mp3", "", ""},
		{"c.jpg", "j", "dir/c.jpg", "\xff\xd8"},
		{"c.jpg", "w", "dir/c.webp", "RIFF"},
		{"c.jpg", "opus", "", ""},
		{"d.txt", "j", "", ""},
		{"d.txt", "p", "", ""},
		{"a.flac", "x", "", ""},
	} {
		f, err := os.Open(filepath.Join(dir, tc.file))
		if err != nil {
			t.Fatal(err)
		}
		fi, _ := f.Stat()
		name, r, size, ok, err := s.Transform(context.Background(), "dir/"+tc.file, f, fi, tc.mod)
		if err != nil {
			t.Fatalf("%s %s: %v", tc.file, tc.mod, err)
		}
		if !ok {
			if tc.newName != "" {
				t.Errorf("%s %s: kept, want %s", tc.file, tc.mod, tc.newName)
			}
			f.Close()
			continue
		}
		body, _ := io.ReadAll(r)
		r.Close()
		if name != tc.newName || int64(len(body)) != size || !bytes.HasPrefix(body, []byte(tc.magic)) {
			t.Errorf("%s %s: %q, %d bytes (said %d), starts %q; want %q starting %q", tc.file, tc.mod, name, len(body), size, body[:min(8, len(body))], tc.newName, tc.magic)
		}
		// The caller's file is untouched: still at offset 0.
		if off, _ := f.Seek(0, io.SeekCurrent); off != 0 {
			t.Errorf("%s %s: caller's offset moved to %d", tc.file, tc.mod, off)
		}
		f.Close()
	}
}

package e2e

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

// The archive modifiers replace entries by their derived forms.
func TestMediaArchiveModifiers(t *testing.T) {
	t.Parallel()
	ffmpegPath(t)
	dir := t.TempDir()
	m := filepath.Join(dir, "music")
	writeFile(t, m, "d.txt", []byte("words\n"))
	makeMedia(t, filepath.Join(m, "a.flac"), "-f", "lavfi", "-i", "sine=f=440:d=3")
	makeMedia(t, filepath.Join(m, "b.mp3"), "-f", "lavfi", "-i", "sine=f=220:d=1")
	makeMedia(t, filepath.Join(m, "clip.mp4"), "-f", "lavfi", "-i", "testsrc=d=2:s=640x360:r=10", "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p")
	photo := encodeJPEG(t, twoToneImage(800, 600))
	writeFile(t, m, "c.jpg", photo)
	s := start(t, "-v", dir+"::r")
	read := func(q string) map[string][]byte {
		t.Helper()
		resp, body := s.do(t, "GET", "/music/?"+q, nil)
		wantStatus(t, resp, body, 200)
		if strings.HasPrefix(q, "zip") {
			return unzipMembers(t, body)
		}
		return untarMembers(t, body)
	}
	orig := read("tar")
	for _, tc := range []struct {
		q     string
		names string
	}{
		{q: "tar=opus", names: "music/a.opus music/b.mp3 music/c.jpg music/clip.mp4 music/d.txt"},
		{q: "zip=mp3", names: "music/a.mp3 music/b.mp3 music/c.jpg music/clip.mp4 music/d.txt"},
		{q: "tar=j", names: "music/a.flac music/b.mp3 music/c.jpg music/clip.jpg music/d.txt"},
		{q: "zip=crc,w", names: "music/a.flac music/b.mp3 music/c.webp music/clip.webp music/d.txt"},
		{q: "tar=p", names: "music/a.png music/b.png music/c.jpg music/clip.mp4 music/d.txt"},
	} {
		got := read(tc.q)
		if sortedMembers(got) != tc.names {
			t.Errorf("?%s: members %q, want %q", tc.q, sortedMembers(got), tc.names)
			continue
		}
		for name, data := range got {
			if o, ok := orig[name]; ok && !bytes.Equal(o, data) && !(name == "music/c.jpg" && tc.q == "tar=j") {
				t.Errorf("?%s: %s changed although it is kept", tc.q, name)
			}
		}
		switch tc.q {
		case "tar=opus":
			p := probeMedia(t, got["music/a.opus"])
			if p.Format.FormatName != "ogg" || p.Streams[0].CodecName != "opus" || p.duration() < 2.7 || p.duration() > 3.3 {
				t.Errorf("a.opus: %+v", p)
			}
		case "zip=mp3":
			p := probeMedia(t, got["music/a.mp3"])
			if p.Format.FormatName != "mp3" || p.Streams[0].CodecName != "mp3" {
				t.Errorf("a.mp3: %+v", p)
			}
		case "tar=j":
			if w, h, k := imageDims(t, got["music/c.jpg"]); w != 320 || h != 256 || k != "jpeg" {
				t.Errorf("c.jpg thumbnail: %s %d×%d", k, w, h)
			}
			if w, h, k := imageDims(t, got["music/clip.jpg"]); w != 320 || h != 256 || k != "jpeg" {
				t.Errorf("clip.jpg: %s %d×%d", k, w, h)
			}
		case "zip=crc,w":
			if w, h, k := imageDims(t, got["music/c.webp"]); w != 320 || h != 256 || k != "webp" {
				t.Errorf("c.webp: %s %d×%d", k, w, h)
			}
		case "tar=p":
			for _, n := range []string{"music/a.png", "music/b.png"} {
				if w, h, k := imageDims(t, got[n]); w != 2048 || h != 64 || k != "png" {
					t.Errorf("%s: %s %d×%d", n, k, w, h)
				}
			}
		}
	}
	// A modifier that needs FFmpeg without it keeps the originals.
	s2 := start(t, "--ffmpeg", filepath.Join(t.TempDir(), "none"), "-v", dir+"::r")
	resp, body := s2.do(t, "GET", "/music/?tar=opus", nil)
	wantStatus(t, resp, body, 200)
	if got := untarMembers(t, body); sortedMembers(got) != sortedMembers(orig) {
		t.Errorf("without ffmpeg: %q", sortedMembers(got))
	}
}

package e2e

// Thumbnails, waveforms and transcodes of objects (docs/s3.md,
// media/object.go): images decoded by ranged reads, FFmpeg fed a bounded
// copy in the state folder, the cache in the local state folder keyed
// by the object's ETag.

import (
	"bytes"
	"image"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestS3Media(t *testing.T) {
	ffmpegPath(t)
	m := startMinio(t, "vol")
	src := mediaDir(t)
	for _, n := range []string{"photo.jpg", "notes.txt", "clip.mp4", "tone.flac"} {
		b, err := os.ReadFile(filepath.Join(src, n))
		if err != nil {
			t.Fatal(err)
		}
		m.Put(t, "vol", "pre/m/"+n, b)
	}
	state := t.TempDir()
	auth := basicAuth("u:pw")
	s := start(t, "-a", "u:pw", "-v", state+":s3:rw,u:c,s3=vol/pre")
	th := func(file, v string) string { return "/s3/m" + thumbURL(file, v) }

	for _, tc := range []struct {
		file, th, ctype string
		w, h            int
	}{
		{file: "photo.jpg", th: "", ctype: "image/jpeg", w: 320, h: 256},
		{file: "photo.jpg", th: "w100", ctype: "image/jpeg", w: 100, h: 75},
		{file: "photo.jpg", th: "wf", ctype: "image/webp", w: 320, h: 240},
		{file: "clip.mp4", th: "w160", ctype: "image/jpeg", w: 160, h: 90},
		{file: "tone.flac", th: "", ctype: "image/jpeg", w: 320, h: 256},
		{file: "tone.flac", th: "p", ctype: "image/png", w: 2048, h: 64},
	} {
		for round, want := range []string{"made", "cached"} {
			resp, body := s.do(t, "GET", th(tc.file, tc.th), nil, auth)
			wantStatus(t, resp, body, 200)
			if ct, how := resp.Header.Get("Content-Type"), resp.Header.Get("X-Hoard-Thumb"); ct != tc.ctype || how != want {
				t.Errorf("%s ?th=%s round %d: %s, %s; want %s, %s", tc.file, tc.th, round, ct, how, tc.ctype, want)
			}
			if w, h, _ := imageDims(t, body); w != tc.w || h != tc.h {
				t.Errorf("%s ?th=%s: %d×%d, want %d×%d", tc.file, tc.th, w, h, tc.w, tc.h)
			}
		}
	}
	// A transcode, streamed while FFmpeg writes it.
	resp, body := s.do(t, "GET", th("tone.flac", "opus"), nil, auth)
	wantStatus(t, resp, body, 200)
	if p := probeMedia(t, body); p.Format.FormatName != "matroska,webm" || len(p.Streams) != 1 || p.Streams[0].CodecName != "opus" || p.duration() < 5.7 || p.duration() > 6.3 {
		t.Errorf("opus transcode of an object: %+v", p)
	}

	// As on disk: a file that is not media gets the icon, a missing one
	// 404, a folder its cover or the folder icon, no password 401, bad
	// parameters 400; transcoding a picture is refused.
	resp, body = s.do(t, "GET", th("notes.txt", ""), nil, auth)
	wantStatus(t, resp, body, 200)
	if resp.Header.Get("X-Hoard-Thumb") != "icon" {
		t.Errorf("thumbnail of a text object: %s", resp.Header.Get("X-Hoard-Thumb"))
	}
	resp, body = s.do(t, "GET", th("missing.jpg", ""), nil, auth)
	wantStatus(t, resp, body, http.StatusNotFound)
	resp, body = s.do(t, "GET", "/s3/m?th", nil, auth)
	wantStatus(t, resp, body, 200)
	if resp.Header.Get("X-Hoard-Thumb") != "icon" {
		t.Errorf("thumbnail of a folder: %s", resp.Header.Get("X-Hoard-Thumb"))
	}
	resp, body = s.do(t, "GET", th("photo.jpg", ""), nil)
	wantStatus(t, resp, body, http.StatusUnauthorized)
	resp, body = s.do(t, "GET", th("photo.jpg", "w99999999999"), nil, auth)
	wantStatus(t, resp, body, http.StatusBadRequest)
	resp, body = s.do(t, "GET", th("photo.jpg", "opus"), nil, auth)
	if resp.StatusCode < 400 || resp.StatusCode >= 500 {
		t.Errorf("transcode of a picture: %d %s", resp.StatusCode, body)
	}

	// Replaced behind hoard's back by another picture of the same size
	// in bytes, within the same second (S3 times have whole seconds):
	// the new ETag gives a new thumbnail.
	a, b := encodeJPEG(t, twoToneImage(600, 600)), encodeJPEG(t, image.NewGray(image.Rect(0, 0, 600, 600)))
	for len(a) < len(b) {
		a = append(a, 0) // after the end marker: decoders ignore it
	}
	for len(b) < len(a) {
		b = append(b, 0)
	}
	m.Put(t, "vol", "pre/m/photo.jpg", a)
	resp, first := s.do(t, "GET", th("photo.jpg", "f"), nil, auth)
	wantStatus(t, resp, first, 200)
	m.Put(t, "vol", "pre/m/photo.jpg", b)
	resp, body = s.do(t, "GET", th("photo.jpg", "f"), nil, auth)
	wantStatus(t, resp, body, 200)
	if w, h, _ := imageDims(t, body); w != 256 || h != 256 || resp.Header.Get("X-Hoard-Thumb") != "made" || bytes.Equal(first, body) {
		t.Errorf("after a replace: %d×%d %s, same bytes %v", w, h, resp.Header.Get("X-Hoard-Thumb"), bytes.Equal(first, body))
	}

	// The cache is in the local state folder, the copies FFmpeg read are
	// gone, and nothing was written to the bucket.
	var outputs, work int
	filepath.WalkDir(filepath.Join(state, ".hist", "th"), func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil || d.IsDir():
		case strings.Contains(p, string(filepath.Separator)+"w"+string(filepath.Separator)):
			work++
		default:
			outputs++
		}
		return nil
	})
	if outputs < 7 || work != 0 {
		t.Errorf("state folder: %d cached outputs (want ≥ 7), %d work files (want 0)", outputs, work)
	}
	for _, k := range m.Keys(t, "vol") {
		if !strings.HasPrefix(k, "pre/m/") {
			t.Errorf("a key outside the media: %s", k)
		}
	}
}

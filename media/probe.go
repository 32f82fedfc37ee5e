package media

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
)

// Tags are a file's audio/video tags as the index keeps them: artist,
// album, title, track, year, genre (text), rate (overall bitrate, kbps)
// and dur (seconds). Absent tags are left out.
type Tags = map[string]string

// ErrNoFFprobe is returned when ffprobe is not installed.
var ErrNoFFprobe = errors.New("media: ffprobe is not installed")

// HaveFFprobe reports whether ffprobe is on the PATH.
func HaveFFprobe() bool {
	_, err := exec.LookPath("ffprobe")
	return err == nil
}

// Probe reads the tags of the file at path with ffprobe.
func Probe(ctx context.Context, path string) (Tags, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0) // a fifo must not hang it
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ProbeFile(ctx, f)
}

// ProbeFile reads the tags of an open file. ffprobe reads it as its
// standard input through /dev/stdin, so the file is reached only through
// the caller's descriptor (inside the volume's os.Root) and can still be
// seeked (an MP4's index at its end).
func ProbeFile(ctx context.Context, f *os.File) (Tags, error) {
	bin, err := exec.LookPath("ffprobe")
	if err != nil {
		return nil, ErrNoFFprobe
	}
	if _, err := f.Seek(0, 0); err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, bin, "-v", "error", "-hide_banner", "-print_format", "json",
		"-show_format", "-show_streams",
		// Media demuxers and local reads only: a playlist posing as an mp3
		// must not make ffprobe open other files or URLs.
		"-protocol_whitelist", "file,pipe", "-format_whitelist", InputFormats,
		// Probing decodes a frame or two (and cover pictures): bounded as
		// a thumbnail's are by default, since tags need no picture.
		"-max_pixels", strconv.Itoa(probeMaxPixels),
		"-i", "file:/dev/stdin")
	cmd.Env = ffEnv()
	cmd.Stdin = f
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("media: ffprobe: %v: %s", err, strings.TrimSpace(firstLine(errb.String())))
	}
	return parseFFprobe(out.Bytes())
}

// probeMaxPixels bounds the pictures ffprobe decodes while it reads tags
// (Config.MaxPixels' default).
const probeMaxPixels = 64 << 20

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

type ffprobeOut struct {
	Format struct {
		Duration string            `json:"duration"`
		BitRate  string            `json:"bit_rate"`
		Tags     map[string]string `json:"tags"`
	} `json:"format"`
	Streams []struct {
		CodecType string            `json:"codec_type"`
		Duration  string            `json:"duration"`
		BitRate   string            `json:"bit_rate"`
		Tags      map[string]string `json:"tags"`
	} `json:"streams"`
}

// tagNames maps ffprobe's tag names (lower-cased) to the index's.
var tagNames = map[string]string{
	"artist": "artist", "album_artist": "artist", "albumartist": "artist", "performer": "artist", "composer": "artist",
	"album": "album", "title": "title", "track": "track", "tracknumber": "track",
	"date": "year", "year": "year", "originaldate": "year", "tdor": "year", "tyer": "year",
	"genre": "genre",
}

// tagRank prefers the first-named source of a tag (artist before
// album_artist before composer, date before originaldate).
var tagRank = map[string]int{"artist": 0, "album_artist": 1, "albumartist": 1, "performer": 2, "composer": 3, "date": 0, "year": 1, "originaldate": 2, "tdor": 3, "tyer": 4, "track": 0, "tracknumber": 1}

func parseFFprobe(b []byte) (Tags, error) {
	var o ffprobeOut
	if err := json.Unmarshal(b, &o); err != nil {
		return nil, fmt.Errorf("media: ffprobe output: %w", err)
	}
	tags := Tags{}
	rank := map[string]int{}
	add := func(src map[string]string) {
		for k, v := range src {
			lk := strings.ToLower(k)
			name, ok := tagNames[lk]
			v = strings.TrimSpace(v)
			if !ok || v == "" {
				continue
			}
			if r, had := rank[name]; had && r <= tagRank[lk] {
				continue
			}
			switch name {
			case "track":
				v, _, _ = strings.Cut(v, "/")
			case "year":
				if len(v) < 4 {
					continue
				}
				if _, err := strconv.Atoi(v[:4]); err != nil {
					continue
				}
				v = v[:4]
			}
			tags[name], rank[name] = v, tagRank[lk]
		}
	}
	add(o.Format.Tags)
	for _, s := range o.Streams {
		add(s.Tags) // Ogg/Opus keep their comments on the stream
	}
	dur, rate := o.Format.Duration, o.Format.BitRate
	for _, s := range o.Streams {
		if dur == "" && s.Duration != "" {
			dur = s.Duration
		}
		if rate == "" && s.BitRate != "" && s.CodecType == "audio" {
			rate = s.BitRate
		}
	}
	if f, err := strconv.ParseFloat(dur, 64); err == nil && f >= 0 && !math.IsInf(f, 0) {
		tags["dur"] = strconv.FormatFloat(math.Round(f*1000)/1000, 'f', -1, 64)
	}
	if n, err := strconv.ParseInt(rate, 10, 64); err == nil && n > 0 {
		tags["rate"] = strconv.FormatInt((n+500)/1000, 10)
	}
	return tags, nil
}

package media

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"strings"
)

// oggOpus is Opus in Ogg, named .opus: what the archive modifier opus
// makes (copyparty's format), where ?th=opus gives WebM.
const oggOpus Format = "ogg-opus"

// Transform replaces an archive entry by its derived form for the
// archive modifiers: opus (Opus in Ogg, .opus) and mp3 for audio files —
// audio already in aac, m4a, mp3, ogg, opus or wma is kept as it is —, j
// (JPEG) and w (WebP) thumbnails of images and videos, p (waveform PNG) of
// audio. The new name keeps the entry's name with the new extension added
// in place of the old one. Anything it does not apply to, or cannot make,
// is kept (ok=false), as copyparty does; it has arch.Transform's shape.
func (s *Service) Transform(ctx context.Context, name string, f *os.File, fi fs.FileInfo, mod string) (string, io.ReadCloser, int64, bool, error) {
	ext := extOf(name)
	var p Params
	switch mod {
	case "opus", "mp3":
		if !audioExt[ext] || keepAudioExt[ext] {
			return "", nil, 0, false, nil
		}
		p = Params{Kind: KindTranscode, Format: MP3}
		if mod == "opus" {
			p.Format = oggOpus
		}
	case "j", "w":
		if !imageExt[ext] && !videoExt[ext] {
			return "", nil, 0, false, nil
		}
		p, _ = ParseTh(mod)
	case "p":
		if !audioExt[ext] {
			return "", nil, 0, false, nil
		}
		p = Params{Kind: KindWaveform, Format: PNG}
	default:
		return "", nil, 0, false, nil
	}
	res, err := s.Get(ctx, Request{Rel: name, Info: fi, Params: p, File: f})
	if err != nil {
		if ctx.Err() != nil {
			return "", nil, 0, false, ctx.Err()
		}
		if !errors.Is(err, ErrNoAudio) {
			s.log.Warn("archive entry kept as it is", "entry", name, "modifier", mod, "err", err)
		}
		return "", nil, 0, false, nil
	}
	if res.File == nil { // an icon: nothing to put in its place
		res.Close()
		return "", nil, 0, false, nil
	}
	base := name
	if i := strings.LastIndexByte(name, '.'); i > strings.LastIndexByte(name, '/') {
		base = name[:i]
	}
	return base + "." + p.Format.Ext(), res.File, res.Size, true, nil
}

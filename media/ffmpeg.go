package media

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hoard/store"
	"image"
	"image/png"
	"io"
	"math"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// ErrNoFFmpeg is returned for work that needs FFmpeg when it is not
// installed.
var ErrNoFFmpeg = &store.Error{Kind: store.KindDisabled, Msg: "FFmpeg is not installed on the server; video, audio and WebP thumbnails, waveforms and transcodes need it"}

// errNoAudio: a waveform or transcode of a file without an audio stream.
var errNoAudio = errors.New("the file has no audio stream")

// The input is always the already opened file, handed to ffmpeg as fd 3
// and named by a fixed string, so a file name can never become an option
// or a URL; the output is the work file as fd 4 (seekable, so muxers can
// finish their headers). No protocol but file and pipe is allowed.
const (
	ffIn  = "file:/dev/fd/3"
	ffOut = "file:/dev/fd/4"
)

// ffDemuxers are the only input formats ffmpeg may use. Playlist and
// reference formats (hls, concat, dash, ...) are left out: a crafted file
// of that kind would make ffmpeg read other files of the server into a
// thumbnail or transcode (an HLS playlist naming /etc/passwd, say).
const ffDemuxers = "mov,matroska,avi,mpegts,mpeg,flv,asf,ogg,flac,mp3,wav,aac,aiff,ape,wv,mpc,mpc8,ac3,eac3,dts," +
	"amr,tta,caf,w64,h264,hevc,m4v,mpegvideo,rm,dv,nut,ivf,mxf,wtv,dsf,tak,truehd,mlp,xwma,au,oma,png_pipe"

// InputFormats is the demuxer list for ffmpeg's and ffprobe's
// -format_whitelist, for any other caller that hands them a volume's file.
const InputFormats = ffDemuxers

func ffArgs(extra ...string) []string {
	return append([]string{"-nostdin", "-hide_banner", "-v", "error", "-y", "-protocol_whitelist", "file,pipe", "-format_whitelist", ffDemuxers}, extra...)
}

// maxPixelsArg is the input option that bounds the pictures FFmpeg
// decodes from a volume's file (its frames, a cover picture, the frames
// probing decodes) to px pixels: --th-max-mpx holds for FFmpeg as it does
// for the images decoded here, and a small crafted file that declares a
// frame of gigabytes is refused before FFmpeg allocates it.
func maxPixelsArg(px int64) []string {
	return []string{"-max_pixels", strconv.FormatInt(min(max(px, 1), math.MaxInt32), 10)}
}

// ffEnv is the environment FFmpeg and ffprobe run with: the search path
// and nothing else of the server's. Variables change what they do
// (FFREPORT writes a log file where they run, *_proxy, locale and font
// settings), and the server's may hold secrets (AWS_SECRET_ACCESS_KEY for
// S3 volumes) that a decoder of untrusted files has no use for.
func ffEnv() []string {
	return []string{"PATH=" + os.Getenv("PATH")}
}

// inArgs is ffArgs for a volume's file as the input: the options before
// -i, then the rest.
func (s *Service) inArgs(extra ...string) []string {
	return ffArgs(append(maxPixelsArg(s.cfg.MaxPixels), extra...)...)
}

// ffRun runs bin with args, in, out as fds 3 and 4, stdin and stdout as
// given; niced, in its own process group (killed whole on cancel), with
// the context's deadline.
func (s *Service) ffRun(ctx context.Context, bin string, args []string, in, out *os.File, stdin io.Reader, stdout io.Writer) error {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = ffEnv()
	cmd.ExtraFiles = []*os.File{in, out}
	if out == nil {
		cmd.ExtraFiles = cmd.ExtraFiles[:1]
	}
	cmd.Stdin, cmd.Stdout = stdin, stdout
	var stderr bytes.Buffer
	cmd.Stderr = &limitedBuf{b: &stderr, n: 4 << 10}
	ownGroup(cmd)
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Start(); err != nil {
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
			return ErrNoFFmpeg
		}
		return err
	}
	renice(cmd.Process.Pid, s.cfg.Nice)
	err := cmd.Wait()
	if ctx.Err() != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return fmt.Errorf("ffmpeg did not finish within %v", s.cfg.Timeout)
		}
		return ctx.Err()
	}
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if strings.Contains(msg, "matches no streams") || strings.Contains(msg, "does not contain any stream") || strings.Contains(msg, "Output file #0 does not contain") {
			return errNoAudio
		}
		if ee, ok := errors.AsType[*exec.ExitError](err); ok && !ee.Exited() {
			// Killed (out of memory, an operator): nothing says the file
			// is at fault, so it is not remembered.
			return fmt.Errorf("ffmpeg: %v: %s", err, lastLine(msg))
		}
		// FFmpeg could not read the file: that does not change until the
		// file does, so a thumbnail request remembers it.
		return fmt.Errorf("%w: ffmpeg: %v: %s", errCannot, err, lastLine(msg))
	}
	return nil
}

func lastLine(s string) string {
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

type limitedBuf struct {
	b *bytes.Buffer
	n int
}

func (l *limitedBuf) Write(p []byte) (int, error) {
	if room := l.n - l.b.Len(); room > 0 {
		l.b.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// mediaDuration asks ffprobe for the duration in seconds of in; 0 when
// unknown.
func (s *Service) mediaDuration(ctx context.Context, in *os.File) float64 {
	var out bytes.Buffer
	args := append([]string{"-v", "error", "-protocol_whitelist", "file,pipe", "-format_whitelist", ffDemuxers}, maxPixelsArg(s.cfg.MaxPixels)...)
	args = append(args, "-show_entries", "format=duration", "-of", "default=nw=1:nk=1", ffIn)
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := s.ffRun(ctx, s.cfg.FFprobe, args, in, nil, nil, &out); err != nil {
		return 0
	}
	d, err := strconv.ParseFloat(strings.TrimSpace(out.String()), 64)
	if err != nil || d < 0 {
		return 0
	}
	return d
}

// ffFrame returns one frame of a video (a third in), or an audio file's
// spectrogram, as an image at most about 2× the requested box.
func (s *Service) ffFrame(ctx context.Context, in *os.File, p Params, audio bool) (image.Image, error) {
	bw, bh := 2*max(p.W, p.H), 2*max(p.W, p.H)
	if p.W > 0 && p.H > 0 {
		bw, bh = 2*p.W, 2*p.H
	}
	var args []string
	if audio {
		args = s.inArgs("-i", ffIn, "-filter_complex", "[0:a:0]aresample=48000,showspectrumpic=s=640x512,crop=780:544:70:48[o]", "-map", "[o]")
	} else {
		if _, err := in.Seek(0, io.SeekStart); err != nil {
			return nil, err
		}
		seek := 0.0
		if d := s.mediaDuration(ctx, in); d > 0 {
			seek = d / 3
		}
		args = s.inArgs("-ss", strconv.FormatFloat(seek, 'f', 3, 64), "-i", ffIn, "-map", "0:v:0",
			"-vf", fmt.Sprintf("scale='trunc(iw*max(1,sar))':'trunc(ih/min(1,sar))',setsar=1,scale='min(iw,%d)':'min(ih,%d)':force_original_aspect_ratio=decrease", bw, bh))
	}
	args = append(args, "-frames:v", "1", "-an", "-c:v", "png", "-compression_level", "1", "-f", "image2pipe", "pipe:1")
	var out bytes.Buffer
	if err := s.ffRun(ctx, s.cfg.FFmpeg, args, in, nil, nil, &out); err != nil {
		return nil, err
	}
	if out.Len() == 0 {
		return nil, cannot("ffmpeg found no frame")
	}
	img, err := png.Decode(&out)
	if err != nil {
		return nil, fmt.Errorf("reading ffmpeg's frame: %w", err)
	}
	return img, nil
}

// encodeWebP turns m into WebP through ffmpeg, into out.
func (s *Service) encodeWebP(ctx context.Context, m *image.RGBA, out *os.File) error {
	var b bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.NoCompression}).Encode(&b, m); err != nil {
		return err
	}
	args := ffArgs("-f", "png_pipe", "-i", "pipe:0", "-c:v", "libwebp", "-q:v", "60", "-compression_level", "4", "-f", "webp", ffOut)
	return s.ffRun(ctx, s.cfg.FFmpeg, args, out, out, &b, nil)
}

// ffWaveform writes the audio's waveform as a PNG into out.
func (s *Service) ffWaveform(ctx context.Context, in, out *os.File) error {
	args := s.inArgs("-i", ffIn, "-filter_complex",
		"[0:a:0]aresample=8000,compand=.3|.3:1|1:-90/-60|-60/-40|-40/-30|-20/-20:6:0:-90:0.2,volume=2,showwavespic=s=2048x64:colors=white[o]",
		"-map", "[o]", "-frames:v", "1", "-c:v", "png", "-f", "image2", "-update", "1", ffOut)
	return s.ffRun(ctx, s.cfg.FFmpeg, args, in, out, nil, nil)
}

// ffTranscode writes the first audio stream of in as f into out.
func (s *Service) ffTranscode(ctx context.Context, in, out *os.File, f Format) error {
	args := s.inArgs("-i", ffIn, "-map", "0:a:0", "-map_metadata", "-1", "-vn", "-sn", "-dn")
	switch f {
	case Opus:
		args = append(args, "-c:a", "libopus", "-b:a", "128k", "-f", "webm")
	case oggOpus:
		args = append(args, "-c:a", "libopus", "-b:a", "128k", "-f", "ogg")
	case CAF:
		args = append(args, "-c:a", "libopus", "-b:a", "128k", "-f", "caf")
	case MP3:
		args = append(args, "-ar", "44100", "-ac", "2", "-c:a", "libmp3lame", "-q:a", "2", "-f", "mp3")
	default:
		return fmt.Errorf("not a transcode: %s", f)
	}
	return s.ffRun(ctx, s.cfg.FFmpeg, append(args, ffOut), in, out, nil, nil)
}

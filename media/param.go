package media

import (
	"fmt"
	"hoard/store"
	"strconv"
	"strings"
)

// Kind is what a request derives from a file.
type Kind uint8

const (
	KindThumb     Kind = iota // a still image, scaled down
	KindWaveform              // th=p: the audio's waveform as PNG
	KindTranscode             // th=opus, caf, mp3
)

// Format is the output's encoding.
type Format string

const (
	JPEG Format = "jpg"
	WebP Format = "webp"
	PNG  Format = "png"
	Opus Format = "opus" // Opus in WebM
	CAF  Format = "caf"  // Opus in CAF, for iOS
	MP3  Format = "mp3"
)

// ContentType is the MIME type of f.
func (f Format) ContentType() string {
	switch f {
	case JPEG:
		return "image/jpeg"
	case WebP:
		return "image/webp"
	case PNG:
		return "image/png"
	case Opus:
		return "audio/webm; codecs=opus"
	case oggOpus:
		return "audio/ogg; codecs=opus"
	case CAF:
		return "audio/x-caf"
	case MP3:
		return "audio/mpeg"
	}
	return "application/octet-stream"
}

// Ext is the file name extension (without the dot) of f's files; an
// archive renames a derived entry to it.
func (f Format) Ext() string {
	switch f {
	case Opus:
		return "webm"
	case oggOpus:
		return "opus"
	}
	return string(f)
}

// Default thumbnail box (copyparty's --th-size) and the bounds of w<N>/h<N>.
const (
	BoxW   = 320
	BoxH   = 256
	MinDim = 16
	MaxDim = 4096
)

// Params is one parsed ?th value.
type Params struct {
	Kind   Kind
	Format Format
	// Box the thumbnail must fit. For w<N> only W is set, for h<N> only
	// H; the other side follows the image's aspect.
	W, H int
	// Crop fills the box exactly, cutting the overflow from the centre
	// (copyparty's default); f turns it off.
	Crop bool
}

// ErrBadParams wraps every ParseTh error.
var ErrBadParams = &store.Error{Kind: store.KindInvalid, Msg: "bad thumbnail parameters"}

// ParamError is a ParseTh error: KindInvalid, matching ErrBadParams.
type ParamError struct {
	Value string // the parameters as given
	Why   string // what is wrong with them
}

func (e *ParamError) Error() string {
	return fmt.Sprintf("bad thumbnail parameters %q: %s", e.Value, e.Why)
}

// Class is store.KindInvalid.
func (e *ParamError) Class() (store.Kind, string) { return store.KindInvalid, e.Error() }

// Is matches ErrBadParams.
func (e *ParamError) Is(target error) bool { return target == ErrBadParams }

func badParams(v, format string, args ...any) error {
	return &ParamError{Value: v, Why: fmt.Sprintf(format, args...)}
}

// ParseTh parses the value of ?th: empty (a JPEG thumbnail of the default
// box, cropped), w<N> or h<N> (a JPEG N pixels wide or high, MinDim ≤ N ≤
// MaxDim; "w3" is copyparty's WebP 3×), copyparty's letters — j (JPEG), w (WebP), f (fit, no crop),
// 3 (three times the box) in any order, j or w first — and p (waveform),
// opus, caf, mp3 (transcodes).
func ParseTh(v string) (Params, error) {
	switch v {
	case "p":
		return Params{Kind: KindWaveform, Format: PNG}, nil
	case "opus":
		return Params{Kind: KindTranscode, Format: Opus}, nil
	case "caf":
		return Params{Kind: KindTranscode, Format: CAF}, nil
	case "mp3":
		return Params{Kind: KindTranscode, Format: MP3}, nil
	}
	p := Params{Kind: KindThumb, Format: JPEG, W: BoxW, H: BoxH, Crop: true}
	// copyparty's web UI sends w3 (WebP, 3×); every w<N> has N ≥ MinDim,
	// so a single digit after w is read as letters.
	if len(v) > 1 && (v[0] == 'w' && len(v) > 2 || v[0] == 'h') && v[1] >= '0' && v[1] <= '9' {
		n, err := strconv.Atoi(v[1:])
		if err != nil || n < MinDim || n > MaxDim || v[1] == '0' {
			return Params{}, badParams(v, "%c<N> wants N from %d to %d", v[0], MinDim, MaxDim)
		}
		p.Crop = false
		if v[0] == 'w' {
			p.W, p.H = n, 0
		} else {
			p.W, p.H = 0, n
		}
		return p, nil
	}
	if len(v) > 4 {
		return Params{}, badParams(v, "too long")
	}
	var seen [256]bool
	for i := 0; i < len(v); i++ {
		c := v[i]
		if seen[c] {
			return Params{}, badParams(v, "%q given twice", c)
		}
		seen[c] = true
		switch c {
		case 'j', 'w':
			if i != 0 {
				return Params{}, badParams(v, "the format letter (j or w) comes first")
			}
			if c == 'w' {
				p.Format = WebP
			}
		case 'f':
			p.Crop = false
		case '3':
			p.W, p.H = 3*BoxW, 3*BoxH
		default:
			return Params{}, badParams(v, "want empty, w<N>, h<N>, letters of j/w/f/3, p, opus, caf or mp3")
		}
	}
	return p, nil
}

// String is the canonical form of p, part of the cache key.
func (p Params) String() string {
	var b strings.Builder
	b.WriteString(string(p.Format))
	if p.Kind == KindThumb {
		fmt.Fprintf(&b, "-%dx%d", p.W, p.H)
		if p.Crop {
			b.WriteString("-crop")
		}
	}
	return b.String()
}

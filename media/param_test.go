package media

import (
	"errors"
	"testing"
)

func TestParseTh(t *testing.T) {
	good := map[string]Params{
		"":      {Kind: KindThumb, Format: JPEG, W: BoxW, H: BoxH, Crop: true},
		"j":     {Kind: KindThumb, Format: JPEG, W: BoxW, H: BoxH, Crop: true},
		"w":     {Kind: KindThumb, Format: WebP, W: BoxW, H: BoxH, Crop: true},
		"f":     {Kind: KindThumb, Format: JPEG, W: BoxW, H: BoxH},
		"jf":    {Kind: KindThumb, Format: JPEG, W: BoxW, H: BoxH},
		"wf3":   {Kind: KindThumb, Format: WebP, W: 3 * BoxW, H: 3 * BoxH},
		"w3":    {Kind: KindThumb, Format: WebP, W: 3 * BoxW, H: 3 * BoxH, Crop: true},
		"3":     {Kind: KindThumb, Format: JPEG, W: 3 * BoxW, H: 3 * BoxH, Crop: true},
		"w320":  {Kind: KindThumb, Format: JPEG, W: 320},
		"w16":   {Kind: KindThumb, Format: JPEG, W: 16},
		"h100":  {Kind: KindThumb, Format: JPEG, H: 100},
		"h4096": {Kind: KindThumb, Format: JPEG, H: 4096},
		"p":     {Kind: KindWaveform, Format: PNG},
		"opus":  {Kind: KindTranscode, Format: Opus},
		"caf":   {Kind: KindTranscode, Format: CAF},
		"mp3":   {Kind: KindTranscode, Format: MP3},
	}
	for v, want := range good {
		got, err := ParseTh(v)
		if err != nil || got != want {
			t.Errorf("ParseTh(%q) = %+v, %v; want %+v", v, got, err, want)
		}
	}
	for _, v := range []string{"w0", "w15", "w4097", "w99999", "h0", "h-1", "w01", "w1e3", "w 100", "x", "jj", "fj", "jw", "ff", "3f3", "opus1", "P", "MP3", "w100f", "wf3j", "\x00", "w999999999999999999999"} {
		if p, err := ParseTh(v); !errors.Is(err, ErrBadParams) {
			t.Errorf("ParseTh(%q) = %+v, %v; want ErrBadParams", v, p, err)
		}
	}
}

func TestParamsStringDistinct(t *testing.T) {
	seen := map[string]string{}
	for _, v := range []string{"", "w", "f", "wf", "3", "f3", "w3", "wf3", "w320", "h320", "p", "opus", "caf", "mp3"} {
		p, err := ParseTh(v)
		if err != nil {
			t.Fatal(err)
		}
		if o, ok := seen[p.String()]; ok {
			t.Errorf("%q and %q share the cache key %q", v, o, p.String())
		}
		seen[p.String()] = v
	}
}

// FuzzParseTh: any value parses to sane parameters or is refused with
// ErrBadParams; never a panic or an unbounded size.
func FuzzParseTh(f *testing.F) {
	for _, s := range []string{"", "j", "w", "f", "3", "wf3", "jf", "w320", "h100", "w0", "w99999", "p", "opus", "caf", "mp3", "h-5", "w1\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		p, err := ParseTh(v)
		if err != nil {
			if !errors.Is(err, ErrBadParams) {
				t.Fatalf("ParseTh(%q): error %v does not wrap ErrBadParams", v, err)
			}
			return
		}
		switch p.Kind {
		case KindThumb:
			if p.W < 0 || p.H < 0 || p.W > 3*BoxW && p.W > MaxDim || p.H > MaxDim || p.W == 0 && p.H == 0 {
				t.Fatalf("ParseTh(%q) = %+v: size out of bounds", v, p)
			}
			if p.Format != JPEG && p.Format != WebP {
				t.Fatalf("ParseTh(%q) = %+v: thumbnail format", v, p)
			}
		case KindWaveform, KindTranscode:
			if p.W != 0 || p.H != 0 {
				t.Fatalf("ParseTh(%q) = %+v", v, p)
			}
		default:
			t.Fatalf("ParseTh(%q): kind %d", v, p.Kind)
		}
		if q, err := ParseTh(v); err != nil || q != p {
			t.Fatalf("ParseTh(%q) not deterministic", v)
		}
	})
}

package media

import (
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	_ "image/gif" // decoders for image.Decode
	"image/jpeg"
	_ "image/png"
	"io"
	"math"

	xdraw "golang.org/x/image/draw"

	_ "golang.org/x/image/bmp"
	_ "golang.org/x/image/tiff"
	_ "golang.org/x/image/webp"
)

// errCannot marks a file that cannot be thumbnailed (corrupt, truncated,
// too large, not an image): the client gets the generic icon, and the
// answer is cached.
var errCannot = errors.New("cannot make a thumbnail of this file")

// cannot wraps err as errCannot.
func cannot(format string, a ...any) error {
	return fmt.Errorf("%w: %s", errCannot, fmt.Sprintf(format, a...))
}

// decodeImage decodes the image in r after checking, from its header
// alone, that it has at most maxPx pixels: a crafted 50,000×50,000 header
// is refused before anything is allocated for it. It returns the image
// and its EXIF orientation.
func decodeImage(r io.ReadSeeker, maxPx int64) (image.Image, int, error) {
	cfg, kind, err := image.DecodeConfig(r)
	if err != nil {
		return nil, 1, cannot("reading the image header: %v", err)
	}
	if cfg.Width <= 0 || cfg.Height <= 0 || int64(cfg.Width)*int64(cfg.Height) > maxPx {
		return nil, 1, cannot("%s image of %d×%d pixels is over the limit of %d pixels", kind, cfg.Width, cfg.Height, maxPx)
	}
	if _, err := r.Seek(0, io.SeekStart); err != nil {
		return nil, 1, err
	}
	orient := 1
	if kind == "jpeg" {
		orient = jpegOrientation(r)
		if _, err := r.Seek(0, io.SeekStart); err != nil {
			return nil, 1, err
		}
	}
	img, _, err := image.Decode(r)
	if err != nil {
		return nil, 1, cannot("decoding the %s image: %v", kind, err)
	}
	return img, orient, nil
}

// Scaler names a resampling method, for the benchmark.
type Scaler int

const (
	ScaleBoxCatmullRom  Scaler = iota // box-average to about 2× the target, then Catmull-Rom (default)
	ScaleCatmullRom                   // Catmull-Rom over the whole source
	ScaleApproxBiLinear               // x/image/draw.ApproxBiLinear
)

// thumbnail scales img (raw, before orientation) for p and applies the
// EXIF orientation. It never enlarges.
func thumbnail(img image.Image, orient int, p Params, sc Scaler) *image.RGBA {
	b := img.Bounds()
	transposed := orient >= 5
	ow, oh := b.Dx(), b.Dy() // oriented size
	if transposed {
		ow, oh = oh, ow
	}
	dw, dh, cw, ch := fitBox(ow, oh, p)
	if transposed { // back into the raw image's axes
		dw, dh, cw, ch = dh, dw, ch, cw
	}
	// Even offsets keep a 4:2:0 image's chroma aligned for boxShrink.
	x0 := b.Min.X + (b.Dx()-cw)/2&^1
	y0 := b.Min.Y + (b.Dy()-ch)/2&^1
	src := image.Rect(x0, y0, x0+cw, y0+ch)
	dst := image.NewRGBA(image.Rect(0, 0, dw, dh))
	switch sc {
	case ScaleCatmullRom:
		xdraw.CatmullRom.Scale(dst, dst.Bounds(), img, src, xdraw.Src, nil)
	case ScaleApproxBiLinear:
		xdraw.ApproxBiLinear.Scale(dst, dst.Bounds(), img, src, xdraw.Src, nil)
	default:
		k := min(cw/dw, ch/dh) / 2
		if k > 2 {
			k &^= 1 // even: boxShrink's fast path for 4:2:0
		}
		if k >= 2 {
			small := boxShrink(img, src, k)
			xdraw.CatmullRom.Scale(dst, dst.Bounds(), small, small.Bounds(), xdraw.Src, nil)
		} else {
			xdraw.CatmullRom.Scale(dst, dst.Bounds(), img, src, xdraw.Src, nil)
		}
	}
	return orientRGBA(dst, orient)
}

// fitBox returns the output size (dw, dh) and the centred source region
// (cw, ch) it is made from, for an image of ow×oh.
func fitBox(ow, oh int, p Params) (dw, dh, cw, ch int) {
	cw, ch = ow, oh
	scale := 1.0
	switch {
	case p.H == 0: // w<N>
		scale = math.Min(1, float64(p.W)/float64(ow))
	case p.W == 0: // h<N>
		scale = math.Min(1, float64(p.H)/float64(oh))
	case !p.Crop:
		scale = math.Min(1, math.Min(float64(p.W)/float64(ow), float64(p.H)/float64(oh)))
	default:
		// Fill min(box, image) exactly; cut what overflows.
		tw, th := min(p.W, ow), min(p.H, oh)
		scale = math.Max(float64(tw)/float64(ow), float64(th)/float64(oh))
		cw = min(ow, int(math.Round(float64(tw)/scale)))
		ch = min(oh, int(math.Round(float64(th)/scale)))
		return tw, th, max(cw, 1), max(ch, 1)
	}
	dw = max(1, int(math.Round(float64(ow)*scale)))
	dh = max(1, int(math.Round(float64(oh)*scale)))
	return dw, dh, cw, ch
}

// boxShrink averages k×k blocks of r in img. JPEG's YCbCr images are read
// directly; others through an RGBA copy.
func boxShrink(img image.Image, r image.Rectangle, k int) *image.RGBA {
	w, h := r.Dx()/k, r.Dy()/k
	out := image.NewRGBA(image.Rect(0, 0, w, h))
	n := uint32(k * k)
	if yc, ok := img.(*image.YCbCr); ok && yc.SubsampleRatio == image.YCbCrSubsampleRatio420 && k%2 == 0 && (r.Min.X-yc.Rect.Min.X)%2 == 0 && (r.Min.Y-yc.Rect.Min.Y)%2 == 0 {
		// The common camera JPEG: sum Y over k×k and chroma over the
		// (k/2)×(k/2) samples that cover the same block.
		kc := k / 2
		nc := uint32(kc * kc)
		for oy := range h {
			for ox := range w {
				x0, y0 := r.Min.X+ox*k, r.Min.Y+oy*k
				var sy, scb, scr uint32
				for y := y0; y < y0+k; y++ {
					row := yc.Y[yc.YOffset(x0, y):][:k]
					for _, v := range row {
						sy += uint32(v)
					}
				}
				for y := y0; y < y0+k; y += 2 {
					ci := yc.COffset(x0, y)
					cb, cr := yc.Cb[ci:][:kc], yc.Cr[ci:][:kc]
					for i := range kc {
						scb += uint32(cb[i])
						scr += uint32(cr[i])
					}
				}
				cr, cg, cb := color.YCbCrToRGB(uint8(sy/n), uint8(scb/nc), uint8(scr/nc))
				i := out.PixOffset(ox, oy)
				out.Pix[i], out.Pix[i+1], out.Pix[i+2], out.Pix[i+3] = cr, cg, cb, 0xFF
			}
		}
		return out
	}
	if yc, ok := img.(*image.YCbCr); ok {
		for oy := range h {
			for ox := range w {
				var sy, scb, scr uint32
				for y := r.Min.Y + oy*k; y < r.Min.Y+(oy+1)*k; y++ {
					yi := yc.YOffset(r.Min.X+ox*k, y)
					for x := r.Min.X + ox*k; x < r.Min.X+(ox+1)*k; x++ {
						ci := yc.COffset(x, y)
						sy += uint32(yc.Y[yi])
						scb += uint32(yc.Cb[ci])
						scr += uint32(yc.Cr[ci])
						yi++
					}
				}
				cr, cg, cb := color.YCbCrToRGB(uint8(sy/n), uint8(scb/n), uint8(scr/n))
				i := out.PixOffset(ox, oy)
				out.Pix[i], out.Pix[i+1], out.Pix[i+2], out.Pix[i+3] = cr, cg, cb, 0xFF
			}
		}
		return out
	}
	rgba, ok := img.(*image.RGBA)
	if !ok {
		rgba = image.NewRGBA(r)
		draw.Draw(rgba, r, img, r.Min, draw.Src)
	}
	for oy := range h {
		for ox := range w {
			var s [4]uint32
			for y := r.Min.Y + oy*k; y < r.Min.Y+(oy+1)*k; y++ {
				i := rgba.PixOffset(r.Min.X+ox*k, y)
				for range k {
					s[0] += uint32(rgba.Pix[i])
					s[1] += uint32(rgba.Pix[i+1])
					s[2] += uint32(rgba.Pix[i+2])
					s[3] += uint32(rgba.Pix[i+3])
					i += 4
				}
			}
			i := out.PixOffset(ox, oy)
			out.Pix[i], out.Pix[i+1], out.Pix[i+2], out.Pix[i+3] = uint8(s[0]/n), uint8(s[1]/n), uint8(s[2]/n), uint8(s[3]/n)
		}
	}
	return out
}

// orientRGBA applies EXIF orientation o to m (1 is as is; 2 mirrored; 3
// rotated 180°; 4 flipped; 5 transposed; 6 rotated 90° clockwise; 7
// transversed; 8 rotated 90° counter-clockwise).
func orientRGBA(m *image.RGBA, o int) *image.RGBA {
	if o <= 1 || o > 8 {
		return m
	}
	w, h := m.Bounds().Dx(), m.Bounds().Dy()
	ow, oh := w, h
	if o >= 5 {
		ow, oh = h, w
	}
	out := image.NewRGBA(image.Rect(0, 0, ow, oh))
	for y := range h {
		for x := range w {
			var dx, dy int
			switch o {
			case 2:
				dx, dy = w-1-x, y
			case 3:
				dx, dy = w-1-x, h-1-y
			case 4:
				dx, dy = x, h-1-y
			case 5:
				dx, dy = y, x
			case 6:
				dx, dy = h-1-y, x
			case 7:
				dx, dy = h-1-y, w-1-x
			case 8:
				dx, dy = y, w-1-x
			}
			copy(out.Pix[out.PixOffset(dx, dy):][:4], m.Pix[m.PixOffset(x, y):][:4])
		}
	}
	return out
}

// encodeJPEG writes m as a JPEG, over white where it is transparent.
func encodeJPEG(w io.Writer, m *image.RGBA) error {
	opaque := true
	for i := 3; i < len(m.Pix); i += 4 {
		if m.Pix[i] != 0xFF {
			opaque = false
			break
		}
	}
	var img image.Image = m
	if !opaque {
		bg := image.NewRGBA(m.Bounds())
		draw.Draw(bg, bg.Bounds(), image.White, image.Point{}, draw.Src)
		draw.Draw(bg, bg.Bounds(), m, m.Bounds().Min, draw.Over)
		img = bg
	}
	return jpeg.Encode(w, img, &jpeg.Options{Quality: 80})
}

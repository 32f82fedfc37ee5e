package media

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"testing"
)

// twoTone is w×h, red in its left half and blue in its right.
func twoTone(w, h int) *image.RGBA {
	m := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			c := color.RGBA{255, 0, 0, 255}
			if x >= w/2 {
				c = color.RGBA{0, 0, 255, 255}
			}
			m.SetRGBA(x, y, c)
		}
	}
	return m
}

// exifJPEG encodes m as a JPEG carrying an EXIF APP1 segment, written by
// hand, with orientation o (big-endian TIFF when be).
func exifJPEG(t testing.TB, m image.Image, o uint16, be bool) []byte {
	var j bytes.Buffer
	if err := jpeg.Encode(&j, m, &jpeg.Options{Quality: 90}); err != nil {
		t.Fatal(err)
	}
	var bo interface {
		binary.AppendByteOrder
		binary.ByteOrder
	} = binary.LittleEndian
	tiff := []byte("II*\x00")
	if be {
		bo, tiff = binary.BigEndian, []byte("MM\x00*")
	}
	tiff = bo.AppendUint32(tiff, 8)      // IFD0 offset
	tiff = bo.AppendUint16(tiff, 2)      // two entries
	tiff = bo.AppendUint16(tiff, 0x010F) // Make, ASCII, 4 bytes inline
	tiff = bo.AppendUint16(tiff, 2)
	tiff = bo.AppendUint32(tiff, 4)
	tiff = append(tiff, "Go\x00\x00"...)
	tiff = bo.AppendUint16(tiff, 0x0112) // Orientation, SHORT, 1
	tiff = bo.AppendUint16(tiff, 3)
	tiff = bo.AppendUint32(tiff, 1)
	tiff = bo.AppendUint16(tiff, o)
	tiff = bo.AppendUint16(tiff, 0)
	tiff = bo.AppendUint32(tiff, 0) // no next IFD
	app1 := append([]byte("Exif\x00\x00"), tiff...)
	out := []byte{0xFF, 0xD8, 0xFF, 0xE1}
	out = binary.BigEndian.AppendUint16(out, uint16(len(app1)+2))
	out = append(out, app1...)
	return append(out, j.Bytes()[2:]...)
}

// pngHeader is a PNG signature and a valid IHDR for w×h, and nothing more.
func pngHeader(w, h uint32) []byte {
	b := []byte("\x89PNG\r\n\x1a\n")
	ihdr := []byte("IHDR")
	ihdr = binary.BigEndian.AppendUint32(ihdr, w)
	ihdr = binary.BigEndian.AppendUint32(ihdr, h)
	ihdr = append(ihdr, 8, 6, 0, 0, 0)
	b = binary.BigEndian.AppendUint32(b, 13)
	b = append(b, ihdr...)
	return binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(ihdr))
}

func isRed(c color.Color) bool {
	r, g, b, _ := c.RGBA()
	return r > 0xC000 && g < 0x4000 && b < 0x4000
}

func isBlue(c color.Color) bool {
	r, g, b, _ := c.RGBA()
	return b > 0xC000 && g < 0x4000 && r < 0x4000
}

func TestEXIFOrientation(t *testing.T) {
	src := twoTone(400, 200) // red left, blue right
	for _, tc := range []struct {
		o      uint16
		be     bool
		w, h   int
		redAt  image.Point // where the red half ends up, as a probe point
		blueAt image.Point
	}{
		{1, false, 160, 80, image.Pt(10, 40), image.Pt(150, 40)},
		{3, true, 160, 80, image.Pt(150, 40), image.Pt(10, 40)},
		{6, false, 80, 160, image.Pt(40, 10), image.Pt(40, 150)}, // 90° clockwise: left goes to the top
		{8, true, 80, 160, image.Pt(40, 150), image.Pt(40, 10)},  // 90° counter-clockwise: left goes to the bottom
		{2, false, 160, 80, image.Pt(150, 40), image.Pt(10, 40)},
	} {
		data := exifJPEG(t, src, tc.o, tc.be)
		if got := jpegOrientation(bytes.NewReader(data)); got != int(tc.o) {
			t.Fatalf("orientation %d read as %d", tc.o, got)
		}
		img, orient, err := decodeImage(bytes.NewReader(data), 1<<30)
		if err != nil {
			t.Fatal(err)
		}
		th := thumbnail(img, orient, Params{Kind: KindThumb, Format: JPEG, W: 160, H: 160}, ScaleBoxCatmullRom)
		if b := th.Bounds(); b.Dx() != tc.w || b.Dy() != tc.h {
			t.Errorf("orientation %d: thumbnail %v, want %dx%d", tc.o, b, tc.w, tc.h)
			continue
		}
		if !isRed(th.At(tc.redAt.X, tc.redAt.Y)) || !isBlue(th.At(tc.blueAt.X, tc.blueAt.Y)) {
			t.Errorf("orientation %d: at %v %v, at %v %v", tc.o, tc.redAt, th.At(tc.redAt.X, tc.redAt.Y), tc.blueAt, th.At(tc.blueAt.X, tc.blueAt.Y))
		}
	}
}

func TestFitBox(t *testing.T) {
	for _, tc := range []struct {
		ow, oh         int
		p              Params
		dw, dh, cw, ch int
	}{
		{4000, 3000, Params{W: 320, H: 256, Crop: true}, 320, 256, 3750, 3000},
		{4000, 3000, Params{W: 320, H: 256}, 320, 240, 4000, 3000},
		{4000, 3000, Params{W: 100}, 100, 75, 4000, 3000},
		{4000, 3000, Params{H: 100}, 133, 100, 4000, 3000},
		{100, 50, Params{W: 320, H: 256, Crop: true}, 100, 50, 100, 50}, // never enlarged
		{100, 50, Params{W: 1000}, 100, 50, 100, 50},
		{300, 3000, Params{W: 320, H: 256, Crop: true}, 300, 256, 300, 256},
	} {
		dw, dh, cw, ch := fitBox(tc.ow, tc.oh, tc.p)
		if dw != tc.dw || dh != tc.dh || cw != tc.cw || ch != tc.ch {
			t.Errorf("fitBox(%d, %d, %+v) = %d %d %d %d; want %d %d %d %d", tc.ow, tc.oh, tc.p, dw, dh, cw, ch, tc.dw, tc.dh, tc.cw, tc.ch)
		}
	}
}

func TestDecodeRefusesBadImages(t *testing.T) {
	var good bytes.Buffer
	png.Encode(&good, twoTone(64, 64))
	var goodJPEG bytes.Buffer
	jpeg.Encode(&goodJPEG, twoTone(64, 64), nil)
	corrupt := bytes.Clone(goodJPEG.Bytes())
	for i := len(corrupt) / 2; i < len(corrupt)-2; i++ {
		corrupt[i] = 0xFF
	}
	for name, data := range map[string][]byte{
		"bomb 50000x50000 png": pngHeader(50000, 50000),
		"zero width png":       pngHeader(0, 10),
		"truncated png":        good.Bytes()[:good.Len()/2],
		"truncated jpeg":       goodJPEG.Bytes()[:goodJPEG.Len()/2],
		"corrupt jpeg":         corrupt,
		"not an image":         []byte("hello, world\n"),
		"empty":                nil,
	} {
		_, _, err := decodeImage(bytes.NewReader(data), 64<<20)
		if !errors.Is(err, errCannot) {
			t.Errorf("%s: err = %v, want errCannot", name, err)
		}
	}
	if _, _, err := decodeImage(bytes.NewReader(good.Bytes()), 64<<20); err != nil {
		t.Errorf("good png: %v", err)
	}
}

// photo is a w×h JPEG with detail everywhere (so decoding is realistic).
func photo(t testing.TB, w, h int) []byte {
	m := image.NewYCbCr(image.Rect(0, 0, w, h), image.YCbCrSubsampleRatio420)
	for y := range h {
		for x := range w {
			m.Y[m.YOffset(x, y)] = uint8(x*7 ^ y*13)
		}
	}
	for i := range m.Cb {
		m.Cb[i], m.Cr[i] = uint8(i), uint8(i*3)
	}
	var b bytes.Buffer
	if err := jpeg.Encode(&b, m, &jpeg.Options{Quality: 85}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// BenchmarkThumb12MP makes a 320×256 JPEG thumbnail from a 4000×3000
// JPEG: decode, scale (each method), encode. go test -bench Thumb12MP ./media
func BenchmarkThumb12MP(b *testing.B) {
	data := photo(b, 4000, 3000)
	for _, sc := range []struct {
		name string
		s    Scaler
	}{{"box+catmullrom", ScaleBoxCatmullRom}, {"catmullrom", ScaleCatmullRom}, {"approxbilinear", ScaleApproxBiLinear}} {
		b.Run(sc.name, func(b *testing.B) {
			p, _ := ParseTh("")
			for b.Loop() {
				img, o, err := decodeImage(bytes.NewReader(data), 64<<20)
				if err != nil {
					b.Fatal(err)
				}
				var out bytes.Buffer
				if err := encodeJPEG(&out, thumbnail(img, o, p, sc.s)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkScale12MP is the scaling step alone.
func BenchmarkScale12MP(b *testing.B) {
	img, _, err := decodeImage(bytes.NewReader(photo(b, 4000, 3000)), 64<<20)
	if err != nil {
		b.Fatal(err)
	}
	p, _ := ParseTh("")
	for _, sc := range []struct {
		name string
		s    Scaler
	}{{"box+catmullrom", ScaleBoxCatmullRom}, {"catmullrom", ScaleCatmullRom}, {"approxbilinear", ScaleApproxBiLinear}} {
		b.Run(sc.name, func(b *testing.B) {
			for b.Loop() {
				thumbnail(img, 1, p, sc.s)
			}
		})
	}
}

// The 4:2:0 fast path of boxShrink agrees with the general one.
func TestBoxShrink420(t *testing.T) {
	img, _, err := decodeImage(bytes.NewReader(photo(t, 400, 300)), 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	yc := img.(*image.YCbCr)
	if yc.SubsampleRatio != image.YCbCrSubsampleRatio420 {
		t.Skip("encoder did not make 4:2:0")
	}
	r := image.Rect(20, 10, 380, 290)
	fast := boxShrink(yc, r, 4)
	if fast.Bounds().Dx() != 90 || fast.Bounds().Dy() != 70 {
		t.Fatalf("size %v", fast.Bounds())
	}
	gen := func(m *image.YCbCr, k int) *image.RGBA { // the general path, forced
		out := image.NewRGBA(image.Rect(0, 0, r.Dx()/k, r.Dy()/k))
		n := uint32(k * k)
		for oy := range out.Bounds().Dy() {
			for ox := range out.Bounds().Dx() {
				var sy, scb, scr uint32
				for y := r.Min.Y + oy*k; y < r.Min.Y+(oy+1)*k; y++ {
					for x := r.Min.X + ox*k; x < r.Min.X+(ox+1)*k; x++ {
						sy += uint32(m.Y[m.YOffset(x, y)])
						scb += uint32(m.Cb[m.COffset(x, y)])
						scr += uint32(m.Cr[m.COffset(x, y)])
					}
				}
				cr, cg, cb := color.YCbCrToRGB(uint8(sy/n), uint8(scb/n), uint8(scr/n))
				out.SetRGBA(ox, oy, color.RGBA{cr, cg, cb, 255})
			}
		}
		return out
	}
	want := gen(yc, 4)
	for i := range want.Pix {
		if d := int(want.Pix[i]) - int(fast.Pix[i]); d < -1 || d > 1 {
			t.Fatalf("pixel byte %d: fast %d, general %d", i, fast.Pix[i], want.Pix[i])
		}
	}
}

// FuzzJPEGOrientation: the EXIF reader takes any bytes without panicking
// and answers 1–8.
func FuzzJPEGOrientation(f *testing.F) {
	f.Add(exifJPEG(f, twoTone(8, 8), 6, false))
	f.Add(exifJPEG(f, twoTone(8, 8), 3, true))
	f.Add([]byte{0xFF, 0xD8, 0xFF, 0xE1, 0x00, 0x02})
	f.Add([]byte{0xFF, 0xD8, 0xFF, 0xE1, 0x00, 0x10, 'E', 'x', 'i', 'f', 0, 0, 'I', 'I', 42, 0, 0xFF, 0xFF, 0xFF, 0x7F})
	f.Fuzz(func(t *testing.T, b []byte) {
		if o := jpegOrientation(bytes.NewReader(b)); o < 1 || o > 8 {
			t.Fatalf("orientation %d", o)
		}
		if len(b) > 6 {
			if o := tiffOrientation(b[6:]); o < 1 || o > 8 {
				t.Fatalf("tiff orientation %d", o)
			}
		}
	})
}

package media

import (
	"bytes"
	"encoding/binary"
	"io"
)

// jpegOrientation returns the EXIF orientation (1–8) of the JPEG read from
// r, or 1 when it has none. It reads only the segments before the image
// data, at most 256 KiB.
func jpegOrientation(r io.Reader) int {
	br := io.LimitReader(r, 256<<10)
	var hdr [4]byte
	if _, err := io.ReadFull(br, hdr[:2]); err != nil || hdr[0] != 0xFF || hdr[1] != 0xD8 {
		return 1
	}
	for {
		if _, err := io.ReadFull(br, hdr[:]); err != nil || hdr[0] != 0xFF {
			return 1
		}
		marker := hdr[1]
		n := int(binary.BigEndian.Uint16(hdr[2:])) - 2
		if marker == 0xDA || marker == 0xD9 || n < 0 {
			return 1 // image data starts: no EXIF before it
		}
		seg := make([]byte, n)
		if _, err := io.ReadFull(br, seg); err != nil {
			return 1
		}
		if marker == 0xE1 && bytes.HasPrefix(seg, []byte("Exif\x00\x00")) {
			return tiffOrientation(seg[6:])
		}
	}
}

// tiffOrientation reads tag 0x0112 of IFD0 of a TIFF header b.
func tiffOrientation(b []byte) int {
	if len(b) < 8 {
		return 1
	}
	var bo binary.ByteOrder
	switch string(b[:2]) {
	case "II":
		bo = binary.LittleEndian
	case "MM":
		bo = binary.BigEndian
	default:
		return 1
	}
	if bo.Uint16(b[2:]) != 42 {
		return 1
	}
	off := int(bo.Uint32(b[4:]))
	if off < 8 || off+2 > len(b) {
		return 1
	}
	n := int(bo.Uint16(b[off:]))
	for i := range n {
		e := off + 2 + 12*i
		if e+12 > len(b) {
			return 1
		}
		if bo.Uint16(b[e:]) == 0x0112 && bo.Uint16(b[e+2:]) == 3 { // SHORT
			if o := int(bo.Uint16(b[e+8:])); o >= 1 && o <= 8 {
				return o
			}
			return 1
		}
	}
	return 1
}

package arch

import (
	"archive/tar"
	"bytes"
	"strings"
	"time"
)

// gnuHeader fills h with the GNU tar header block of a regular file, the
// very bytes archive/tar writes for it, when the entry needs nothing but
// one block: a name of at most 100 bytes and numbers that fit the octal
// fields. ok is false otherwise, and archive/tar writes it. archive/tar
// checks every field of every header, which costs more than the whole
// rest of a small file's entry; a folder of small files is mostly headers.
func gnuHeader(h *[512]byte, name string, size int64, mode uint32, mtime int64) bool {
	if len(name) > 100 || strings.IndexByte(name, 0) >= 0 || size < 0 || size >= 1<<33 ||
		mode >= 1<<21 || mtime < 0 || mtime >= 1<<33 {
		return false
	}
	*h = gnuTemplate
	copy(h[0:100], name)
	octal(h[100:107], int64(mode))
	octal(h[124:135], size)
	octal(h[136:147], mtime)
	sum := int64(0)
	for _, c := range h[:148] {
		sum += int64(c)
	}
	sum += 8 * ' ' // the checksum field itself counts as spaces
	for _, c := range h[156:] {
		sum += int64(c)
	}
	octal(h[148:154], sum)
	h[154], h[155] = 0, ' '
	return true
}

// octal writes x in octal into b, zero-padded to its whole width (the
// NUL after it is in the template).
func octal(b []byte, x int64) {
	for i := len(b) - 1; i >= 0; i-- {
		b[i] = byte('0' + x&7)
		x >>= 3
	}
}

// gnuTemplate is archive/tar's header of an empty regular file with an
// empty name, mode 0 and mtime 0: the fields gnuHeader fills are all
// zero digits there, the others are what every entry carries.
var gnuTemplate = func() (blk [512]byte) {
	var buf bytes.Buffer
	h := &tar.Header{Typeflag: tar.TypeReg, ModTime: time.Unix(0, 0), Format: tar.FormatGNU}
	if err := tar.NewWriter(&buf).WriteHeader(h); err != nil || buf.Len() != 512 {
		panic("arch: no GNU tar header template")
	}
	copy(blk[:], buf.Bytes())
	return blk
}()

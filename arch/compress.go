package arch

import (
	"io"

	"github.com/dsnet/compress/bzip2"
	"github.com/klauspost/compress/gzip"
	"github.com/ulikunitz/xz"
)

// Codec names a stream compressor.
type Codec string

const (
	Gzip  Codec = "gz"
	XZ    Codec = "xz"
	Bzip2 Codec = "bz2"
)

// Suffix is the file-name ending a compressed file gets.
func (c Codec) Suffix() string { return "." + string(c) }

// DefaultLevel is the level an archive gets when ?tar=<codec> names none
// (copyparty's: gz 3, xz 1, bz2 2).
func (c Codec) DefaultLevel() int {
	switch c {
	case Gzip:
		return 3
	case Bzip2:
		return 2
	}
	return 1
}

// CheckLevel validates a compression level for c (0–9 for gz and xz, 1–9
// for bz2).
func CheckLevel(c Codec, level int) error {
	switch c {
	case Gzip, XZ:
		if level < 0 || level > 9 {
			return badFormat("%s level %d out of range 0-9", c, level)
		}
		return nil
	case Bzip2:
		if level < 1 || level > 9 {
			return badFormat("%s level %d out of range 1-9", c, level)
		}
		return nil
	}
	return badFormat("unknown compression %q", c)
}

// NewEncoder returns a writer that compresses into w. Closing it flushes the
// stream's end but does not close w.
//
// gz uses klauspost/compress (level 0 stores). xz has no presets in
// ulikunitz/xz; levels choose the dictionary size as xz(1)'s presets do
// (0: 256 KiB, 1: 1 MiB, 2: 2 MiB, 3–5: 4 MiB, 6: 8 MiB, 7: 16 MiB,
// 8: 32 MiB, 9: 64 MiB). bz2 uses dsnet/compress, whose level is the block
// size in units of 100 kB, as bzip2(1)'s is.
func NewEncoder(c Codec, level int, w io.Writer) (io.WriteCloser, error) {
	if err := CheckLevel(c, level); err != nil {
		return nil, err
	}
	switch c {
	case Gzip:
		return gzip.NewWriterLevel(w, level)
	case XZ:
		dict := [...]int{256 << 10, 1 << 20, 2 << 20, 4 << 20, 4 << 20, 4 << 20, 8 << 20, 16 << 20, 32 << 20, 64 << 20}[level]
		return xz.WriterConfig{DictCap: dict}.NewWriter(w)
	case Bzip2:
		return bzip2.NewWriter(w, &bzip2.WriterConfig{Level: level})
	}
	return nil, badFormat("unknown compression %q", c)
}

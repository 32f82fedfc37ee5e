package arch

import (
	"io"
	"os"
	"testing"
)

// BenchmarkEncoder measures each in-process compressor at the archive
// default level on the file named by $HOARD_CORPUS (skipped without it), so
// the figures can be set beside the command-line tools at the same level
// (bench/archive.sh does both).
func BenchmarkEncoder(b *testing.B) {
	name := os.Getenv("HOARD_CORPUS")
	if name == "" {
		b.Skip("set HOARD_CORPUS to a file to compress")
	}
	data, err := os.ReadFile(name)
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []Codec{Gzip, XZ, Bzip2} {
		b.Run(string(c), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				w, err := NewEncoder(c, c.DefaultLevel(), io.Discard)
				if err != nil {
					b.Fatal(err)
				}
				w.Write(data)
				if err := w.Close(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

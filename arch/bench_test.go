package arch

import (
	"context"
	"io"
	"os"
	"testing"
)

// BenchmarkSmallTree walks and writes $HOARD_TREE (skipped without it) as
// tar and zip to io.Discard: the per-file cost of the archive path.
func BenchmarkSmallTree(b *testing.B) {
	dir := os.Getenv("HOARD_TREE")
	if dir == "" {
		b.Skip("set HOARD_TREE to a folder")
	}
	v := openVol(b, dir)
	for _, fs := range []string{"tar", "zip"} {
		b.Run(fs, func(b *testing.B) {
			f := parse(b, fs)
			for b.Loop() {
				w := &Walker{Vol: v}
				if err := w.AddFolder(context.Background(), "", "x/"); err != nil {
					b.Fatal(err)
				}
				if err := Write(context.Background(), io.Discard, f, w.Files, Options{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

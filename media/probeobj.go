package media

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
)

// Tags of a file on object storage (docs/s3.md, "Index and search"):
// ffprobe needs a seekable file, and a whole copy of every media object
// per node and per scan would be the bucket's size in downloads. It gets
// a stand-in instead: an anonymous file (memfd on Linux: nothing on any
// disk, nothing to clean after a crash) of the object's size holding its
// first and last ProbeSpan bytes at their places, the middle a hole of
// zeros. What tags and durations are made of lies at the start (ID3v2,
// FLAC, Ogg, WAV and MP4 headers, a Xing/VBRI frame) or at the end (ID3v1,
// APE, an Ogg's last page, an MP4 index written after its data), so at
// most 2 × ProbeSpan bytes are read per object, by two ranged GETs.

// ProbeSpan is how much of each end of an object ProbeObject reads.
const ProbeSpan = 4 << 20

// ProbeObject reads the tags of a media file of size bytes that r reads
// (an object store's ranged reader), through a sparse stand-in.
func ProbeObject(ctx context.Context, r io.ReadSeeker, size int64) (Tags, error) {
	if size < 0 {
		return nil, errors.New("media: probe: negative size")
	}
	f, err := anonFile()
	if err != nil {
		return nil, fmt.Errorf("media: probe: a stand-in file: %w", err)
	}
	defer f.Close()
	if err := fillStandIn(ctx, f, r, size, ProbeSpan); err != nil {
		return nil, err
	}
	return ProbeFile(ctx, f)
}

// fillStandIn writes into f the ranges of r that probeRanges gives,
// at their offsets, and sizes f to size (the rest a hole).
func fillStandIn(ctx context.Context, f *os.File, r io.ReadSeeker, size, span int64) error {
	for _, rg := range probeRanges(size, span) {
		if err := ctx.Err(); err != nil {
			return err
		}
		if _, err := r.Seek(rg[0], io.SeekStart); err != nil {
			return err
		}
		if _, err := f.Seek(rg[0], io.SeekStart); err != nil {
			return err
		}
		n, err := io.Copy(f, io.LimitReader(r, rg[1]))
		if err != nil {
			return err
		}
		if n != rg[1] {
			return fmt.Errorf("media: probe: the object ended after %d of %d bytes at %d", n, rg[1], rg[0])
		}
	}
	return f.Truncate(size)
}

// probeRanges are the (offset, length) ranges of an object of size bytes
// that its stand-in holds: the whole of it up to 2 × span, else its first
// and its last span bytes. They never overlap and lie within size.
func probeRanges(size, span int64) [][2]int64 {
	switch {
	case size <= 0:
		return nil
	case span <= 0 || size <= 2*span:
		return [][2]int64{{0, size}}
	}
	return [][2]int64{{0, span}, {size - span, span}}
}

// anonTemp is a temporary file whose name is removed at once: it goes
// with its descriptor, also after a crash.
func anonTemp() (*os.File, error) {
	f, err := os.CreateTemp("", "hoard-probe-*")
	if err != nil {
		return nil, err
	}
	os.Remove(f.Name())
	return f, nil
}

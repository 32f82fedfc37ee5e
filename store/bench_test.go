package store

import (
	"bytes"
	"context"
	"fmt"
	"testing"
)

// BenchmarkIngestSmall is store's share of a small upload: a 4 KiB body
// streamed, hashed, flushed and published under a new name. Watch
// allocs/op and B/op (issue 19); the time is the disk's.
func BenchmarkIngestSmall(b *testing.B) {
	dir := b.TempDir()
	spec, err := ParseVolume(dir + "::rw")
	if err != nil {
		b.Fatal(err)
	}
	st, err := Open(Config{Volumes: []VolumeSpec{spec}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	v := st.Volumes()[0]
	data := bytes.Repeat([]byte("x"), 4<<10)
	ctx := context.Background()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		if _, err := v.Ingest(ctx, "", bytes.NewReader(data), IngestOptions{Name: fmt.Sprintf("f%d.bin", i), Size: int64(len(data))}); err != nil {
			b.Fatal(err)
		}
	}
}

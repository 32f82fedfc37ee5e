package up2k

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"hoard/store"
)

// BenchmarkHashCheck re-verifies 256 MiB of recorded 4 MiB chunks (from
// the page cache), as a restart does for an unfinished upload, through
// the lanes and with crypto/sha512 alone.
func BenchmarkHashCheck(b *testing.B) {
	dir := b.TempDir()
	st, err := store.Open(store.Config{Volumes: []store.VolumeSpec{{Src: dir, Perms: map[string]store.Perm{"*": store.PermRead | store.PermWrite}}}, Logger: testLog})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	data := randBytes(256 << 20)
	p := filepath.Join(b.TempDir(), "work")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		b.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	const cs = 4 << 20
	var items []vitem
	for off := 0; off < len(data); off += cs {
		items = append(items, vitem{off: int64(off), n: cs, cmp: ChunkHash(data[off : off+cs]), id: len(items)})
	}
	for _, single := range []bool{false, true} {
		b.Run(map[bool]string{false: "lanes", true: "crypto-sha512"}[single], func(b *testing.B) {
			m, err := New(Config{Store: st, Logger: testLog, SingleHash: single})
			if err != nil {
				b.Fatal(err)
			}
			defer m.Close()
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				bad, err := m.hashCheck(context.Background(), f, items)
				if err != nil || len(bad) != 0 {
					b.Fatalf("bad %v, err %v", bad, err)
				}
			}
		})
	}
}

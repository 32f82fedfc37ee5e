package up2k_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha512"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"hoard/idx"
	"hoard/store"
	"hoard/up2k"
)

// benchEnv is a volume in a temporary folder (on the disk that holds
// TMPDIR) with a Pebble session store, as the server runs it.
func benchEnv(b *testing.B) (*store.Volume, *up2k.Manager) {
	b.Helper()
	dir := b.TempDir()
	quiet := slog.New(slog.DiscardHandler)
	st, err := store.Open(store.Config{Volumes: []store.VolumeSpec{{Src: dir, Perms: map[string]store.Perm{"*": store.PermRead | store.PermWrite}}}, Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	v := st.Volumes()[0]
	db, err := idx.Open(filepath.Join(v.HistPath(), "idx"), idx.Options{Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	m, err := up2k.New(up2k.Config{Store: st, DBs: map[*store.Volume]up2k.SessionStore{v: db}, Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { m.Close(); db.Close(); st.Close() })
	return v, m
}

// BenchmarkWriteChunks uploads a pre-hashed 256 MiB file (1 MiB chunks)
// per iteration through the chunk writer: verify (SHA-512), WriteAt,
// fdatasync, synced Pebble receipts, and publishing. conns posts run at
// once, each carrying stitch chunks.
func BenchmarkWriteChunks(b *testing.B) {
	const size = 256 << 20
	data := make([]byte, size)
	rand.Read(data)
	cs := up2k.ChunkSize(size)
	var hs []string
	for off := int64(0); off < size; off += cs {
		hs = append(hs, up2k.ChunkHash(data[off:min(off+cs, size)]))
	}
	for _, tc := range []struct{ conns, stitch int }{{1, 1}, {2, 1}, {4, 1}, {4, 16}, {8, 4}} {
		b.Run(fmt.Sprintf("conns=%d/stitch=%d", tc.conns, tc.stitch), func(b *testing.B) {
			v, m := benchEnv(b)
			b.SetBytes(size)
			b.ResetTimer()
			for i := range b.N {
				// New content each time (else the finished file is found
				// and copied): the first chunk changes.
				b.StopTimer()
				data[0]++
				hs[0] = up2k.ChunkHash(data[:cs])
				b.StartTimer()
				rep, err := m.Handshake(context.Background(), up2k.Handshake{Vol: v, Dir: "b", Name: fmt.Sprintf("f%d", i), Size: size, Hashes: hs, Lmod: 1})
				if err != nil {
					b.Fatal(err)
				}
				jobs := make(chan int)
				var wg sync.WaitGroup
				for range tc.conns {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for first := range jobs {
							last := min(first+tc.stitch, len(hs))
							body := data[int64(first)*cs : min(int64(last)*cs, size)]
							_, err := m.WriteChunks(context.Background(), up2k.ChunkPost{Vol: v, Wark: rep.Wark, Hashes: strings.Join(hs[first:last], ","), Subc: -1, Body: bytes.NewReader(body), Length: int64(len(body))})
							if err != nil {
								b.Error(err)
							}
						}
					}()
				}
				for c := 0; c < len(hs); c += tc.stitch {
					jobs <- c
				}
				close(jobs)
				wg.Wait()
			}
		})
	}
}

// BenchmarkSmallFile is one small up2k upload per iteration, as u2c sends
// many: handshake (synced session), one 4 KiB chunk, publish and finish;
// u2c adds the last handshake that u2c.py and the browser send.
// With gc=on the file is group-committed (store/gcommit.go: its bytes in
// the state database's journal, recorded finished without a flush of its
// own); gc=off is the per-file way (syncfs, folder fsync, synced finish).
// Watch allocs/op; the time is the disk's.
func BenchmarkSmallFile(b *testing.B) {
	for _, tc := range []struct{ gc, last bool }{{false, false}, {true, false}, {true, true}} {
		gc, last := tc.gc, tc.last
		name := fmt.Sprintf("gc=%v", map[bool]string{false: "off", true: "on"}[gc])
		if last {
			name += "/u2c" // with the last handshake
		}
		b.Run(name, func(b *testing.B) {
			dir := b.TempDir()
			quiet := slog.New(slog.DiscardHandler)
			st, err := store.Open(store.Config{Volumes: []store.VolumeSpec{{Src: dir, Perms: map[string]store.Perm{"*": store.PermRead | store.PermWrite}}}, Logger: quiet})
			if err != nil {
				b.Fatal(err)
			}
			v := st.Volumes()[0]
			db, err := idx.Open(filepath.Join(v.HistPath(), "idx"), idx.Options{Logger: quiet})
			if err != nil {
				b.Fatal(err)
			}
			if gc {
				st.SetSmallLog(idx.NewSmallLog(map[*store.Volume]*idx.DB{v: db}, nil))
			}
			m, err := up2k.New(up2k.Config{Store: st, DBs: map[*store.Volume]up2k.SessionStore{v: db}, Logger: quiet})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { m.Close(); st.StopSmall(); db.Close(); st.Close() })
			data := make([]byte, 4<<10)
			rand.Read(data)
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				i++
				data[0], data[1] = byte(i), byte(i>>8) // new content: not found as a finished file
				data[2] = byte(i >> 16)
				h := up2k.ChunkHash(data)
				hs := up2k.Handshake{Vol: v, Dir: "s", Name: fmt.Sprintf("f%d", i), Size: int64(len(data)), Hashes: []string{h}, Lmod: 1, MayRead: last}
				rep, err := m.Handshake(context.Background(), hs)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := m.WriteChunks(context.Background(), up2k.ChunkPost{Vol: v, Wark: rep.Wark, Hashes: h, Subc: -1, Body: bytes.NewReader(data), Length: int64(len(data))}); err != nil {
					b.Fatal(err)
				}
				if last {
					// copyparty's clients confirm every file with one
					// more handshake (hoard up does not).
					fin, err := m.Handshake(context.Background(), hs)
					if err != nil || len(fin.Need) != 0 {
						b.Fatalf("last handshake: %+v %v", fin, err)
					}
				}
			}
		})
	}
}

// BenchmarkLimitSHA512 is the hashing limit: SHA-512 over n cores at once.
func BenchmarkLimitSHA512(b *testing.B) {
	buf := make([]byte, 1<<20)
	rand.Read(buf)
	for _, n := range []int{1, 2} {
		b.Run(fmt.Sprintf("cores=%d", n), func(b *testing.B) {
			b.SetBytes(int64(len(buf)) * int64(n))
			var wg sync.WaitGroup
			for range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					h := sha512.New()
					for range b.N {
						h.Write(buf)
					}
				}()
			}
			wg.Wait()
		})
	}
}

// BenchmarkLimitDisk is the disk limit: 64 MiB written with pwrite in
// 1 MiB pieces, then fdatasync, per iteration.
func BenchmarkLimitDisk(b *testing.B) {
	buf := make([]byte, 1<<20)
	rand.Read(buf)
	f, err := os.Create(filepath.Join(b.TempDir(), "disk"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	b.SetBytes(64 << 20)
	for i := range b.N {
		for j := range 64 {
			if _, err := f.WriteAt(buf, int64(i%4)*64<<20+int64(j)<<20); err != nil {
				b.Fatal(err)
			}
		}
		if err := store.Datasync(f); err != nil {
			b.Fatal(err)
		}
	}
}

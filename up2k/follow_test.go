package up2k

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"hoard/store"
)

// TestFolderMovedOrDeletedDropsUpload: an unfinished upload whose folder
// is moved or deleted is dropped: its client's next chunk gets "unknown
// wark", no work file is left anywhere, and a new handshake starts over.
func TestFolderMovedOrDeletedDropsUpload(t *testing.T) {
	dir := t.TempDir()
	st, err := store.Open(store.Config{Logger: testLog, Volumes: []store.VolumeSpec{{Src: dir, Perms: map[string]store.Perm{"*": store.PermAll}}}})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	vol := st.Volumes()[0]
	m, err := New(Config{Store: st, DBs: map[*store.Volume]SessionStore{vol: NewMemStore()}, Logger: testLog, Now: func() time.Time { return time.Unix(1700000000, 0) }})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ctx := context.Background()
	who := store.Actor{IP: "127.0.0.1"}
	data := randBytes(3 << 20)
	cs, hs := hashes(data)
	start := func(folder string) Reply {
		t.Helper()
		rep, err := m.Handshake(ctx, Handshake{Vol: vol, Dir: folder, Name: "f.bin", Size: int64(len(data)), Lmod: 1600000000, Hashes: hs, IP: "127.0.0.1"})
		if err != nil || len(rep.Need) != len(hs) {
			t.Fatalf("handshake: %+v %v", rep, err)
		}
		if _, err := m.WriteChunks(ctx, ChunkPost{Vol: vol, Wark: rep.Wark, Hashes: hs[0], Subc: -1, Body: bytes.NewReader(data[:cs]), Length: cs}); err != nil {
			t.Fatal(err)
		}
		return rep
	}
	partials := func() []string {
		var out []string
		filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err == nil && strings.HasSuffix(p, store.PartialSuffix) {
				out = append(out, p)
			}
			return nil
		})
		return out
	}
	for _, op := range []string{"move", "delete"} {
		rep := start("up/sub")
		if len(partials()) != 1 {
			t.Fatalf("%s: no work file to follow: %v", op, partials())
		}
		var err error
		if op == "move" {
			_, err = st.Move(ctx, who, store.Loc{Vol: vol, Rel: "up"}, store.Loc{Vol: vol, Rel: "moved"}, store.DestOptions{})
		} else {
			_, err = st.Delete(ctx, who, store.Loc{Vol: vol, Rel: "up"}, store.DeleteOptions{})
		}
		if err != nil {
			t.Fatal(err)
		}
		_, err = m.WriteChunks(ctx, ChunkPost{Vol: vol, Wark: rep.Wark, Hashes: hs[1], Subc: -1, Body: bytes.NewReader(data[cs : 2*cs]), Length: cs})
		if KindOf(err) != Invalid || !strings.Contains(err.Error(), "unknown wark") {
			t.Fatalf("%s: chunk after the folder went: %v", op, err)
		}
		if p := partials(); len(p) != 0 {
			t.Fatalf("%s: work files left: %v", op, p)
		}
		if n := len(m.Unfinished(func(*Unfinished) bool { return true })); n != 0 {
			t.Fatalf("%s: %d unfinished uploads listed", op, n)
		}
		// The client starts over, and finishes a whole file.
		rep = start("up/sub")
		for i := 1; i < len(hs); i++ {
			c := data[int64(i)*cs : min(int64(i+1)*cs, int64(len(data)))]
			if _, err := m.WriteChunks(ctx, ChunkPost{Vol: vol, Wark: rep.Wark, Hashes: hs[i], Subc: -1, Body: bytes.NewReader(c), Length: int64(len(c))}); err != nil {
				t.Fatal(err)
			}
		}
		got, err := os.ReadFile(filepath.Join(dir, "up/sub/f.bin"))
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("%s: restarted upload: %v", op, err)
		}
		os.RemoveAll(filepath.Join(dir, "up"))
		os.RemoveAll(filepath.Join(dir, "moved"))
	}
}

package up2k_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"hoard/idx"
	"hoard/store"
	"hoard/up2k"
)

// readsDB is the Pebble session store, counting the file-record reads.
type readsDB struct {
	*idx.DB
	reads atomic.Int64
}

func (c *readsDB) Files(ctx context.Context, wark string) (map[string][]byte, error) {
	c.reads.Add(1)
	return c.DB.Files(ctx, wark)
}

// TestLastHandshakeFromMemory: the handshake that copyparty's clients
// send after a file's last chunk is answered from what the upload knew,
// without reading the record it just wrote, and answers as that record
// would (the file, its place, complete). A change made through hoard in
// between (delete, move, a touch) is never answered from memory; neither
// is a file changed on disk behind hoard's back.
func TestLastHandshakeFromMemory(t *testing.T) {
	dir := t.TempDir()
	quiet := slog.New(slog.DiscardHandler)
	st, err := store.Open(store.Config{Volumes: []store.VolumeSpec{{Src: dir, Perms: map[string]store.Perm{"*": store.PermRead | store.PermWrite | store.PermDelete | store.PermMove}}}, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	v := st.Volumes()[0]
	db, err := idx.Open(filepath.Join(v.HistPath(), "idx"), idx.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	st.SetSmallLog(idx.NewSmallLog(map[*store.Volume]*idx.DB{v: db}, nil))
	cdb := &readsDB{DB: db}
	m, err := up2k.New(up2k.Config{Store: st, DBs: map[*store.Volume]up2k.SessionStore{v: cdb}, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { m.Close(); st.StopSmall(); db.Close(); st.Close() }()
	ctx := context.Background()
	if err := os.MkdirAll(filepath.Join(dir, "s"), 0o755); err != nil {
		t.Fatal(err)
	}
	who := store.Actor{IP: "127.0.0.1"}
	upload := func(name string, size int) (up2k.Handshake, up2k.Written, []byte) {
		t.Helper()
		data := make([]byte, size)
		rand.Read(data)
		h := up2k.ChunkHash(data)
		hs := up2k.Handshake{Vol: v, Dir: "s", Name: name, Size: int64(size), Hashes: []string{h}, Lmod: 1600000000, MayRead: true, MayDelete: true, IP: "127.0.0.1"}
		rep, err := m.Handshake(ctx, hs)
		if err != nil || len(rep.Need) != 1 {
			t.Fatalf("handshake %s: %+v %v", name, rep, err)
		}
		w, err := m.WriteChunks(ctx, up2k.ChunkPost{Vol: v, Wark: rep.Wark, Hashes: h, Subc: -1, Body: bytes.NewReader(data), Length: int64(size)})
		if err != nil || !w.Done {
			t.Fatalf("chunk %s: %+v %v", name, w, err)
		}
		return hs, w, data
	}
	last := func(hs up2k.Handshake) (up2k.Reply, int64) {
		t.Helper()
		before := cdb.reads.Load()
		rep, err := m.Handshake(ctx, hs)
		if err != nil {
			t.Fatalf("last handshake %s: %v", hs.Name, err)
		}
		return rep, cdb.reads.Load() - before
	}

	// The usual case, also with a small file that is not group-committed
	// in size terms (64 KiB) and one published under a collision name.
	for i, size := range []int{4096, 64 << 10, 1000} {
		name := fmt.Sprintf("f%d.bin", i)
		if i == 2 {
			if err := os.WriteFile(filepath.Join(dir, "s", name), []byte("in the way"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		hs, w, _ := upload(name, size)
		rep, reads := last(hs)
		if len(rep.Need) != 0 || rep.Rel() != w.Rel || rep.Info == nil || rep.Info.Size() != int64(size) || rep.Lmod != 1600000000 {
			t.Fatalf("%s: last handshake %+v, want complete at %s", name, rep, w.Rel)
		}
		if reads != 0 {
			t.Errorf("%s: the last handshake read the file records %d times, want 0 (answered from the upload)", name, reads)
		}
		// Asked again (a client that lost the answer): the usual way,
		// the same answer.
		rep2, reads := last(hs)
		if len(rep2.Need) != 0 || rep2.Rel() != w.Rel || reads == 0 {
			t.Fatalf("%s: repeated handshake %+v (%d reads), want complete at %s from the record", name, rep2, reads, w.Rel)
		}
	}

	// The same content under another name first (u2c sends a tree's
	// duplicates so): that handshake takes the usual way (a copy), and
	// the first file's last handshake is still answered from memory.
	hs, w, data := upload("dup1.bin", 4096)
	dup := hs
	dup.Name = "dup2.bin"
	if rep, err := m.Handshake(ctx, dup); err != nil || len(rep.Need) != 0 || rep.Name != "dup2.bin" {
		t.Fatalf("duplicate: %+v %v, want complete (copied) as dup2.bin", rep, err)
	}
	if got, err := os.ReadFile(filepath.Join(dir, "s", "dup2.bin")); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("duplicate's copy: %v", err)
	}
	if rep, reads := last(hs); len(rep.Need) != 0 || rep.Rel() != w.Rel || reads != 0 {
		t.Fatalf("dup1.bin after its duplicate: %+v with %d record reads, want complete at %s from memory", rep, reads, w.Rel)
	}

	// Deleted through hoard before the last handshake: not complete.
	hs, w, _ = upload("del.bin", 4096)
	if _, err := st.Delete(ctx, who, store.Loc{Vol: v, Rel: w.Rel}, store.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if rep, _ := last(hs); len(rep.Need) == 0 {
		t.Fatalf("deleted file: last handshake %+v says complete", rep)
	}

	// Moved away through hoard: not complete at the old name.
	hs, w, _ = upload("mv.bin", 4096)
	if _, err := st.Move(ctx, who, store.Loc{Vol: v, Rel: w.Rel}, store.Loc{Vol: v, Rel: "moved.bin"}, store.DestOptions{}); err != nil {
		t.Fatal(err)
	}
	if rep, _ := last(hs); len(rep.Need) == 0 && rep.Rel() == w.Rel {
		t.Fatalf("moved file: last handshake %+v says complete at the old place", rep)
	}

	// Changed on disk behind hoard's back (other bytes, other size):
	// not complete.
	hs, w, _ = upload("disk.bin", 4096)
	if err := os.WriteFile(filepath.Join(dir, w.Rel), []byte("other"), 0o644); err != nil {
		t.Fatal(err)
	}
	if rep, _ := last(hs); len(rep.Need) == 0 {
		t.Fatalf("file changed on disk: last handshake %+v says complete", rep)
	}

	// Touched through hoard (a new mtime): answered the usual way, with
	// the file's mtime now.
	hs, w, _ = upload("touch.bin", 4096)
	when := time.Unix(1700000000, 0)
	if err := st.SetMtime(ctx, who, store.Loc{Vol: v, Rel: w.Rel}, when); err != nil {
		t.Fatal(err)
	}
	if rep, reads := last(hs); reads == 0 {
		t.Fatalf("touched file: last handshake %+v answered from memory", rep)
	}
}

package up2k_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"hoard/idx"
	"hoard/store"
	"hoard/up2k"
)

// countingDB is the Pebble session store, counting the writes up2k makes
// to it itself.
type countingDB struct {
	*idx.DB
	writes atomic.Int64
}

func (c *countingDB) PutChunks(ctx context.Context, wark string, keys []string) error {
	c.writes.Add(1)
	return c.DB.PutChunks(ctx, wark, keys)
}

func (c *countingDB) Finish(ctx context.Context, wark, rel string, meta []byte) error {
	c.writes.Add(1)
	return c.DB.Finish(ctx, wark, rel, meta)
}

func (c *countingDB) FinishNoSync(ctx context.Context, wark, rel string, meta []byte) error {
	c.writes.Add(1)
	return c.DB.FinishNoSync(ctx, wark, rel, meta)
}

// TestSmallFileOneWrite: the chunk post of a small group-committed up2k
// file writes the state database once, the journal entry, which also
// replaces the session by the file's record (no separate finishing
// write). The record is right (the final handshake finds the file, also
// after a collision rename) and the session is gone.
func TestSmallFileOneWrite(t *testing.T) {
	dir := t.TempDir()
	quiet := slog.New(slog.DiscardHandler)
	st, err := store.Open(store.Config{Volumes: []store.VolumeSpec{{Src: dir, Perms: map[string]store.Perm{"*": store.PermRead | store.PermWrite}}}, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	v := st.Volumes()[0]
	db, err := idx.Open(filepath.Join(v.HistPath(), "idx"), idx.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	st.SetSmallLog(idx.NewSmallLog(map[*store.Volume]*idx.DB{v: db}, nil))
	cdb := &countingDB{DB: db}
	m, err := up2k.New(up2k.Config{Store: st, DBs: map[*store.Volume]up2k.SessionStore{v: cdb}, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { m.Close(); st.StopSmall(); db.Close(); st.Close() }()
	ctx := context.Background()
	if err := os.MkdirAll(filepath.Join(dir, "s"), 0o755); err != nil {
		t.Fatal(err)
	}
	// The second file's name is taken by a file put there between its
	// handshake and its chunk: it is published under a collision name.
	for i, name := range []string{"a.bin", "b.bin"} {
		data := make([]byte, 4096+i)
		rand.Read(data)
		h := up2k.ChunkHash(data)
		hs := up2k.Handshake{Vol: v, Dir: "s", Name: name, Size: int64(len(data)), Hashes: []string{h}, Lmod: 1600000000, MayRead: true}
		rep, err := m.Handshake(ctx, hs)
		if err != nil || rep.Name != name {
			t.Fatalf("handshake %s: %+v %v", name, rep, err)
		}
		if i == 1 {
			if err := os.WriteFile(filepath.Join(dir, "s", name), []byte("in the way"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		before := cdb.writes.Load()
		w, err := m.WriteChunks(ctx, up2k.ChunkPost{Vol: v, Wark: rep.Wark, Hashes: h, Subc: -1, Body: bytes.NewReader(data), Length: int64(len(data))})
		if err != nil || !w.Done {
			t.Fatalf("chunk %s: %+v %v", name, w, err)
		}
		if n := cdb.writes.Load() - before; n != 0 {
			t.Errorf("%s: the chunk post made %d writes of its own besides the group commit's, want none", name, n)
		}
		if i == 1 && w.Rel == "s/"+name {
			t.Fatalf("%s was published over the file in its way", name)
		}
		if got, err := os.ReadFile(filepath.Join(dir, w.Rel)); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("%s: published %s: %v", name, w.Rel, err)
		}
		files, err := db.Files(ctx, rep.Wark)
		if err != nil || len(files) != 1 || files[w.Rel] == nil {
			t.Fatalf("%s: records %v (%v), want exactly %s", name, files, err, w.Rel)
		}
		fin, err := m.Handshake(ctx, hs)
		if err != nil || len(fin.Need) != 0 || fin.Rel() != w.Rel {
			t.Fatalf("%s: final handshake %+v %v, want complete at %s", name, fin, err, w.Rel)
		}
		n := 0
		if err := db.Sessions(ctx, func(wark string, _ []byte, _ []string) error {
			n++
			return nil
		}); err != nil || n != 0 {
			t.Fatalf("%s: %d sessions left (%v)", name, n, err)
		}
	}
}

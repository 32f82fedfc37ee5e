package idx

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"hoard/store"
)

// TestSmallLog: an entry and its index note are committed together and
// survive a reopen; ids keep growing across it; Retire deletes exactly
// the entries named; an entry a collision replaces is dropped in the same
// write as its successor is stored.
func TestSmallLog(t *testing.T) {
	dir := t.TempDir()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	st, err := store.Open(store.Config{Logger: log, Volumes: []store.VolumeSpec{{Src: dir, Perms: map[string]store.Perm{"*": store.PermRead}, Flags: store.Flags{E2D: true}}}})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	v := st.Volumes()[0]
	dbdir := filepath.Join(t.TempDir(), "idx")
	db, err := Open(dbdir, Options{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	x := New(Config{Store: st, DBs: map[*store.Volume]*DB{v: db}, Logger: log})
	l := NewSmallLog(map[*store.Volume]*DB{v: db}, nil)
	l.SetIndexer(x)
	ev := store.Event{Kind: store.Created, Vol: v, Rel: "a.txt", Size: 3, Mtime: time.Unix(1600000000, 0), At: time.Unix(1700000000, 0)}
	var wg sync.WaitGroup
	ids := make([]uint64, 8)
	for i := range ids {
		wg.Go(func() {
			id, nid, err := l.Commit(v, []byte{byte(i)}, &ev, nil)
			if err != nil || id == 0 || nid == 0 {
				t.Errorf("commit %d: id %d note %d err %v", i, id, nid, err)
			}
			ids[i] = id
		})
	}
	wg.Wait()
	id9, _, err := l.Commit(v, []byte{9}, nil, []uint64{ids[0]})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Retire(v, ids[1:3]); err != nil {
		t.Fatal(err)
	}
	ns, err := db.notes()
	if err != nil || len(ns) != 8 {
		t.Fatalf("%d notes (%v), want one per noted commit", len(ns), err)
	}
	db.Close()
	db, err = Open(dbdir, Options{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	l = NewSmallLog(map[*store.Volume]*DB{v: db}, nil)
	var got []uint64
	if err := l.Each(context.Background(), v, func(id uint64, rec []byte) error { got = append(got, id); return nil }); err != nil {
		t.Fatal(err)
	}
	want := slices.Concat(slices.Sorted(slices.Values(ids[3:])), []uint64{id9})
	if !slices.Equal(got, want) {
		t.Errorf("entries after reopen %v, want %v", got, want)
	}
	id10, _, err := l.Commit(v, []byte{10}, nil, nil)
	if err != nil || id10 <= id9 {
		t.Errorf("id after reopen %d (%v), want > %d", id10, err, id9)
	}
}

// BenchmarkSmallLogCommit is the journal's share of a group-committed
// 4 KiB upload: one synced batch (entry and index note). Run it with
// -cpu 1,8 (or more goroutines with -test.benchtime) to see concurrent
// commits share a write-ahead-log flush.
func BenchmarkSmallLogCommit(b *testing.B) {
	dir := b.TempDir()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	st, err := store.Open(store.Config{Logger: log, Volumes: []store.VolumeSpec{{Src: dir, Perms: map[string]store.Perm{"*": store.PermRead}, Flags: store.Flags{E2D: true}}}})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	v := st.Volumes()[0]
	db, err := Open(filepath.Join(b.TempDir(), "idx"), Options{Logger: log})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	x := New(Config{Store: st, DBs: map[*store.Volume]*DB{v: db}, Logger: log})
	l := NewSmallLog(map[*store.Volume]*DB{v: db}, x)
	rec := make([]byte, 4<<10+64)
	ev := store.Event{Kind: store.Created, Vol: v, Rel: "a.txt", Size: 4 << 10, Mtime: time.Unix(1600000000, 0), At: time.Unix(1700000000, 0)}
	b.SetBytes(int64(len(rec)))
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, _, err := l.Commit(v, rec, &ev, nil); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// TestSmallLogCommitFinish: an up2k upload's finishing record rides in
// the entry's batch: the session and its receipts go (without a receipt
// scan when it has none), the file's record is set at the event's path,
// a renamed upload's earlier record is dropped; a wrong wark or a missing
// event commits nothing.
func TestSmallLogCommitFinish(t *testing.T) {
	dir := t.TempDir()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	st, err := store.Open(store.Config{Logger: log, Volumes: []store.VolumeSpec{{Src: dir, Perms: map[string]store.Perm{"*": store.PermRead}}}})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	v := st.Volumes()[0]
	db, err := Open(filepath.Join(t.TempDir(), "idx"), Options{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	l := NewSmallLog(map[*store.Volume]*DB{v: db}, nil)
	ctx := context.Background()
	wark := "5h3R7Lvw3ZZFT3dxNAmpvpfoV1dhdI45YzDNqM8nwo8p"
	sessions := func() map[string][]string {
		out := map[string][]string{}
		if err := db.Sessions(ctx, func(w string, _ []byte, keys []string) error { out[w] = keys; return nil }); err != nil {
			t.Fatal(err)
		}
		return out
	}
	for _, receipts := range []bool{false, true} {
		if err := db.PutSession(ctx, wark, []byte("{}")); err != nil {
			t.Fatal(err)
		}
		if receipts {
			if err := db.PutChunks(ctx, wark, []string{"k1", "k2"}); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.PutFile(ctx, wark, "d/old.bin", []byte("old")); err != nil {
			t.Fatal(err)
		}
		ev := store.Event{Kind: store.Created, Vol: v, Rel: "d/new.bin", Size: 3}
		if _, _, err := l.CommitFinish(v, []byte{1}, nil, nil, &store.SmallFinish{Wark: wark, Meta: []byte("m")}); err == nil {
			t.Fatal("a finishing record without its event was committed")
		}
		if _, _, err := l.CommitFinish(v, []byte{1}, &ev, nil, &store.SmallFinish{Wark: "not a wark", Meta: []byte("m")}); err == nil {
			t.Fatal("a finishing record with a bad wark was committed")
		}
		if len(sessions()) != 1 {
			t.Fatal("a refused commit changed the sessions")
		}
		id, _, err := l.CommitFinish(v, []byte{2}, &ev, nil, &store.SmallFinish{Wark: wark, Meta: []byte("meta"), NoReceipts: !receipts, Prev: "d/old.bin"})
		if err != nil || id == 0 {
			t.Fatalf("commit: %d %v", id, err)
		}
		if s := sessions(); len(s) != 0 {
			t.Fatalf("receipts %v: sessions left %v", receipts, s)
		}
		files, err := db.Files(ctx, wark)
		if err != nil || len(files) != 1 || string(files["d/new.bin"]) != "meta" {
			t.Fatalf("receipts %v: records %q (%v), want only d/new.bin", receipts, files, err)
		}
		if err := db.DeleteFile(ctx, wark, "d/new.bin"); err != nil {
			t.Fatal(err)
		}
	}
	var n int
	l.Each(ctx, v, func(uint64, []byte) error { n++; return nil })
	if n != 2 {
		t.Fatalf("%d entries, want the 2 committed", n)
	}
}

// TestSmallLogCheckpointBytes: the checkpoint budget is a quarter of the
// smallest memtable of the log's databases (memtables follow the block
// cache: a sixteenth of it).
func TestSmallLogCheckpointBytes(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	c := NewCache(64 << 20)
	defer c.Release()
	a, err := Open(filepath.Join(t.TempDir(), "a"), Options{Logger: log, Cache: c})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := Open(filepath.Join(t.TempDir(), "b"), Options{Logger: log}) // private 8 MiB cache: 512 KiB memtables
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	va, vb := &store.Volume{VPath: "a"}, &store.Volume{VPath: "b"}
	l := NewSmallLog(map[*store.Volume]*DB{va: a}, nil)
	if got, want := l.CheckpointBytes(), int64(4<<20)/4; got != want {
		t.Errorf("one database with a 64 MiB cache's 4 MiB memtables: budget %d, want %d", got, want)
	}
	l.Add(vb, b)
	if got, want := l.CheckpointBytes(), int64(512<<10)/4; got != want {
		t.Errorf("with a database of 512 KiB memtables too: budget %d, want %d", got, want)
	}
	if got := NewSmallLog(nil, nil).CheckpointBytes(); got != 0 {
		t.Errorf("no database: budget %d, want 0 (none)", got)
	}
}

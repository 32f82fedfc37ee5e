package idx

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"hoard/store"
)

// A replay indexes each noted path as it is at the replay: a file deleted
// or replaced after its note is forgotten or indexed as it is now, never
// as the note describes it.
func TestJournalReplay(t *testing.T) {
	dir := t.TempDir()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	st, err := store.Open(store.Config{Logger: log, Volumes: []store.VolumeSpec{{Src: dir, Perms: map[string]store.Perm{"*": store.PermRead}, Flags: store.Flags{E2D: true}}}})
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
	write := func(name, data string, mt time.Time) store.Event {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(data), 0o644)
		os.Chtimes(p, mt, mt)
		return store.Event{Kind: store.Created, Vol: v, Rel: name, Size: int64(len(data)), Mtime: mt, At: time.Unix(1700000000, 0), Uploader: "ann", ClientIP: "10.0.0.1"}
	}
	t0 := time.Unix(1600000000, 0)
	x := New(Config{Store: st, DBs: map[*store.Volume]*DB{v: db}, Logger: log})
	notes := []store.Event{
		write("kept.txt", "kept", t0),
		write("gone.txt", "gone", t0),
		write("swapped.txt", "old", t0),
		write(".hidden", "dot", t0),
		{Kind: store.Removed, Vol: v, Rel: "back.txt", At: t0},
	}
	for _, e := range notes {
		id, err := x.Note(e)
		if err != nil {
			t.Fatal(err)
		}
		if (id == 0) != (e.Rel == ".hidden") {
			t.Fatalf("note of %s: id %d", e.Rel, id)
		}
	}
	// A move and a tree delete, noted but not indexed: the records are
	// where they were.
	write("moved.txt", "moved", t0)
	db.PutRecord(&Record{Rel: "was.txt", Size: 5, Mtime: t0.UnixNano(), Uploader: "cy", At: 1700000001, IP: "10.0.0.2"})
	if _, err := x.Note(store.Event{Kind: store.Moved, Vol: v, Rel: "moved.txt", FromVol: v, From: "was.txt", At: t0}); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(dir, "tree"), 0o755)
	write("tree/left.txt", "left", t0)
	db.PutRecord(&Record{Rel: "tree/left.txt", Size: 4, Mtime: t0.UnixNano()})
	db.PutRecord(&Record{Rel: "tree/deleted.txt", Size: 4, Mtime: t0.UnixNano()})
	if _, err := x.Note(store.Event{Kind: store.Removed, Tree: true, Vol: v, Rel: "tree", At: t0}); err != nil {
		t.Fatal(err)
	}
	// After the notes (before any indexing) the files changed again.
	db.PutRecord(&Record{Rel: "gone.txt", Size: 4, Mtime: t0.UnixNano()})
	os.Remove(filepath.Join(dir, "gone.txt"))
	write("swapped.txt", "replaced, longer", t0.Add(time.Hour))
	write("back.txt", "made again", t0.Add(time.Hour))

	// The crash: nothing was indexed. The next start replays.
	x = New(Config{Store: st, DBs: map[*store.Volume]*DB{v: db}, Logger: log})
	x.Start()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := x.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	x.Close()
	rec := func(rel string) *Record {
		r, err := db.Record(rel)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if r := rec("kept.txt"); r == nil || r.Uploader != "ann" || r.IP != "10.0.0.1" || r.At != 1700000000 || r.Size != 4 {
		t.Errorf("kept.txt: %+v", r)
	}
	if r := rec("gone.txt"); r != nil {
		t.Errorf("a file deleted after its note is indexed: %+v", r)
	}
	if r := rec("swapped.txt"); r == nil || r.Size != 16 || r.Uploader != "" {
		t.Errorf("a file replaced after its note is indexed as noted: %+v", r)
	}
	if r := rec("back.txt"); r == nil || r.Size != 10 {
		t.Errorf("a file made again after the note of its removal: %+v", r)
	}
	if r := rec("moved.txt"); r == nil || r.Uploader != "cy" || r.At != 1700000001 {
		t.Errorf("a moved file did not keep its upload's record: %+v", r)
	}
	if r := rec("was.txt"); r != nil {
		t.Errorf("a moved file is still indexed where it was: %+v", r)
	}
	if r := rec("tree/deleted.txt"); r != nil {
		t.Errorf("a file deleted with its tree is indexed: %+v", r)
	}
	if r := rec("tree/left.txt"); r == nil {
		t.Errorf("a file the tree delete left is forgotten")
	}
	if r := rec(".hidden"); r != nil {
		t.Errorf("a dotfile is indexed: %+v", r)
	}
	if ns, err := db.notes(); err != nil || len(ns) != 0 {
		t.Fatalf("%d notes left after the replay (%v)", len(ns), err)
	}
}

// Journal notes decode only from what encode made; anything else is
// refused without a panic.
func FuzzNoteDecode(f *testing.F) {
	f.Add((&note{kind: store.Created, rec: Record{Rel: "a/b.txt", Size: 5, Mtime: 6, At: 7, Uploader: "u", IP: "ip", Wark: w('w'), Chunks: []string{w('c')}}}).encode())
	f.Add((&note{kind: store.Removed, rec: Record{Rel: "x"}}).encode())
	f.Add((&note{kind: store.Moved, tree: true, vol: "a/b", hasFrom: true, fromVol: "c", from: "d/e", rec: Record{Rel: ""}}).encode())
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		n, err := decodeNote(b)
		if err != nil {
			return
		}
		if (n.rec.Rel == "" && !n.tree) || (n.kind != store.Created && n.kind != store.Removed && n.kind != store.Moved && n.kind != store.Copied) || n.hasFrom != (n.kind == store.Moved || n.kind == store.Copied) {
			t.Fatalf("decoded a bad note: %+v", n)
		}
		again, err := decodeNote(n.encode())
		if err != nil || !reflect.DeepEqual(again, n) {
			t.Fatalf("round trip: %+v → %+v (%v)", n, again, err)
		}
	})
}

// TestPutRecordDropNote: an upload's record and the end of its note are
// one batch: both happen, or (a record that cannot be written) neither.
func TestPutRecordDropNote(t *testing.T) {
	db, err := Open(filepath.Join(t.TempDir(), "idx"), Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ids := map[uint64]bool{}
	noted := func() map[uint64]bool {
		ns, err := db.notes()
		if err != nil {
			t.Fatal(err)
		}
		m := map[uint64]bool{}
		for _, n := range ns {
			m[n.id] = true
		}
		return m
	}
	for _, rel := range []string{"a.txt", "b.txt"} {
		id, err := db.putNote(&note{kind: store.Created, rec: Record{Rel: rel, Size: 1}})
		if err != nil {
			t.Fatal(err)
		}
		ids[id] = true
	}
	if got := noted(); !reflect.DeepEqual(got, ids) {
		t.Fatalf("notes %v, want %v", got, ids)
	}
	var first, second uint64
	for id := range ids {
		if first == 0 || id < first {
			first = id
		}
	}
	for id := range ids {
		if id != first {
			second = id
		}
	}
	if err := db.PutRecordDropNote(&Record{Rel: "a.txt", Size: 1, Mtime: 1}, first); err != nil {
		t.Fatal(err)
	}
	if r, err := db.Record("a.txt"); err != nil || r == nil {
		t.Fatalf("record of a.txt: %v, %v", r, err)
	}
	if got := noted(); got[first] || !got[second] {
		t.Fatalf("notes after the record of a.txt: %v, want only %d", got, second)
	}
	if err := db.PutRecordDropNote(&Record{Rel: "", Size: 1}, second); err == nil {
		t.Fatal("a record without a path was written")
	}
	if got := noted(); !got[second] {
		t.Fatalf("a failed record dropped its note: %v", got)
	}
}

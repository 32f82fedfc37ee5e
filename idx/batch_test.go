package idx

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"hoard/store"
)

// TestEventsBatched queues uploads the way a burst of small uploads does
// (each with its up2k identity and a journal note) and lets the events
// loop take them in batches: every file is indexed with its uploader and
// identity, found by a search, its note dropped; a file gone before it
// was indexed is not indexed; one changed since its upload, and a small
// one without its identity, are hashed; a
// removal and a path uploaded twice end batches and keep their order.
func TestEventsBatched(t *testing.T) {
	f := newManageFixture(t, false)
	v := f.vols[""]
	vi := f.x.vol(v)
	now := time.Now()
	var want []string
	queue := func(e store.Event) {
		n, err := f.x.Note(e)
		if err != nil || n == 0 {
			t.Fatalf("note: %d %v", n, err)
		}
		e.Note = n
		f.x.queue = append(f.x.queue, queued{e: e, noteDB: f.x.noteDB(e)})
	}
	upload := func(rel, body string, changed bool) store.Event {
		p := filepath.Join(f.dirs[""], filepath.FromSlash(rel))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		w := fmt.Sprintf("%044d", len(want)+1)
		e := store.Event{Kind: store.Created, Vol: v, Rel: rel, Size: fi.Size(), Mtime: fi.ModTime(), At: now,
			Uploader: "ann", ClientIP: "10.1.2.3", Wark: w, Chunks: []string{w}}
		if changed {
			e.Size++ // the file is not what was uploaded: hashed again
		}
		return e
	}
	for i := range 600 {
		rel := fmt.Sprintf("burst/f%03d.txt", i)
		switch {
		case i == 100: // deleted before it is indexed
			e := upload(rel, "gone", false)
			os.Remove(filepath.Join(f.dirs[""], "burst", "f100.txt"))
			queue(e)
			continue
		case i == 200:
			queue(upload(rel, "changed", true))
		case i == 300: // a removal in the middle of a burst
			queue(upload(rel, "removed", false))
			os.Remove(filepath.Join(f.dirs[""], "burst", "f300.txt"))
			e := store.Event{Kind: store.Removed, Vol: v, Rel: rel}
			f.x.queue = append(f.x.queue, queued{e: e, noteDB: f.x.noteDB(e)})
			continue
		case i == 500: // no up2k identity (a PUT under ck=no): hashed in the batch
			e := upload(rel, "no wark", false)
			e.Wark, e.Chunks = "", nil
			queue(e)
		case i == 400: // the same path twice: the second upload wins
			queue(upload(rel, "first", false))
			queue(upload(rel, "second!", false))
		default:
			queue(upload(rel, fmt.Sprint("body ", i), false))
		}
		want = append(want, rel)
	}
	f.x.mu.Lock()
	if n := f.x.batchLen(); n != maxBatch {
		t.Errorf("the first batch takes %d changes, want %d", n, maxBatch)
	}
	f.x.stop = true // events returns once the queue is empty
	f.x.mu.Unlock()
	f.x.evwg.Add(1)
	f.x.events()

	if f.hashed.Load() != 3 {
		t.Errorf("%d files hashed, want 3 (the one changed since its upload, f400's first upload, f500)", f.hashed.Load())
	}
	for _, rel := range want {
		rec, err := vi.db.Record(rel)
		if err != nil || rec == nil {
			t.Fatalf("%s: not indexed (%v)", rel, err)
		}
		if rec.Uploader != "ann" || rec.IP != "10.1.2.3" || rec.Wark == "" {
			t.Fatalf("%s: %+v", rel, rec)
		}
		if rel == "burst/f400.txt" && rec.Size != int64(len("second!")) {
			t.Fatalf("%s: size %d, want the second upload's", rel, rec.Size)
		}
	}
	for _, rel := range []string{"burst/f100.txt", "burst/f300.txt"} {
		if rec, _ := vi.db.Record(rel); rec != nil {
			t.Errorf("%s indexed, but it is not there", rel)
		}
	}
	for _, q := range []string{"f123", "f599", "f400"} {
		if got := f.paths(t, q); !slices.Equal(got, []string{"/:burst/" + q + ".txt"}) {
			t.Errorf("search %q: %v", q, got)
		}
	}
	if got := f.paths(t, "burst"); len(got) != 100 { // the search's limit
		t.Errorf("search burst: %d hits", len(got))
	}
	if n, err := vi.db.notes(); err != nil || len(n) != 0 {
		t.Errorf("%d notes left (%v), want none", len(n), err)
	}
	if n := vi.db.files.Load(); n != int64(len(want)) {
		t.Errorf("%d files counted, want %d", n, len(want))
	}
}

package idx

import (
	"bytes"
	"context"
	"crypto/sha512"
	"encoding/base64"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"hoard/store"
)

// manageFixture is a store with two indexed volumes (/ and /two) and one
// that is not (/plain), and a started indexer over them whose hasher
// counts its calls.
type manageFixture struct {
	st     *store.Store
	x      *Indexer
	vols   map[string]*store.Volume
	dirs   map[string]string
	hashed atomic.Int64
}

func newManageFixture(t *testing.T, start bool) *manageFixture {
	t.Helper()
	f := &manageFixture{vols: map[string]*store.Volume{}, dirs: map[string]string{}}
	var cfg store.Config
	cfg.Logger = slog.New(slog.DiscardHandler)
	for _, spec := range []string{"::A:c,e2d", ":two:A:c,e2d", ":plain:A", ":w:w:c,e2d"} {
		dir := t.TempDir()
		v, err := store.ParseVolume(dir + spec)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Volumes = append(cfg.Volumes, v)
		f.dirs[v.VPath] = dir
	}
	st, err := store.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	f.st = st
	dbs := map[*store.Volume]*DB{}
	for _, v := range st.Volumes() {
		f.vols[v.VPath] = v
		if v.Flags().E2D {
			dbs[v] = testDB(t, vfs.NewMem())
		}
	}
	f.x = New(Config{Store: st, DBs: dbs, Logger: slog.New(slog.DiscardHandler), Workers: 1,
		Hasher: func(ctx context.Context, file io.ReaderAt, size, lmod int64, folder, name string) (string, []string, error) {
			f.hashed.Add(1)
			b, err := io.ReadAll(io.NewSectionReader(file, 0, size))
			sum := sha512.Sum512(b)
			w := base64.RawURLEncoding.EncodeToString(sum[:])[:44]
			return w, []string{w}, err
		}})
	if start {
		f.x.Start()
		t.Cleanup(f.x.Close)
	}
	return f
}

// upload stores a file through the store as a client's upload would.
func (f *manageFixture) upload(t *testing.T, vol, dir, name, body string) {
	t.Helper()
	_, err := f.vols[vol].Ingest(context.Background(), dir, bytes.NewReader([]byte(body)), store.IngestOptions{Name: name, Size: int64(len(body)), Uploader: "ann", ClientIP: "10.1.2.3"})
	if err != nil {
		t.Fatal(err)
	}
}

// settle waits until the indexer has applied every queued change.
func (f *manageFixture) settle(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		f.x.mu.Lock()
		idle := len(f.x.queue) == 0 && f.x.applying == nil
		f.x.mu.Unlock()
		if idle {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("the indexer did not catch up")
}

// paths returns what a search for q finds, as "/vpath:rel".
func (f *manageFixture) paths(t *testing.T, q string) []string {
	t.Helper()
	res, err := f.x.Search(context.Background(), []*store.Volume{f.vols[""], f.vols["two"], f.vols["w"]}, q, 100)
	if err != nil {
		t.Fatal(err)
	}
	out := []string{}
	for _, h := range res.Hits {
		out = append(out, "/"+h.Vol.VPath+":"+h.Rel)
	}
	slices.Sort(out)
	return out
}

func (f *manageFixture) record(t *testing.T, vol, rel string) *Record {
	t.Helper()
	rec, err := f.x.vol(f.vols[vol]).db.Record(rel)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

var boss = store.Actor{User: "", IP: "10.9.9.9"}

// TestIndexFollowsManage moves, copies and deletes files and trees through
// the store and checks that search follows: no deleted or moved-away path
// is found, a moved file keeps its record (hashes, upload time, uploader,
// address) at its new path, also in another volume, and a copy is indexed
// from its source's hashes without hashing it again.
func TestIndexFollowsManage(t *testing.T) {
	f := newManageFixture(t, true)
	ctx := context.Background()
	top, two, plain := f.vols[""], f.vols["two"], f.vols["plain"]
	f.upload(t, "", "", "alpha.txt", "alpha")
	f.upload(t, "", "tree/sub", "bravo.txt", "bravo")
	f.upload(t, "", "tree", "charlie.txt", "charlie")
	f.upload(t, "", "", "delta.txt", "delta")
	f.upload(t, "", "gone", "echo.txt", "echo")
	f.settle(t)
	orig := f.record(t, "", "tree/sub/bravo.txt")
	if orig == nil || orig.Uploader != "ann" || orig.IP != "10.1.2.3" || orig.At == 0 || orig.Wark == "" {
		t.Fatalf("upload not indexed: %+v", orig)
	}
	hashed := f.hashed.Load()
	// up2k's record of the content (for dedup) follows the file too.
	topDB, twoDB := f.x.vol(top).db, f.x.vol(two).db
	if err := topDB.PutFile(ctx, orig.Wark, "tree/sub/bravo.txt", []byte(`{"sz":5}`)); err != nil {
		t.Fatal(err)
	}
	filesOf := func(d *DB) string {
		m, err := d.Files(ctx, orig.Wark)
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprint(slices.Sorted(maps.Keys(m)))
	}

	// Rename a file.
	if _, err := f.st.Move(ctx, boss, store.Loc{Vol: top, Rel: "alpha.txt"}, store.Loc{Vol: top, Rel: "renamed.txt"}, store.DestOptions{}); err != nil {
		t.Fatal(err)
	}
	// Move a tree within the volume.
	if _, err := f.st.Move(ctx, boss, store.Loc{Vol: top, Rel: "tree"}, store.Loc{Vol: top, Rel: "moved/tree"}, store.DestOptions{Parents: true}); err != nil {
		t.Fatal(err)
	}
	f.settle(t)
	if got := fmt.Sprint(f.paths(t, "alpha")); got != "[]" {
		t.Fatalf("search finds the old name: %s", got)
	}
	if got := fmt.Sprint(f.paths(t, "renamed")); got != "[/:renamed.txt]" {
		t.Fatalf("search for the new name: %s", got)
	}
	if got := fmt.Sprint(f.paths(t, "bravo")); got != "[/:moved/tree/sub/bravo.txt]" {
		t.Fatalf("search after the tree move: %s", got)
	}
	rec := f.record(t, "", "moved/tree/sub/bravo.txt")
	if rec == nil || rec.Uploader != orig.Uploader || rec.IP != orig.IP || rec.At != orig.At || rec.Wark != orig.Wark || !slices.Equal(rec.Chunks, orig.Chunks) {
		t.Fatalf("moved record %+v, was %+v", rec, orig)
	}
	if f.record(t, "", "tree/sub/bravo.txt") != nil {
		t.Fatal("the old record stays")
	}
	if got := filesOf(topDB); got != "[moved/tree/sub/bravo.txt]" {
		t.Fatalf("up2k's file records after the move: %s", got)
	}
	// Hash search finds it at its new path only.
	res, err := f.x.HashSearch(ctx, []*store.Volume{top, two}, []string{orig.Wark}, 10)
	if err != nil || len(res.Hits) != 1 || res.Hits[0].Rel != "moved/tree/sub/bravo.txt" {
		t.Fatalf("hash search: %+v %v", res, err)
	}

	// Across volumes.
	if _, err := f.st.Move(ctx, boss, store.Loc{Vol: top, Rel: "moved"}, store.Loc{Vol: two, Rel: "m"}, store.DestOptions{}); err != nil {
		t.Fatal(err)
	}
	f.settle(t)
	if got := fmt.Sprint(f.paths(t, "bravo")); got != "[/two:m/tree/sub/bravo.txt]" {
		t.Fatalf("search after the move to another volume: %s", got)
	}
	rec = f.record(t, "two", "m/tree/sub/bravo.txt")
	if rec == nil || rec.Uploader != "ann" || rec.At != orig.At || rec.Wark != orig.Wark {
		t.Fatalf("record in the other volume: %+v", rec)
	}
	if a, b := filesOf(topDB), filesOf(twoDB); a != "[]" || b != "[m/tree/sub/bravo.txt]" {
		t.Fatalf("up2k's file records after the move to another volume: %s %s", a, b)
	}
	// Copy: indexed from the source's record, no upload facts.
	if _, err := f.st.Copy(ctx, boss, store.Loc{Vol: two, Rel: "m/tree"}, store.Loc{Vol: top, Rel: "copy"}, store.DestOptions{}); err != nil {
		t.Fatal(err)
	}
	f.settle(t)
	if got := fmt.Sprint(f.paths(t, "bravo")); got != "[/:copy/sub/bravo.txt /two:m/tree/sub/bravo.txt]" {
		t.Fatalf("search after the copy: %s", got)
	}
	cp := f.record(t, "", "copy/sub/bravo.txt")
	if cp == nil || cp.Wark != orig.Wark || cp.At != 0 || cp.Uploader != "" {
		t.Fatalf("copied record %+v", cp)
	}
	if n := f.hashed.Load(); n != hashed {
		t.Fatalf("%d files hashed again after moves and a copy; their records should have been reused", n-hashed)
	}

	// Delete a file, a tree; move a tree to an unindexed volume.
	if _, err := f.st.Delete(ctx, boss, store.Loc{Vol: top, Rel: "delta.txt"}, store.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.st.Delete(ctx, boss, store.Loc{Vol: two, Rel: "m"}, store.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.st.Move(ctx, boss, store.Loc{Vol: top, Rel: "gone"}, store.Loc{Vol: plain, Rel: "gone"}, store.DestOptions{}); err != nil {
		t.Fatal(err)
	}
	f.settle(t)
	for _, q := range []string{"delta", "echo"} {
		if got := fmt.Sprint(f.paths(t, q)); got != "[]" {
			t.Fatalf("search %q after the deletes: %s", q, got)
		}
	}
	if got := fmt.Sprint(f.paths(t, "bravo")); got != "[/:copy/sub/bravo.txt]" {
		t.Fatalf("search after deleting the tree: %s", got)
	}
	if got := fmt.Sprint(f.paths(t, "*.txt")); got != "[/:copy/charlie.txt /:copy/sub/bravo.txt /:renamed.txt]" {
		t.Fatalf("everything left: %s", got)
	}
}

// TestIndexRemovedTreeKeepsSurvivors: a tree delete that stopped half-way
// still sends its event; records of files still on disk stay.
func TestIndexRemovedTreeKeepsSurvivors(t *testing.T) {
	f := newManageFixture(t, true)
	f.upload(t, "", "t", "one.txt", "1")
	f.upload(t, "", "t", "two.txt", "2")
	f.settle(t)
	os.Remove(filepath.Join(f.dirs[""], "t", "one.txt"))
	f.x.enqueue(store.Event{Kind: store.Removed, Tree: true, Vol: f.vols[""], Rel: "t"})
	f.settle(t)
	if got := fmt.Sprint(f.paths(t, "*.txt")); got != "[/:t/two.txt]" {
		t.Fatalf("after a half-done tree delete: %s", got)
	}
}

// TestUploadOfQueued: an upload not indexed yet is known to unpost from
// the queue, and a move queued after it re-points it.
func TestUploadOfQueued(t *testing.T) {
	f := newManageFixture(t, false) // not started: changes stay queued
	top := f.vols[""]
	at := time.Unix(1700000000, 0)
	f.x.enqueue(store.Event{Kind: store.Created, Vol: top, Rel: "a/x", Size: 3, At: at, Uploader: "ann", ClientIP: "10.1.2.3"})
	info, ok, err := f.x.UploadOf(top, "a/x")
	if err != nil || !ok || info.User != "ann" || info.IP != "10.1.2.3" || !info.At.Equal(at) || info.Size != 3 {
		t.Fatalf("queued upload: %+v %v %v", info, ok, err)
	}
	f.x.enqueue(store.Event{Kind: store.Moved, Tree: true, FromVol: top, From: "a", Vol: top, Rel: "b"})
	if _, ok, _ := f.x.UploadOf(top, "a/x"); ok {
		t.Fatal("the old path is still known after a move")
	}
	if info, ok, _ := f.x.UploadOf(top, "b/x"); !ok || info.User != "ann" {
		t.Fatalf("the moved upload: %+v %v", info, ok)
	}
	f.x.enqueue(store.Event{Kind: store.Removed, Vol: top, Rel: "b/x"})
	if _, ok, _ := f.x.UploadOf(top, "b/x"); ok {
		t.Fatal("known after a queued delete")
	}
	if _, ok, _ := f.x.UploadOf(f.vols["plain"], "b/x"); ok {
		t.Fatal("known in an unindexed volume")
	}
}

// TestUploadOfIndexed: unpost's lookup reads the index and follows moves,
// and the store's unpost rule works through it.
func TestUploadOfIndexed(t *testing.T) {
	f := newManageFixture(t, true)
	ctx := context.Background()
	f.upload(t, "", "", "up.txt", "hello")
	f.upload(t, "w", "", "mine.txt", "mine")
	f.settle(t)
	info, ok, err := f.x.UploadOf(f.vols[""], "up.txt")
	if err != nil || !ok || info.User != "ann" || info.IP != "10.1.2.3" || info.Size != 5 {
		t.Fatalf("%+v %v %v", info, ok, err)
	}
	if _, err := f.st.Move(ctx, boss, store.Loc{Vol: f.vols[""], Rel: "up.txt"}, store.Loc{Vol: f.vols[""], Rel: "there.txt"}, store.DestOptions{}); err != nil {
		t.Fatal(err)
	}
	f.settle(t)
	if info2, ok, _ := f.x.UploadOf(f.vols[""], "there.txt"); !ok || info2 != info {
		t.Fatalf("after a move: %+v %v", info2, ok)
	}
	// The store's unpost rule, with the index as its lookup: in /w the
	// uploader has no d.
	f.st.SetUploadLookup(f.x)
	f.st.SetUnpost(12 * time.Hour)
	mine := store.Loc{Vol: f.vols["w"], Rel: "mine.txt"}
	if _, err := f.st.Delete(ctx, store.Actor{User: "ann", IP: "10.6.6.6"}, mine, store.DeleteOptions{Unpost: true}); store.KindOf(err) != store.KindForbidden {
		t.Fatalf("unpost from another address: %v", err)
	}
	if _, err := f.st.Delete(ctx, store.Actor{User: "ann", IP: "10.1.2.3"}, mine, store.DeleteOptions{Unpost: true}); err != nil {
		t.Fatalf("unpost through the index: %v", err)
	}
	if _, err := os.Stat(filepath.Join(f.dirs["w"], "mine.txt")); !os.IsNotExist(err) {
		t.Fatal("not deleted")
	}
}

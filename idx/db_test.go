package idx

import (
	"context"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"hoard/up2k"
)

var (
	_ up2k.SessionStore     = (*DB)(nil)
	_ up2k.LazySessionStore = (*DB)(nil)
)

func testDB(t *testing.T, fs vfs.FS) *DB {
	t.Helper()
	c := NewCache(16 << 20)
	defer c.Release()
	d, err := Open("db", Options{Cache: c, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), fs: fs})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func w(c byte) string { return strings.Repeat(string(c), 44) }

func TestSessionStore(t *testing.T) {
	ctx := context.Background()
	fs := vfs.NewMem()
	d := testDB(t, fs)
	// Two sessions whose warks share a prefix, with receipts.
	a, b := w('a'), w('a')[:43]+"b"
	if err := d.PutSession(ctx, a, []byte(`{"a":1}`)); err != nil {
		t.Fatal(err)
	}
	if err := d.PutSession(ctx, b, []byte(`{"b":1}`)); err != nil {
		t.Fatal(err)
	}
	if err := d.PutChunks(ctx, a, []string{w('x'), w('y'), w('z')}); err != nil {
		t.Fatal(err)
	}
	if err := d.PutChunks(ctx, b, []string{w('q')}); err != nil {
		t.Fatal(err)
	}
	if err := d.DropChunks(ctx, a, []string{w('y')}); err != nil {
		t.Fatal(err)
	}
	if err := d.PutSession(ctx, "short", nil); err == nil {
		t.Fatal("a wark of the wrong length was accepted")
	}
	// Survives a close and reopen.
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	d = testDB(t, fs)
	defer d.Close()
	got := map[string]string{}
	err := d.Sessions(ctx, func(wark string, blob []byte, keys []string) error {
		got[wark] = string(blob) + " " + strings.Join(keys, ",")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{a: `{"a":1} ` + w('x') + "," + w('z'), b: `{"b":1} ` + w('q')}
	if !maps.Equal(got, want) {
		t.Fatalf("sessions = %v, want %v", got, want)
	}
	// Finishing replaces the session by a file record.
	if err := d.Finish(ctx, a, "up/f1", []byte("m1")); err != nil {
		t.Fatal(err)
	}
	if err := d.PutFile(ctx, a, "up/f2", []byte("m2")); err != nil {
		t.Fatal(err)
	}
	files, err := d.Files(ctx, a)
	if err != nil || len(files) != 2 {
		t.Fatalf("files = %v, %v", files, err)
	}
	if string(files["up/f1"]) != "m1" || string(files["up/f2"]) != "m2" {
		t.Fatalf("files = %q", files)
	}
	if files, _ := d.Files(ctx, b); len(files) != 0 {
		t.Fatalf("files of another wark: %v", files)
	}
	if err := d.DeleteFile(ctx, a, "up/f1"); err != nil {
		t.Fatal(err)
	}
	files, _ = d.Files(ctx, a)
	if slices.Collect(maps.Keys(files))[0] != "up/f2" || len(files) != 1 {
		t.Fatalf("after delete: %v", files)
	}
	var left []string
	d.Sessions(ctx, func(wark string, blob []byte, keys []string) error { left = append(left, wark); return nil })
	if !slices.Equal(left, []string{b}) {
		t.Fatalf("sessions left = %v", left)
	}
	if err := d.DeleteSession(ctx, b); err != nil {
		t.Fatal(err)
	}
	left = nil
	d.Sessions(ctx, func(wark string, blob []byte, keys []string) error { left = append(left, wark); return nil })
	if len(left) != 0 {
		t.Fatalf("sessions left = %v", left)
	}
}

func TestSchemaVersion(t *testing.T) {
	fs := vfs.NewMem()
	d := testDB(t, fs)
	d.db.Set(schemaKey, []byte("99"), nil)
	d.Close()
	c := NewCache(1 << 20)
	defer c.Release()
	if _, err := Open("db", Options{Cache: c, fs: fs}); err == nil || !strings.Contains(err.Error(), "99") {
		t.Fatalf("opening a database of another schema: %v", err)
	}
}

func TestPrefixEnd(t *testing.T) {
	for _, tc := range []struct{ in, out string }{
		{"a", "b"}, {"a\xff", "b"}, {"\xff\xff", ""}, {"ab", "ac"},
	} {
		if got := string(prefixEnd([]byte(tc.in))); got != tc.out {
			t.Errorf("prefixEnd(%q) = %q, want %q", tc.in, got, tc.out)
		}
	}
}

// TestCacheAfterBulkLoad: after a bulk load the block cache still holds
// blocks (memtables once reserved all of it, so every read went to disk).
func TestCacheAfterBulkLoad(t *testing.T) {
	c := NewCache(4 << 20)
	d, err := Open("db", Options{Cache: c, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), fs: vfs.NewMem()})
	c.Release()
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	recs := genRecords(12000, 11)
	for _, r := range recs {
		if err := d.PutRecord(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.db.Flush(); err != nil {
		t.Fatal(err)
	}
	for _, r := range recs[:2000] {
		if _, err := d.Record(r.Rel); err != nil {
			t.Fatal(err)
		}
	}
	m := d.db.Metrics().BlockCache
	if m.Size == 0 || m.Hits == 0 {
		t.Fatalf("block cache after a bulk load: %d bytes, %d hits, %d misses", m.Size, m.Hits, m.Misses)
	}
	t.Logf("block cache: %d bytes, %d hits, %d misses", m.Size, m.Hits, m.Misses)
}

// TestMemTableSize: with the default 64 MiB block cache a memtable is
// 4 MiB (issue 19: two full 8 MiB memtables under a stream of small PUTs
// were 8 MiB of the peak RSS); the bounds hold.
func TestMemTableSize(t *testing.T) {
	for _, c := range []struct{ cache, want int64 }{
		{64 << 20, 4 << 20},
		{1 << 20, 256 << 10},
		{1 << 30, 32 << 20},
	} {
		if got := memTableSize(c.cache); got != uint64(c.want) {
			t.Errorf("memTableSize(%d MiB) = %d KiB, want %d KiB", c.cache>>20, got>>10, c.want>>10)
		}
	}
}

// TestPutSessionLazy: a session written unsynced is lost by a crash right
// after it, and survives one once a synced write to the database followed
// it (one write-ahead log); a bad wark is refused.
func TestPutSessionLazy(t *testing.T) {
	ctx := context.Background()
	fs := vfs.NewCrashableMem()
	d := testDB(t, fs)
	a, b := w('a'), w('b')
	if err := d.PutSessionLazy(ctx, "short", nil); err == nil {
		t.Fatal("a wark of the wrong length was accepted")
	}
	if err := d.PutSessionLazy(ctx, a, []byte(`{"a":1}`)); err != nil {
		t.Fatal(err)
	}
	if got, err := d.Session(ctx, a); err != nil || string(got) != `{"a":1}` {
		t.Fatalf("session read back: %q %v", got, err)
	}
	lost := testDB(t, fs.CrashClone(vfs.CrashCloneCfg{}))
	if got, err := lost.Session(ctx, a); err == nil || got != nil {
		t.Fatalf("after a crash right after the unsynced write: %q %v, want no session", got, err)
	}
	lost.Close()
	if err := d.PutSession(ctx, b, []byte(`{"b":1}`)); err != nil { // synced
		t.Fatal(err)
	}
	kept := testDB(t, fs.CrashClone(vfs.CrashCloneCfg{}))
	defer kept.Close()
	for _, k := range []string{a, b} {
		if _, err := kept.Session(ctx, k); err != nil {
			t.Errorf("session %s after a synced write followed it and a crash: %v", k[:1], err)
		}
	}
}

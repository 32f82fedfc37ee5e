package idx

import (
	"context"
	"reflect"
	"testing"
	"time"

	"hoard/store"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

func TestRecordRoundTrip(t *testing.T) {
	for _, r := range genRecords(200, 11) {
		got, err := decodeRecord(r.encode())
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, r) {
			t.Fatalf("decode(encode(%+v)) = %+v", r, got)
		}
	}
	for _, bad := range [][]byte{nil, {9}, {recVersion, 200}, {recVersion, 5, 'a'}} {
		if _, err := decodeRecord(bad); err == nil {
			t.Errorf("decodeRecord(%v) accepted", bad)
		}
	}
}

// A file index of another layout is dropped at open (a scan rebuilds it);
// upload sessions and up2k's file records are kept.
func TestFileSchemaRebuild(t *testing.T) {
	ctx := context.Background()
	fs := vfs.NewMem()
	d := testDB(t, fs)
	if err := d.PutSession(ctx, w('a'), []byte(`{"s":1}`)); err != nil {
		t.Fatal(err)
	}
	if err := d.PutFile(ctx, w('b'), "x/y", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	if err := d.PutRecord(&Record{Rel: "x/y", Size: 3, Wark: w('b'), Chunks: []string{w('c')}}); err != nil {
		t.Fatal(err)
	}
	// Reopening with the same layout keeps the index.
	d.Close()
	d = testDB(t, fs)
	if r, err := d.Record("x/y"); err != nil || r == nil || r.Size != 3 {
		t.Fatalf("Record after reopen = %+v, %v", r, err)
	}
	if err := d.db.Set(fileSchemaKey, []byte("0"), pebble.Sync); err != nil {
		t.Fatal(err)
	}
	d.Close()
	d = testDB(t, fs)
	defer d.Close()
	if r, err := d.Record("x/y"); err != nil || r != nil {
		t.Fatalf("Record after a layout change = %+v, %v; want it dropped", r, err)
	}
	for _, f := range fileFams {
		if n, _ := count(d.db, krange{[]byte{f}, []byte{f + 1}, false, ""}); n != 0 {
			t.Errorf("family %c has %d keys after the rebuild", f, n)
		}
	}
	n := 0
	if err := d.Sessions(ctx, func(string, []byte, []string) error { n++; return nil }); err != nil || n != 1 {
		t.Fatalf("sessions after the rebuild: %d, %v", n, err)
	}
	if fs, err := d.Files(ctx, w('b')); err != nil || len(fs) != 1 {
		t.Fatalf("up2k file records after the rebuild: %v, %v", fs, err)
	}
	// New ids do not collide with dropped ones' postings.
	if err := d.PutRecord(&Record{Rel: "z", Size: 1}); err != nil {
		t.Fatal(err)
	}
}

func TestLimiter(t *testing.T) {
	l := NewLimiter(0)
	now := mustTime(t)
	if err := l.Allow("a", now); err != nil {
		t.Fatal(err)
	}
	l.Done("a", 100e6, now) // fast: no penalty
	if err := l.Allow("a", now); err != nil {
		t.Fatal(err)
	}
	l.Done("a", 900e6, now)
	err := l.Allow("a", now.Add(200e6))
	if err == nil || err.Error() != "rate-limit 0.7 sec, cost 0.90, idle 0.20" {
		t.Fatalf("Allow inside the penalty = %v", err)
	}
	if err := l.Allow("b", now); err != nil {
		t.Fatalf("another address was limited: %v", err)
	}
	if err := l.Allow("a", now.Add(800e6)); err != nil {
		t.Fatalf("Allow after the penalty = %v", err)
	}
	// An IPv6 client's /64 is one client: a fresh address in it is limited too.
	l.Done("2001:db8:7:7::1", 900e6, now)
	if err := l.Allow("2001:db8:7:7::abcd", now.Add(100e6)); err == nil {
		t.Fatal("another address of the same /64 was not limited")
	}
	if err := l.Allow("2001:db8:7:8::1", now.Add(100e6)); err != nil {
		t.Fatalf("another /64 was limited: %v", err)
	}
}

func mustTime(t *testing.T) time.Time {
	t.Helper()
	return time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
}

// FuzzRecordDecode: whatever decodes encodes back to a value that
// decodes to the same record (ETag included, after the address).
func FuzzRecordDecode(f *testing.F) {
	for _, r := range genRecords(5, 3) {
		f.Add(r.encode())
		r.ETag = "0123abcd-2"
		f.Add(r.encode())
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := decodeRecord(b)
		if err != nil {
			return
		}
		again, err := decodeRecord(r.encode())
		if err != nil || !reflect.DeepEqual(again, r) {
			t.Fatalf("%+v: encode/decode gave %+v, %v", r, again, err)
		}
	})
}

// TestLimiterConcurrent: a penalty is known only when a query ends, so a
// client starting many slow queries at once must not get them all run: a
// client runs one query at a time (429), and at most Max run in all (503),
// each slot free again at Done.
func TestLimiterConcurrent(t *testing.T) {
	l := NewLimiter(0)
	l.Max = 3
	now := mustTime(t)
	if err := l.Allow("10.0.0.1", now); err != nil {
		t.Fatal(err)
	}
	err := l.Allow("10.0.0.1", now)
	if k, _, ra, ok := store.Classify(err); !ok || k != store.KindRateLimited || ra <= 0 {
		t.Fatalf("a second query of a client while its first runs = %v", err)
	}
	// The same /64 is the same client.
	if err := l.Allow("2001:db8::1", now); err != nil {
		t.Fatal(err)
	}
	if err := l.Allow("2001:db8::2", now); err == nil {
		t.Fatal("a second query from the same /64 ran")
	}
	if err := l.Allow("10.0.0.2", now); err != nil {
		t.Fatal(err)
	}
	err = l.Allow("10.0.0.3", now)
	if k, _, ra, ok := store.Classify(err); !ok || k != store.KindUnavailable || ra <= 0 {
		t.Fatalf("a query past Max = %v", err)
	}
	l.Done("10.0.0.1", time.Millisecond, now)
	if err := l.Allow("10.0.0.3", now); err != nil {
		t.Fatalf("after a Done: %v", err)
	}
	if err := l.Allow("10.0.0.1", now); err == nil {
		t.Fatal("Max is not kept after a Done")
	}
	l.Done("10.0.0.2", time.Millisecond, now)
	if err := l.Allow("10.0.0.1", now); err != nil {
		t.Fatalf("a client whose query ended (fast) = %v", err)
	}
	// A Done without an Allow (or twice) frees nothing it did not take.
	l.Done("10.0.0.9", time.Millisecond, now)
	l.Done("10.0.0.9", time.Millisecond, now)
	if err := l.Allow("10.0.0.4", now); err == nil {
		t.Fatal("a stray Done freed a slot")
	}
}

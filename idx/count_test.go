package idx

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// TestFileCount: the count the metrics show follows every kind of write
// (new, replaced, deleted, bulk-deleted, moved within a database and to
// another, onto an existing record) and equals a recount after each.
func TestFileCount(t *testing.T) {
	ctx := context.Background()
	a, b := testDB(t, vfs.NewMem()), testDB(t, vfs.NewMem())
	defer a.Close()
	defer b.Close()
	a.countFiles()
	b.countFiles()
	recount := func(d *DB) int64 {
		var n int64
		d.Rels(func(string) error { n++; return nil })
		return n
	}
	check := func(step string) {
		t.Helper()
		for i, d := range []*DB{a, b} {
			got, ok := d.FileCount()
			if want := recount(d); !ok || got != want {
				t.Fatalf("%s: db %d counts %d files (ok %v), holds %d", step, i, got, ok, want)
			}
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	put := func(d *DB, rel string) {
		if err := d.PutRecord(&Record{Rel: rel, Size: 1}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 20 {
		put(a, fmt.Sprintf("d/f%d", i))
	}
	put(a, "d/f3") // replaced, not added
	check("puts")
	if err := a.DeleteRecord("d/f4"); err != nil {
		t.Fatal(err)
	}
	if err := a.DeleteRecord("nothing"); err != nil {
		t.Fatal(err)
	}
	check("deletes")
	put(a, "e/f1")
	if _, err := a.MoveRecords(ctx, "d/f1", a, "e/f1", false); err != nil { // onto an existing record
		t.Fatal(err)
	}
	check("move onto a record")
	put(b, "x/f2")
	if _, err := a.MoveRecords(ctx, "d", b, "x", true); err != nil { // a tree to another database, one clash
		t.Fatal(err)
	}
	check("tree move across databases")
	for range 30 {
		put(b, fmt.Sprintf("y/%d", r.IntN(15)))
	}
	if _, err := b.DeleteRecords(ctx, "y", true, func(rel string) bool { return rel == "y/3" }); err != nil {
		t.Fatal(err)
	}
	check("tree delete keeping one")
}

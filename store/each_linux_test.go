package store

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestEachProps: EachProps gives each entry the dead properties StatProps
// reads by opening it (a file's, a folder's, a link's target's, a set
// bigger than the first buffer, none), and the entry's inode; it opens
// only the link, and without /proc it opens each entry and says the same.
func TestEachProps(t *testing.T) {
	s, dirs := openStore(t, "::rw")
	dir := filepath.Join(dirs[0], "d")
	if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"f1", "f2", "big"} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("f1", filepath.Join(dir, "ln")); err != nil {
		t.Fatal(err)
	}
	v, _ := s.Resolve(nil)
	who := Actor{User: "u"}
	set := func(rel string, ps ...DeadProp) {
		var ops []PropOp
		for _, p := range ps {
			ops = append(ops, PropOp{Prop: p})
		}
		if err := s.PatchProps(t.Context(), who, Loc{Vol: v, Rel: rel}, ops, time.Time{}); err != nil {
			if errors.Is(err, ErrNoProps) {
				t.Skipf("no user extended attributes here: %v", err)
			}
			t.Fatal(err)
		}
	}
	set("d/f1", DeadProp{PropName{"urn:z", "a"}, "1"})
	set("d/sub", DeadProp{PropName{"urn:z", "folder"}, "<x/>"})
	set("d/big", DeadProp{PropName{"urn:z", "b"}, strings.Repeat("v", 2000)}, DeadProp{PropName{"", "c"}, "2"})

	want := map[string][]DeadProp{}
	for _, n := range []string{"f1", "f2", "big", "sub", "ln"} {
		_, ps, err := v.StatProps("d/" + n)
		if err != nil {
			t.Fatal(err)
		}
		want[n] = ps
	}
	if len(want["f1"]) != 1 || len(want["big"]) != 2 || len(want["sub"]) != 1 || len(want["ln"]) != 1 || want["f2"] != nil {
		t.Fatalf("set up: %+v", want)
	}
	run := func(what string, opens int64) {
		t.Helper()
		got := map[string][]DeadProp{}
		before := propsOpens.Load()
		err := v.EachProps(t.Context(), "d", ListOptions{}, func(e Entry, ps []DeadProp) error {
			got[e.Name] = ps
			fi, err := v.Stat("d/" + e.Name)
			if err != nil {
				return err
			}
			if _, ino, _ := FileID(fi); ino != e.Ino || ino == 0 {
				t.Errorf("%s: %s: Ino %d, the file's %d", what, e.Name, e.Ino, ino)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: EachProps gave %+v, want %+v", what, got, want)
		}
		if n := propsOpens.Load() - before; n != opens {
			t.Errorf("%s: %d entries opened for their properties, want %d", what, n, opens)
		}
	}
	run("by name", 1) // the link only
	old := procSelfFD
	procSelfFD = filepath.Join(t.TempDir(), "none") + "/"
	defer func() { procSelfFD = old }()
	run("without /proc", 5)
}

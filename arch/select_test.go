package arch

import (
	"errors"
	"io"
	"log/slog"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"hoard/store"
)

// TestSelect: a selection's rules live in arch. Names resolve as their
// URLs would (into a volume mounted below, with its read permission);
// every bad name refuses the whole selection with a kind and a client-safe
// message; a name below a selected folder is left to it.
func TestSelect(t *testing.T) {
	top, inner, locked := t.TempDir(), t.TempDir(), t.TempDir()
	put(t, top, "a.txt", []byte("a"))
	put(t, top, "d/b.txt", []byte("b"))
	put(t, top, ".dot", []byte("."))
	put(t, inner, "c.txt", []byte("c"))
	put(t, locked, "x.txt", []byte("x"))
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	st, err := store.Open(store.Config{Volumes: []store.VolumeSpec{
		{Src: top, Perms: map[string]store.Perm{"*": store.PermRead}},
		{Src: inner, VPath: "m", Perms: map[string]store.Perm{"*": store.PermRead}},
		{Src: locked, VPath: "lk", Perms: map[string]store.Perm{"*": store.PermWrite}},
	}, Logger: quiet, Hist: filepath.Join(t.TempDir(), store.HistName)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	v, _ := st.Resolve(nil)
	sc := Scope{Store: st, Vol: v}
	ctx := t.Context()

	w := &Walker{Vol: v}
	if err := w.Select(ctx, sc, []string{"a.txt", "d/", "d/b.txt", "m"}); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range w.Files {
		got = append(got, f.Name)
	}
	slices.Sort(got)
	if want := []string{"a.txt", "d/b.txt", "m/c.txt"}; !slices.Equal(got, want) {
		t.Errorf("selected %q, want %q", got, want)
	}
	for _, tc := range []struct {
		name string
		sel  []string
		kind store.Kind
		msg  string
	}{
		{name: "empty", sel: []string{""}, kind: store.KindInvalid, msg: "an empty name in the selection"},
		{name: "dot-dot", sel: []string{"../a.txt"}, kind: store.KindInvalid, msg: `bad name in the selection: "../a.txt" (names are relative to the folder, without . or ..)`},
		{name: "excluded", sel: []string{"x" + store.PartialSuffix}, kind: store.KindForbidden, msg: `"x` + store.PartialSuffix + `" is never archived`},
		{name: "dotfile without .", sel: []string{".dot"}, kind: store.KindForbidden, msg: `".dot" is a dotfile; that needs the . permission (and no nodot)`},
		{name: "missing", sel: []string{"a.txt", "nope"}, kind: store.KindInvalid, msg: `"nope" is not in this folder`},
		{name: "a file as a folder", sel: []string{"a.txt/b"}, kind: store.KindInvalid, msg: `"a.txt/b" is not in this folder`},
		{name: "an unreadable volume below", sel: []string{"lk"}, kind: store.KindForbidden, msg: `"lk" is not readable`},
	} {
		err := (&Walker{Vol: v}).Select(ctx, sc, tc.sel)
		var e *store.Error
		if store.KindOf(err) != tc.kind || !errors.As(err, &e) || e.Msg != tc.msg {
			t.Errorf("%s: %v (kind %v), want kind %v %q", tc.name, err, store.KindOf(err), tc.kind, tc.msg)
		}
	}
}

// TestMountsOf: the volumes mounted below a URL path, with the user's read
// and dotfile permissions there; nodot takes dotfiles away; in a share's
// view nothing mounted below goes in.
func TestMountsOf(t *testing.T) {
	top, a, b := t.TempDir(), t.TempDir(), t.TempDir()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	st, err := store.Open(store.Config{Volumes: []store.VolumeSpec{
		{Src: top, Perms: map[string]store.Perm{"*": store.PermRead}},
		{Src: a, VPath: "x/a", Perms: map[string]store.Perm{"*": store.PermRead | store.PermDot}},
		{Src: b, VPath: "x/b", Perms: map[string]store.Perm{"*": store.PermWrite}},
	}, Logger: quiet, Hist: filepath.Join(t.TempDir(), store.HistName)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	type row struct {
		name            string
		vol, read, dots bool
	}
	rows := func(ms []Mount) []row {
		var out []row
		for _, m := range ms {
			out = append(out, row{name: m.Name, vol: m.Vol != nil, read: m.Read, dots: m.Dots})
		}
		slices.SortFunc(out, func(p, q row) int { return strings.Compare(p.name, q.name) })
		return out
	}
	for _, tc := range []struct {
		name         string
		url          string
		share, noDot bool
		want         []row
	}{
		{name: "the top: a folder of URLs only", url: "", want: []row{{name: "x"}}},
		{name: "below x", url: "x", want: []row{{name: "a", vol: true, read: true, dots: true}, {name: "b", vol: true}}},
		{name: "nodot", url: "x", noDot: true, want: []row{{name: "a", vol: true, read: true}, {name: "b", vol: true}}},
		{name: "a share", url: "x", share: true, want: []row{{name: "a", vol: true, dots: true}, {name: "b", vol: true}}},
	} {
		if got := rows(MountsOf(st, "", tc.share, tc.noDot)(tc.url)); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// FuzzSelect: any selection (names one per line, as a form's "files"
// field gives them) either is refused with a kind and adds nothing that
// matters, or adds only files at or below a selected name; nothing of the
// state folder, no work file, no dotfile without the . permission.
func FuzzSelect(f *testing.F) {
	top, inner := f.TempDir(), f.TempDir()
	put(f, top, "a.txt", []byte("a"))
	put(f, top, "d/b.txt", []byte("b"))
	put(f, top, ".dot", []byte("."))
	put(f, top, "w"+store.PartialSuffix, []byte("w"))
	put(f, inner, "c.txt", []byte("c"))
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	st, err := store.Open(store.Config{Volumes: []store.VolumeSpec{
		{Src: top, Perms: map[string]store.Perm{"*": store.PermRead}},
		{Src: inner, VPath: "m", Perms: map[string]store.Perm{"*": store.PermRead}},
	}, Logger: quiet, Hist: filepath.Join(f.TempDir(), store.HistName)})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { st.Close() })
	v, _ := st.Resolve(nil)
	for _, s := range []string{"a.txt", "d/\nd/b.txt", "m", "../a.txt", ".dot", "w" + store.PartialSuffix, ".hist", "", "a.txt/x", "m/c.txt\nm", "d//b.txt", "/a.txt"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, sel string) {
		names := strings.Split(sel, "\n")
		w := &Walker{Vol: v}
		err := w.Select(t.Context(), Scope{Store: st, Vol: v}, names)
		if err != nil {
			if k := store.KindOf(err); k != store.KindInvalid && k != store.KindForbidden {
				t.Fatalf("%q: %v (kind %v), want a refusal", sel, err, k)
			}
			return
		}
		for _, fl := range w.Files {
			if strings.Contains(fl.Name, store.HistName) || strings.HasSuffix(fl.Name, store.PartialSuffix) || strings.HasPrefix(path.Base(fl.Name), ".") {
				t.Fatalf("%q: added %q", sel, fl.Name)
			}
			ok := false
			for _, n := range names {
				n = strings.TrimSuffix(n, "/")
				if fl.Name == n || strings.HasPrefix(fl.Name, n+"/") {
					ok = true
				}
			}
			if !ok {
				t.Fatalf("%q: added %q, which no selected name covers", sel, fl.Name)
			}
		}
	})
}

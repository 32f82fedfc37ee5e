package store

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// FuzzDeadProps: decodeProps takes any bytes without panicking and
// accepts only sets within the caps whose values are self-contained
// fragments; what it accepts encodes back to the very same bytes.
func FuzzDeadProps(f *testing.F) {
	good, _ := encodeProps([]DeadProp{
		{PropName{"urn:z", "color"}, "blue"},
		{PropName{"", "nons"}, `x &amp; <a xmlns="urn:q" xmlns:a0="urn:q" a0:x="1">y</a>`},
	})
	f.Add(good)
	f.Add([]byte{propsVersion, 0})
	f.Add([]byte{propsVersion, 1, 1, 'u', 1, 'a', 3, '<', 'b', '>'})
	f.Add([]byte{propsVersion, 2, 0, 1, 'a', 0, 0, 1, 'a', 0})
	f.Add([]byte{9, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		ps, err := decodeProps(b)
		if err != nil {
			return
		}
		if len(ps) > MaxProps || len(b) > MaxPropsBytes {
			t.Fatalf("decoded past the caps: %d props, %d bytes", len(ps), len(b))
		}
		seen := map[PropName]bool{}
		for _, p := range ps {
			if seen[p.PropName] || !xmlName(p.Local) || len(p.Space) > MaxPropName || !ValidFragment(p.Value) {
				t.Fatalf("decoded a bad property %+v", p)
			}
			seen[p.PropName] = true
		}
		again, err := encodeProps(ps)
		if err != nil || !bytes.Equal(again, b) {
			t.Fatalf("re-encoding %q: %q, %v", b, again, err)
		}
	})
}

// TestDeadPropsRoundTrip: every set encodeProps takes decodes to itself;
// what breaks a cap is refused by encodeProps, not stored half.
func TestDeadPropsRoundTrip(t *testing.T) {
	var ps []DeadProp
	for i := range MaxProps {
		ps = append(ps, DeadProp{PropName{"urn:" + strings.Repeat("n", i%7), "p" + strings.Repeat("q", i%5) + string(rune('a'+i%26)) + strings.Repeat("r", i/26)}, strings.Repeat("v", i)})
		b, err := encodeProps(ps)
		if err != nil {
			t.Fatalf("%d props: %v", len(ps), err)
		}
		got, err := decodeProps(b)
		if err != nil || !slices.Equal(got, ps) {
			t.Fatalf("%d props round-trip: %v", len(ps), err)
		}
	}
	for _, bad := range [][]DeadProp{
		append(slices.Clone(ps), DeadProp{PropName{"urn:x", "one-more"}, ""}),
		{{PropName{"urn:x", "big"}, strings.Repeat("x", MaxPropsBytes)}},
		{{PropName{strings.Repeat("u", MaxPropName+1), "n"}, ""}},
		{{PropName{"urn:x", "a:b"}, ""}},
		{{PropName{"urn:x", ""}, ""}},
	} {
		if _, err := encodeProps(bad); err == nil {
			t.Errorf("encoded %d props past a cap", len(bad))
		}
	}
	for _, v := range []string{"<a>", "</r><r>", "<p:a/>", `<a b:c="1"/>`, "<?pi x?>", "a</r>", "\xff"} {
		if ValidFragment(v) {
			t.Errorf("ValidFragment(%q)", v)
		}
	}
	for _, v := range []string{"", "text &amp; more", `<a xmlns="u"><b/></a>`, `<p:a xmlns:p="u" p:x="1"/>`, `<a xml:lang="en"/>`} {
		if !ValidFragment(v) {
			t.Errorf("!ValidFragment(%q)", v)
		}
	}
}

// TestPatchProps: all or nothing, the w permission needed.
func TestPatchProps(t *testing.T) {
	s, dirs := openStore(t, "::r")
	dir := dirs[0]
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	v, rel := s.Resolve([]string{"f"})
	at := Loc{Vol: v, Rel: rel}
	who := Actor{User: "u"}
	set := []PropOp{{Prop: DeadProp{PropName{"urn:z", "a"}, "1"}}, {Prop: DeadProp{PropName{"urn:z", "b"}, "<x/>"}}}
	if err := s.PatchProps(t.Context(), who, at, set, time.Time{}); KindOf(err) != KindForbidden {
		t.Fatalf("without w: %v", err)
	}
	v.perms.Store(&map[string]Perm{"*": PermRead | PermWrite})
	if err := s.PatchProps(t.Context(), who, at, set, time.Time{}); err != nil {
		t.Fatal(err)
	}
	_, ps, err := v.StatProps(rel)
	if err != nil || len(ps) != 2 || ps[1].Value != "<x/>" {
		t.Fatalf("%+v %v", ps, err)
	}
	// A bad value refuses the whole change.
	bad := []PropOp{{Remove: true, Prop: DeadProp{PropName: PropName{"urn:z", "a"}}}, {Prop: DeadProp{PropName{"urn:z", "c"}, "<open>"}}}
	if err := s.PatchProps(t.Context(), who, at, bad, time.Time{}); KindOf(err) != KindInvalid {
		t.Fatalf("bad value: %v", err)
	}
	if _, ps, _ = v.StatProps(rel); len(ps) != 2 {
		t.Fatalf("a refused change changed the properties: %+v", ps)
	}
	// The time and the properties go together.
	mt := time.Date(2019, 1, 2, 3, 4, 5, 0, time.UTC)
	if err := s.PatchProps(t.Context(), who, at, set[:1], mt); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(filepath.Join(dir, "f")); !fi.ModTime().Equal(mt) {
		t.Errorf("mtime %v", fi.ModTime())
	}
}

// TestPatchPropsConcurrent: changes of different properties of one file
// at once all stay (none is lost to another's read-modify-write).
func TestPatchPropsConcurrent(t *testing.T) {
	s, dirs := openStore(t, "::rw")
	if err := os.WriteFile(filepath.Join(dirs[0], "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	v, rel := s.Resolve([]string{"f"})
	var wg sync.WaitGroup
	const n = 32
	for i := range n {
		wg.Go(func() {
			op := PropOp{Prop: DeadProp{PropName{"urn:z", "p" + strconv.Itoa(i)}, "v"}}
			if err := s.PatchProps(t.Context(), Actor{}, Loc{Vol: v, Rel: rel}, []PropOp{op}, time.Time{}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if _, ps, err := v.StatProps(rel); err != nil || len(ps) != n {
		t.Errorf("%d of %d properties kept (%v)", len(ps), n, err)
	}
}

package idx

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// inRange reports lo <= k < hi (hi nil: no upper bound).
func inRange(k, lo, hi []byte) bool {
	return bytes.Compare(k, lo) >= 0 && (hi == nil || bytes.Compare(k, hi) < 0)
}

// inPrefix reports whether k lies in the key range of prefix p.
func inPrefix(k, p []byte) bool { return inRange(k, p, prefixEnd(p)) }

// numOf decodes the 8-byte number at k[at:] (the layout keys.go documents).
func numOf(k []byte, at int) int64 { return int64(binary.BigEndian.Uint64(k[at:at+8]) ^ 1<<63) }

// checkKeys builds every kind of key from the inputs and reads each part
// back: the family, the text or number, the id; each key lies in its
// prefix's and its family's range.
func checkKeys(t *testing.T, text string, id uint64, n int64, field byte) {
	t.Helper()
	wark := (text + strings.Repeat("w", warkLen))[:warkLen]
	fam := func(name string, k []byte, f byte) {
		t.Helper()
		lo, hi := famRange(f)
		if k[0] != f || !inRange(k, lo, hi) {
			t.Fatalf("%s key %x: family %q, want %q", name, k, k[0], f)
		}
	}
	// Upload state.
	if k := sessionKey(wark); warkOfSession(k) != wark {
		t.Fatalf("session key %x: wark %q, want %q", k, warkOfSession(k), wark)
	} else {
		fam("session", k, famSession)
	}
	if k, p := chunkKey(wark, text), chunkPrefix(wark); !inPrefix(k, p) || afterPrefix(k, p) != text {
		t.Fatalf("chunk key %x: chunk %q, want %q (prefix %x)", k, afterPrefix(k, p), text, p)
	} else {
		fam("chunk", k, famChunk)
	}
	if k, p := fileKey(wark, text), filePrefix(wark); !inPrefix(k, p) || afterPrefix(k, p) != text {
		t.Fatalf("file key %x: path %q, want %q (prefix %x)", k, afterPrefix(k, p), text, p)
	} else {
		fam("file", k, famFile)
	}
	// Keys of a family and an id.
	for _, c := range []struct {
		name string
		k    []byte
		fam  byte
	}{{"record", recKey(id), famRec}, {"note", noteKey(id), famNote}} {
		if len(c.k) != idLen || idOf(c.k) != id {
			t.Fatalf("%s key %x: length %d id %d, want %d and %d", c.name, c.k, len(c.k), idOf(c.k), idLen, id)
		}
		fam(c.name, c.k, c.fam)
	}
	// Paths.
	if k := relKey(text); relOfKey(k) != text {
		t.Fatalf("rel key %x: path %q, want %q", k, relOfKey(k), text)
	} else {
		fam("rel", k, famRel)
		if lo, hi := relRange(text, false); !inRange(k, lo, hi) || inRange(relAfter(text), lo, hi) || !bytes.Equal(relAfter(text), hi) {
			t.Fatalf("relRange(%q) = [%x, %x) does not hold exactly its key %x", text, lo, hi, k)
		}
	}
	for _, c := range []struct {
		name   string
		k, pre []byte
		fam    byte
	}{
		{"path", pathKey(text, id), pathPrefix(text), famPath},
		{"name", nameKey(text, id), namePrefix(text), famName},
	} {
		if textOfKey(c.k) != text || idOf(c.k) != id || !inPrefix(c.k, c.pre) {
			t.Fatalf("%s key %x: text %q id %d, want %q %d in prefix %x", c.name, c.k, textOfKey(c.k), idOf(c.k), text, id, c.pre)
		}
		fam(c.name, c.k, c.fam)
	}
	// Numbers: [bound(n), bound(n+1)) holds exactly the keys of n.
	for _, c := range []struct {
		name    string
		k       []byte
		at      int
		fam     byte
		bound   func(int64) []byte
		ordered bool
	}{
		{"size", sizeKey(n, id), 1, famSize, sizeBound, true},
		{"mtime", mtimeKey(n, id), 1, famMtime, mtimeBound, true},
		{"upload", upKey(n, id), 1, famUp, nil, false},
		{"number", numKey(field, n, id), 2, famNum, func(n int64) []byte { return numBound(field, n) }, true},
	} {
		if numOf(c.k, c.at) != n || idOf(c.k) != id || len(c.k) != c.at+16 {
			t.Fatalf("%s key %x: number %d id %d, want %d %d", c.name, c.k, numOf(c.k, c.at), idOf(c.k), n, id)
		}
		fam(c.name, c.k, c.fam)
		if c.bound == nil {
			continue
		}
		if !inRange(c.k, c.bound(n), nil) || n < math.MaxInt64 && !inRange(c.k, c.bound(n), c.bound(n+1)) {
			t.Fatalf("%s key %x of %d is outside [bound(%d), bound(%d+1))", c.name, c.k, n, n, n)
		}
	}
	if len(upKey(n, id)) != upKeyLen {
		t.Fatalf("upload key length %d, want %d", len(upKey(n, id)), upKeyLen)
	}
	if c := numKey(field, n, id); c[1] != field {
		t.Fatalf("number key %x: field %q, want %q", c, c[1], field)
	}
	// Content postings.
	for _, c := range []struct {
		name string
		k    []byte
		fam  byte
	}{{"wark", warkKey(wark, id), famWark}, {"hash", hashKey(wark, id), famHash}} {
		if p := contentPrefix(c.fam, wark); !inPrefix(c.k, p) || idOf(c.k) != id || len(c.k) != 1+warkLen+8 {
			t.Fatalf("%s key %x: not %q then id %d", c.name, c.k, wark, id)
		}
		fam(c.name, c.k, c.fam)
	}
	// Block posting lists.
	lists := [][]byte{extList(text)}
	if len(text) >= 3 {
		lists = append(lists, triList(field, text[:3]))
	}
	for _, l := range lists {
		k := blockKey(l, id)
		b, ok := blockOfKey(k, len(l))
		if !ok || b != uint32(id>>blockBits) || !inPrefix(k, l) || !blockFamily(k) {
			t.Fatalf("block key %x of list %x, id %d: block %d %v, want %d", k, l, id, b, ok, id>>blockBits)
		}
		if _, ok := blockOfKey(append(k, 0), len(l)); ok {
			t.Fatalf("blockOfKey took %x, a key longer than list %x's blocks", append(k, 0), l)
		}
	}
	if l := extList(text); l[0] != famExt || l[len(l)-1] != textEnd || string(l[1:len(l)-1]) != text {
		t.Fatalf("ext list %x of %q", l, text)
	}
	if len(text) >= 3 {
		if l := triList(field, text); !bytes.Equal(l, []byte{famTri, field, text[0], text[1], text[2]}) {
			t.Fatalf("trigram list %x of %q", l, text[:3])
		}
	}
}

// TestKeysRoundTrip: every key kind gives back what it was built from.
func TestKeysRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	texts := []string{"", "a", "abc", "music/Rock/x.mp3", "ünï/cödé", "a\x00b", "\xff\xff", strings.Repeat("z", 300)}
	nums := []int64{0, 1, -1, math.MaxInt64, math.MinInt64, 1 << 40}
	ids := []uint64{0, 1, blockIDs - 1, blockIDs, math.MaxUint64}
	for i := range 2000 {
		text := texts[i%len(texts)]
		if i >= len(texts) {
			b := make([]byte, r.IntN(20))
			for j := range b {
				b[j] = byte(r.IntN(256))
			}
			text = string(b)
		}
		n, id := nums[i%len(nums)], ids[i%len(ids)]
		if i >= 50 {
			n, id = int64(r.Uint64()), r.Uint64()
		}
		checkKeys(t, text, id, n, byte(r.IntN(256)))
	}
}

// TestKeyOrder: byte order of number keys is numeric order, then id
// order; of path keys, path order (a path sorts before its extensions).
func TestKeyOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	type num struct {
		n  int64
		id uint64
	}
	var ns []num
	for range 500 {
		ns = append(ns, num{int64(r.Uint64()) >> r.IntN(64), r.Uint64() >> r.IntN(64)})
	}
	ns = append(ns, num{math.MinInt64, 0}, num{math.MaxInt64, math.MaxUint64}, num{-1, 5}, num{0, 5}, num{0, 4})
	byNum := slices.Clone(ns)
	slices.SortFunc(byNum, func(a, b num) int {
		if a.n != b.n {
			return cmpInt(a.n, b.n)
		}
		return cmpInt(a.id, b.id)
	})
	for _, build := range []func(int64, uint64) []byte{sizeKey, mtimeKey, upKey, func(n int64, id uint64) []byte { return numKey(fieldYear, n, id) }} {
		byKey := slices.Clone(ns)
		slices.SortFunc(byKey, func(a, b num) int { return bytes.Compare(build(a.n, a.id), build(b.n, b.id)) })
		if !slices.Equal(byKey, byNum) {
			t.Fatalf("key order differs from numeric order (key %x)", build(1, 1))
		}
	}
	paths := []string{"a", "a/b", "a b", "a.b", "ab", "a/", "b", "", "A"}
	for i := range paths {
		for j := range paths {
			a, b := paths[i], paths[j]
			if got, want := bytes.Compare(pathKey(a, 9), pathKey(b, 1)), strings.Compare(a, b); got != want && a != b {
				t.Errorf("pathKey(%q) vs pathKey(%q): %d, want %d", a, b, got, want)
			}
		}
	}
}

func cmpInt[T int64 | uint64](a, b T) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// TestRelRangeTree: a folder's tree range holds the paths below it and no
// other (not the folder itself, nor "a0", "a.b" or "ab").
func TestRelRangeTree(t *testing.T) {
	lo, hi := relRange("a", true)
	for rel, in := range map[string]bool{
		"a/b": true, "a/b/c": true, "a/\xff": true, "a/": true,
		"a": false, "a0": false, "a.b": false, "ab": false, "b/a": false, "": false, "a\x00/b": false,
	} {
		if got := inRange(relKey(rel), lo, hi); got != in {
			t.Errorf("relKey(%q) in relRange(a, tree) = %v, want %v", rel, got, in)
		}
	}
	lo, hi = relRange("", true)
	for _, rel := range []string{"", "a", "\xff\xff"} {
		if !inRange(relKey(rel), lo, hi) {
			t.Errorf("relKey(%q) not in the whole volume's range", rel)
		}
	}
	if inRange(recKey(1), lo, hi) || inRange(pathKey("a", 1), lo, hi) {
		t.Error("the whole volume's range holds other families' keys")
	}
}

// TestFamilies: the families are distinct bytes, the file index's are all
// in the span a compaction covers and none of upload state is among them.
func TestFamilies(t *testing.T) {
	all := []byte{famSchema, famSession, famChunk, famFile, famNote, famRec, famRel, famPath, famTri, famExt, famSize, famMtime, famHash, famWark, famNum, famName, famUp}
	if s := slices.Compact(slices.Sorted(slices.Values(all))); len(s) != len(all) {
		t.Fatalf("two families share a byte: %q", all)
	}
	lo, hi := fileFamsSpan()
	for _, f := range fileFams {
		if !inRange([]byte{f, 0xff, 0xff}, lo, hi) {
			t.Errorf("family %q is outside fileFamsSpan [%x, %x)", f, lo, hi)
		}
	}
	for _, f := range []byte{famSchema, famSession, famChunk, famFile, famNote} {
		if slices.Contains(fileFams, f) {
			t.Errorf("family %q of upload state would be dropped by a file index rebuild", f)
		}
	}
	if blockFamily(schemaKey) || blockFamily(nil) || blockFamily(pathKey("x", 1)) {
		t.Error("blockFamily takes a key that holds no block postings")
	}
	if !bytes.Equal(schemaKey, []byte("\x00schema")) || !bytes.Equal(fileSchemaKey, []byte("\x00fschema")) {
		t.Errorf("schema keys %q %q changed: existing databases would be refused or rebuilt", schemaKey, fileSchemaKey)
	}
}

// FuzzKeys: the round trip holds for any text, id, number and field.
func FuzzKeys(f *testing.F) {
	f.Add("music/x.mp3", uint64(7), int64(-3), byte('y'))
	f.Add("", uint64(0), int64(math.MinInt64), byte(0))
	f.Add("\x00\xff", uint64(math.MaxUint64), int64(math.MaxInt64), byte(0xff))
	f.Fuzz(func(t *testing.T, text string, id uint64, n int64, field byte) {
		checkKeys(t, text, id, n, field)
	})
}

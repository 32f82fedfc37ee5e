package up2k

import (
	"strings"
	"testing"
)

const (
	kiB = int64(1) << 10
	miB = int64(1) << 20
	giB = int64(1) << 30
	tiB = int64(1) << 40
)

// TestChunkSizeTable checks every row of the worked-example table in the
// copyparty reference (§1.2).
func TestChunkSizeTable(t *testing.T) {
	for _, tc := range []struct {
		size, cs, n int64
	}{
		{0, miB, 0},
		{1, miB, 1},
		{miB, miB, 1},
		{256 * miB, miB, 256},
		{256*miB + 1, 3 * miB / 2, 171},
		{384*miB + 1, 2 * miB, 193},
		{512*miB + 1, 3 * miB, 171},
		{giB, 4 * miB, 256},
		{giB + 1, 6 * miB, 171},
		{4 * giB, 16 * miB, 256},
		{4*giB + 1, 24 * miB, 171},
		{6*giB + 1, 32 * miB, 193},
		{100 * giB, 32 * miB, 3200},
		{128 * giB, 32 * miB, 4096},
		{128*giB + 1, 48 * miB, 2731},
		{tiB, 256 * miB, 4096},
		{tiB + 1, 384 * miB, 2731},
		{2 * tiB, 512 * miB, 4096},
		{2*tiB + 1, 768 * miB, 2731},
		{32 * tiB, 8 * giB, 4096},
	} {
		cs := ChunkSize(tc.size)
		if cs != tc.cs || NumChunks(tc.size, cs) != tc.n {
			t.Errorf("size %d: chunk size %d (%d chunks), want %d (%d chunks)", tc.size, cs, NumChunks(tc.size, cs), tc.cs, tc.n)
		}
		got, err := ChunkSizeFor(tc.size, int(tc.n))
		if err != nil || got != tc.cs {
			t.Errorf("ChunkSizeFor(%d, %d) = %d, %v; want %d", tc.size, tc.n, got, err, tc.cs)
		}
	}
}

// TestChunkSizeBands checks the upper edge of every band (the largest size
// that still uses a chunk size) and the byte after it.
func TestChunkSizeBands(t *testing.T) {
	bands := []struct{ upTo, cs int64 }{
		{256 * miB, miB}, {384 * miB, 3 * miB / 2}, {512 * miB, 2 * miB}, {768 * miB, 3 * miB},
		{giB, 4 * miB}, {3 * giB / 2, 6 * miB}, {2 * giB, 8 * miB}, {3 * giB, 12 * miB},
		{4 * giB, 16 * miB}, {6 * giB, 24 * miB}, {128 * giB, 32 * miB}, {192 * giB, 48 * miB},
		{256 * giB, 64 * miB}, {384 * giB, 96 * miB}, {512 * giB, 128 * miB}, {768 * giB, 192 * miB},
		{tiB, 256 * miB}, {3 * tiB / 2, 384 * miB}, {2 * tiB, 512 * miB}, {3 * tiB, 768 * miB},
		{4 * tiB, giB}, {32 * tiB, 8 * giB},
	}
	for i, b := range bands {
		if cs := ChunkSize(b.upTo); cs != b.cs {
			t.Errorf("size %d (top of band): chunk size %d, want %d", b.upTo, cs, b.cs)
		}
		if i+1 < len(bands) && bands[i+1].upTo > b.upTo {
			if cs := ChunkSize(b.upTo + 1); cs <= b.cs {
				t.Errorf("size %d (past the band): chunk size %d, want more than %d", b.upTo+1, cs, b.cs)
			}
		}
		if i > 0 {
			lo := bands[i-1].upTo + 1
			if cs := ChunkSize(lo); cs != b.cs && b.upTo != 32*tiB {
				t.Errorf("size %d (bottom of band): chunk size %d, want %d", lo, cs, b.cs)
			}
		}
	}
	// The sequence never gives more than 4096 chunks, nor more than 256
	// below 32 MiB chunks.
	for size := int64(1); size < MaxSize; size = size*3/2 + 7 {
		cs := ChunkSize(size)
		n := NumChunks(size, cs)
		if n > MaxChunks || (cs < 32*miB && n > 256) {
			t.Fatalf("size %d: %d chunks of %d", size, n, cs)
		}
	}
}

// TestChunkSizeSpecTable: a client reading the interface description's
// table literally is accepted when its hash count fits; other counts not.
func TestChunkSizeSpecTable(t *testing.T) {
	for _, tc := range []struct {
		size, cs int64
	}{
		{2 * giB, 16 * miB},         // spec: up to 4 GiB → 16 MiB (copyparty: 8)
		{600 * miB, 4 * miB},        // spec: up to 1 GiB → 4 MiB (copyparty: 3)
		{5 * giB, 32 * miB},         // spec: up to 128 GiB → 32 MiB (copyparty: 24)
		{200 * giB, 256 * miB},      // spec: up to 1 TiB → 256 MiB (copyparty: 64)
		{300 * miB, 3 * miB / 2},    // both agree
		{giB + 5*miB + 3, 16 * miB}, // spec: 16 MiB (copyparty: 6)
	} {
		n := NumChunks(tc.size, tc.cs)
		cs, err := ChunkSizeFor(tc.size, int(n))
		if err != nil || cs != tc.cs {
			t.Errorf("ChunkSizeFor(%d, %d) = %d, %v; want %d", tc.size, n, cs, err, tc.cs)
		}
	}
	for _, tc := range []struct {
		size int64
		n    int
		msg  string
	}{
		{-1, 0, "negative"},
		{MaxSize + 1, 4096, "larger than"},
		{10 * miB, 11, "expected 10"},
		{10 * miB, 9, "expected 10"},
		{0, 1, "expected 0"},
		{1, 0, "expected 1"},
		{200 * giB, 4097, "at most 4096"},
		{2 * giB, 200, "expected 256"},
	} {
		_, err := ChunkSizeFor(tc.size, tc.n)
		if err == nil || KindOf(err) != Invalid || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("ChunkSizeFor(%d, %d): error %v, want Invalid naming %q", tc.size, tc.n, err, tc.msg)
		}
	}
}

func TestWarkVectors(t *testing.T) {
	for _, tc := range []struct {
		data, hash, wark string
	}{
		{"one", "BfcDQQeKz2oG1CPSFyD5ZD1flTYm2IoCY23DqeeVgq6w", "XMbpLRqVdtGmgggqjUI6uSoNMTqZVX4K6zr74XA1BRKc"},
		{"two", "ko1Q0eJNq3zKYs_oT83Pn8aVFgonj5G1wK8itwnYL4qj", "fxvihWlnQIbVbUPr--TxyV41913kPLhXPD1ngXYxDfou"},
	} {
		if h := ChunkHash([]byte(tc.data)); h != tc.hash {
			t.Errorf("ChunkHash(%q) = %s, want %s", tc.data, h, tc.hash)
		}
		if w := Wark("hunter2", int64(len(tc.data)), []string{tc.hash}); w != tc.wark {
			t.Errorf("Wark(%q) = %s, want %s", tc.data, w, tc.wark)
		}
	}
	if w := MetaWark("hunter2", 1700000000, 0, "sub", "empty.txt"); w != "#DvfD87DM-IqQ4KtOymzrYNQj5UgD3MaJdN_494u_3jn" {
		t.Errorf("MetaWark = %s", w)
	}
	if Wark("other", 3, []string{"BfcDQQeKz2oG1CPSFyD5ZD1flTYm2IoCY23DqeeVgq6w"}) == "XMbpLRqVdtGmgggqjUI6uSoNMTqZVX4K6zr74XA1BRKc" {
		t.Error("the salt does not change the wark")
	}
}

func TestParseHash(t *testing.T) {
	full := "BfcDQQeKz2oG1CPSFyD5ZD1flTYm2IoCY23DqeeVgq6wAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"[:86]
	for _, tc := range []struct {
		in, key string
		ok      bool
	}{
		{"BfcDQQeKz2oG1CPSFyD5ZD1flTYm2IoCY23DqeeVgq6w", "BfcDQQeKz2oG1CPSFyD5ZD1flTYm2IoCY23DqeeVgq6w", true},
		{full, full[:44], true},
		{full + "==", full[:44], true},
		{full[:60], full[:44], true},
		{full[:43], "", false},
		{full + "A", "", false},
		{full + "=", "", false},
		{"BfcDQQeKz2oG1CPSFyD5ZD1flTYm2IoCY23DqeeVgq6+", "", false},
		{"BfcDQQeKz2oG1CPSFyD5ZD1flTYm2IoCY23DqeeVgq6/", "", false},
		{"BfcDQQeKz2oG1CPSFyD5ZD1flTYm2IoCY23DqeeVgq6=", "", false},
		{"BfcDQQeKz2oG1CPSFyD5ZD1flTYm2IoCY23DqeeVgq6\x00", "", false},
		{"", "", false},
	} {
		key, _, err := ParseHash(tc.in)
		if (err == nil) != tc.ok || key != tc.key {
			t.Errorf("ParseHash(%q) = %q, %v; want %q ok=%v", tc.in, key, err, tc.key, tc.ok)
		}
	}
}

func TestParseHashList(t *testing.T) {
	h0 := ChunkHash([]byte("a"))
	h1 := ChunkHash([]byte("b"))
	h2 := ChunkHash([]byte("c"))
	for _, tc := range []struct {
		in       string
		rest     []string
		prefixed bool
		ok       bool
	}{
		{h0, nil, false, true},
		{h0 + "," + h1 + "," + h2, []string{h1, h2}, false, true},
		{h0 + ", " + h1, []string{h1}, false, true},
		{h0 + ",3," + h1[:3] + h2[:3], []string{h1[:3], h2[:3]}, true, true},
		{h0 + ",9," + h1[:9], []string{h1[:9]}, true, true},
		{h0 + ",2," + h1[:2] + h2[:2], []string{h1[:2], h2[:2]}, true, true},
		{h0 + "," + h1[:5] + "," + h2[:5], []string{h1[:5], h2[:5]}, true, true},
		{h0 + ",0," + h1[:3], nil, false, false},
		{h0 + ",x," + h1[:3], nil, false, false},
		{h0 + ",3,", nil, false, false},
		{h0 + ",3,ab+", nil, false, false},
		{h0 + "," + h1 + ",", nil, false, false},
		{h0 + ",," + h1, nil, false, false},
		{"", nil, false, false},
		{",", nil, false, false},
		{"abc", nil, false, false},
		{h0 + "," + h1 + "," + "+" + h2[1:], nil, false, false},
		{h0 + "," + h1 + "," + h2[:43], nil, false, false},
	} {
		hl, err := ParseHashList(tc.in)
		if (err == nil) != tc.ok {
			t.Errorf("ParseHashList(%q): err %v, want ok=%v", tc.in, err, tc.ok)
			continue
		}
		if err != nil {
			continue
		}
		if hl.First != h0 || hl.Prefixed != tc.prefixed || strings.Join(hl.Rest, ",") != strings.Join(tc.rest, ",") {
			t.Errorf("ParseHashList(%q) = %+v", tc.in, hl)
		}
	}
}

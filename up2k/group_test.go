package up2k

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/quick"

	"hoard/store"
)

// trickle hands out its bytes at most n per Read, as a body arriving
// from a slow sender does.
type trickle struct {
	r io.Reader
	n int
}

func (t *trickle) Read(p []byte) (int, error) { return t.r.Read(p[:min(len(p), t.n)]) }

// cutBody ends with an error after n bytes.
type cutBody struct {
	r io.Reader
	n int
}

func (c *cutBody) Read(p []byte) (int, error) {
	if c.n <= 0 {
		return 0, errors.New("connection reset")
	}
	k, err := c.r.Read(p[:min(len(p), c.n)])
	c.n -= k
	return k, err
}

func stitched(data []byte, cs int64, idx ...int) (body []byte, hdr string) {
	var hs []string
	for _, i := range idx {
		c := data[int64(i)*cs : min(int64(i+1)*cs, int64(len(data)))]
		body = append(body, c...)
		hs = append(hs, ChunkHash(c))
	}
	return body, strings.Join(hs, ",")
}

// TestStitchedPostFillsLanes sends a stitched post of eight 1 MiB
// chunks the way a browser does (one of few posts, its body arriving in
// 16 KiB reads): its chunks are hashed together, eight lanes at once,
// not one streamed chunk after the other with seven lanes idle (which
// cost more CPU per byte than crypto/sha512). A post of three chunks is
// hashed as they arrive. The file arrives intact.
func TestStitchedPostFillsLanes(t *testing.T) {
	f := newFixture(t, store.Flags{})
	if f.m.lanes == nil {
		t.Skip("no SHA-512 lanes on this CPU")
	}
	data := randBytes(10<<20 + 5)
	cs, _ := hashes(data)
	if cs != 1<<20 {
		t.Fatalf("chunk size %d", cs)
	}
	rep, err := f.hs("g.bin", data)
	if err != nil {
		t.Fatal(err)
	}
	body, hdr := stitched(data, cs, 0, 1, 2, 3, 4, 5, 6, 7)
	h0, l0 := f.m.lanes.Fill()
	w, err := f.m.WriteChunks(context.Background(), ChunkPost{Vol: f.vol, Wark: rep.Wark, Hashes: hdr, Subc: -1, Body: &trickle{bytes.NewReader(body), 16 << 10}, Length: int64(len(body))})
	if err != nil || w.Chunks != 8 {
		t.Fatalf("stitched post: %+v %v", w, err)
	}
	h1, l1 := f.m.lanes.Fill()
	if h1-h0 < 8*(1<<20)/128 {
		t.Fatalf("the lanes hashed %d blocks of the post's %d", h1-h0, 8*(1<<20)/128)
	}
	fill := float64(h1-h0) / float64(l1-l0)
	t.Logf("lanes %.0f%% full", 100*fill)
	if fill < 0.75 {
		t.Fatalf("the lanes ran %.0f%% full for a stitched post of eight chunks; want them full", 100*fill)
	}
	if g := f.m.grouped.Load(); g != 8 {
		t.Fatalf("%d chunks hashed in groups, want 8", g)
	}
	body, hdr = stitched(data, cs, 8, 9, 10)
	w, err = f.m.WriteChunks(context.Background(), ChunkPost{Vol: f.vol, Wark: rep.Wark, Hashes: hdr, Subc: -1, Body: bytes.NewReader(body), Length: int64(len(body))})
	if err != nil || !w.Done {
		t.Fatalf("rest: %+v %v", w, err)
	}
	if g := f.m.grouped.Load(); g != 8 {
		t.Fatalf("a post of three chunks was hashed in a group (%d grouped)", g)
	}
	if !bytes.Equal(f.file("up/g.bin"), data) {
		t.Fatal("content differs")
	}
	if len(f.m.laneBufs) != 0 {
		t.Fatalf("%d lane buffers still taken", len(f.m.laneBufs))
	}
}

// TestGroupCorruptAndCut: in a post hashed in groups, a corrupted chunk
// is reported and the chunks before it are kept; a body that breaks off
// keeps the chunks that arrived whole. Every lane buffer comes back.
func TestGroupCorruptAndCut(t *testing.T) {
	f := newFixture(t, store.Flags{})
	if f.m.lanes == nil {
		t.Skip("no SHA-512 lanes on this CPU")
	}
	data := randBytes(16 << 20)
	cs, hs := hashes(data)
	rep, err := f.hs("c.bin", data)
	if err != nil {
		t.Fatal(err)
	}
	// chunks 0-7, the sixth corrupted
	body, hdr := stitched(data, cs, 0, 1, 2, 3, 4, 5, 6, 7)
	body[5*cs+77] ^= 1
	w, err := f.m.WriteChunks(context.Background(), ChunkPost{Vol: f.vol, Wark: rep.Wark, Hashes: hdr, Subc: -1, Body: bytes.NewReader(body), Length: int64(len(body))})
	if KindOf(err) != Invalid || !strings.Contains(err.Error(), "corrupted") || !strings.Contains(err.Error(), hs[5]) || w.Chunks != 5 {
		t.Fatalf("corrupted sixth chunk: %+v %v", w, err)
	}
	// chunks 8-15, cut in the middle of the fourth (chunk 11)
	body, hdr = stitched(data, cs, 8, 9, 10, 11, 12, 13, 14, 15)
	w, err = f.m.WriteChunks(context.Background(), ChunkPost{Vol: f.vol, Wark: rep.Wark, Hashes: hdr, Subc: -1, Body: &cutBody{bytes.NewReader(body), int(3*cs + cs/2)}, Length: int64(len(body))})
	if err == nil || w.Chunks != 3 {
		t.Fatalf("cut post: %+v %v", w, err)
	}
	rep, err = f.hs("c.bin", data)
	if err != nil {
		t.Fatal(err)
	}
	want := append(append([]string{}, hs[5:8]...), hs[11:]...)
	if strings.Join(rep.Need, ",") != strings.Join(want, ",") {
		t.Fatalf("need %d chunks %v, want %d", len(rep.Need), rep.Need, len(want))
	}
	body, hdr = stitched(data, cs, 5, 6, 7)
	if _, err := f.m.WriteChunks(context.Background(), ChunkPost{Vol: f.vol, Wark: rep.Wark, Hashes: hdr, Subc: -1, Body: bytes.NewReader(body), Length: int64(len(body))}); err != nil {
		t.Fatal(err)
	}
	body, hdr = stitched(data, cs, 11, 12, 13, 14, 15)
	if w, err := f.m.WriteChunks(context.Background(), ChunkPost{Vol: f.vol, Wark: rep.Wark, Hashes: hdr, Subc: -1, Body: bytes.NewReader(body), Length: int64(len(body))}); err != nil || !w.Done {
		t.Fatalf("last post: %+v %v", w, err)
	}
	if !bytes.Equal(f.file("up/c.bin"), data) {
		t.Fatal("content differs")
	}
	if len(f.m.laneBufs) != 0 {
		t.Fatalf("%d lane buffers still taken", len(f.m.laneBufs))
	}
}

// TestGroupsProperty: for any post of n chunks, the groups xfer.group
// names cover chunks in order without overlap, each of groupMin to
// groupMax chunks, and every chunk of a post of at least groupMin
// chunks is in one.
func TestGroupsProperty(t *testing.T) {
	f := newFixture(t, store.Flags{})
	if f.m.lanes == nil {
		t.Skip("no SHA-512 lanes on this CPU")
	}
	prop := func(n8 uint8) bool {
		n := int(n8)%200 + 1
		tab := &table{cs: 1 << 20, n: n, nu: n, size: int64(n) << 20}
		x := &xfer{m: f.m, t: tab, us: make([]int, n)}
		for i := range x.us {
			x.us[i] = i
		}
		covered := 0
		for k := 0; k < n; {
			end, ok := x.group(k)
			if !ok {
				if n >= groupMin {
					t.Logf("n=%d: chunk %d is in no group", n, k)
					return false
				}
				k++
				continue
			}
			if end-k < groupMin || end-k > groupMax || end > n {
				t.Logf("n=%d: group [%d,%d)", n, k, end)
				return false
			}
			for j := k + 1; j < end; j++ {
				if _, ok := x.group(j); ok {
					t.Logf("n=%d: chunk %d starts a group inside [%d,%d)", n, j, k, end)
					return false
				}
			}
			covered += end - k
			k = end
		}
		return n < groupMin || covered == n
	}
	if err := quick.Check(prop, &quick.Config{MaxCount: 500}); err != nil {
		t.Fatal(err)
	}
}

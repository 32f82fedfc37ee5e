package up2k

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"hoard/store"
)

// TestRemotePartsProperty: for random files, posts and bucket states
// (staged chunks, parts as posts make them, parts replaced by shorter
// ones), postPlan cuts a post into staged chunks and one run of whole
// groups; the walk asks for exactly what it lacks; when nothing is
// lacking the plan tiles the file in order with parts S3 accepts (each
// but the last ≥ 5 MiB, numbers ascending, sizes adding up).
func TestRemotePartsProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 5))
	for iter := range 3000 {
		cs := []int64{1 << 20, 3 << 19, 4 << 20, 5 << 20, 8 << 20}[rng.IntN(5)]
		n := 1 + rng.IntN(40)
		size := int64(n-1)*cs + 1 + rng.Int64N(cs)
		hs := make([]string, n)
		for i := range hs {
			hs[i] = ChunkHash(fmt.Appendf(nil, "%d/%d", iter, i))
		}
		tb, err := newTable(size, cs, hs)
		if err != nil {
			t.Fatal(err)
		}
		st := remoteState{staged: map[string]bool{}, parts: map[int]store.ObjectPart{}}
		for range rng.IntN(6) {
			a := rng.IntN(n)
			b := a + 1 + rng.IntN(n-a)
			us := make([]int, 0, b-a)
			for i := a; i < b; i++ {
				us = append(us, i)
			}
			lead, mid, tail, g, direct := tb.postPlan(us)
			if got := append(append(append([]int{}, lead...), mid...), tail...); fmt.Sprint(got) != fmt.Sprint(us) {
				t.Fatalf("postPlan(%v) cut it into %v %v %v", us, lead, mid, tail)
			}
			if direct != (len(mid) > 0) {
				t.Fatalf("postPlan: direct %v with %d chunks in the part", direct, len(mid))
			}
			for _, u := range append(append([]int{}, lead...), tail...) {
				st.staged[tb.key(u)] = true
			}
			if direct {
				gs := tb.groupSize()
				if mid[0] != g*gs {
					t.Fatalf("the part begins at chunk %d, not at group %d", mid[0], g)
				}
				end := mid[len(mid)-1] + 1
				var sz int64
				for _, u := range mid {
					sz += tb.length(u)
				}
				if end != n && (end%gs != 0 || sz < minPart) {
					t.Fatalf("the part ends at chunk %d with %d bytes", end, sz)
				}
				p := store.ObjectPart{Number: g + 1, Size: sz}
				if rng.IntN(8) == 0 && len(mid) > gs {
					p.Size = int64(gs) * cs // replaced by a shorter run
				}
				st.parts[p.Number] = p
			}
		}
		had := st.had(tb)
		if _, ok := st.plan(tb, "w"); ok != (len(had) == tb.nu) {
			t.Fatalf("iter %d: plan ok %v, had %d of %d", iter, ok, len(had), tb.nu)
		}
		// Fill what is lacking by staging it: then the plan must work.
		for u := 0; u < tb.nu; u++ {
			if !had[tb.key(u)] {
				st.staged[tb.key(u)] = true
			}
		}
		slots, ok := st.plan(tb, "w")
		if !ok {
			t.Fatalf("iter %d: every chunk staged or in parts, yet no plan", iter)
		}
		var total int64
		last := 0
		for i, s := range slots {
			sz := s.Part.Size
			num := s.Part.Number
			if len(s.Srcs) > 0 {
				num, sz = s.Number, 0
				for j := range s.Srcs {
					sz += chunkLen(size, cs, (s.Number-1)*tb.groupSize()+j)
				}
			}
			if num <= last {
				t.Fatalf("iter %d: part numbers %d after %d", iter, num, last)
			}
			if int64(num-1)*int64(tb.groupSize())*cs != total {
				t.Fatalf("iter %d: part %d at byte %d", iter, num, total)
			}
			if i < len(slots)-1 && sz < minPart {
				t.Fatalf("iter %d: part %d of %d bytes is not the last", iter, num, sz)
			}
			last = num
			total += sz
		}
		if total != size {
			t.Fatalf("iter %d: the parts make %d of %d bytes", iter, total, size)
		}
	}
}

package up2k

import (
	"strings"
	"testing"
)

// FuzzParseHashList: any X-Up2k-Hash either parses into something that
// resolves safely against a session, or is refused as Invalid.
func FuzzParseHashList(f *testing.F) {
	var hs []string
	for i := range 6 {
		hs = append(hs, ChunkHash([]byte{byte(i)}))
	}
	hs = append(hs, hs[2]) // an identical chunk
	s, tab, err := newSession(nil, nil, record{Wark: strings.Repeat("w", 44), Name: "f", Size: 7 << 20, CS: 1 << 20, Hashes: hs})
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range []string{
		hs[0], hs[0] + "," + hs[1], hs[0] + ",3," + hs[1][:3] + hs[2][:3],
		hs[0] + "," + hs[1][:5], hs[3] + ",9," + hs[4][:9] + hs[5][:9], " " + hs[0] + " , " + hs[1],
		hs[0] + ",0,", ",,,", "", hs[0] + ",2,a", strings.Repeat("A", 88),
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, h string) {
		hl, err := ParseHashList(h)
		if err != nil {
			if KindOf(err) != Invalid {
				t.Fatalf("error of kind %d: %v", KindOf(err), err)
			}
			return
		}
		if _, _, err := ParseHash(hl.First); err != nil {
			t.Fatalf("first hash %q accepted but invalid", hl.First)
		}
		if len(hl.Rest) >= MaxChunks {
			t.Fatalf("%d chunks accepted", len(hl.Rest)+1)
		}
		us, err := tab.resolve(hl, s.rec.Name)
		if err != nil {
			if KindOf(err) != Invalid {
				t.Fatalf("resolve error of kind %d: %v", KindOf(err), err)
			}
			return
		}
		seen := map[int]bool{}
		for i, u := range us {
			if u < 0 || u >= tab.nu || seen[u] {
				t.Fatalf("resolved to %v", us)
			}
			seen[u] = true
			if i > 0 && tab.start(u) != tab.start(us[i-1])+s.rec.CS {
				t.Fatalf("resolved to chunks that are not siblings: %v", us)
			}
		}
	})
}

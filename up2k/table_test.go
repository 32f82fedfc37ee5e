package up2k

import (
	"bytes"
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"hoard/store"
)

// naiveTable is the straightforward model of a table: per unique chunk
// its key, compare form, sent form and chunk indexes, by a map.
type naiveTable struct {
	uniq, cmp, sent []string
	at              [][]int
	pos             map[string]int
}

func naive(hashes []string, size, cs int64) (*naiveTable, bool) {
	n := &naiveTable{pos: map[string]int{}}
	for i, h := range hashes {
		key, cmp, err := ParseHash(h)
		if err != nil {
			return nil, false
		}
		u, ok := n.pos[key]
		switch {
		case !ok:
			u = len(n.uniq)
			n.pos[key] = u
			n.uniq, n.cmp, n.sent, n.at = append(n.uniq, key), append(n.cmp, cmp), append(n.sent, h), append(n.at, nil)
		case chunkLen(size, cs, i) != chunkLen(size, cs, n.at[u][0]):
			return nil, false
		case len(cmp) > len(n.cmp[u]) && cmp[:len(n.cmp[u])] == n.cmp[u]:
			n.cmp[u] = cmp
		case len(cmp) <= len(n.cmp[u]) && n.cmp[u][:len(cmp)] == cmp:
		default:
			return nil, false
		}
		n.at[u] = append(n.at[u], i)
	}
	return n, true
}

// Property: for random hash lists (duplicates, mixed widths, full digests
// with and without padding, conflicting duplicates), newTable agrees with
// the naive model on everything the sessions ask of it.
func TestTableMatchesModel(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	alpha := "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	randHash := func() string {
		b := make([]byte, fullLen)
		for i := range b {
			b[i] = alpha[r.IntN(len(alpha))]
		}
		return string(b)
	}
	for round := range 3000 {
		n := 1 + r.IntN(40)
		if round%100 == 0 {
			n = 1 + r.IntN(MaxChunks)
		}
		pool := make([]string, 1+r.IntN(n))
		for i := range pool {
			pool[i] = randHash()
		}
		mixed := r.IntN(3) == 0
		hs := make([]string, n)
		for i := range hs {
			full := pool[r.IntN(len(pool))]
			w := KeyLen
			if mixed {
				w = KeyLen + r.IntN(fullLen-KeyLen+1)
			}
			h := full[:w]
			if w == fullLen && r.IntN(2) == 0 {
				h += "=="
			}
			if mixed && r.IntN(50) == 0 {
				h = h[:KeyLen] + strings.Repeat("A", len(h)-KeyLen) // may conflict with a longer form
			}
			hs[i] = h
		}
		cs := int64(1 << 20)
		size := int64(n-1)*cs + 1 + r.Int64N(cs)
		want, ok := naive(hs, size, cs)
		tab, err := newTable(size, cs, hs)
		if !ok {
			if err == nil {
				t.Fatalf("round %d: conflicting hashes accepted", round)
			}
			continue
		}
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if tab.nu != len(want.uniq) || tab.n != n {
			t.Fatalf("round %d: %d/%d unique, want %d/%d", round, tab.nu, tab.n, len(want.uniq), n)
		}
		for u := range want.uniq {
			var copies []int
			for _, c := range tab.copies(u) {
				copies = append(copies, int(c))
			}
			if tab.key(u) != want.uniq[u] || tab.cmp(u) != want.cmp[u] || tab.sentOf(u) != want.sent[u] ||
				tab.firstChunk(u) != want.at[u][0] || !slices.Equal(copies, want.at[u][1:]) {
				t.Fatalf("round %d: unique %d differs: %q %q %q %d %v", round, u, tab.key(u), tab.cmp(u), tab.sentOf(u), tab.firstChunk(u), copies)
			}
			if got, ok := tab.lookup(want.uniq[u]); !ok || got != u {
				t.Fatalf("round %d: lookup(%s) = %d %v, want %d", round, want.uniq[u], got, ok, u)
			}
			if tab.start(u) != int64(want.at[u][0])*cs || tab.bytesOf(u) != tab.length(u)*int64(len(want.at[u])) {
				t.Fatalf("round %d: offsets of %d", round, u)
			}
		}
		if _, ok := tab.lookup(randHash()[:KeyLen]); ok {
			t.Fatalf("round %d: a key not in the file was found", round)
		}
		if !slices.Equal(tab.hashes(), hs) {
			t.Fatalf("round %d: hashes() differ", round)
		}
		var total int64
		for u := range tab.nu {
			total += tab.bytesOf(u)
		}
		if total != size {
			t.Fatalf("round %d: the chunks cover %d bytes of %d", round, total, size)
		}
	}
}

// A dropped table is loaded again from the session store, and the
// budget drops the least recently used tables first; an upload whose
// table was dropped completes as ever.
func TestTableBudget(t *testing.T) {
	f := newFixture(t, store.Flags{})
	m := f.m
	m.lruMu.Lock()
	m.tabBudget = 1
	m.lruMu.Unlock()
	var ss []*session
	var datas [][]byte
	for i := range 3 {
		data := randBytes(3 << 20)
		rep, err := f.hs("t"+string(rune('a'+i))+".bin", data)
		if err != nil {
			t.Fatal(err)
		}
		m.mu.Lock()
		ss = append(ss, m.sessions[skey{f.db, rep.Wark}])
		m.mu.Unlock()
		datas = append(datas, data)
	}
	// Only the newest is kept within a budget of one byte.
	if ss[0].tab.Load() != nil || ss[1].tab.Load() != nil || ss[2].tab.Load() == nil {
		t.Fatalf("tables kept: %v %v %v", ss[0].tab.Load() != nil, ss[1].tab.Load() != nil, ss[2].tab.Load() != nil)
	}
	tab, err := m.table(context.Background(), ss[0])
	if err != nil || tab.nu != 3 || ss[0].tab.Load() != tab || ss[2].tab.Load() != nil {
		t.Fatalf("reload: %v %v", tab, err)
	}
	for i, s := range ss {
		cs, _ := hashes(datas[i])
		for c := range 3 {
			if _, err := f.post(s.rec.Wark, datas[i], cs, c); err != nil {
				t.Fatalf("upload %d chunk %d: %v", i, c, err)
			}
		}
		if got := f.file("up/t" + string(rune('a'+i)) + ".bin"); !bytes.Equal(got, datas[i]) {
			t.Fatalf("upload %d differs", i)
		}
	}
	m.lruMu.Lock()
	defer m.lruMu.Unlock()
	if m.lru.Len() != 0 || m.tabMem != 0 {
		t.Fatalf("finished uploads left %d tables (%d bytes) counted", m.lru.Len(), m.tabMem)
	}
}

// A handshake naming a file that is there (unrecorded) with made-up
// hashes costs the hashing of one chunk, not of the whole file.
func TestHandshakeOnExistingFileHashesLittle(t *testing.T) {
	f := newFixture(t, store.Flags{})
	data := randBytes(32 << 20)
	if err := os.MkdirAll(filepath.Join(f.dir, "up"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.dir, "up", "big.bin"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	fake := randBytes(len(data)) // same size, other content
	before := f.m.checked.Load()
	rep, err := f.hs("big.bin", fake)
	if err != nil {
		t.Fatal(err)
	}
	if got := f.m.checked.Load() - before; got > 1<<20 {
		t.Fatalf("a handshake with made-up hashes hashed %d bytes of the file there", got)
	}
	if rep.Name == "big.bin" || len(rep.Need) == 0 {
		t.Fatalf("made-up hashes were taken for the file there: %+v", rep.Name)
	}
	// The real hashes: complete at once.
	rep, err = f.hs("big.bin", data)
	if err != nil || rep.Name != "big.bin" || len(rep.Need) != 0 {
		t.Fatalf("real hashes: %v %v", rep.Name, err)
	}
}

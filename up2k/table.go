package up2k

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// table is what a session knows of its chunks' hashes, kept compactly:
// the hashes as the client sent them run together (one string), an index
// sorted by key for lookups, and duplicates only where there are any.
// About 46 bytes per chunk, against some 200 in a string per hash, a map
// and slices per chunk. A table is immutable: a post takes it once and
// uses it throughout, while the session may drop it (to bound memory;
// Manager.table loads it again from the session store).
//
// Chunks are numbered in file order (i); unique chunks (u) in order of
// first occurrence. Two chunks are the same when their 44-character keys
// are.
type table struct {
	size, cs int64
	n        int // chunks
	nu       int // unique chunks

	w     int      // width of every hash in sent; 0 when they differ (see sentv)
	sent  string   // chunk i's hash as sent is sent[i*w:(i+1)*w]
	sentv []string // the hashes as sent, when their widths differ

	first []uint16            // unique u's first chunk; nil: no duplicates, u == i
	dups  map[uint16][]uint16 // unique u's other chunks, where it has any
	// byKey holds the unique indexes sorted by key, for lookup.
	byKey []uint16
	// longer holds, for the unique chunks whose duplicates sent a longer
	// form of the hash than the first occurrence, that longer form
	// without padding (it is what a computed digest is compared with).
	longer map[uint16]string
}

// newTable builds the table of a file of size bytes in chunks of cs from
// the hashes as sent (validated by ParseHash, as the handshake did).
func newTable(size, cs int64, hashes []string) (*table, error) {
	n := len(hashes)
	if int64(n) != NumChunks(size, max(cs, 1)) || cs <= 0 || n > MaxChunks {
		return nil, fmt.Errorf("up2k: %d hashes for %d bytes in chunks of %d", n, size, cs)
	}
	t := &table{size: size, cs: cs, n: n}
	w := -1
	for _, h := range hashes {
		if _, _, err := ParseHash(h); err != nil {
			return nil, err
		}
		if w == -1 {
			w = len(h)
		} else if w != len(h) {
			w = 0
		}
	}
	if w > 0 {
		t.w = w
		t.sent = strings.Join(hashes, "")
	} else {
		t.sentv = slices.Clone(hashes)
	}
	// Unique chunks, by sorting chunk indexes by key.
	order := make([]uint16, n)
	for i := range order {
		order[i] = uint16(i)
	}
	slices.SortStableFunc(order, func(a, b uint16) int { return strings.Compare(t.keyOfChunk(int(a)), t.keyOfChunk(int(b))) })
	dupes := false
	for k := 1; k < n; k++ {
		if t.keyOfChunk(int(order[k])) == t.keyOfChunk(int(order[k-1])) {
			dupes = true
			break
		}
	}
	if !dupes {
		t.nu = n
		t.byKey = order
		return t, nil
	}
	// Walk in file order, so that unique indexes follow first occurrence.
	pos := map[string]uint16{}
	for i := range n {
		key := t.keyOfChunk(i)
		u, ok := pos[key]
		if !ok {
			u = uint16(len(t.first))
			pos[key] = u
			t.first = append(t.first, uint16(i))
		} else {
			if chunkLen(size, cs, i) != chunkLen(size, cs, int(t.first[u])) {
				// Equal hashes of a full chunk and the short last one
				// cannot both be true; copying one onto the other would
				// write past the end of the file.
				return nil, invalidf("chunks %d and %d have the same hash but not the same length", t.first[u], i)
			}
			if t.dups == nil {
				t.dups = map[uint16][]uint16{}
			}
			t.dups[u] = append(t.dups[u], uint16(i))
			cur := t.cmp(int(u))
			_, cmp, _ := ParseHash(t.sentOfChunk(i))
			switch {
			case len(cmp) > len(cur) && cmp[:len(cur)] == cur:
				if t.longer == nil {
					t.longer = map[uint16]string{}
				}
				t.longer[u] = cmp
			case len(cmp) <= len(cur) && cur[:len(cmp)] == cmp:
			default:
				return nil, invalidf("chunk hashes %d and %d share their first 44 characters but differ after that", t.first[u], i)
			}
		}
	}
	t.nu = len(t.first)
	t.byKey = make([]uint16, t.nu)
	for u := range t.byKey {
		t.byKey[u] = uint16(u)
	}
	slices.SortFunc(t.byKey, func(a, b uint16) int { return strings.Compare(t.key(int(a)), t.key(int(b))) })
	return t, nil
}

func (t *table) sentOfChunk(i int) string {
	if t.w > 0 {
		return t.sent[i*t.w : (i+1)*t.w]
	}
	return t.sentv[i]
}

func (t *table) keyOfChunk(i int) string { return t.sentOfChunk(i)[:KeyLen] }

// firstChunk is the chunk where unique chunk u first occurs.
func (t *table) firstChunk(u int) int {
	if t.first == nil {
		return u
	}
	return int(t.first[u])
}

// sentOf is unique chunk u's hash as the client sent it (first occurrence).
func (t *table) sentOf(u int) string { return t.sentOfChunk(t.firstChunk(u)) }

// key is unique chunk u's 44-character key.
func (t *table) key(u int) string { return t.keyOfChunk(t.firstChunk(u)) }

// cmp is the form of unique chunk u's hash to compare a digest with.
func (t *table) cmp(u int) string {
	if c, ok := t.longer[uint16(u)]; ok {
		return c
	}
	_, c, _ := ParseHash(t.sentOf(u))
	return c
}

// lookup returns the unique index of the chunk with key.
func (t *table) lookup(key string) (int, bool) {
	k, ok := slices.BinarySearchFunc(t.byKey, key, func(u uint16, key string) int { return strings.Compare(t.key(int(u)), key) })
	if !ok {
		return 0, false
	}
	return int(t.byKey[k]), true
}

// copies returns the other chunks holding unique chunk u's bytes.
func (t *table) copies(u int) []uint16 { return t.dups[uint16(u)] }

// start is the offset of unique chunk u's first occurrence.
func (t *table) start(u int) int64 { return int64(t.firstChunk(u)) * t.cs }

// length is the length of unique chunk u.
func (t *table) length(u int) int64 { return chunkLen(t.size, t.cs, t.firstChunk(u)) }

// bytesOf is how many bytes of the file unique chunk u fills (with its
// copies).
func (t *table) bytesOf(u int) int64 { return t.length(u) * int64(1+len(t.copies(u))) }

// keys returns every chunk's 44-character key in file order.
func (t *table) keys() []string {
	out := make([]string, t.n)
	for i := range out {
		out[i] = t.keyOfChunk(i)
	}
	return out
}

// hashes returns every chunk's hash as sent, in file order.
func (t *table) hashes() []string {
	out := make([]string, t.n)
	for i := range out {
		out[i] = t.sentOfChunk(i)
	}
	return out
}

// mem is roughly what the table holds in memory, in bytes.
func (t *table) mem() int64 {
	n := int64(len(t.sent)) + 2*int64(len(t.byKey)+len(t.first)) + 160
	for _, s := range t.sentv {
		n += int64(len(s)) + 16
	}
	for _, d := range t.dups {
		n += 2*int64(len(d)) + 48
	}
	for _, s := range t.longer {
		n += int64(len(s)) + 48
	}
	return n
}

// ---- loading and the memory budget ----

// tableBudget bounds the memory held by the tables of live sessions; the
// least recently used are dropped beyond it and loaded again from the
// session store when needed. An idle session then costs a few hundred
// bytes plus two bytes per chunk (its have and busy flags).
const tableBudget = 32 << 20

// table returns the session's chunk table, loading it from the session
// store when it was dropped.
func (m *Manager) table(ctx context.Context, s *session) (*table, error) {
	if t := s.tab.Load(); t != nil {
		m.touch(s)
		return t, nil
	}
	s.loadMu.Lock()
	defer s.loadMu.Unlock()
	if t := s.tab.Load(); t != nil {
		m.touch(s)
		return t, nil
	}
	blob, err := s.db.Session(ctx, s.rec.Wark)
	if err != nil {
		return nil, err
	}
	var rec record
	if err := json.Unmarshal(blob, &rec); err != nil {
		return nil, fmt.Errorf("up2k: session %s: %w", s.rec.Wark, err)
	}
	t, err := newTable(s.rec.Size, s.rec.CS, rec.Hashes)
	if err == nil && t.nu != s.nu {
		err = fmt.Errorf("up2k: session %s: the stored record has %d distinct chunks, the session %d", s.rec.Wark, t.nu, s.nu)
	}
	if err != nil {
		return nil, err
	}
	m.keep(s, t)
	return t, nil
}

// keep makes t the session's table and counts it against the budget,
// dropping the least recently used tables beyond it.
func (m *Manager) keep(s *session, t *table) {
	s.tab.Store(t)
	m.lruMu.Lock()
	defer m.lruMu.Unlock()
	if s.lru != nil {
		m.tabMem -= s.lru.Value.(*lruItem).mem
		m.lru.Remove(s.lru)
	}
	s.lru = m.lru.PushFront(&lruItem{s: s, mem: t.mem()})
	m.tabMem += t.mem()
	for m.tabMem > m.tabBudget && m.lru.Len() > 1 {
		e := m.lru.Back()
		it := e.Value.(*lruItem)
		m.lru.Remove(e)
		m.tabMem -= it.mem
		it.s.lru = nil
		it.s.tab.Store(nil) // posts in flight keep theirs
	}
}

// touch marks the session's table as just used.
func (m *Manager) touch(s *session) {
	m.lruMu.Lock()
	if s.lru != nil {
		m.lru.MoveToFront(s.lru)
	}
	m.lruMu.Unlock()
}

// forget drops the session's table from the budget (it is gone).
func (m *Manager) forget(s *session) {
	m.lruMu.Lock()
	if s.lru != nil {
		m.tabMem -= s.lru.Value.(*lruItem).mem
		m.lru.Remove(s.lru)
		s.lru = nil
	}
	m.lruMu.Unlock()
	s.tab.Store(nil)
}

type lruItem struct {
	s   *session
	mem int64
}

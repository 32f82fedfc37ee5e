package up2k

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"hoard/store"
)

// gcLog is a store.SmallLog in memory that outlives the stores using it.
type gcLog struct {
	mu   sync.Mutex
	next uint64
	ents map[uint64][]byte
}

func (l *gcLog) Commit(v *store.Volume, rec []byte, e *store.Event, drop []uint64) (uint64, uint64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.next++
	l.ents[l.next] = slices.Clone(rec)
	for _, d := range drop {
		delete(l.ents, d)
	}
	return l.next, 0, nil
}

func (l *gcLog) Retire(v *store.Volume, ids []uint64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, id := range ids {
		delete(l.ents, id)
	}
	return nil
}

func (l *gcLog) Each(ctx context.Context, v *store.Volume, fn func(uint64, []byte) error) error {
	l.mu.Lock()
	ids := slices.Sorted(func(yield func(uint64) bool) {
		for id := range l.ents {
			if !yield(id) {
				return
			}
		}
	})
	l.mu.Unlock()
	for _, id := range ids {
		l.mu.Lock()
		b := l.ents[id]
		l.mu.Unlock()
		if err := fn(id, b); err != nil {
			return err
		}
	}
	return nil
}

// lazyStore records finished uploads without a flush (as idx does after a
// group-committed publish) and keeps an image of itself from just before,
// as a crash that loses the unsynced record would leave it.
type lazyStore struct {
	*MemStore
	lazy   atomic.Int32
	before *MemStore
}

func (s *lazyStore) FinishNoSync(ctx context.Context, wark, rel string, meta []byte) error {
	s.lazy.Add(1)
	s.before = s.MemStore.clone()
	return s.MemStore.Finish(ctx, wark, rel, meta)
}

// TestGroupCommitFinishLost: a small up2k file is group-committed and
// recorded finished without a flush of its own. A power cut then loses
// the record (the session comes back), the file's bytes and its name (the
// start-up replay writes it again from the journal, as a new file), and
// leaves the work file zeroed. The restart must find the upload complete
// (its one chunk was acknowledged: it is never asked for again) and leave
// no second copy.
func TestGroupCommitFinishLost(t *testing.T) {
	dir := t.TempDir()
	log := &gcLog{ents: map[uint64][]byte{}}
	open := func() (*store.Store, *store.Volume) {
		st, err := store.Open(store.Config{Logger: testLog, Volumes: []store.VolumeSpec{{Src: dir, Perms: map[string]store.Perm{"*": store.PermRead | store.PermWrite}}}})
		if err != nil {
			t.Fatal(err)
		}
		st.SetSmallLog(log)
		st.ReplaySmall(context.Background(), nil)
		return st, st.Volumes()[0]
	}
	st, vol := open()
	db := &lazyStore{MemStore: NewMemStore()}
	m, err := New(Config{Store: st, DBs: map[*store.Volume]SessionStore{vol: db}, Logger: testLog})
	if err != nil {
		t.Fatal(err)
	}
	data := randBytes(4000)
	_, hs := hashes(data)
	h := Handshake{Vol: vol, Dir: "up", Name: "a.bin", Size: int64(len(data)), Lmod: 1600000000, Hashes: hs, IP: "127.0.0.1"}
	rep, err := m.Handshake(context.Background(), h)
	if err != nil {
		t.Fatal(err)
	}
	w, err := m.WriteChunks(context.Background(), ChunkPost{Vol: vol, Wark: rep.Wark, Hashes: hs[0], Subc: -1, Body: bytes.NewReader(data), Length: int64(len(data))})
	if err != nil || !w.Done {
		t.Fatalf("the chunk: %+v, %v", w, err)
	}
	if db.lazy.Load() != 1 || len(log.ents) != 1 {
		t.Fatalf("%d lazy finishes, %d journal entries: the small file was not group-committed", db.lazy.Load(), len(log.ents))
	}
	m.Close()
	st.Close() // no checkpoint: the entry stays

	// The power cut: the record, the file and its bytes are lost; the work
	// file's removal was not durable either, and its bytes are zeros.
	final := filepath.Join(dir, "up", "a.bin")
	os.Remove(final)
	work := final + store.PartialSuffix
	if err := os.WriteFile(work, make([]byte, len(data)), 0o644); err != nil {
		t.Fatal(err)
	}
	unix.Setxattr(work, "user.hoard.partial", []byte("1"), 0)

	st, vol = open()
	defer st.Close()
	if b, err := os.ReadFile(final); err != nil || !bytes.Equal(b, data) {
		t.Fatalf("the replay did not write the file again: %v", err)
	}
	m, err = New(Config{Store: st, DBs: map[*store.Volume]SessionStore{vol: db.before}, Logger: testLog})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := m.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	h.Vol = vol
	var r Reply
	for range 100 { // re-checks run in the background
		if r, err = m.Handshake(context.Background(), h); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Need) > 0 {
		t.Fatalf("the server asks again for the acknowledged chunk (need %v)", r.Need)
	}
	ents, _ := os.ReadDir(filepath.Join(dir, "up"))
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if !slices.Equal(names, []string{"a.bin"}) {
		t.Errorf("files after the restart %q, want only a.bin", names)
	}
}

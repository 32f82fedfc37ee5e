package up2k

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"hoard/store"
)

// lazyMem is a MemStore whose unsynced session writes (PutSessionLazy)
// are lost by a crash until a synced write follows them, as in Pebble,
// where a synced batch flushes the write-ahead log with everything before
// it.
type lazyMem struct {
	*MemStore
	mu      sync.Mutex
	lazy    int             // PutSessionLazy calls
	synced  int             // PutSession calls
	pending map[string]bool // sessions written lazily and not yet carried by a synced write
}

func (l *lazyMem) PutSessionLazy(ctx context.Context, wark string, blob []byte) error {
	l.mu.Lock()
	l.lazy++
	l.pending[wark] = true
	l.mu.Unlock()
	return l.MemStore.PutSession(ctx, wark, blob)
}

func (l *lazyMem) sync() {
	l.mu.Lock()
	clear(l.pending)
	l.mu.Unlock()
}

func (l *lazyMem) PutSession(ctx context.Context, wark string, blob []byte) error {
	l.mu.Lock()
	l.synced++
	l.mu.Unlock()
	defer l.sync()
	return l.MemStore.PutSession(ctx, wark, blob)
}

func (l *lazyMem) PutChunks(ctx context.Context, wark string, keys []string) error {
	defer l.sync()
	return l.MemStore.PutChunks(ctx, wark, keys)
}

func (l *lazyMem) Finish(ctx context.Context, wark, rel string, meta []byte) error {
	defer l.sync()
	return l.MemStore.Finish(ctx, wark, rel, meta)
}

// crashed is the store as a crash leaves it now.
func (l *lazyMem) crashed() *lazyMem {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := &lazyMem{MemStore: l.MemStore.clone(), pending: map[string]bool{}}
	for w := range l.pending {
		delete(c.sessions, w)
	}
	return c
}

// TestLazySessionLostToCrash: a small file's session is written unsynced
// (a big one's synced); a crash between the handshake's reply and the
// chunk post loses the session, the post is refused, and the client's new
// handshake gets a new session that completes the upload, with nothing
// left on disk by the lost one. Once the post is answered, the session's
// end is durable with it.
func TestLazySessionLostToCrash(t *testing.T) {
	f := newFixture(t, store.Flags{})
	lm := &lazyMem{MemStore: NewMemStore(), pending: map[string]bool{}}
	f.db = lm
	f.restart()

	small := randBytes(40 << 10)
	cs, _ := hashes(small)
	rep, err := f.hs("s.bin", small)
	if err != nil {
		t.Fatal(err)
	}
	if lm.lazy != 1 || lm.synced != 0 {
		t.Fatalf("small file's handshake: %d unsynced and %d synced session writes, want 1 and 0", lm.lazy, lm.synced)
	}
	big := randBytes(store.SmallFile + 1)
	if _, err := f.hs("b.bin", big); err != nil {
		t.Fatal(err)
	}
	if lm.synced != 1 {
		t.Fatalf("big file's handshake: %d synced session writes, want 1", lm.synced)
	}
	// The big session's synced write carried the small one: a crash now
	// keeps both.
	if c := lm.crashed(); c.sessions[rep.Wark] == nil {
		t.Fatal("the small session was lost though a synced write followed it")
	}

	rep2, err := f.hs("t.bin", append([]byte("t"), small[1:]...))
	if err != nil {
		t.Fatal(err)
	}
	// Crash: the last small session had no synced write after it.
	f.db = lm.crashed()
	f.restart()
	if _, err := f.post(rep2.Wark, append([]byte("t"), small[1:]...), cs, 0); err == nil {
		t.Fatal("a chunk post for a session lost in a crash was accepted")
	}
	if ents, _ := os.ReadDir(filepath.Join(f.dir, "up")); len(ents) > 1 { // b.bin.PARTIAL only
		names := []string{}
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Fatalf("the lost session left files behind: %v", names)
	}
	rep3, err := f.hs("t.bin", append([]byte("t"), small[1:]...))
	if err != nil {
		t.Fatal(err)
	}
	if len(rep3.Need) != 1 || rep3.Name != "t.bin" {
		t.Fatalf("handshake after the crash: %+v, want the one chunk needed under its own name", rep3)
	}
	if _, err := f.post(rep3.Wark, append([]byte("t"), small[1:]...), cs, 0); err != nil {
		t.Fatal(err)
	}
	if got := f.file("up/t.bin"); string(got[:1]) != "t" || len(got) != len(small) {
		t.Fatalf("t.bin after the upload: %d bytes", len(got))
	}
	// The first small session survived the crash (a synced write had
	// followed it) and finishes too.
	if _, err := f.post(rep.Wark, small, cs, 0); err != nil {
		t.Fatal(err)
	}
	if got := f.file("up/s.bin"); len(got) != len(small) {
		t.Fatalf("s.bin: %d bytes", len(got))
	}
}

package up2k

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// SessionStore keeps upload sessions and finished-file records of one
// volume across restarts. idx implements it over Pebble; every method that
// writes must have made the change durable (synced) before it returns.
//
// A session is stored as an opaque blob that up2k encodes; chunk receipts
// are the 44-character keys of chunks whose bytes are on disk. A file
// record says that the file at rel (slash-separated, inside the volume)
// has the content identified by wark; its meta blob (up2k's) describes the
// file as it was then, to tell a stale record.
type SessionStore interface {
	// PutSession stores a session's blob under its wark.
	PutSession(ctx context.Context, wark string, blob []byte) error
	// Session returns the blob stored under wark.
	Session(ctx context.Context, wark string) ([]byte, error)
	// PutChunks records receipts for chunks of the session wark.
	PutChunks(ctx context.Context, wark string, keys []string) error
	// DropChunks removes receipts (chunks that failed re-verification).
	DropChunks(ctx context.Context, wark string, keys []string) error
	// DeleteSession removes a session and all its receipts.
	DeleteSession(ctx context.Context, wark string) error
	// Sessions calls fn for every stored session with its receipts.
	Sessions(ctx context.Context, fn func(wark string, blob []byte, keys []string) error) error
	// Finish removes the session wark with its receipts and records the
	// file rel as having that content, in one atomic, synced change.
	Finish(ctx context.Context, wark, rel string, meta []byte) error
	// PutFile records that the file rel has the content wark.
	PutFile(ctx context.Context, wark, rel string, meta []byte) error
	// DeleteFile forgets that record.
	DeleteFile(ctx context.Context, wark, rel string) error
	// Files returns the files recorded with the content wark (rel → meta).
	Files(ctx context.Context, wark string) (map[string][]byte, error)
}

// LazySessionStore is a SessionStore that can store a session's blob
// without waiting for it to reach the disk: a later synced write to the
// same store (the session's first chunk receipt, or its Finish, or the
// group-commit batch that ends it) makes it durable with everything
// written before it (one write-ahead log). A small file's session
// (sent whole in one chunk post, Session.Lazy) is stored this way: until
// that post is answered nothing of it has been acknowledged, so a crash
// that loses the record loses only a handshake, which the client repeats.
type LazySessionStore interface {
	PutSessionLazy(ctx context.Context, wark string, blob []byte) error
}

// lazyFinisher is implemented by session stores that can record a
// finished upload without a flush of its own (idx): it becomes durable
// with the store's next synced write.
type lazyFinisher interface {
	FinishNoSync(ctx context.Context, wark, rel string, meta []byte) error
}

// Availability is implemented by session stores that can be out of use
// for a while (idx: while its state folder is full).
type Availability interface {
	// Ready is closed once the store can be read (it is open).
	Ready() <-chan struct{}
	// Unavailable returns nil when the store can take a new upload's
	// session, else an error for the client saying why not.
	Unavailable() error
}

// MemStore is a SessionStore that keeps everything in memory: for tests,
// and for volumes whose state folder cannot be written (sessions then do
// not survive a restart).
type MemStore struct {
	mu       sync.Mutex
	sessions map[string][]byte
	chunks   map[string]map[string]bool
	files    map[string]map[string][]byte
}

// NewMemStore returns an empty MemStore.
func NewMemStore() *MemStore {
	return &MemStore{sessions: map[string][]byte{}, chunks: map[string]map[string]bool{}, files: map[string]map[string][]byte{}}
}

func (m *MemStore) PutSession(ctx context.Context, wark string, blob []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sessions[wark] = slices.Clone(blob)
	return nil
}

func (m *MemStore) Session(ctx context.Context, wark string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.sessions[wark]
	if !ok {
		return nil, fmt.Errorf("up2k: no session %s", wark)
	}
	return slices.Clone(b), nil
}

func (m *MemStore) PutChunks(ctx context.Context, wark string, keys []string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.chunks[wark]
	if c == nil {
		c = map[string]bool{}
		m.chunks[wark] = c
	}
	for _, k := range keys {
		c[k] = true
	}
	return nil
}

func (m *MemStore) DropChunks(ctx context.Context, wark string, keys []string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, k := range keys {
		delete(m.chunks[wark], k)
	}
	return nil
}

func (m *MemStore) DeleteSession(ctx context.Context, wark string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.sessions, wark)
	delete(m.chunks, wark)
	return nil
}

func (m *MemStore) Sessions(ctx context.Context, fn func(wark string, blob []byte, keys []string) error) error {
	m.mu.Lock()
	type item struct {
		wark string
		blob []byte
		keys []string
	}
	var items []item
	for w, b := range m.sessions {
		var keys []string
		for k := range m.chunks[w] {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		items = append(items, item{w, slices.Clone(b), keys})
	}
	m.mu.Unlock()
	slices.SortFunc(items, func(a, b item) int { return strings.Compare(a.wark, b.wark) })
	for _, it := range items {
		if err := fn(it.wark, it.blob, it.keys); err != nil {
			return err
		}
	}
	return nil
}

func (m *MemStore) Finish(ctx context.Context, wark, rel string, meta []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.sessions, wark)
	delete(m.chunks, wark)
	m.putFile(wark, rel, meta)
	return nil
}

func (m *MemStore) PutFile(ctx context.Context, wark, rel string, meta []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.putFile(wark, rel, meta)
	return nil
}

func (m *MemStore) putFile(wark, rel string, meta []byte) {
	f := m.files[wark]
	if f == nil {
		f = map[string][]byte{}
		m.files[wark] = f
	}
	f[rel] = slices.Clone(meta)
}

func (m *MemStore) DeleteFile(ctx context.Context, wark, rel string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.files[wark], rel)
	return nil
}

func (m *MemStore) Files(ctx context.Context, wark string) (map[string][]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string][]byte{}
	for r, meta := range m.files[wark] {
		out[r] = slices.Clone(meta)
	}
	return out, nil
}

var _ SessionStore = (*MemStore)(nil)

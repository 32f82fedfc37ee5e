package up2k

import (
	"context"
	"crypto/sha512"
	"encoding/json"
	"io"
	"io/fs"
	"strings"
	"sync"
)

// vitem is one stretch of a file to check against a chunk hash.
type vitem struct {
	off, n int64
	cmp    string // expected hash (prefix of the digest's base64)
	id     int    // reported when it does not match
}

// hashCheck hashes the items of f in parallel (at most one goroutine per
// slot of m.sem) and returns the ids of those that do not match, each once.
// A read error counts as a mismatch; only a canceled ctx is an error.
func (m *Manager) hashCheck(ctx context.Context, f io.ReaderAt, items []vitem) ([]int, error) {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		bad  = map[int]bool{}
		cerr error
	)
loop:
	for _, it := range items {
		select {
		case m.sem <- struct{}{}:
		case <-ctx.Done():
			cerr = ctx.Err()
			break loop
		}
		wg.Add(1)
		go func() {
			defer func() { <-m.sem; wg.Done() }()
			if ctx.Err() != nil {
				return
			}
			if !hashMatches(f, it) {
				mu.Lock()
				bad[it.id] = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if cerr == nil {
		cerr = ctx.Err()
	}
	if cerr != nil {
		return nil, cerr
	}
	out := make([]int, 0, len(bad))
	for id := range bad {
		out = append(out, id)
	}
	return out, nil
}

// hashMatches reads one stretch of f and compares its hash.
func hashMatches(f io.ReaderAt, it vitem) bool {
	h := sha512.New()
	b := getBuf()
	defer putBuf(b)
	n, err := io.CopyBuffer(h, io.NewSectionReader(f, it.off, it.n), b[:])
	if err != nil || n != it.n {
		return false
	}
	return strings.HasPrefix(b64.EncodeToString(h.Sum(nil)), it.cmp)
}

// fileMeta is what a file record remembers of the file (JSON), to tell
// when the record has gone stale.
type fileMeta struct {
	Size  int64  `json:"sz"`
	Mtime int64  `json:"mt"` // unix nanoseconds
	At    int64  `json:"at,omitempty"`
	User  string `json:"u,omitempty"`
}

func metaOf(fi fs.FileInfo, at int64, user string) []byte {
	b, _ := json.Marshal(fileMeta{Size: fi.Size(), Mtime: fi.ModTime().UnixNano(), At: at, User: user})
	return b
}

// fresh reports whether fi still looks like the file the record described.
func fresh(meta []byte, fi fs.FileInfo) bool {
	var fm fileMeta
	if json.Unmarshal(meta, &fm) != nil {
		return false
	}
	return fm.Size == fi.Size() && fm.Mtime == fi.ModTime().UnixNano()
}

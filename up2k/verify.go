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

// hashCheck hashes the items of f in parallel and returns the ids of
// those that do not match, each once. Items of at least laneMin bytes go
// through the SHA-512 lanes, eight at a time (laneCheck goroutines);
// the others take one goroutine per slot of m.sem. A read error counts
// as a mismatch; only a canceled ctx is an error.
func (m *Manager) hashCheck(ctx context.Context, f io.ReaderAt, items []vitem) ([]int, error) {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		bad   = map[int]bool{}
		cerr  error
		lanes = make(chan struct{}, laneCheck)
	)
loop:
	for _, it := range items {
		sem := m.sem
		if m.lanes != nil && it.n >= laneMin {
			sem = lanes
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			cerr = ctx.Err()
			break loop
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if ctx.Err() != nil {
				return
			}
			if !m.hashMatches(ctx, f, it, sem == lanes) {
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

// laneCheck is how many items hashCheck hashes in the lanes at once.
const laneCheck = 8

// hashMatches reads one stretch of f and compares its hash, computed in
// the lanes or with crypto/sha512.
func (m *Manager) hashMatches(ctx context.Context, f io.ReaderAt, it vitem, lane bool) bool {
	m.checked.Add(it.n)
	if !lane {
		h := sha512.New()
		b := getBuf()
		defer putBuf(b)
		n, err := io.CopyBuffer(h, io.NewSectionReader(f, it.off, it.n), b[:])
		return err == nil && n == it.n && strings.HasPrefix(b64.EncodeToString(h.Sum(nil)), it.cmp)
	}
	st := m.lanes.New()
	for off := int64(0); off < it.n; {
		b, err := m.laneBuf(ctx)
		if err != nil {
			return false // what was handed over is hashed and released regardless
		}
		want := int(min(bufSize, it.n-off))
		if k, _ := f.ReadAt(b[:want], it.off+off); k < want {
			m.putLaneBuf(b)
			return false
		}
		st.Write(b[:want], func() { m.putLaneBuf(b) })
		off += int64(want)
	}
	st.Finish()
	sum := st.Sum()
	return strings.HasPrefix(b64.EncodeToString(sum[:]), it.cmp)
}

// fileMeta is what a file record remembers of the file (JSON), to tell
// when the record has gone stale.
type fileMeta struct {
	Size  int64  `json:"sz"`
	Mtime int64  `json:"mt"` // unix nanoseconds
	At    int64  `json:"at,omitempty"`
	User  string `json:"u,omitempty"`
	IP    string `json:"ip,omitempty"` // the uploader's address (newer records)
}

func metaOf(fi fs.FileInfo, at int64, user, ip string) []byte {
	return metaFor(fi.Size(), fi.ModTime().UnixNano(), at, user, ip)
}

// metaFor is metaOf of a file of size bytes and mtime (unix nanoseconds).
func metaFor(size, mtime, at int64, user, ip string) []byte {
	b, _ := json.Marshal(fileMeta{Size: size, Mtime: mtime, At: at, User: user, IP: ip})
	return b
}

// uploadedBy reports whether the record meta says the account user from
// the address ip uploaded the file (records older than the address field
// never do).
func uploadedBy(meta []byte, user, ip string) bool {
	var fm fileMeta
	if ip == "" || json.Unmarshal(meta, &fm) != nil {
		return false
	}
	return fm.User == user && fm.IP == ip
}

// fresh reports whether fi still looks like the file the record described.
func fresh(meta []byte, fi fs.FileInfo) bool {
	var fm fileMeta
	if json.Unmarshal(meta, &fm) != nil {
		return false
	}
	return fm.Size == fi.Size() && fm.Mtime == fi.ModTime().UnixNano()
}

package up2k

import (
	"encoding/json"
	"fmt"
	"hash"
	"path"
	"sync"
	"time"

	"hoard/store"
)

// record is what a session store keeps of an unfinished upload (as JSON).
type record struct {
	Wark    string   `json:"wark"`
	Dir     string   `json:"dir"`   // folder inside the volume, "." for its top
	Name    string   `json:"name"`  // final file name, reserved by its work file
	Asked   string   `json:"asked"` // the name the client asked for
	Size    int64    `json:"size"`
	Lmod    int64    `json:"lmod"` // unix seconds, becomes the file's mtime
	CS      int64    `json:"cs"`   // chunk size
	Hashes  []string `json:"hash"` // as the client sent them, one per chunk
	Created int64    `json:"t0"`   // unix nanoseconds
	Life    int64    `json:"life,omitempty"`
	Replace bool     `json:"replace,omitempty"`
	User    string   `json:"user,omitempty"`
	IP      string   `json:"ip,omitempty"`
}

// session is one upload in progress (or, while ready is open, one being
// set up or re-verified after a restart).
type session struct {
	vol *store.Volume
	db  SessionStore
	rec record // immutable after the session is made

	uniq []string       // unique chunk keys in first-occurrence order
	cmp  []string       // per unique chunk: the client's hash without padding
	sent []string       // per unique chunk: the client's hash as sent
	at   [][]int        // per unique chunk: the chunk indexes that hold it
	pos  map[string]int // key → unique index

	ready chan struct{} // closed once the session can be used
	err   error         // set before ready closes when it cannot be used

	mu        sync.Mutex // protects the fields below
	have      []bool     // per unique chunk: on disk and recorded
	nhave     int
	busy      []bool // per unique chunk: a request is writing it
	subc      map[int]*subState
	dirSynced bool // the work file's folder was fsynced
	fin       chan struct{}
	finishing bool // a request is publishing the file; fin closes when it is done
	done      bool // published (final is set) or dropped (gone is set)
	gone      bool
	final     string
	finalInfo finalInfo
	poke      time.Time
}

// finalInfo is what a finished upload's handshake reports.
type finalInfo struct {
	lmod int64
}

// subState is an unfinished chunk sent in sub-chunks (X-Up2k-Subc): the
// next offset expected and the hash of the bytes so far. Memory only.
type subState struct {
	next int64
	h    hash.Hash
}

// newSession builds a session from a record, validating it.
func newSession(vol *store.Volume, db SessionStore, rec record) (*session, error) {
	s := &session{vol: vol, db: db, rec: rec, pos: map[string]int{}, ready: make(chan struct{})}
	if int64(len(rec.Hashes)) != NumChunks(rec.Size, max(rec.CS, 1)) || rec.CS <= 0 {
		return nil, fmt.Errorf("up2k: session %s: %d hashes for %d bytes in chunks of %d", rec.Wark, len(rec.Hashes), rec.Size, rec.CS)
	}
	for i, h := range rec.Hashes {
		key, cmp, err := ParseHash(h)
		if err != nil {
			return nil, err
		}
		u, ok := s.pos[key]
		if !ok {
			u = len(s.uniq)
			s.pos[key] = u
			s.uniq = append(s.uniq, key)
			s.cmp = append(s.cmp, cmp)
			s.sent = append(s.sent, h)
			s.at = append(s.at, nil)
		} else if len(cmp) > len(s.cmp[u]) && cmp[:len(s.cmp[u])] == s.cmp[u] {
			s.cmp[u] = cmp
		} else if len(cmp) <= len(s.cmp[u]) && s.cmp[u][:len(cmp)] == cmp {
		} else {
			return nil, invalidf("chunk hashes %d and %d share their first 44 characters but differ after that", s.at[u][0], i)
		}
		s.at[u] = append(s.at[u], i)
	}
	s.have = make([]bool, len(s.uniq))
	s.busy = make([]bool, len(s.uniq))
	return s, nil
}

func (s *session) blob() ([]byte, error) { return json.Marshal(s.rec) }

// rel is the final file's path inside the volume.
func (s *session) rel() string { return path.Join(s.rec.Dir, s.rec.Name) }

// chunkStart is the offset of unique chunk u's first occurrence.
func (s *session) chunkStart(u int) int64 { return int64(s.at[u][0]) * s.rec.CS }

// chunkLen is the length of unique chunk u.
func (s *session) chunkLen(u int) int64 { return chunkLen(s.rec.Size, s.rec.CS, s.at[u][0]) }

// needLocked lists the hashes still needed, as the client sent them, in
// first-occurrence order. s.mu must be held.
func (s *session) needLocked() []string {
	out := make([]string, 0, len(s.uniq)-s.nhave)
	for u, ok := range s.have {
		if !ok {
			out = append(out, s.sent[u])
		}
	}
	return out
}

// samePath reports whether a handshake for name in dir means this upload.
func (s *session) samePath(dir, name string) bool {
	return s.rec.Dir == dir && (s.rec.Name == name || s.rec.Asked == name)
}

// missing is how many bytes of the file are not stored yet.
func (s *session) missing() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var n int64
	for u, ok := range s.have {
		if !ok {
			n += s.chunkLen(u) * int64(len(s.at[u]))
		}
	}
	return n
}

// keys returns the session's chunk hashes in order, each cut to the
// 44-character key copyparty's index and clients use.
func (s *session) keys() []string {
	out := make([]string, len(s.rec.Hashes))
	for i, h := range s.rec.Hashes {
		out[i] = h[:min(len(h), KeyLen)]
	}
	return out
}

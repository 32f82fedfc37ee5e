package main

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// up2k is the least a Go server can do for copyparty's up2k protocol while
// still storing the bytes: a handshake asks for every chunk of a file it
// has not completed, a chunk post is written at its offset, and nothing is
// verified (no SHA-512), recorded or synced. It is the ceiling up2k-many is
// measured against (`bench/compare.sh`, PEERS="... gobare"), as
// bench/nullup2k (which stores nothing) is u2c.py's floor.
type up2k struct {
	root  *os.Root
	mu    sync.Mutex
	sess  map[string]*u2sess // wark → session, while it is not complete
	warks map[string]string  // path + size → its wark (complete when not in sess)
}

type u2sess struct {
	rel    string
	size   int64
	cs     int64
	hashes []string
	left   map[string]bool // chunk hashes not yet received
}

type u2hs struct {
	Name string   `json:"name"`
	Size int64    `json:"size"`
	Hash []string `json:"hash"`
}

// chunkSize is up2k's chunk size for a file of size bytes (as copyparty's
// up2k_chunksize): 1 MiB growing until the file has at most 256 chunks,
// or, from 32 MiB chunks on, at most 4096.
func chunkSize(size int64) int64 {
	cs, step := int64(1<<20), int64(512<<10)
	for {
		for _, mul := range []int64{1, 2} {
			n := (size + cs - 1) / cs
			if n <= 256 || (cs >= 32<<20 && n <= 4096) {
				return cs
			}
			cs += step
			step *= mul
		}
	}
}

func (u *up2k) serve(w http.ResponseWriter, r *http.Request) {
	if wark := r.Header.Get("X-Up2k-Wark"); wark != "" {
		u.chunk(w, r, wark)
		return
	}
	var h u2hs
	if err := json.NewDecoder(io.LimitReader(r.Body, 16<<20)).Decode(&h); err != nil || h.Name == "" || strings.Contains(h.Name, "/") || h.Size < 0 {
		http.Error(w, "bad handshake", http.StatusBadRequest)
		return
	}
	rel := path.Join(strings.TrimPrefix(r.URL.Path, "/"), h.Name)
	key := rel + "\x00" + strconv.FormatInt(h.Size, 10)
	need := []string{}
	u.mu.Lock()
	wark, known := u.warks[key]
	s := u.sess[wark]
	if !known {
		var id [22]byte
		rand.Read(id[:])
		wark = hex.EncodeToString(id[:])
		s = &u2sess{rel: rel, size: h.Size, cs: chunkSize(h.Size), hashes: h.Hash, left: map[string]bool{}}
		for _, x := range h.Hash {
			s.left[x] = true
		}
		u.sess[wark], u.warks[key] = s, wark
	}
	if s != nil { // not complete: what is still missing
		for _, x := range s.hashes {
			if s.left[x] && !slices.Contains(need, x) {
				need = append(need, x)
			}
		}
	}
	u.mu.Unlock()
	if !known && h.Size == 0 {
		u.finish(wark)
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"name": h.Name, "purl": r.URL.Path, "size": h.Size, "lmod": 0,
		"hash": need, "wark": wark, "sprs": true,
	})
}

// chunk writes one post: a single hash, or u2c's stitched form (first
// hash, prefix length, prefixes of the chunks that follow it).
func (u *up2k) chunk(w http.ResponseWriter, r *http.Request, wark string) {
	u.mu.Lock()
	s := u.sess[wark]
	u.mu.Unlock()
	if s == nil {
		http.Error(w, "unknown wark", http.StatusBadRequest)
		return
	}
	parts := strings.Split(r.Header.Get("X-Up2k-Hash"), ",")
	i := slices.Index(s.hashes, parts[0])
	if i < 0 {
		http.Error(w, "unknown chunk", http.StatusBadRequest)
		return
	}
	n := 1
	if len(parts) == 3 && parts[1] != "" {
		k := int(parts[1][0] - '0')
		if k > 0 {
			n += len(parts[2]) / k
		}
	}
	f, err := u.root.OpenFile(s.rel, os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		http.Error(w, err.Error(), http.StatusConflict)
		return
	}
	_, err = io.Copy(io.NewOffsetWriter(f, int64(i)*s.cs), r.Body)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	u.mu.Lock()
	for _, x := range s.hashes[i:min(len(s.hashes), i+n)] {
		delete(s.left, x)
	}
	left := len(s.left)
	u.mu.Unlock()
	if left == 0 {
		u.finish(wark)
	}
	io.WriteString(w, "thank")
}

// finish makes sure the file exists at its size and ends the session.
func (u *up2k) finish(wark string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	s := u.sess[wark]
	if s == nil {
		return
	}
	if f, err := u.root.OpenFile(s.rel, os.O_WRONLY|os.O_CREATE, 0o644); err == nil {
		f.Truncate(s.size)
		f.Close()
	}
	delete(u.sess, wark)
}

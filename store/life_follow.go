package store

import (
	"container/heap"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// Lifetimes follow their files: a moved file keeps its deadline at its new
// path (in its new volume's state folder, with its new inode when it was
// copied across file systems), and a deleted file's expiry is forgotten.

// lifeMoved re-points the expiries of from/fromRel (a file, or with tree
// everything below the folder) to to/toRel.
func (s *Store) lifeMoved(from *Volume, fromRel string, to *Volume, toRel string, tree bool) {
	j := s.janitor
	if j == nil {
		return
	}
	ev := Event{From: fromRel, Rel: toRel, Tree: tree}
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, e := range j.mu.h {
		if e.vol != from || !underRel(e.Rel, fromRel, tree) {
			continue
		}
		e.Rel = ev.Rebase(e.Rel)
		if fi, err := to.root.Lstat(e.Rel); err == nil {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok {
				e.Ino = st.Ino
			}
		}
		old := e.file
		e.vol = to
		if to != from {
			if to.hist == "" {
				s.log.Warn("a moved file's lifetime cannot be kept across restarts: its new volume has no state folder", "volume", "/"+to.VPath, "path", e.Rel)
				os.Remove(old)
				e.file = ""
				continue
			}
			e.file = filepath.Join(expireDir(to), filepath.Base(old))
		}
		data, _ := json.Marshal(e)
		err := os.MkdirAll(filepath.Dir(e.file), 0o700)
		if err == nil {
			err = writeFileAtomic(e.file, data)
		}
		if err != nil {
			s.log.Warn("could not record a moved file's lifetime; it holds until the next restart", "volume", "/"+to.VPath, "path", e.Rel, "err", err)
			continue
		}
		if old != e.file {
			os.Remove(old)
		}
	}
}

// lifeRemoved forgets the expiries of rel in v (with tree, everything
// below the folder).
func (s *Store) lifeRemoved(v *Volume, rel string, tree bool) {
	j := s.janitor
	if j == nil {
		return
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	h := j.mu.h[:0]
	for _, e := range j.mu.h {
		if e.vol == v && underRel(e.Rel, rel, tree) {
			if e.file != "" {
				os.Remove(e.file)
			}
			continue
		}
		h = append(h, e)
	}
	clear(j.mu.h[len(h):])
	j.mu.h = h
	heap.Init(&j.mu.h)
}

// lifeReplaced forgets the expiries of the file rel of v that name
// another file than fi, the one now there: a file replaced by an upload
// takes its lifetime with it. (Its record names its inode, which the file
// system may give to a later file at rel; the old deadline would delete
// that one.)
func (s *Store) lifeReplaced(v *Volume, rel string, fi fs.FileInfo) {
	j := s.janitor
	_, ino, ok := FileID(fi)
	if j == nil || !ok {
		return
	}
	if v.outer != nil {
		v, rel = v.outer, v.outerRel(rel)
	}
	rel = relOf(rel)
	j.mu.Lock()
	defer j.mu.Unlock()
	h := j.mu.h[:0]
	for _, e := range j.mu.h {
		if e.vol == v && e.Rel == rel && e.Ino != ino {
			if e.file != "" {
				os.Remove(e.file)
			}
			continue
		}
		h = append(h, e)
	}
	clear(j.mu.h[len(h):])
	j.mu.h = h
	heap.Init(&j.mu.h)
}

// Expiry returns when the file rel of v is to be deleted by its lifetime;
// ok is false when it has none.
func (v *Volume) Expiry(rel string) (deadline time.Time, ok bool) {
	j := v.store.janitor
	if j == nil {
		return time.Time{}, false
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, e := range j.mu.h {
		if e.vol == v && e.Rel == rel {
			return e.Deadline, true
		}
	}
	return time.Time{}, false
}

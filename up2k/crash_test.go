package up2k

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"hoard/store"
)

// A crash can happen at any instant; the instants that matter are the
// commits of the session store, with the file system as it is just before
// and just after each. crashStore takes an image of both there (the
// volume folder copied with its hard links, marks and mtimes; the session
// store cloned), and every image is then started as a server would start
// after a crash, and must hold the upload either published or resumable
// with only unacknowledged chunks needed, with no work file left that no
// session owns.

type crashImage struct {
	label string
	dir   string    // a copy of the volume folder
	db    *MemStore // a copy of the session store
	acked []int     // chunks acknowledged before the image was taken
}

type crashStore struct {
	*MemStore
	t      *testing.T
	vol    string
	mu     sync.Mutex
	images []crashImage
	acked  func() []int
}

func (c *crashStore) image(label string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	img := crashImage{label: fmt.Sprintf("%02d %s", len(c.images), label), dir: c.t.TempDir(), db: c.MemStore.clone(), acked: c.acked()}
	copyTree(c.t, c.vol, img.dir)
	c.images = append(c.images, img)
}

func (c *crashStore) PutSession(ctx context.Context, wark string, blob []byte) error {
	c.image("before PutSession")
	err := c.MemStore.PutSession(ctx, wark, blob)
	c.image("after PutSession")
	return err
}

func (c *crashStore) PutChunks(ctx context.Context, wark string, keys []string) error {
	c.image("before PutChunks")
	err := c.MemStore.PutChunks(ctx, wark, keys)
	c.image("after PutChunks")
	return err
}

func (c *crashStore) Finish(ctx context.Context, wark, rel string, meta []byte) error {
	c.image("before Finish")
	err := c.MemStore.Finish(ctx, wark, rel, meta)
	c.image("after Finish")
	return err
}

func (m *MemStore) clone() *MemStore {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := NewMemStore()
	for w, b := range m.sessions {
		c.sessions[w] = bytes.Clone(b)
	}
	for w, ks := range m.chunks {
		c.chunks[w] = maps.Clone(ks)
	}
	for w, fs := range m.files {
		c.files[w] = maps.Clone(fs)
	}
	return c
}

// copyTree copies the folder src to dst as a crash would leave it: names,
// bytes, mtimes, hoard's marks, and hard links as hard links.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	inodes := map[uint64]string{}
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) {
				return nil // went away while we looked
			}
			return err
		}
		rel, _ := filepath.Rel(src, p)
		out := filepath.Join(dst, rel)
		fi, err := os.Lstat(p)
		if err != nil {
			return nil
		}
		switch {
		case fi.IsDir():
			return os.MkdirAll(out, 0o755)
		case !fi.Mode().IsRegular():
			return nil
		}
		ino := fi.Sys().(*syscall.Stat_t).Ino
		if first, ok := inodes[ino]; ok {
			return os.Link(first, out)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil
		}
		if err := os.WriteFile(out, b, 0o644); err != nil {
			return err
		}
		if fi.Size() > int64(len(b)) {
			os.Truncate(out, fi.Size())
		}
		var mark [8]byte
		if n, err := unix.Getxattr(p, "user.hoard.partial", mark[:]); err == nil {
			unix.Setxattr(out, "user.hoard.partial", mark[:n], 0)
		}
		inodes[ino] = out
		return os.Chtimes(out, fi.ModTime(), fi.ModTime())
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestCrashAtEveryCommit(t *testing.T) {
	for _, c := range []struct {
		name    string
		replace bool
		taken   bool // the final name is taken by then: a collision rename
	}{{"plain", false, false}, {"collision", false, true}, {"replace", true, true}} {
		t.Run(c.name, func(t *testing.T) {
			crashImages(t, c.replace, c.taken)
		})
	}
}

func crashImages(t *testing.T, replace, taken bool) {
	dir := t.TempDir()
	open := func(dir string) (*store.Store, *store.Volume) {
		st, err := store.Open(store.Config{Logger: testLog, Volumes: []store.VolumeSpec{{Src: dir, Perms: map[string]store.Perm{"*": store.PermRead | store.PermWrite | store.PermDelete}}}})
		if err != nil {
			t.Fatal(err)
		}
		return st, st.Volumes()[0]
	}
	st, vol := open(dir)
	var mu sync.Mutex
	var acked []int
	cs := &crashStore{MemStore: NewMemStore(), t: t, vol: dir, acked: func() []int {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(acked)
	}}
	m, err := New(Config{Store: st, DBs: map[*store.Volume]SessionStore{vol: cs}, Logger: testLog})
	if err != nil {
		t.Fatal(err)
	}
	data := randBytes(5<<20 + 777)
	csz, hs := hashes(data)
	h := Handshake{Vol: vol, Dir: "up", Name: "a.bin", Size: int64(len(data)), Lmod: 1600000000, Hashes: hs, IP: "127.0.0.1", MayDelete: true}
	if replace {
		h.Replace = "true"
	}
	os.MkdirAll(filepath.Join(dir, "up"), 0o755)
	if replace {
		os.WriteFile(filepath.Join(dir, "up", "a.bin"), []byte("old"), 0o644)
	}
	rep, err := m.Handshake(context.Background(), h)
	if err != nil {
		t.Fatal(err)
	}
	if taken && !replace {
		// Someone else's file takes the name before the upload ends.
		os.WriteFile(filepath.Join(dir, "up", "a.bin"), []byte("theirs"), 0o644)
	}
	for i := range hs {
		c := data[int64(i)*csz : min(int64(i+1)*csz, int64(len(data)))]
		w, err := m.WriteChunks(context.Background(), ChunkPost{Vol: vol, Wark: rep.Wark, Hashes: hs[i], Subc: -1, Body: bytes.NewReader(c), Length: int64(len(c))})
		if err != nil {
			t.Fatal(err)
		}
		if i == len(hs)-1 && !w.Done {
			t.Fatal("the last chunk did not finish the upload")
		}
		mu.Lock()
		acked = append(acked, i)
		mu.Unlock()
	}
	m.Close()
	st.Close()
	if len(cs.images) < 8 {
		t.Fatalf("only %d crash images", len(cs.images))
	}

	for _, img := range cs.images {
		t.Run(img.label, func(t *testing.T) {
			theirs, _ := os.ReadFile(filepath.Join(img.dir, "up", "a.bin"))
			st, vol := open(img.dir)
			defer st.Close()
			m, err := New(Config{Store: st, DBs: map[*store.Volume]SessionStore{vol: img.db}, Logger: testLog})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			if err := m.Load(context.Background()); err != nil {
				t.Fatal(err)
			}
			st.SweepLeftovers(m.Owns)
			st.WaitSweeps()
			hh := h
			hh.Vol = vol
			var r Reply
			for range 100 { // re-checks run in the background
				if r, err = m.Handshake(context.Background(), hh); err == nil {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range r.Need {
				if i := slices.Index(hs, n); slices.Contains(img.acked, i) {
					t.Fatalf("after the crash the upload needs chunk %d again, acknowledged before it (need %d of %d)", i, len(r.Need), len(hs))
				}
			}
			if len(r.Need) == 0 {
				got, err := os.ReadFile(filepath.Join(img.dir, filepath.FromSlash(r.Rel())))
				if err != nil || !bytes.Equal(got, data) {
					t.Fatalf("complete at %s, but the file is not the upload (%v)", r.Rel(), err)
				}
			}
			// Every work file left belongs to a session.
			ents, _ := os.ReadDir(filepath.Join(img.dir, "up"))
			for _, e := range ents {
				if !strings.HasSuffix(e.Name(), store.PartialSuffix) {
					continue
				}
				if !m.Owns(vol, "up", strings.TrimSuffix(e.Name(), store.PartialSuffix)) {
					t.Errorf("work file %s has no session", e.Name())
				}
			}
			if taken && !replace && string(theirs) == "theirs" {
				if b, _ := os.ReadFile(filepath.Join(img.dir, "up", "a.bin")); string(b) != "theirs" {
					t.Errorf("the other file at the upload's name was changed")
				}
			}
		})
	}
}

package up2k

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"hoard/store"
)

var testLog = slog.New(slog.NewTextHandler(io.Discard, nil))

// fixture is a store with one writable volume at / and a Manager on it.
type fixture struct {
	t   *testing.T
	dir string
	st  *store.Store
	vol *store.Volume
	db  SessionStore
	m   *Manager
	now time.Time
	// single hashes with crypto/sha512 only (Config.SingleHash)
	single bool
}

func newFixture(t *testing.T, flags store.Flags) *fixture {
	t.Helper()
	dir := t.TempDir()
	st, err := store.Open(store.Config{Volumes: []store.VolumeSpec{{Src: dir, Perms: map[string]store.Perm{"*": store.PermRead | store.PermWrite}, Flags: flags}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	f := &fixture{t: t, dir: dir, st: st, vol: st.Volumes()[0], db: NewMemStore(), now: time.Unix(1700000000, 0)}
	f.restart()
	return f
}

// restart replaces the Manager by a new one on the same session store, as
// a server restart does, and waits until every session is re-checked.
func (f *fixture) restart() {
	f.t.Helper()
	if f.m != nil {
		f.m.Close()
	}
	m, err := New(Config{Store: f.st, DBs: map[*store.Volume]SessionStore{f.vol: f.db}, Now: func() time.Time { return f.now }, Logger: testLog, SingleHash: f.single})
	if err != nil {
		f.t.Fatal(err)
	}
	if err := m.Load(context.Background()); err != nil {
		f.t.Fatal(err)
	}
	m.mu.Lock()
	var all []*session
	for _, s := range m.sessions {
		all = append(all, s)
	}
	m.mu.Unlock()
	for _, s := range all {
		<-s.ready
	}
	f.m = m
	f.t.Cleanup(func() { m.Close() })
}

// hashes splits data into chunks the way clients do.
func hashes(data []byte) (cs int64, hs []string) {
	cs = ChunkSize(int64(len(data)))
	for off := int64(0); off < int64(len(data)); off += cs {
		hs = append(hs, ChunkHash(data[off:min(off+cs, int64(len(data)))]))
	}
	return cs, hs
}

func randBytes(n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}

func (f *fixture) hs(name string, data []byte) (Reply, error) {
	_, hs := hashes(data)
	return f.m.Handshake(context.Background(), Handshake{Vol: f.vol, Dir: "up", Name: name, Size: int64(len(data)), Lmod: 1600000000, Hashes: hs, IP: "127.0.0.1", MayRead: true})
}

func (f *fixture) post(wark string, data []byte, cs int64, idx ...int) (Written, error) {
	var body []byte
	var hdr []string
	for _, i := range idx {
		c := data[int64(i)*cs : min(int64(i+1)*cs, int64(len(data)))]
		body = append(body, c...)
		hdr = append(hdr, ChunkHash(c))
	}
	return f.m.WriteChunks(context.Background(), ChunkPost{Vol: f.vol, Wark: wark, Hashes: strings.Join(hdr, ","), Subc: -1, Body: bytes.NewReader(body), Length: int64(len(body))})
}

func (f *fixture) file(rel string) []byte {
	b, err := os.ReadFile(filepath.Join(f.dir, rel))
	if err != nil {
		f.t.Fatal(err)
	}
	return b
}

func TestUploadResumeAndRestart(t *testing.T) {
	f := newFixture(t, store.Flags{})
	data := randBytes(5*1024*1024 + 12345)
	cs, _ := hashes(data)
	rep, err := f.hs("a.bin", data)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Need) != 6 || rep.Name != "a.bin" || rep.Dir != "up" {
		t.Fatalf("first handshake: %+v", rep)
	}
	if fi, err := os.Stat(filepath.Join(f.dir, "up", "a.bin.PARTIAL")); err != nil || fi.Size() != int64(len(data)) {
		t.Fatalf("work file: %v %v", fi, err)
	}
	for _, i := range []int{4, 1} {
		if _, err := f.post(rep.Wark, data, cs, i); err != nil {
			t.Fatal(err)
		}
	}
	// A duplicate is refused with copyparty's phrase.
	if _, err := f.post(rep.Wark, data, cs, 1); err == nil || !strings.Contains(err.Error(), "already got that") {
		t.Fatalf("duplicate chunk: %v", err)
	}
	// Restart: the two chunks are kept, one of them damaged on disk first.
	fh, _ := os.OpenFile(filepath.Join(f.dir, "up", "a.bin.PARTIAL"), os.O_RDWR, 0)
	fh.WriteAt([]byte("XX"), 4*cs+10)
	fh.Close()
	f.restart()
	rep2, err := f.hs("a.bin", data)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep2.Need) != 5 || rep2.Wark != rep.Wark {
		t.Fatalf("after restart need %d chunks, want 5 (chunk 4 was damaged)", len(rep2.Need))
	}
	// The rest, stitched.
	if _, err := f.post(rep.Wark, data, cs, 2, 3, 4); err != nil {
		t.Fatal(err)
	}
	if _, err := f.post(rep.Wark, data, cs, 0, 5); err == nil || !strings.Contains(err.Error(), "only sibling chunks can be stitched") {
		t.Fatalf("stitching chunks 0 and 5: %v", err)
	}
	if _, err := f.post(rep.Wark, data, cs, 0); err != nil {
		t.Fatal(err)
	}
	w, err := f.post(rep.Wark, data, cs, 5)
	if err != nil || !w.Done || w.Rel != "up/a.bin" {
		t.Fatalf("last post: %+v %v", w, err)
	}
	if !bytes.Equal(f.file("up/a.bin"), data) {
		t.Fatal("content differs")
	}
	if _, err := os.Stat(filepath.Join(f.dir, "up", "a.bin.PARTIAL")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("work file left behind")
	}
	if fi, _ := os.Stat(filepath.Join(f.dir, "up", "a.bin")); fi.ModTime().Unix() != 1600000000 {
		t.Fatalf("mtime %v", fi.ModTime())
	}
	rep3, err := f.hs("a.bin", data)
	if err != nil || len(rep3.Need) != 0 || rep3.Name != "a.bin" {
		t.Fatalf("final handshake: %+v %v", rep3, err)
	}
	// Same content elsewhere: a copy, no upload.
	rep4, err := f.m.Handshake(context.Background(), Handshake{Vol: f.vol, Dir: "other", Name: "b.bin", Size: int64(len(data)), Hashes: rep3.Need[:0:0], Lmod: 5, MayRead: true})
	if err == nil {
		t.Fatalf("a handshake without hashes for %d bytes was accepted: %+v", len(data), rep4)
	}
	_, hs := hashes(data)
	rep4, err = f.m.Handshake(context.Background(), Handshake{Vol: f.vol, Dir: "other", Name: "b.bin", Size: int64(len(data)), Hashes: hs, Lmod: 5, MayRead: true})
	if err != nil || len(rep4.Need) != 0 || rep4.Rel() != "other/b.bin" {
		t.Fatalf("dupe handshake: %+v %v", rep4, err)
	}
	if !bytes.Equal(f.file("other/b.bin"), data) {
		t.Fatal("copy differs")
	}
}

func TestCorruptAndBusy(t *testing.T) {
	f := newFixture(t, store.Flags{})
	data := randBytes(3 * 1024 * 1024)
	cs, hs := hashes(data)
	rep, err := f.hs("c.bin", data)
	if err != nil {
		t.Fatal(err)
	}
	bad := bytes.Clone(data[:cs])
	bad[100] ^= 1
	_, err = f.m.WriteChunks(context.Background(), ChunkPost{Vol: f.vol, Wark: rep.Wark, Hashes: hs[0], Subc: -1, Body: bytes.NewReader(bad), Length: cs})
	if KindOf(err) != Invalid || !strings.Contains(err.Error(), "your chunk got corrupted somehow") {
		t.Fatalf("corrupt chunk: %v", err)
	}
	rep, _ = f.hs("c.bin", data)
	if len(rep.Need) != 3 {
		t.Fatalf("need %d after a corrupt chunk, want 3", len(rep.Need))
	}
	// A slow body holds the chunk; a second writer is refused.
	pr, pw := ioPipe()
	var wg sync.WaitGroup
	wg.Add(1)
	var err1 error
	go func() {
		defer wg.Done()
		_, err1 = f.m.WriteChunks(context.Background(), ChunkPost{Vol: f.vol, Wark: rep.Wark, Hashes: hs[1], Subc: -1, Body: pr, Length: cs})
	}()
	pw.Write(data[cs : cs+10])
	for held := false; !held; time.Sleep(time.Millisecond) {
		f.m.mu.Lock()
		for _, s := range f.m.sessions {
			s.mu.Lock()
			held = held || (len(s.busy) > 1 && s.busy[1])
			s.mu.Unlock()
		}
		f.m.mu.Unlock()
	}
	_, err = f.post(rep.Wark, data, cs, 1)
	if err == nil || !strings.Contains(err.Error(), "that chunk is already being written to") {
		t.Fatalf("second writer: %v", err)
	}
	pw.Write(data[cs+10 : 2*cs])
	pw.Close()
	wg.Wait()
	if err1 != nil {
		t.Fatal(err1)
	}
	// Sub-chunks: chunk 2 in three pieces, with a wrong resume point.
	sub := func(off, n int64) error {
		_, err := f.m.WriteChunks(context.Background(), ChunkPost{Vol: f.vol, Wark: rep.Wark, Hashes: hs[2], Subc: off, Body: bytes.NewReader(data[2*cs+off : 2*cs+off+n]), Length: n})
		return err
	}
	if err := sub(0, 1000); err != nil {
		t.Fatal(err)
	}
	if err := sub(2000, 1000); err == nil || !strings.Contains(err.Error(), "expected resume-point was 1000") {
		t.Fatalf("wrong resume point: %v", err)
	}
	if err := sub(0, 1000); err != nil {
		t.Fatal(err)
	}
	_, err = f.m.WriteChunks(context.Background(), ChunkPost{Vol: f.vol, Wark: rep.Wark, Hashes: hs[2], Subc: 1000, Body: bytes.NewReader(nil), Length: cs})
	if err == nil || !strings.Contains(err.Error(), "exceeds chunksize") {
		t.Fatalf("past the chunk: %v", err)
	}
	if err := sub(0, 500000); err != nil {
		t.Fatal(err)
	}
	if err := sub(500000, cs-500000); err != nil {
		t.Fatal(err)
	}
	w, err := f.post(rep.Wark, data, cs, 0)
	if err != nil || !w.Done {
		t.Fatalf("last chunk: %+v %v", w, err)
	}
	if !bytes.Equal(f.file("up/c.bin"), data) {
		t.Fatal("content differs")
	}
}

func TestIdenticalChunksAndEmpty(t *testing.T) {
	f := newFixture(t, store.Flags{})
	one := randBytes(1024 * 1024)
	data := append(append(append(bytes.Clone(one), randBytes(1024*1024)...), one...), one[:5000]...)
	cs, hs := hashes(data)
	if hs[0] != hs[2] {
		t.Fatal("test data")
	}
	rep, err := f.hs("d.bin", data)
	if err != nil || len(rep.Need) != 3 {
		t.Fatalf("%+v %v", rep, err)
	}
	if _, err := f.post(rep.Wark, data, cs, 1, 2); err == nil || !strings.Contains(err.Error(), "already") && !strings.Contains(err.Error(), "sibling") {
		// chunk 2 is chunk 0's hash: by the unique list it is not chunk 1's sibling
		t.Logf("stitching 1,2: %v", err)
	}
	for _, i := range []int{0, 1, 3} {
		if _, err := f.post(rep.Wark, data, cs, i); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(f.file("up/d.bin"), data) {
		t.Fatal("content differs")
	}
	r, err := f.m.Handshake(context.Background(), Handshake{Vol: f.vol, Dir: "up", Name: "e.txt", Size: 0, Lmod: 1700000000})
	if err != nil || len(r.Need) != 0 || r.Wark != MetaWark("hunter2", 1700000000, 0, "up", "e.txt") {
		t.Fatalf("empty: %+v %v", r, err)
	}
	if fi, err := os.Stat(filepath.Join(f.dir, "up", "e.txt")); err != nil || fi.Size() != 0 {
		t.Fatal(err)
	}
}

func TestExpire(t *testing.T) {
	f := newFixture(t, store.Flags{})
	data := randBytes(2 * 1024 * 1024)
	if _, err := f.hs("x.bin", data); err != nil {
		t.Fatal(err)
	}
	if n := f.m.Expire(context.Background()); n != 0 {
		t.Fatalf("expired %d fresh sessions", n)
	}
	f.now = f.now.Add(25 * time.Hour)
	if n := f.m.Expire(context.Background()); n != 1 {
		t.Fatalf("expired %d, want 1", n)
	}
	if _, err := os.Stat(filepath.Join(f.dir, "up", "x.bin.PARTIAL")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("work file of an expired session left behind")
	}
	n := 0
	f.db.Sessions(context.Background(), func(string, []byte, []string) error { n++; return nil })
	if n != 0 {
		t.Fatal("expired session still stored")
	}
}

// TestStitchedCorrupt posts four chunks in one body with the third
// corrupted, through the lanes and through crypto/sha512: the first two
// are kept, the third is reported, and it and the fourth stay needed.
func TestStitchedCorrupt(t *testing.T) {
	for _, single := range []bool{false, true} {
		f := newFixture(t, store.Flags{})
		f.single = single
		f.restart()
		data := randBytes(4*1024*1024 + 3000)
		cs, hs := hashes(data)
		rep, err := f.hs("s.bin", data)
		if err != nil {
			t.Fatal(err)
		}
		body := bytes.Clone(data[:4*cs])
		body[2*cs+cs/2] ^= 0x40
		w, err := f.m.WriteChunks(context.Background(), ChunkPost{Vol: f.vol, Wark: rep.Wark, Hashes: strings.Join(hs[:4], ","), Subc: -1, Body: bytes.NewReader(body), Length: 4 * cs})
		if KindOf(err) != Invalid || !strings.Contains(err.Error(), "your chunk got corrupted somehow") || !strings.Contains(err.Error(), hs[2]) {
			t.Fatalf("single=%v: %v", single, err)
		}
		if w.Chunks != 2 {
			t.Fatalf("single=%v: %d chunks confirmed, want 2", single, w.Chunks)
		}
		rep, _ = f.hs("s.bin", data)
		if len(rep.Need) != 3 || rep.Need[0] != hs[2] || rep.Need[1] != hs[3] || rep.Need[2] != hs[4] {
			t.Fatalf("single=%v: need %v", single, rep.Need)
		}
		if w, err := f.post(rep.Wark, data, cs, 2, 3, 4); err != nil || !w.Done {
			t.Fatalf("single=%v: rest: %+v %v", single, w, err)
		}
		if !bytes.Equal(f.file("up/s.bin"), data) {
			t.Fatalf("single=%v: content differs", single)
		}
	}
}

// TestManyConcurrentPosts uploads 12 files of 3–5 chunks at once, one
// chunk per post, in scattered order: with this many posts in flight
// the last chunks go through the lanes too (where the CPU has them).
// Every file arrives intact and every lane buffer is given back.
func TestManyConcurrentPosts(t *testing.T) {
	f := newFixture(t, store.Flags{})
	type upload struct {
		name string
		data []byte
		cs   int64
		wark string
	}
	ups := make([]*upload, 12)
	for i := range ups {
		u := &upload{name: fmt.Sprintf("m%02d.bin", i), data: randBytes((2+i%3)*1024*1024 + 1000*i + 1)}
		u.cs, _ = hashes(u.data)
		rep, err := f.hs(u.name, u.data)
		if err != nil {
			t.Fatal(err)
		}
		u.wark = rep.Wark
		ups[i] = u
	}
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for _, u := range ups {
		n := int((int64(len(u.data)) + u.cs - 1) / u.cs)
		for k := range n {
			wg.Go(func() {
				if _, err := f.post(u.wark, u.data, u.cs, (k*7+3)%n); err != nil {
					errs <- fmt.Errorf("%s chunk %d: %w", u.name, (k*7+3)%n, err)
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for _, u := range ups {
		if !bytes.Equal(f.file("up/"+u.name), u.data) {
			t.Errorf("%s differs", u.name)
		}
	}
	if len(f.m.laneBufs) != 0 {
		t.Errorf("%d lane buffers still taken", len(f.m.laneBufs))
	}
}

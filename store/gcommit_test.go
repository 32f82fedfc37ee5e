package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// memSmallLog is a SmallLog in memory that outlives the stores using it,
// as the state database outlives a crashed process.
type memSmallLog struct {
	mu      sync.Mutex
	next    uint64
	ents    map[uint64][]byte
	commits atomic.Int64
	retires atomic.Int64
	fail    error // Commit fails with it
}

func newMemSmallLog() *memSmallLog { return &memSmallLog{ents: map[uint64][]byte{}} }

func (m *memSmallLog) Commit(v *Volume, rec []byte, e *Event, drop []uint64) (uint64, uint64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail != nil {
		return 0, 0, m.fail
	}
	m.commits.Add(1)
	m.next++
	m.ents[m.next] = slices.Clone(rec)
	for _, d := range drop {
		delete(m.ents, d)
	}
	return m.next, 0, nil
}

func (m *memSmallLog) Retire(v *Volume, ids []uint64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.retires.Add(1)
	for _, id := range ids {
		delete(m.ents, id)
	}
	return nil
}

func (m *memSmallLog) Each(ctx context.Context, v *Volume, fn func(uint64, []byte) error) error {
	m.mu.Lock()
	var ids []uint64
	for id := range m.ents {
		ids = append(ids, id)
	}
	m.mu.Unlock()
	slices.Sort(ids)
	for _, id := range ids {
		m.mu.Lock()
		b, ok := m.ents[id]
		m.mu.Unlock()
		if ok {
			if err := fn(id, b); err != nil {
				return err
			}
		}
	}
	return nil
}

func (m *memSmallLog) len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.ents)
}

// gcStore opens a store on dir with group commit into l and checkpoints
// only when asked (or when a change settles).
func gcStore(t *testing.T, dir string, l SmallLog) *Store {
	t.Helper()
	old := checkpointEvery
	checkpointEvery = time.Hour
	t.Cleanup(func() { checkpointEvery = old })
	v, err := ParseVolume(dir + "::rwmd")
	if err != nil {
		t.Fatal(err)
	}
	st, err := Open(Config{Volumes: []VolumeSpec{v}})
	if err != nil {
		t.Fatal(err)
	}
	st.SetSmallLog(l)
	st.ReplaySmall(context.Background(), nil)
	return st
}

// crash drops st without its last checkpoint, as a killed process does.
func crash(st *Store) {
	st.stopLoop()
	st.Close()
}

func put(t *testing.T, v *Volume, dir, name, body string) string {
	t.Helper()
	res, err := v.Ingest(context.Background(), dir, strings.NewReader(body), IngestOptions{Name: name, Size: int64(len(body)), ClientIP: "10.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	return res.Rel
}

// TestGroupCommitOneFlush: a small PUT is one synced journal write, with
// no fsync of its own nor of its folder; the checkpoint flushes the file
// system once for all of them and retires the entries.
func TestGroupCommitOneFlush(t *testing.T) {
	if fsyncEachFile {
		t.Skip("no syncfs here")
	}
	dir := t.TempDir()
	l := newMemSmallLog()
	st := gcStore(t, dir, l)
	defer st.Close()
	var flushes atomic.Int64
	st.gc.flush = func(f *os.File) error { flushes.Add(1); return syncFS(f) }
	var fsyncs atomic.Int64
	ObserveFsync(func(time.Duration) { fsyncs.Add(1) })
	defer ObserveFsync(nil)
	v := st.Volumes()[0]
	const n = 20
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { put(t, v, "d", fmt.Sprint("f", i), fmt.Sprint("body ", i)) })
	}
	wg.Wait()
	if c := l.commits.Load(); c != n {
		t.Errorf("%d journal commits for %d uploads, want one each", c, n)
	}
	if f := fsyncs.Load(); f != 0 {
		t.Errorf("%d fsyncs for %d small uploads, want none (the journal write is their flush)", f, n)
	}
	if l.len() != n {
		t.Fatalf("%d entries pending, want %d", l.len(), n)
	}
	if err := st.checkpoint(); err != nil {
		t.Fatal(err)
	}
	if flushes.Load() != 1 || l.len() != 0 {
		t.Errorf("checkpoint: %d file-system flushes, %d entries left; want 1 and 0", flushes.Load(), l.len())
	}
	if st.gc.active.Load() != 0 {
		t.Errorf("%d entries still counted after the checkpoint", st.gc.active.Load())
	}
}

// TestGroupCommitReplayRestoresLost simulates what a real power loss does
// and a SIGKILL cannot: the published files' unflushed bytes and names are
// lost (short, zeroed, missing, the folder gone). The replay at the next
// start writes each one back byte for byte, leaves a name that holds
// another file now alone, and retires every entry.
func TestGroupCommitReplayRestoresLost(t *testing.T) {
	dir := t.TempDir()
	l := newMemSmallLog()
	st := gcStore(t, dir, l)
	v := st.Volumes()[0]
	want := map[string]string{}
	for i := range 12 {
		body := strings.Repeat(fmt.Sprint("content ", i, " "), 100*i+1)
		rel := put(t, v, fmt.Sprint("sub", i%3), fmt.Sprint("f", i, ".txt"), body)
		want[rel] = body
	}
	// A collision with a pending entry goes the per-file way; one with a
	// file already checkpointed is renamed and its entry follows.
	want[put(t, v, "sub0", "same.txt", "first")] = "first"
	want[put(t, v, "sub0", "same.txt", "second")] = "second"
	pending := l.len()
	if err := st.checkpoint(); err != nil {
		t.Fatal(err)
	}
	want[put(t, v, "sub0", "same.txt", "third")] = "third"
	if pending != len(want)-2 || l.len() != 1 {
		t.Fatalf("%d then %d entries, want %d then 1", pending, l.len(), len(want)-2)
	}
	if err := st.checkpoint(); err != nil {
		t.Fatal(err)
	}
	checkpointed := len(want)
	// A small file of 256 KiB, the largest group-committed.
	big := strings.Repeat("z", SmallFile)
	want[put(t, v, "", "max.bin", big)] = big
	if l.len() != 1 {
		t.Fatalf("%d entries pending, want 1", l.len())
	}
	late := map[string]bool{"max.bin": true}
	for i := range 12 {
		body := strings.Repeat(fmt.Sprint("late ", i, " "), 100*i+1)
		rel := put(t, v, fmt.Sprint("sub", i%3), fmt.Sprint("g", i, ".txt"), body)
		want[rel] = body
		late[rel] = true
	}
	if l.len() != len(want)-checkpointed {
		t.Fatalf("%d entries for %d uploads", l.len(), len(want)-checkpointed)
	}
	crash(st)
	// What was checkpointed is on the disk; what was not may be lost.
	for rel := range want {
		if !late[rel] {
			delete(want, rel)
		}
	}

	// The "crash" loses data: each way on some files.
	rels := slices.Sorted(func(yield func(string) bool) {
		for k := range want {
			if !yield(k) {
				return
			}
		}
	})
	p := func(rel string) string { return filepath.Join(dir, filepath.FromSlash(rel)) }
	for i, rel := range rels {
		switch i % 4 {
		case 0:
			os.Truncate(p(rel), 0)
		case 1: // zeroed, same length
			n := len(want[rel])
			f, _ := os.OpenFile(p(rel), os.O_WRONLY, 0)
			f.WriteAt(make([]byte, n), 0)
			f.Close()
		case 2:
			os.Remove(p(rel))
		}
	}
	os.RemoveAll(filepath.Join(dir, "sub2")) // a folder whose entry was lost
	// A name that holds another file now (replaced outside hoard): kept.
	other := rels[3]
	os.Remove(p(other))
	os.WriteFile(p(other), []byte("replaced outside"), 0o644)
	want[other] = "replaced outside"
	old := time.Unix(1_600_000_000, 0)
	os.Chtimes(p(rels[1]), old, old)

	st2 := gcStore(t, dir, l)
	defer st2.Close()
	for rel, body := range want {
		b, err := os.ReadFile(p(rel))
		if err != nil || string(b) != body {
			t.Errorf("%s after replay: %d bytes (%v), want %d bytes of its upload", rel, len(b), err, len(body))
		}
	}
	if fi, err := os.Stat(p(rels[1])); err == nil && fi.ModTime().Equal(old) {
		t.Errorf("%s: the replay left the mtime of the damaged file", rels[1])
	}
	if l.len() != 0 {
		t.Errorf("%d entries left after the replay", l.len())
	}
	ents, _ := os.ReadDir(filepath.Join(dir, "sub0"))
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), tempPrefix) {
			t.Errorf("the replay left a work file %s", e.Name())
		}
	}
}

// TestGroupCommitNoResurrect: deletes, moves, replaces, appends and
// touches through hoard after the uploads are acknowledged are never
// undone by a replay, even when the crash comes right after them and the
// files' bytes had not been flushed.
func TestGroupCommitNoResurrect(t *testing.T) {
	dir := t.TempDir()
	l := newMemSmallLog()
	st := gcStore(t, dir, l)
	v := st.Volumes()[0]
	ctx := context.Background()
	admin := Actor{User: "*", IP: "10.0.0.1"}
	at := func(rel string) Loc { return Loc{Vol: v, Rel: rel} }
	for _, n := range []string{"del", "move", "repl", "app", "tree/a", "tree/b", "keep", "touch", "cpsrc", "cpdst"} {
		d, name, ok := strings.Cut(n, "/")
		if !ok {
			d, name = "", n
		}
		put(t, v, d, name, "orig "+n)
	}
	if _, err := st.Delete(ctx, admin, at("del"), DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Delete(ctx, admin, at("tree"), DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Move(ctx, admin, at("move"), at("moved"), DestOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Ingest(ctx, "", strings.NewReader("new content"), IngestOptions{Name: "repl", Replace: true, Size: -1}); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Ingest(ctx, "", strings.NewReader("+more"), IngestOptions{Name: "app", Append: true, Size: -1}); err != nil {
		t.Fatal(err)
	}
	touched := time.Unix(1_500_000_000, 0)
	if err := st.SetMtime(ctx, admin, at("touch"), touched); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Copy(ctx, admin, at("cpsrc"), at("cpdst"), DestOptions{Overwrite: true}); err != nil {
		t.Fatal(err)
	}
	put(t, v, "", "late", "late") // still pending at the crash
	crash(st)
	// Nothing more is lost than the pending upload's bytes.
	os.Truncate(filepath.Join(dir, "late"), 0)
	st2 := gcStore(t, dir, l)
	defer st2.Close()
	if fi, err := os.Stat(filepath.Join(dir, "touch")); err != nil || !fi.ModTime().Equal(touched) {
		t.Errorf("touch: the replay undid the new mtime (%v)", err)
	}
	for name, want := range map[string]string{"del": "", "tree/a": "", "move": "", "moved": "orig move", "repl": "new content", "app": "orig app+more", "keep": "orig keep", "late": "late", "cpdst": "orig cpsrc"} {
		b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
		if want == "" {
			if err == nil {
				t.Errorf("%s came back after the replay: %q", name, b)
			}
			continue
		}
		if string(b) != want {
			t.Errorf("%s = %q (%v), want %q", name, b, err, want)
		}
	}
}

// TestGroupCommitDeleteRace: uploads and deletes of the same names race;
// whatever the order, a replay after a crash gives back exactly the files
// that were there, never one a delete removed.
func TestGroupCommitDeleteRace(t *testing.T) {
	dir := t.TempDir()
	l := newMemSmallLog()
	st := gcStore(t, dir, l)
	v := st.Volumes()[0]
	ctx := context.Background()
	admin := Actor{User: "*", IP: "10.0.0.1"}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 40 {
				name := fmt.Sprint("n", (i+w)%10)
				if (i+w)%3 == 0 {
					st.Delete(ctx, admin, Loc{Vol: v, Rel: name}, DeleteOptions{})
				} else {
					v.Ingest(ctx, "", strings.NewReader(name), IngestOptions{Name: name, Size: -1})
				}
			}
		})
	}
	wg.Wait()
	list := func() []string {
		ents, _ := os.ReadDir(dir)
		var out []string
		for _, e := range ents {
			if !e.IsDir() {
				out = append(out, e.Name())
			}
		}
		sort.Strings(out)
		return out
	}
	before := list()
	crash(st)
	st2 := gcStore(t, dir, l)
	defer st2.Close()
	after := list()
	for _, n := range after {
		if !slices.Contains(before, n) {
			t.Errorf("%s came back after the replay", n)
		}
	}
	for _, n := range before {
		if !slices.Contains(after, n) {
			t.Errorf("%s was lost by the replay", n)
		}
	}
}

// TestGroupCommitFlushesVolume: with the state folder elsewhere (--hist,
// possibly another file system), the checkpoint flushes the volume's file
// system, through the volume's own folder (the journal's batch flushed
// the state folder's).
func TestGroupCommitFlushesVolume(t *testing.T) {
	if fsyncEachFile {
		t.Skip("no syncfs here")
	}
	dir, hist := t.TempDir(), t.TempDir()
	spec, err := ParseVolume(dir + "::rw")
	if err != nil {
		t.Fatal(err)
	}
	st, err := Open(Config{Volumes: []VolumeSpec{spec}, Hist: hist})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	l := newMemSmallLog()
	st.SetSmallLog(l)
	var flushed []string
	st.gc.flush = func(f *os.File) error {
		p, _ := realPath(f)
		flushed = append(flushed, p)
		return syncFS(f)
	}
	v := st.Volumes()[0]
	if !strings.HasPrefix(v.HistPath(), hist) {
		t.Fatalf("state folder %s, want one in %s", v.HistPath(), hist)
	}
	put(t, v, "sub", "f", "body")
	if l.len() != 1 {
		t.Fatalf("%d entries, want 1", l.len())
	}
	if err := st.checkpoint(); err != nil {
		t.Fatal(err)
	}
	real, _ := filepath.EvalSymlinks(dir)
	if len(flushed) != 1 || flushed[0] != real {
		t.Errorf("checkpoint flushed %q, want the volume %s", flushed, real)
	}
}

// TestGroupCommitStateFullFallsBack: when the journal refuses an entry
// (the state folder is full), the upload is flushed the per-file way and
// still succeeds; nothing is left pending.
func TestGroupCommitStateFullFallsBack(t *testing.T) {
	dir := t.TempDir()
	l := newMemSmallLog()
	l.fail = &StateFullError{Free: 1, Keep: 2}
	st := gcStore(t, dir, l)
	defer st.Close()
	var fsyncs atomic.Int64
	ObserveFsync(func(time.Duration) { fsyncs.Add(1) })
	defer ObserveFsync(nil)
	put(t, st.Volumes()[0], "", "f", "body")
	if b, _ := os.ReadFile(filepath.Join(dir, "f")); string(b) != "body" {
		t.Fatalf("f = %q", b)
	}
	if fsyncs.Load() == 0 || l.len() != 0 || st.gc.active.Load() != 0 {
		t.Errorf("fsyncs %d, entries %d, active %d: want the per-file way", fsyncs.Load(), l.len(), st.gc.active.Load())
	}
}

// TestGroupCommitOffWithFlag: --no-group-sync keeps the per-file flushes.
func TestGroupCommitOffWithFlag(t *testing.T) {
	dir := t.TempDir()
	v, _ := ParseVolume(dir + "::rw")
	st, err := Open(Config{Volumes: []VolumeSpec{v}, NoGroupSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	l := newMemSmallLog()
	st.SetSmallLog(l)
	put(t, st.Volumes()[0], "", "f", "body")
	if l.commits.Load() != 0 {
		t.Errorf("%d journal commits with group sync off", l.commits.Load())
	}
}

// TestSmallRecRoundTrip and FuzzDecodeSmall: the entry's parser.
func TestSmallRecRoundTrip(t *testing.T) {
	r := smallRec{Src: "/srv/a", Rel: "x/y.txt", Dev: 1 << 40, Ino: 77, Mtime: -5, Data: []byte("hello")}
	got, err := decodeSmall(r.encode())
	if err != nil || got.Src != r.Src || got.Rel != r.Rel || got.Dev != r.Dev || got.Ino != r.Ino || got.Mtime != r.Mtime || !bytes.Equal(got.Data, r.Data) {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	b := r.encode()
	b[len(b)-6] ^= 1
	if _, err := decodeSmall(b); !errors.Is(err, errBadSmall) {
		t.Errorf("a flipped bit: %v, want errBadSmall", err)
	}
	for _, rel := range []string{"../x", "/x", "a//b", "."} {
		r.Rel = rel
		if _, err := decodeSmall(r.encode()); err == nil {
			t.Errorf("rel %q accepted", rel)
		}
	}
}

func FuzzDecodeSmall(f *testing.F) {
	f.Add((&smallRec{Src: "/s", Rel: "a", Data: []byte("d")}).encode())
	f.Add([]byte{smallMagic, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := decodeSmall(b)
		if err != nil {
			return
		}
		if !bytes.Equal(r.encode(), b) {
			t.Fatalf("decoded %+v does not encode back to its input", r)
		}
	})
}

// budgetLog is a memSmallLog with a checkpoint budget (SmallBudget).
type budgetLog struct {
	*memSmallLog
	budget int64
}

func (b budgetLog) CheckpointBytes() int64 { return b.budget }

// TestGroupCommitBudget: a log's budget smaller than checkpointBytes
// starts a checkpoint once that many bytes wait (here with no timer: the
// test's checkpoints otherwise run only when asked); a larger one does not
// raise checkpointBytes.
func TestGroupCommitBudget(t *testing.T) {
	if fsyncEachFile {
		t.Skip("no syncfs here")
	}
	l := budgetLog{newMemSmallLog(), 100}
	st := gcStore(t, t.TempDir(), l)
	defer st.Close()
	if st.gc.cpBytes != 100 {
		t.Fatalf("checkpoint budget %d, want the log's 100", st.gc.cpBytes)
	}
	v := st.Volumes()[0]
	put(t, v, "d", "a", strings.Repeat("a", 40))
	if l.len() != 1 {
		t.Fatalf("%d entries pending after 40 bytes, want 1 (under the budget)", l.len())
	}
	put(t, v, "d", "b", strings.Repeat("b", 70))
	deadline := time.Now().Add(10 * time.Second)
	for l.len() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d entries still pending with 110 bytes waiting and a budget of 100", l.len())
		}
		time.Sleep(5 * time.Millisecond)
	}
	big := gcStore(t, t.TempDir(), budgetLog{newMemSmallLog(), checkpointBytes * 2})
	defer big.Close()
	if big.gc.cpBytes != checkpointBytes {
		t.Errorf("checkpoint budget %d with a log asking for %d, want checkpointBytes (%d)", big.gc.cpBytes, checkpointBytes*2, checkpointBytes)
	}
}

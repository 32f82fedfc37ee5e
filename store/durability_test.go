package store

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Unit tests of the paths that make writes durable: a work file is
// fsynced, then published under its name without clobbering (or renamed
// on a collision), then its folder is fsynced, and only then is the
// upload reported; appends are cut back when they fail or a crash cuts
// them off; up2k's partial files.

// names lists the entries of dir (the state folder left out), sorted.
func names(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if e.Name() != HistName {
			out = append(out, e.Name())
		}
	}
	return out
}

// flushes records the folder fsyncs of v, running each for real, and
// calls check (when set) before each.
type flushes struct {
	mu    sync.Mutex
	dirs  []string
	check func(dir string)
}

func (f *flushes) install(v *Volume) {
	v.dirs.flush = func(dir string) error {
		if f.check != nil {
			f.check(dir)
		}
		f.mu.Lock()
		f.dirs = append(f.dirs, dir)
		f.mu.Unlock()
		return v.fsyncDir(dir)
	}
}

func (f *flushes) list() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.dirs)
}

// TestPublishOrder: when the folder is fsynced, the file is already under
// its final name with all its bytes and the work file's name is gone; the
// upload is reported (event, return) only after that fsync.
func TestPublishOrder(t *testing.T) {
	st, dirs := openStore(t, "::rw")
	v := st.Volumes()[0]
	evs := watch(st)
	tmp, err := v.CreateTemp("sub/dir")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tmp.File.WriteString("hello"); err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(dirs[0], "sub", "dir", tmp.name)
	if !exists(work) {
		t.Fatalf("work file %s not in the target folder", work)
	}
	final := filepath.Join(dirs[0], "sub", "dir", "a.txt")
	var f flushes
	f.check = func(dir string) {
		if got, err := os.ReadFile(final); err != nil || string(got) != "hello" {
			t.Errorf("at the folder fsync the final file holds %q (%v), want it published in full", got, err)
		}
		if exists(work) {
			t.Errorf("at the folder fsync the work file %s is still there", tmp.name)
		}
		if e := evs.take(); len(e) > 0 {
			t.Errorf("the upload was reported (%v) before its folder was fsynced", e)
		}
	}
	f.install(v)
	rel, fi, err := tmp.Publish("a.txt", PublishOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rel != "sub/dir/a.txt" || fi.Size() != 5 {
		t.Fatalf("Publish = %q, %d bytes", rel, fi.Size())
	}
	if got := f.list(); !slices.Equal(got, []string{"sub/dir"}) {
		t.Fatalf("folder fsyncs %q, want the file's folder once", got)
	}
	if e := evs.take(); len(e) != 1 || e[0].Kind != Created || e[0].Rel != "sub/dir/a.txt" || e[0].Size != 5 {
		t.Fatalf("events after Publish: %+v, want one Created of sub/dir/a.txt", e)
	}
	if _, _, err := tmp.Publish("b.txt", PublishOptions{}); err == nil {
		t.Fatal("a work file was published twice")
	}
}

// TestPublishFsyncErrors: a failed fsync of the file publishes nothing and
// leaves nothing; a failed fsync of the folder reaches the caller and the
// upload is not reported. Neither is retried into a success.
func TestPublishFsyncErrors(t *testing.T) {
	st, dirs := openStore(t, "::rw")
	v := st.Volumes()[0]
	evs := watch(st)
	var f flushes
	f.install(v)

	tmp, err := v.CreateTemp("")
	if err != nil {
		t.Fatal(err)
	}
	tmp.File.WriteString("data")
	// The work file's handle becomes a pipe: its fsync fails (EINVAL),
	// while closing it works.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer tmp.File.Close()
	tmp.File = w
	if _, _, err := tmp.Publish("x.txt", PublishOptions{}); err == nil {
		t.Fatal("Publish succeeded although the file's fsync failed")
	}
	if n := names(t, dirs[0]); len(n) != 0 {
		t.Fatalf("after a failed file fsync the folder holds %q, want nothing", n)
	}
	if d := f.list(); len(d) != 0 {
		t.Fatalf("the folder was fsynced (%q) for a file that was not published", d)
	}

	boom := errors.New("folder flush failed")
	v.dirs.flush = func(string) error { return boom }
	tmp, err = v.CreateTemp("")
	if err != nil {
		t.Fatal(err)
	}
	tmp.File.WriteString("data")
	if _, _, err := tmp.Publish("y.txt", PublishOptions{}); !errors.Is(err, boom) {
		t.Fatalf("Publish with a failing folder fsync = %v, want that error", err)
	}
	if e := evs.take(); len(e) != 0 {
		t.Fatalf("events %+v for an upload whose folder fsync failed", e)
	}
}

// TestPublishCollisions: a taken name gets copyparty's collision suffix and
// the file there is untouched; when every name it tries is taken, the
// upload fails and leaves nothing; Replace overwrites a file, never a
// folder.
func TestPublishCollisions(t *testing.T) {
	dir := t.TempDir()
	clock := time.Unix(1729612345, 678901000)
	st, err := Open(Config{Volumes: []VolumeSpec{{Src: dir, Perms: map[string]Perm{"*": PermRead | PermWrite}}}, Now: func() time.Time { return clock }})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	v := st.Volumes()[0]
	publish := func(name, body string, opt PublishOptions) (string, error) {
		t.Helper()
		tmp, err := v.CreateTemp("")
		if err != nil {
			t.Fatal(err)
		}
		tmp.File.WriteString(body)
		rel, _, err := tmp.Publish(name, opt)
		return rel, err
	}
	const ip = "10.1.2.3"
	mkfiles(t, dir, map[string]string{"a.txt": "old"})
	rel, err := publish("a.txt", "new", PublishOptions{ClientIP: ip})
	if want := v.collisionName("a.txt", ip, 0); err != nil || rel != want {
		t.Fatalf("publish over a taken name = %q, %v; want %q", rel, err, want)
	}
	if readString(t, filepath.Join(dir, "a.txt")) != "old" || readString(t, filepath.Join(dir, rel)) != "new" {
		t.Fatal("a collision changed the existing file or lost the new one")
	}
	// Every name tried is taken: the name and five collision names.
	taken := map[string]string{"b.txt": "0"}
	for i := range 5 {
		taken[v.collisionName("b.txt", ip, i)] = "0"
	}
	mkfiles(t, dir, taken)
	before := names(t, dir)
	if rel, err := publish("b.txt", "new", PublishOptions{ClientIP: ip}); !errors.Is(err, ErrExists) {
		t.Fatalf("publish with every name taken = %q, %v; want ErrExists", rel, err)
	}
	if after := names(t, dir); !slices.Equal(before, after) {
		t.Fatalf("a refused publish changed the folder: %q, was %q", after, before)
	}
	// Replace: over a file, in place; over a folder, refused.
	if rel, err := publish("a.txt", "replaced", PublishOptions{Replace: true}); err != nil || rel != "a.txt" || readString(t, filepath.Join(dir, "a.txt")) != "replaced" {
		t.Fatalf("replace = %q, %v", rel, err)
	}
	os.Mkdir(filepath.Join(dir, "d"), 0o755)
	mkfiles(t, dir, map[string]string{"d/inner": "keep"})
	before = names(t, dir)
	if _, err := publish("d", "x", PublishOptions{Replace: true}); !errors.Is(err, ErrIsDir) {
		t.Fatalf("replace of a folder = %v, want ErrIsDir", err)
	}
	if after := names(t, dir); !slices.Equal(before, after) || readString(t, filepath.Join(dir, "d", "inner")) != "keep" {
		t.Fatalf("a refused replace changed the folder: %q, was %q", after, before)
	}
	// Names the store keeps for itself are refused before anything moves.
	for _, bad := range []string{"x" + PartialSuffix, HistName, "../x", ""} {
		if _, err := publish(bad, "x", PublishOptions{}); err == nil {
			t.Errorf("published as %q", bad)
		}
	}
	if after := names(t, dir); !slices.Equal(before, after) {
		t.Fatalf("refused names changed the folder: %q, was %q", after, before)
	}
}

// TestAbortRemovesMadeFolders: an aborted upload removes its work file and
// the folders made for it, and no folder that was there before.
func TestAbortRemovesMadeFolders(t *testing.T) {
	st, dirs := openStore(t, "::rw")
	v := st.Volumes()[0]
	os.Mkdir(filepath.Join(dirs[0], "had"), 0o755)
	tmp, err := v.CreateTemp("had/new/deeper")
	if err != nil {
		t.Fatal(err)
	}
	tmp.Abort()
	tmp.Abort() // twice is harmless
	if !exists(filepath.Join(dirs[0], "had")) || exists(filepath.Join(dirs[0], "had", "new")) {
		t.Fatalf("after Abort: had %v, had/new %v; want had kept and had/new gone", exists(filepath.Join(dirs[0], "had")), exists(filepath.Join(dirs[0], "had", "new")))
	}
	if _, _, err := tmp.Publish("x", PublishOptions{}); err == nil {
		t.Fatal("an aborted work file was published")
	}
}

// failingReader gives n bytes, then err.
type failingReader struct {
	n   int
	err error
}

func (r *failingReader) Read(p []byte) (int, error) {
	if r.n == 0 {
		return 0, r.err
	}
	k := min(len(p), r.n)
	for i := range p[:k] {
		p[i] = 'x'
	}
	r.n -= k
	return k, nil
}

// openAppends returns the appends v's log leaves open.
func openAppends(t *testing.T, st *Store, v *Volume) []appendRec {
	t.Helper()
	l := st.appendLogFor(v)
	if l == nil {
		t.Fatal("the volume has no append log")
	}
	data, err := os.ReadFile(l.path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	return parseAppendLog(data)
}

// TestAppendCutBack: an append is there in full once it returns, and not
// at all when it fails; either way the log has nothing left open.
func TestAppendCutBack(t *testing.T) {
	st, dirs := openStore(t, "::rwd")
	v := st.Volumes()[0]
	file := filepath.Join(dirs[0], "log.txt")
	mkfiles(t, dirs[0], map[string]string{"log.txt": "old\n"})
	boom := errors.New("client went away")
	if _, err := v.Ingest(ctx, "", &failingReader{n: 300 << 10, err: boom}, IngestOptions{Name: "log.txt", Size: -1, Append: true}); !errors.Is(err, boom) {
		t.Fatalf("append with a failing body = %v, want its error", err)
	}
	if got := readString(t, file); got != "old\n" {
		t.Fatalf("after a failed append the file has %d bytes, want the old 4", len(got))
	}
	if o := openAppends(t, st, v); len(o) != 0 {
		t.Fatalf("a failed append left %+v open in the log", o)
	}
	res, err := v.Ingest(ctx, "", strings.NewReader("new\n"), IngestOptions{Name: "log.txt", Size: 4, Append: true})
	if err != nil || res.Size != 4 || res.Info.Size() != 8 {
		t.Fatalf("append = %+v, %v", res, err)
	}
	if got := readString(t, file); got != "old\nnew\n" {
		t.Fatalf("after an append the file holds %q", got)
	}
	if o := openAppends(t, st, v); len(o) != 0 {
		t.Fatalf("a finished append left %+v open in the log", o)
	}
	// An append to a folder is refused and changes nothing.
	os.Mkdir(filepath.Join(dirs[0], "d"), 0o755)
	if _, err := v.Ingest(ctx, "", strings.NewReader("x"), IngestOptions{Name: "d", Size: 1, Append: true}); err == nil {
		t.Fatal("appended to a folder")
	}
}

// TestAppendCrashCutBack: an append the log leaves open (a crash after its
// first bytes, before it was acknowledged) is cut back at the next start,
// unless the file has been replaced or is no longer than it was.
func TestAppendCrashCutBack(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{Volumes: []VolumeSpec{{Src: dir, Perms: map[string]Perm{"*": PermRead | PermWrite | PermDelete}}}}
	st, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	v := st.Volumes()[0]
	mkfiles(t, dir, map[string]string{"cut.txt": "old\n", "replaced.txt": "old\n", "short.txt": "old\n"})
	l := st.appendLogFor(v)
	begin := func(name string) {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		id, _ := idOf(fi)
		if _, err := l.begin(name, id, fi.Size()); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []string{"cut.txt", "replaced.txt", "short.txt"} {
		begin(n)
	}
	appendTo := func(name, s string) {
		f, err := os.OpenFile(filepath.Join(dir, name), os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString(s)
		f.Close()
	}
	appendTo("cut.txt", "torn append")
	// replaced.txt is another file now (renamed over it, so another
	// inode), longer than the old one; short.txt was truncated by someone
	// else.
	mkfiles(t, dir, map[string]string{"new.tmp": "a new, longer file\n"})
	if err := os.Rename(filepath.Join(dir, "new.tmp"), filepath.Join(dir, "replaced.txt")); err != nil {
		t.Fatal(err)
	}
	os.Truncate(filepath.Join(dir, "short.txt"), 2)
	st.Close() // the appends stay open in the log, as after a crash

	st, err = Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for name, want := range map[string]string{"cut.txt": "old\n", "replaced.txt": "a new, longer file\n", "short.txt": "ol"} {
		if got := readString(t, filepath.Join(dir, name)); got != want {
			t.Errorf("%s after the restart holds %q, want %q", name, got, want)
		}
	}
	if o := openAppends(t, st, st.Volumes()[0]); len(o) != 0 {
		t.Fatalf("the log still leaves %+v open after recovery", o)
	}
}

// TestDirSyncErrorNotSticky: a failed folder fsync answers the callers it
// covered, and no later one: the next caller flushes again.
func TestDirSyncErrorNotSticky(t *testing.T) {
	st, _ := openStore(t, "::rw")
	v := st.Volumes()[0]
	boom := errors.New("flush failed")
	results := []error{boom, nil}
	var calls int
	v.dirs.flush = func(string) error {
		calls++
		return results[min(calls-1, len(results)-1)]
	}
	if err := v.syncDir("d"); !errors.Is(err, boom) {
		t.Fatalf("first flush = %v, want its error", err)
	}
	if err := v.syncDir("d"); err != nil || calls != 2 {
		t.Fatalf("second flush = %v after %d flushes, want nil after 2", err, calls)
	}
	if err := v.SyncDir("../outside"); err == nil {
		t.Fatal("SyncDir took a path outside the volume")
	}
	v.dirs.flush = nil // the real fsync, of a folder that exists and one that does not
	if err := v.SyncDir(""); err != nil {
		t.Fatalf("SyncDir of the volume's top folder: %v", err)
	}
	if err := v.SyncDir("missing"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("SyncDir of a missing folder = %v, want ErrNotFound", err)
	}
}

// TestPartialFiles: CreatePartial reserves the final name (collision
// suffix when a file or another upload has it) with a sparse, marked work
// file <final>.PARTIAL that survives Close; PublishLinked publishes it and
// keeps the work file as a second name until DropWork; PublishedAs finds
// the published file from the work file.
func TestPartialFiles(t *testing.T) {
	st, dirs := openStore(t, "::rwd")
	v := st.Volumes()[0]
	up := filepath.Join(dirs[0], "up")
	const size = 8 << 20
	tmp, final, err := v.CreatePartial("up", "f.bin", size, PartialOptions{ClientIP: "10.0.0.9"})
	if err != nil {
		t.Fatal(err)
	}
	if final != "f.bin" || tmp.name != "f.bin"+PartialSuffix {
		t.Fatalf("CreatePartial = work %q, final %q", tmp.name, final)
	}
	work := filepath.Join(up, "f.bin"+PartialSuffix)
	var sst syscall.Stat_t
	if err := syscall.Stat(work, &sst); err != nil {
		t.Fatal(err)
	}
	if sst.Size != size || sst.Blocks*512 >= size {
		t.Fatalf("work file: %d bytes, %d allocated; want %d, sparse", sst.Size, sst.Blocks*512, size)
	}
	if _, err := unix.Getxattr(work, partialMark, make([]byte, 8)); err != nil && !errors.Is(err, unix.ENOTSUP) {
		t.Errorf("the work file is not marked as up2k's: %v", err)
	}
	if n := names(t, up); !slices.Equal(n, []string{"f.bin" + PartialSuffix}) {
		t.Fatalf("the folder holds %q, want the work file alone", n)
	}
	// The name is reserved: another upload of it gets another name, as
	// does one over an existing file, unless it replaces.
	t2, final2, err := v.CreatePartial("up", "f.bin", 10, PartialOptions{ClientIP: "10.0.0.9"})
	if err != nil || final2 == "f.bin" || !strings.HasPrefix(final2, "f.bin-") {
		t.Fatalf("second upload of f.bin got %q, %v", final2, err)
	}
	t2.Abort()
	mkfiles(t, up, map[string]string{"g.bin": "old"})
	if t3, f3, err := v.CreatePartial("up", "g.bin", 10, PartialOptions{}); err != nil || f3 == "g.bin" {
		t.Fatalf("upload over an existing file got %q, %v", f3, err)
	} else {
		t3.Abort()
	}
	if t4, f4, err := v.CreatePartial("up", "g.bin", 10, PartialOptions{Replace: true}); err != nil || f4 != "g.bin" {
		t.Fatalf("replacing upload got %q, %v", f4, err)
	} else {
		t4.Abort()
	}
	os.Mkdir(filepath.Join(up, "dir"), 0o755)
	if _, _, err := v.CreatePartial("up", "dir", 10, PartialOptions{Replace: true}); !errors.Is(err, ErrIsDir) {
		t.Fatalf("replacing a folder = %v, want ErrIsDir", err)
	}
	if _, _, err := v.CreatePartial("up", "h"+PartialSuffix, 10, PartialOptions{}); !errors.Is(err, ErrBadName) {
		t.Fatalf("a name ending in %s = %v, want ErrBadName", PartialSuffix, err)
	}
	if n := names(t, up); !slices.Equal(n, []string{"dir", "f.bin" + PartialSuffix, "g.bin"}) {
		t.Fatalf("after the aborted and refused uploads the folder holds %q", n)
	}

	// Close keeps the work file; OpenPartial finds it again.
	if _, err := tmp.File.WriteAt([]byte("tail"), size-4); err != nil {
		t.Fatal(err)
	}
	if err := tmp.Close(); err != nil {
		t.Fatal(err)
	}
	if tmp, err = v.OpenPartial("up", "f.bin"); err != nil {
		t.Fatal(err)
	}
	if _, err := v.OpenPartial("up", "nothere.bin"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("OpenPartial of no upload = %v, want ErrNotFound", err)
	}

	// Published, the work file stays a second name of the file.
	rel, fi, err := tmp.PublishLinked("f.bin", PublishOptions{})
	if err != nil || rel != "up/f.bin" || fi.Size() != size {
		t.Fatalf("PublishLinked = %q, %v", rel, err)
	}
	if !exists(work) {
		t.Fatal("PublishLinked removed the work file")
	}
	got, _, err := v.PublishedAs("up", "f.bin")
	if err != nil || got != "up/f.bin" {
		t.Fatalf("PublishedAs = %q, %v; want up/f.bin", got, err)
	}
	if err := tmp.DropWork(); err != nil {
		t.Fatal(err)
	}
	if exists(work) {
		t.Fatal("DropWork left the work file")
	}
	f, err := os.Open(filepath.Join(up, "f.bin"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 4)
	if _, err := f.ReadAt(b, size-4); err != nil || string(b) != "tail" {
		t.Fatalf("published file ends %q, %v", b, err)
	}
	if _, err := unix.Fgetxattr(int(f.Fd()), partialMark, make([]byte, 8)); err == nil {
		t.Error("the published file still carries the work file's mark")
	}
	if rel, _, err := v.PublishedAs("up", "f.bin"); !errors.Is(err, ErrNotFound) || rel != "" {
		t.Fatalf("PublishedAs after DropWork = %q, %v; want ErrNotFound", rel, err)
	}
}

// TestIngestPublishes: a PUT's bytes reach the final name through the same
// path (work file in the folder, folder fsync), and an error in the body
// leaves neither the file nor its work file.
func TestIngestPublishes(t *testing.T) {
	st, dirs := openStore(t, "::rw")
	v := st.Volumes()[0]
	var f flushes
	f.install(v)
	res, err := v.Ingest(ctx, "in", bytes.NewReader(bytes.Repeat([]byte("z"), 1<<20)), IngestOptions{Name: "big.bin", Size: 1 << 20})
	if err != nil || res.Rel != "in/big.bin" || res.Size != 1<<20 || len(res.Sum) != 64 {
		t.Fatalf("Ingest = %+v, %v", res, err)
	}
	if got := f.list(); !slices.Equal(got, []string{"in"}) {
		t.Fatalf("folder fsyncs %q, want in", got)
	}
	_, err = v.Ingest(ctx, "in", io.MultiReader(strings.NewReader("abc"), &failingReader{err: io.ErrUnexpectedEOF}), IngestOptions{Name: "bad.bin", Size: -1})
	if err == nil {
		t.Fatal("Ingest of a failing body succeeded")
	}
	if n := names(t, filepath.Join(dirs[0], "in")); !slices.Equal(n, []string{"big.bin"}) {
		t.Fatalf("after a failed upload the folder holds %q", n)
	}
	if got := f.list(); len(got) != 1 {
		t.Fatalf("folder fsyncs %q after a failed upload, want none more", got)
	}
}

// expiriesOf returns the expiry records of rel in v, in memory and on disk.
func expiriesOf(t *testing.T, v *Volume, rel string) (mem []expiry, disk int) {
	t.Helper()
	j := v.store.janitor
	j.mu.Lock()
	for _, e := range j.mu.h {
		if e.vol == v && e.Rel == rel {
			mem = append(mem, *e)
		}
	}
	j.mu.Unlock()
	ents, _ := os.ReadDir(expireDir(v))
	for _, de := range ents {
		b, err := os.ReadFile(filepath.Join(expireDir(v), de.Name()))
		if err == nil && strings.Contains(string(b), `"rel":"`+rel+`"`) {
			disk++
		}
	}
	return mem, disk
}

// TestReplaceForgetsOldLifetime: a file replaced by an upload takes its
// lifetime with it. Its record names the old inode, which the file system
// may give to a later file at the same path (ext4 does, at once): the old
// deadline then deleted that file, acknowledged with a lifetime of its own.
func TestReplaceForgetsOldLifetime(t *testing.T) {
	st, dirs := openStore(t, "::rwd:c,lifetime=3600")
	v := st.Volumes()[0]
	put := func(life time.Duration, replace bool) {
		t.Helper()
		if _, err := v.Ingest(ctx, "", strings.NewReader("x"), IngestOptions{Name: "x", Size: 1, Life: life, Replace: replace}); err != nil {
			t.Fatal(err)
		}
	}
	put(time.Minute, false)
	put(0, true) // the volume's lifetime
	fi, err := os.Stat(filepath.Join(dirs[0], "x"))
	if err != nil {
		t.Fatal(err)
	}
	_, ino, _ := FileID(fi)
	mem, disk := expiriesOf(t, v, "x")
	if len(mem) != 1 || disk != 1 || mem[0].Ino != ino || time.Until(mem[0].Deadline) < 59*time.Minute {
		t.Fatalf("after the replace: %d records in memory (%+v), %d on disk; want one, of the new file (inode %d) with the volume's hour", len(mem), mem, disk, ino)
	}
	// The same through a copy that replaces (LinkFile is the dedup path).
	mkfiles(t, dirs[0], map[string]string{"src": "s"})
	if _, _, err := v.LinkFile("src", "", "x", PublishOptions{Replace: true, Life: time.Minute}); err != nil {
		t.Fatal(err)
	}
	fi, _ = os.Stat(filepath.Join(dirs[0], "x"))
	_, ino, _ = FileID(fi)
	if mem, disk := expiriesOf(t, v, "x"); len(mem) != 1 || disk != 1 || mem[0].Ino != ino {
		t.Fatalf("after a linking replace: %d records in memory (%+v), %d on disk; want the new file's alone (inode %d)", len(mem), mem, disk, ino)
	}
}

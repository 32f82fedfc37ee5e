package store

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// The fast open takes plain paths and leaves everything with a link, a
// state-folder name, a create or a view to the full way; what Open
// answers is the same either way.
func TestFastOpenTakesOnlyPlainPaths(t *testing.T) {
	st, dirs := openStore(t, "::A")
	v, vol := st.Volumes()[0], dirs[0]
	if v.dir == nil {
		t.Skip("no descriptor for the fast open")
	}
	mkfiles(t, vol, map[string]string{"a/b/c.txt": "plain", "d/e.txt": "via link"})
	os.Symlink("d", filepath.Join(vol, "ln"))
	os.Symlink(HistName, filepath.Join(vol, "toState"))
	f, ok := v.fastOpen("a/b/c.txt", os.O_RDONLY)
	if !ok {
		if noOpenat2.Load() {
			t.Skip("this kernel has no openat2")
		}
		t.Fatal("a plain path did not take the fast open")
	}
	f.Close()
	for _, r := range []string{"ln/e.txt", "toState/secret", HistName + "/secret", "a/.HIST/x", "missing.txt", "."} {
		if f, ok := v.fastOpen(r, os.O_RDONLY); ok {
			f.Close()
			t.Errorf("%s took the fast open", r)
		}
	}
	if f, ok := v.fastOpen("a/new.txt", os.O_RDWR|os.O_CREATE); ok {
		f.Close()
		t.Error("a create took the fast open")
	}
	// Open answers as before: plain and through a link inside the volume
	// read the file; through a link into the state folder is not found.
	for r, want := range map[string]string{"a/b/c.txt": "plain", "ln/e.txt": "via link"} {
		f, _, err := v.Open(r)
		if err != nil {
			t.Fatalf("Open(%s): %v", r, err)
		}
		b, _ := io.ReadAll(f)
		f.Close()
		if string(b) != want {
			t.Errorf("Open(%s) = %q, want %q", r, b, want)
		}
	}
	if _, _, err := v.Open("toState/secret"); err == nil {
		t.Error("a link into the state folder was opened")
	}
	if _, _, err := v.Open("a/b"); err != ErrIsDir {
		t.Errorf("Open of a folder: %v, want ErrIsDir", err)
	}
}

// An up2k work file is reopened for each chunk post and at the publish:
// that open takes the fast way (one openat2) where the path is plain, and
// answers as before where it is not: a link in the work file's place or a
// fifo is refused, a folder reached through a link inside the volume is
// still opened (the full way), and a state folder is never reached.
func TestOpenPartialFast(t *testing.T) {
	st, dirs := openStore(t, "::A")
	v, vol := st.Volumes()[0], dirs[0]
	if v.dir == nil {
		t.Skip("no descriptor for the fast open")
	}
	tmp, _, err := v.CreatePartial("up/sub", "f.bin", 4, PartialOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tmp.Close()
	n := fastOpens.Load()
	tmp, err = v.OpenPartial("up/sub", "f.bin")
	if err != nil {
		t.Fatal(err)
	}
	tmp.Close()
	if noOpenat2.Load() {
		t.Skip("this kernel has no openat2")
	}
	if fastOpens.Load() == n {
		t.Error("OpenPartial of a plain path did not take the fast open")
	}
	// Through a link to the folder: the full way opens it.
	if err := os.Symlink("up", filepath.Join(vol, "ln")); err != nil {
		t.Fatal(err)
	}
	tmp, err = v.OpenPartial("ln/sub", "f.bin")
	if err != nil {
		t.Fatalf("OpenPartial through a link inside the volume: %v", err)
	}
	tmp.Close()
	// A link or a fifo in the work file's place: refused either way.
	mkfiles(t, vol, map[string]string{"other.txt": "not yours"})
	if err := os.Symlink("../../other.txt", filepath.Join(vol, "up/sub/l.bin"+PartialSuffix)); err != nil {
		t.Fatal(err)
	}
	if tmp, err := v.OpenPartial("up/sub", "l.bin"); err == nil {
		tmp.Close()
		t.Error("a link in a work file's place was opened")
	}
	if err := syscall.Mkfifo(filepath.Join(vol, "up/sub/p.bin"+PartialSuffix), 0o644); err != nil {
		t.Fatal(err)
	}
	if tmp, err := v.OpenPartial("up/sub", "p.bin"); err == nil {
		tmp.Close()
		t.Error("a fifo in a work file's place was opened")
	}
	// The state folder, by name or through a link: not found.
	mkfiles(t, vol, map[string]string{HistName + "/x/s.bin" + PartialSuffix: "state"})
	os.Symlink(HistName, filepath.Join(vol, "toState"))
	for _, d := range []string{HistName + "/x", "toState/x"} {
		if tmp, err := v.OpenPartial(d, "s.bin"); err == nil {
			tmp.Close()
			t.Errorf("OpenPartial(%s) opened a file in the state folder", d)
		}
	}
}

// A missing file is answered by the fast open alone (no second walk the
// full way), with the error the full way gives; a missing name behind a
// link still goes the full way, which follows the link.
func TestFastOpenMissing(t *testing.T) {
	st, dirs := openStore(t, "::A")
	v, vol := st.Volumes()[0], dirs[0]
	if v.dir == nil {
		t.Skip("no descriptor for the fast open")
	}
	mkfiles(t, vol, map[string]string{"a/b/c.txt": "x", "d/e.txt": "via link"})
	os.Symlink("d", filepath.Join(vol, "ln"))
	n := fastOpens.Load()
	_, err := v.statIn("a/b/nope.txt")
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("statIn of a missing file: %v, want not exist", err)
	}
	if noOpenat2.Load() {
		t.Skip("this kernel has no openat2")
	}
	if fastOpens.Load() == n {
		t.Error("a missing file was not answered by the fast open")
	}
	if _, err := v.statIn("ln/e.txt"); err != nil {
		t.Errorf("statIn through a link inside the volume: %v", err)
	}
	if _, err := v.statIn("ln/nope.txt"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("statIn of a missing file behind a link: %v, want not exist", err)
	}
}

// A PUT's work file and an up2k handshake's are made in a folder that is
// there and plain by one openat2 of the folder (no reach, no walk, no
// /proc check); through a link inside the volume the full way still
// makes them, and a link to the state folder is still refused.
func TestCreateInFolderFast(t *testing.T) {
	st, dirs := openStore(t, "::A")
	v, vol := st.Volumes()[0], dirs[0]
	if v.dir == nil {
		t.Skip("no descriptor for the fast open")
	}
	mkfiles(t, vol, map[string]string{"up/sub/x.txt": "x"})
	os.Symlink("up", filepath.Join(vol, "ln"))
	os.Symlink(HistName, filepath.Join(vol, "toState"))
	n := fastOpens.Load()
	tmp, err := v.CreateTemp("up/sub")
	if err != nil {
		t.Fatal(err)
	}
	tmp.Abort()
	p, _, err := v.CreatePartial("up/sub", "f.bin", 4, PartialOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.Close()
	if noOpenat2.Load() {
		t.Skip("this kernel has no openat2")
	}
	if got := fastOpens.Load() - n; got != 2 {
		t.Errorf("%d of CreateTemp and CreatePartial into a plain folder took the fast open, want 2", got)
	}
	for _, dir := range []string{"ln/sub", "ln/new"} {
		tmp, err := v.CreateTemp(dir)
		if err != nil {
			t.Fatalf("CreateTemp(%s) through a link inside the volume: %v", dir, err)
		}
		tmp.Abort()
		p, _, err := v.CreatePartial(dir, "g.bin", 4, PartialOptions{})
		if err != nil {
			t.Fatalf("CreatePartial(%s) through a link inside the volume: %v", dir, err)
		}
		p.Abort()
	}
	if tmp, err := v.CreateTemp("toState/x"); err == nil {
		tmp.Abort()
		t.Error("a work file was made in the state folder through a link")
	}
	if p, _, err := v.CreatePartial("toState", "s.bin", 4, PartialOptions{}); err == nil {
		p.Abort()
		t.Error("an up2k work file was made in the state folder through a link")
	}
	if fi, err := os.Lstat(filepath.Join(vol, HistName, "s.bin"+PartialSuffix)); err == nil {
		t.Errorf("found %v in the state folder", fi.Name())
	}
}

// A write into a plain folder that is there walks no path to reach it:
// a PUT (Ingest), an up2k handshake's work file and a chunk post's open
// of it are each one openat2 of the folder.
func TestWriteNoReachWalk(t *testing.T) {
	st, dirs := openStore(t, "::A")
	v, vol := st.Volumes()[0], dirs[0]
	if v.dir == nil {
		t.Skip("no descriptor for the fast open")
	}
	mkfiles(t, vol, map[string]string{"up/sub/x.txt": "x"})
	n := reachWalks.Load()
	if _, err := v.Ingest(context.Background(), "up/sub", strings.NewReader("hello"), IngestOptions{Name: "put.txt", Size: -1}); err != nil {
		t.Fatal(err)
	}
	p, _, err := v.CreatePartial("up/sub", "f.bin", 4, PartialOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.Close()
	if p, err = v.OpenPartial("up/sub", "f.bin"); err != nil {
		t.Fatal(err)
	}
	p.Close()
	if noOpenat2.Load() {
		t.Skip("this kernel has no openat2")
	}
	if got := reachWalks.Load() - n; got != 0 {
		t.Errorf("%d walks to reach a plain folder, want 0", got)
	}
	if b, err := os.ReadFile(filepath.Join(vol, "up/sub/put.txt")); err != nil || string(b) != "hello" {
		t.Fatalf("put.txt: %q %v", b, err)
	}
}

// TestDirOpenFast: a folder held by OpenDir opens its plain files in one
// openat2 (no guard), and everything else the full way, with the same
// answers: a link to a file in the folder is followed, a link to the
// state folder or out of the folder is refused, a missing name is not
// found, a fifo is not read.
func TestDirOpenFast(t *testing.T) {
	st, dirs := openStore(t, "::A")
	v, vol := st.Volumes()[0], dirs[0]
	for rel, body := range map[string]string{"d/plain": "plain", "d/target": "target", ".hist/secret": "s", "other": "o"} {
		os.MkdirAll(filepath.Dir(filepath.Join(vol, rel)), 0o755)
		if err := os.WriteFile(filepath.Join(vol, rel), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.Symlink("target", filepath.Join(vol, "d/link"))
	os.Symlink("../.hist/secret", filepath.Join(vol, "d/tostate"))
	os.Symlink("../other", filepath.Join(vol, "d/out"))
	syscall.Mkfifo(filepath.Join(vol, "d/fifo"), 0o644)
	d, err := v.OpenDir("d")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	n := fastOpens.Load()
	read := func(name string) (string, error) { return readIn(d, name) }
	if got, err := read("plain"); err != nil || got != "plain" {
		t.Fatalf("plain: %q %v", got, err)
	}
	if !noOpenat2.Load() && fastOpens.Load() == n {
		t.Error("a plain file of a held folder did not take the fast open")
	}
	if got, err := read("link"); err != nil || got != "target" {
		t.Errorf("a link to a file in the folder: %q %v, want its target", got, err)
	}
	if got, err := read("tostate"); err == nil {
		t.Errorf("a link to the state folder was read: %q", got)
	}
	if got, err := read("out"); err == nil {
		t.Errorf("a link out of the folder was read: %q", got)
	}
	if _, err := read("missing"); !errors.Is(err, ErrNotFound) {
		t.Errorf("a missing name: %v, want ErrNotFound", err)
	}
	if got, err := read("fifo"); err == nil {
		t.Errorf("a fifo was read: %q", got)
	}
	buf := make([]byte, 16)
	if k, err := d.ReadSmall("plain", buf, 5); err != nil || string(buf[:k]) != "plain" {
		t.Errorf("ReadSmall: %q %v", buf[:k], err)
	}
}

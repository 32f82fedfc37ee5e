package store

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestDirConfined: a folder handle is entered through the volume's root
// (a link to a folder inside the volume is, one out of it is not), and
// from inside it no link leads above the folder.
func TestDirConfined(t *testing.T) {
	st, dirs := openStore(t, "::r")
	v, top := st.Volumes()[0], dirs[0]
	outside := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(outside, "secret"), []byte("no"), 0o644))
	must(os.MkdirAll(filepath.Join(top, "a", "sub"), 0o755))
	must(os.WriteFile(filepath.Join(top, "a", "f"), []byte("in a"), 0o644))
	must(os.WriteFile(filepath.Join(top, "a", "sub", "g"), []byte("in sub"), 0o644))
	must(os.WriteFile(filepath.Join(top, "b"), []byte("in top"), 0o644))
	must(os.Symlink(outside, filepath.Join(top, "out")))                               // folder link out of the volume
	must(os.Symlink("a", filepath.Join(top, "ina")))                                   // folder link inside it
	must(os.Symlink("../b", filepath.Join(top, "a", "up")))                            // file link above the folder
	must(os.Symlink("f", filepath.Join(top, "a", "same")))                             // file link inside the folder
	must(os.Symlink(filepath.Join(outside, "secret"), filepath.Join(top, "a", "abs"))) // out of the volume
	must(syscall.Mkfifo(filepath.Join(top, "a", "fifo"), 0o644))
	must(os.WriteFile(filepath.Join(top, "a", "x.PARTIAL"), []byte("busy"), 0o644))

	for _, rel := range []string{"out", "out/", "ina/../../" + filepath.Base(outside), "../x", "b", "missing"} {
		if d, err := v.OpenDir(rel); err == nil {
			d.Close()
			t.Errorf("OpenDir(%q) opened", rel)
		}
	}
	if _, err := v.OpenDir("out"); !errors.Is(err, ErrOutside) {
		t.Errorf("OpenDir(out) = %v, want ErrOutside", err)
	}
	for _, rel := range []string{"a", "ina"} {
		d, err := v.OpenDir(rel)
		if err != nil {
			t.Fatalf("OpenDir(%q) = %v", rel, err)
		}
		defer d.Close()
		read := func(name string) (string, error) { return readIn(d, name) }
		for name, want := range map[string]string{"f": "in a", "same": "in a"} {
			if got, err := read(name); err != nil || got != want {
				t.Errorf("%s: Open(%q) = %q, %v; want %q", rel, name, got, err, want)
			}
		}
		for name, want := range map[string]error{
			"up": ErrOutside, "abs": ErrOutside, "sub": ErrIsDir, "missing": ErrNotFound,
			"x.PARTIAL": ErrNotFound, ".hist": ErrReserved, "sub/g": ErrBadName, "..": ErrBadName, "": ErrBadName,
		} {
			if _, err := read(name); !errors.Is(err, want) {
				t.Errorf("%s: Open(%q) = %v, want %v", rel, name, err, want)
			}
		}
		// A fifo is no regular file, and opening it must not wait for a writer.
		done := make(chan error, 1)
		go func() { _, err := read("fifo"); done <- err }()
		select {
		case err := <-done:
			if !errors.Is(err, ErrNotFound) {
				t.Errorf("%s: Open(fifo) = %v, want ErrNotFound", rel, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: Open(fifo) blocks", rel)
		}

		// ReadSmall: the same confinement, without the fstat.
		buf := make([]byte, 10)
		if n, err := d.ReadSmall("f", buf, 4); err != nil || string(buf[:n]) != "in a" {
			t.Errorf("%s: ReadSmall(f) = %q, %v", rel, buf[:n], err)
		}
		if n, err := d.ReadSmall("same", buf[:3], 3); err != nil || string(buf[:n]) != "in " {
			t.Errorf("%s: ReadSmall(same, 3 bytes) = %q, %v", rel, buf[:n], err)
		}
		for name, want := range map[string]error{
			"up": ErrOutside, "abs": ErrOutside, "sub": ErrIsDir, "missing": ErrNotFound,
			"x.PARTIAL": ErrNotFound, ".hist": ErrReserved, "sub/g": ErrBadName, "..": ErrBadName,
		} {
			if _, err := d.ReadSmall(name, buf, 1); !errors.Is(err, want) {
				t.Errorf("%s: ReadSmall(%q) = %v, want %v", rel, name, err, want)
			}
		}
		go func() { _, err := d.ReadSmall("fifo", buf, 1); done <- err }()
		select {
		case err := <-done:
			if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Errorf("%s: ReadSmall(fifo) = %v, want it to read nothing", rel, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: ReadSmall(fifo) blocks", rel)
		}
	}
}

// readIn reads the file name of the held folder d whole.
func readIn(d *Dir, name string) (string, error) {
	f, _, err := d.Open(name)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	return string(b), err
}

package store

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// Whatever has a name in a volume or a state folder, the opens that may
// meet it return at once, and refuse everything but a regular file (a
// fifo without and with a reader, a socket, a folder, a link out of a
// work file's place).
func TestOpensNeverBlock(t *testing.T) {
	dir := t.TempDir()
	st, err := Open(Config{Volumes: []VolumeSpec{{Src: dir, Perms: map[string]Perm{"*": PermAll}}}, Hist: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	v := st.Volumes()[0]
	mk := func(name string) string { return filepath.Join(dir, name) }
	if err := syscall.Mkfifo(mk("fifo"), 0o644); err != nil {
		t.Skip(err)
	}
	ln, err := net.Listen("unix", mk("sock"))
	if err != nil {
		t.Skip(err)
	}
	defer ln.Close()
	os.WriteFile(mk("file"), []byte("x"), 0o644)
	os.Mkdir(mk("dir"), 0o755)
	syscall.Mkfifo(mk("w.PARTIAL"), 0o644)
	os.Symlink("file", mk("l.PARTIAL"))
	os.WriteFile(mk("ok.PARTIAL"), []byte("x"), 0o644)

	done := make(chan struct{})
	go func() {
		defer close(done)
		for name, want := range map[string]error{"fifo": ErrNotRegular, "sock": ErrNotRegular, "dir": ErrIsDir, "missing": ErrNotFound} {
			if _, _, err := v.openRegular(name, os.O_WRONLY|os.O_APPEND); !errors.Is(err, want) {
				t.Errorf("openRegular(%s, write) = %v, want %v", name, err, want)
			}
			if _, _, err := v.Open(name); err == nil {
				t.Errorf("Open(%s) opened it", name)
			}
		}
		// With a reader at the fifo's other end the open succeeds; the
		// type check refuses it.
		rd, err := os.OpenFile(mk("fifo"), os.O_RDONLY|syscall.O_NONBLOCK, 0)
		if err == nil {
			if _, _, err := v.openRegular("fifo", os.O_WRONLY|os.O_APPEND); !errors.Is(err, ErrNotRegular) {
				t.Errorf("openRegular(fifo with reader) = %v", err)
			}
			rd.Close()
		}
		for name, want := range map[string]error{"w": ErrNotRegular, "l": ErrNotRegular, "nope": ErrNotFound} {
			if _, err := v.OpenPartial(".", name); !errors.Is(err, want) {
				t.Errorf("OpenPartial(%s) = %v, want %v", name, err, want)
			}
		}
		tf, err := v.OpenPartial(".", "ok")
		if err != nil {
			t.Errorf("OpenPartial(ok) = %v", err)
		} else {
			if _, err := tf.File.WriteAt([]byte("y"), 1); err != nil {
				t.Errorf("writing the work file: %v", err)
			}
			tf.Close()
		}
		f, fi, err := v.openRegular("file", os.O_WRONLY|os.O_APPEND)
		if err != nil || fi.Size() != 1 {
			t.Errorf("openRegular(file) = %v %v", fi, err)
		} else {
			if fl, _ := fcntlFlags(f); fl&syscall.O_NONBLOCK != 0 {
				t.Errorf("O_NONBLOCK left set on a regular file")
			}
			f.Close()
		}
		// State files.
		if _, err := readStateFile(mk("fifo"), 100); err == nil {
			t.Error("readStateFile(fifo) read it")
		}
		if _, err := readStateFile(mk("l.PARTIAL"), 100); err == nil {
			t.Error("readStateFile followed a link")
		}
		if b, err := readStateFile(mk("file"), 100); err != nil || string(b) != "x" {
			t.Errorf("readStateFile(file) = %q %v", b, err)
		}
		if _, err := readStateFile(mk("ok.PARTIAL"), 1); err == nil {
			t.Error("readStateFile read more than its limit")
		}
		if _, err := readStateDir(mk("fifo")); err == nil {
			t.Error("readStateDir(fifo) listed it")
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("an open blocked")
	}
}

func fcntlFlags(f *os.File) (int, error) {
	sc, err := f.SyscallConn()
	if err != nil {
		return 0, err
	}
	var fl int
	var ferr error
	sc.Control(func(fd uintptr) {
		r, _, e := syscall.Syscall(syscall.SYS_FCNTL, fd, syscall.F_GETFL, 0)
		fl = int(r)
		if e != 0 {
			ferr = e
		}
	})
	return fl, ferr
}

package arch

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"runtime"
	"strings"
	"syscall"
	"time"

	"hoard/store"
)

// File is one entry of an archive.
type File struct {
	Name  string // path inside the archive, slash-separated
	Vol   *store.Volume
	Rel   string // path inside Vol
	Size  int64
	Mtime time.Time
	Mode  uint32 // permission bits with setuid, setgid, sticky (st_mode & 07777)

	data []byte // content of a generated entry (Vol is nil)
	link bool   // a symbolic link: opened by its full path, not in its folder
}

// Excluded reports whether a file or folder name never enters an archive:
// the state folder, copyparty's up2k.db and dir.txt, files being written
// (*.PARTIAL) and hoard's own work files.
func Excluded(name string) bool {
	return strings.EqualFold(name, store.HistName) || name == "up2k.db" || name == "dir.txt" ||
		strings.HasSuffix(name, store.PartialSuffix) || strings.HasPrefix(name, ".hoard-")
}

// Walker collects the files below folders of one volume. Symbolic links
// are followed only inside the volume (the store's os.Root sees to that);
// a folder that is its own ancestor (a link loop) is not entered again.
type Walker struct {
	Vol  *store.Volume
	Dots bool // include names starting with a dot

	Files []File
	// Errs lists what could not be read, as "<path>: <reason>"; the
	// archive carries them in a last entry (see ErrorsFile).
	Errs []string

	lists chan struct{} // bounds the folders being listed at once
}

type devIno struct{ dev, ino uint64 }

func idOf(fi fs.FileInfo) (devIno, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return devIno{}, false
	}
	return devIno{uint64(st.Dev), st.Ino}, true
}

// AddFolder adds every file below the folder rel, named prefix + its path
// below rel, in copyparty's order: a folder's files sorted by name, then
// each sub-folder in turn. An unreadable rel is an error; what cannot be
// read below it is noted in Errs.
func (w *Walker) AddFolder(ctx context.Context, rel, prefix string) error {
	fi, err := w.Vol.Stat(rel)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return store.ErrNotDir
	}
	return w.folder(ctx, rel, prefix, nil, fi)
}

// AddFile adds the regular file rel as name.
func (w *Walker) AddFile(rel, name string) error {
	f, fi, err := w.Vol.Open(rel)
	if err != nil {
		return err
	}
	f.Close()
	w.Files = append(w.Files, fileOf(w.Vol, rel, name, fi))
	return nil
}

func fileOf(v *store.Volume, rel, name string, fi fs.FileInfo) File {
	return File{Name: name, Vol: v, Rel: rel, Size: fi.Size(), Mtime: fi.ModTime(), Mode: modeBits(fi.Mode())}
}

// modeBits is st_mode & 07777 of a FileMode.
func modeBits(m fs.FileMode) uint32 {
	b := uint32(m.Perm())
	if m&fs.ModeSetuid != 0 {
		b |= 0o4000
	}
	if m&fs.ModeSetgid != 0 {
		b |= 0o2000
	}
	if m&fs.ModeSticky != 0 {
		b |= 0o1000
	}
	return b
}

// euid decides whether a file's mode bits prove it readable: root reads
// everything; others get an open per file that is not world-readable, so
// what they cannot read is found before the archive starts.
var euid = os.Geteuid()

func (w *Walker) folder(ctx context.Context, rel, prefix string, up []devIno, dfi fs.FileInfo) error {
	return w.walk(ctx, rel, prefix, up, dfi, w.list(ctx, rel, false))
}

// listing is a folder's entries (and, for a sub-folder, its FileInfo),
// read by a goroutine while the walk is busy elsewhere: a folder of small
// files costs one lstat(2) per file to list, so the listings of the next
// few sub-folders are made meanwhile, on the other cores.
type listing struct {
	done chan struct{}
	fi   fs.FileInfo
	ents []store.Entry
	err  error
}

// listAhead is how many sibling folders are listed ahead of the walk.
const listAhead = 4

// list starts reading the folder rel (stat first when stat is set).
func (w *Walker) list(ctx context.Context, rel string, stat bool) *listing {
	l := &listing{done: make(chan struct{})}
	if w.lists == nil {
		w.lists = make(chan struct{}, max(1, runtime.GOMAXPROCS(0)))
	}
	go func() {
		defer close(l.done)
		select {
		case w.lists <- struct{}{}:
			defer func() { <-w.lists }()
		case <-ctx.Done():
			l.err = ctx.Err()
			return
		}
		if stat {
			if l.fi, l.err = w.Vol.Stat(rel); l.err != nil {
				return
			}
		}
		l.ents, l.err = w.Vol.List(ctx, rel, store.ListOptions{Dots: w.Dots})
	}()
	return l
}

func (w *Walker) walk(ctx context.Context, rel, prefix string, up []devIno, dfi fs.FileInfo, l *listing) error {
	if id, ok := idOf(dfi); ok {
		for _, a := range up {
			if a == id {
				return nil // a link back to an ancestor
			}
		}
		up = append(up, id)
	}
	<-l.done
	ents, err := l.ents, l.err
	if err != nil {
		if ctx.Err() != nil || len(up) <= 1 {
			return err // the folder asked for is unreadable: no archive
		}
		w.Errs = append(w.Errs, fmt.Sprintf("%s: %v", prefix, err))
		return nil
	}
	var dirs []store.Entry
	for _, e := range ents {
		if Excluded(e.Name) {
			continue
		}
		if e.Dir {
			dirs = append(dirs, e)
			continue
		}
		r := path.Join(rel, e.Name)
		if e.Link && !e.Mode.IsRegular() {
			continue // a link to a fifo, socket or device
		}
		if e.Mode&0o004 != 0 || euid == 0 {
			// Readable for sure: take the listing's facts and save an
			// open (the walk then costs no syscall per file).
			w.Files = append(w.Files, File{Name: prefix + e.Name, Vol: w.Vol, Rel: r, Size: e.Size, Mtime: e.Mtime, Mode: modeBits(e.Mode), link: e.Link})
			continue
		}
		if err := w.AddFile(r, prefix+e.Name); err != nil {
			if errors.Is(err, store.ErrNotFound) {
				continue // gone since the listing
			}
			w.Errs = append(w.Errs, fmt.Sprintf("%s: %v", prefix+e.Name, errText(err)))
		}
	}
	ahead := make([]*listing, len(dirs))
	for i, e := range dirs {
		for j := i; j < min(i+listAhead, len(dirs)); j++ {
			if ahead[j] == nil {
				ahead[j] = w.list(ctx, path.Join(rel, dirs[j].Name), true)
			}
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		l := ahead[i]
		ahead[i] = nil
		<-l.done
		if l.fi == nil {
			continue // gone, or not readable: left out as before
		}
		if err := w.walk(ctx, path.Join(rel, e.Name), prefix+e.Name+"/", up, l.fi, l); err != nil {
			return err
		}
	}
	return nil
}

func errText(err error) string {
	if errors.Is(err, fs.ErrPermission) {
		return "permission denied"
	}
	return strings.TrimPrefix(err.Error(), "store: ")
}

// ErrorsFile returns the entry copyparty appends when files could not be
// read: archive-errors-<UTC time>.txt, CRLF text, one " file:"/"error:"
// pair per problem. ok is false when there was none.
func (w *Walker) ErrorsFile(prefix string, now time.Time) (File, bool) {
	if len(w.Errs) == 0 {
		return File{}, false
	}
	var b strings.Builder
	b.WriteString("hoard failed to add the following files to the archive:\r\n\r\n")
	for _, e := range w.Errs {
		p, reason, _ := strings.Cut(e, ": ")
		fmt.Fprintf(&b, " file: %s\r\nerror: %s\r\n\r\n", p, reason)
	}
	data := []byte(b.String())
	name := prefix + "archive-errors-" + now.UTC().Format("2006-0102-150405") + ".txt"
	return File{Name: name, Size: int64(len(data)), Mtime: now, Mode: 0o644, data: data}, true
}

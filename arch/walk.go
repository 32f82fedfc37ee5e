package arch

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"runtime"
	"slices"
	"strings"
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

// Walker collects the files below folders of one volume, and of the
// volumes mounted below them when Mounts is set. Symbolic links are
// followed only inside their volume (the store's os.Root sees to that); a
// folder that is its own ancestor (a link loop) is not entered again.
type Walker struct {
	Vol  *store.Volume
	Dots bool // include names starting with a dot

	// Mounts, when set, returns the volumes mounted directly below the
	// URL path url (slash-separated, no slash at either end). Those the
	// user may read go in after the folder's own sub-folders (copyparty's
	// order); a folder of the volume that a mount hides stays out, as it
	// does for URLs.
	Mounts func(url string) []Mount

	Files []File
	// Errs lists what could not be read, as "<path>: <reason>"; the
	// archive carries them in a last entry (see ErrorsFile).
	Errs []string

	lists chan struct{} // bounds the folders being listed at once
}

// Mount is a volume mounted directly below a folder.
type Mount struct {
	Name string        // the folder name it takes
	Vol  *store.Volume // nil: only deeper volumes (a folder of URLs only)
	Read bool          // the user may read Vol; if not, it stays out
	Dots bool          // dotfiles of Vol go in
}

// place is a folder being walked: where it lies and its URL path.
type place struct {
	vol  *store.Volume // nil: a folder of URLs only, above deeper mounts
	dots bool
	rel  string
	url  string
}

type devIno struct{ dev, ino uint64 }

func idOf(fi fs.FileInfo) (devIno, bool) {
	dev, ino, ok := store.FileID(fi)
	return devIno{dev, ino}, ok
}

// AddFolder adds every file below the folder rel, named prefix + its path
// below rel, in copyparty's order: a folder's files sorted by name, then
// each sub-folder in turn, then the volumes mounted below it. An
// unreadable rel is an error; what cannot be read below it is noted in
// Errs.
func (w *Walker) AddFolder(ctx context.Context, rel, prefix string) error {
	fi, err := w.Vol.Stat(rel)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return store.ErrNotDir
	}
	p := place{vol: w.Vol, dots: w.Dots, rel: rel, url: path.Join(w.Vol.VPath, rel)}
	return w.walk(ctx, p, prefix, nil, fi, w.list(ctx, p, false))
}

// AddMounts adds the volumes mounted below the URL path url, where no
// volume has a folder (e.g. /a when only /a/b and /a/c are mounted),
// named prefix + their path below url.
func (w *Walker) AddMounts(ctx context.Context, url, prefix string) error {
	return w.mounts(ctx, place{dots: w.Dots, url: url}, prefix, nil, nil)
}

// AddFile adds the regular file rel as name.
func (w *Walker) AddFile(rel, name string) error {
	return w.addFile(w.Vol, rel, name)
}

func (w *Walker) addFile(v *store.Volume, rel, name string) error {
	if v.Remote() { // an object: its facts from its stat, no open (objects.go)
		fi, err := v.Stat(rel)
		if err != nil {
			return err
		}
		if fi.IsDir() {
			return store.ErrIsDir
		}
		w.Files = append(w.Files, fileOf(v, rel, name, fi))
		return nil
	}
	f, fi, err := v.Open(rel)
	if err != nil {
		return err
	}
	f.Close()
	w.Files = append(w.Files, fileOf(v, rel, name, fi))
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

// list starts reading the folder p (stat first when stat is set).
func (w *Walker) list(ctx context.Context, p place, stat bool) *listing {
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
			if l.fi, l.err = p.vol.Stat(p.rel); l.err != nil {
				return
			}
		}
		l.ents, l.err = p.vol.List(ctx, p.rel, store.ListOptions{Dots: p.dots})
	}()
	return l
}

func (w *Walker) walk(ctx context.Context, p place, prefix string, up []devIno, dfi fs.FileInfo, l *listing) error {
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
	var hidden map[string]bool // real folders that mounts hide
	if w.Mounts != nil {
		for _, m := range w.Mounts(p.url) {
			if m.Vol != nil {
				if hidden == nil {
					hidden = map[string]bool{}
				}
				hidden[m.Name] = true
			}
		}
	}
	var dirs []store.Entry
	w.Files = slices.Grow(w.Files, len(ents)) // one allocation, not a doubling series
	for _, e := range ents {
		if Excluded(e.Name) {
			continue
		}
		if e.Dir {
			if !hidden[e.Name] {
				dirs = append(dirs, e)
			}
			continue
		}
		r := path.Join(p.rel, e.Name)
		if e.Link && !e.Mode.IsRegular() {
			continue // a link to a fifo, socket or device
		}
		if e.Mode&0o004 != 0 || euid == 0 {
			// Readable for sure: take the listing's facts and save an
			// open (the walk then costs no syscall per file).
			w.Files = append(w.Files, File{Name: prefix + e.Name, Vol: p.vol, Rel: r, Size: e.Size, Mtime: e.Mtime, Mode: modeBits(e.Mode), link: e.Link})
			continue
		}
		if err := w.addFile(p.vol, r, prefix+e.Name); err != nil {
			if errors.Is(err, store.ErrNotFound) {
				continue // gone since the listing
			}
			w.Errs = append(w.Errs, fmt.Sprintf("%s: %v", prefix+e.Name, errText(err)))
		}
	}
	sub := func(name string) place {
		return place{vol: p.vol, dots: p.dots, rel: path.Join(p.rel, name), url: path.Join(p.url, name)}
	}
	ahead := make([]*listing, len(dirs))
	walked := make(map[string]bool, len(dirs))
	for i, e := range dirs {
		for j := i; j < min(i+listAhead, len(dirs)); j++ {
			if ahead[j] == nil {
				ahead[j] = w.list(ctx, sub(dirs[j].Name), true)
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
		walked[e.Name] = true
		if err := w.walk(ctx, sub(e.Name), prefix+e.Name+"/", up, l.fi, l); err != nil {
			return err
		}
	}
	return w.mounts(ctx, p, prefix, up, walked)
}

// mounts adds the volumes mounted below the folder p, in order of their
// names, after its own sub-folders (walked: those by name). A name with
// only deeper volumes below it is a folder of URLs only, unless the
// volume has a real folder there, which has been walked with them.
func (w *Walker) mounts(ctx context.Context, p place, prefix string, up []devIno, walked map[string]bool) error {
	if w.Mounts == nil {
		return nil
	}
	ms := w.Mounts(p.url)
	slices.SortFunc(ms, func(a, b Mount) int { return strings.Compare(a.Name, b.Name) })
	for _, m := range ms {
		if err := ctx.Err(); err != nil {
			return err
		}
		if Excluded(m.Name) || strings.HasPrefix(m.Name, ".") && !p.dots {
			continue
		}
		url := path.Join(p.url, m.Name)
		switch {
		case m.Vol == nil:
			if walked[m.Name] {
				continue
			}
			if err := w.mounts(ctx, place{dots: p.dots, url: url}, prefix+m.Name+"/", up, nil); err != nil {
				return err
			}
		case m.Read:
			mp := place{vol: m.Vol, dots: m.Dots, url: url}
			fi, err := m.Vol.Stat("")
			if err != nil {
				w.Errs = append(w.Errs, fmt.Sprintf("%s: %v", prefix+m.Name+"/", errText(err)))
				continue
			}
			// up gets a fake entry so that an unreadable volume is noted
			// in Errs rather than failing the whole archive.
			if err := w.walk(ctx, mp, prefix+m.Name+"/", append(up[:len(up):len(up)], devIno{}), fi, w.list(ctx, mp, false)); err != nil {
				return err
			}
		}
	}
	return nil
}

func errText(err error) string {
	if errors.Is(err, fs.ErrPermission) {
		return "permission denied"
	}
	return err.Error()
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

package media

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"slices"
	"sync"
	"syscall"
	"time"
)

// cache is one state folder's th/ directory: outputs at
// <2 hex>/<32 hex>.<ext>, work files in w/ (renamed into place when
// complete, so a published name is always whole), an empty file marking a
// source that cannot be thumbnailed. Past max bytes, the least recently
// used outputs (by mtime, bumped on use at most every pokeAge) go.
type cache struct {
	dir  string
	root *os.Root
	max  int64
	log  *slog.Logger

	mu       sync.Mutex
	size     int64
	evicting bool
}

const pokeAge = 5 * time.Minute

func openCache(dir string, max int64, log *slog.Logger) (*cache, error) {
	if err := os.MkdirAll(dir+"/w", 0o755); err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	c := &cache{dir: dir, root: root, max: max, log: log}
	// Work files left by a crash are never finished.
	if ents, err := fs.ReadDir(root.FS(), "w"); err == nil {
		for _, e := range ents {
			root.Remove("w/" + e.Name())
		}
	}
	for _, f := range c.files() {
		c.size += f.size
	}
	return c, nil
}

type cfile struct {
	name string
	size int64
	mt   time.Time
}

// files lists the published outputs.
func (c *cache) files() []cfile {
	var out []cfile
	fs.WalkDir(c.root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() {
			if p == "w" {
				return fs.SkipDir
			}
			return nil
		}
		if fi, err := d.Info(); err == nil {
			out = append(out, cfile{p, fi.Size(), fi.ModTime()})
		}
		return nil
	})
	return out
}

// lookup opens a published output.
func (c *cache) lookup(name string, f Format) (*Result, bool) {
	// Non-blocking: a fifo in the cache's place must not hang the request.
	fh, err := c.root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, false
	}
	fi, err := fh.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		fh.Close()
		return nil, false
	}
	if now := time.Now(); now.Sub(fi.ModTime()) > pokeAge {
		c.root.Chtimes(name, now, now)
	}
	if fi.Size() == 0 {
		fh.Close()
		return &Result{Icon: true, Reason: "cannot make a thumbnail of this file (remembered)", Format: f, How: Cached}, true
	}
	return &Result{File: fh, Size: fi.Size(), ModTime: fi.ModTime(), Format: f, How: Cached}, true
}

func (c *cache) create() (*os.File, string, error) {
	var b [12]byte
	rand.Read(b[:])
	name := "w/" + hex.EncodeToString(b[:])
	f, err := c.root.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	return f, name, err
}

func (c *cache) remove(wname string) { c.root.Remove(wname) }

// publish renames a finished work file to name.
func (c *cache) publish(wname, name string) error {
	if err := c.root.MkdirAll(path.Dir(name), 0o755); err != nil {
		return err
	}
	fi, err := c.root.Stat(wname)
	if err != nil {
		return err
	}
	if err := c.root.Rename(wname, name); err != nil {
		return err
	}
	c.mu.Lock()
	c.size += fi.Size()
	over := c.size > c.max && !c.evicting
	if over {
		c.evicting = true
	}
	c.mu.Unlock()
	if over {
		go c.evict()
	}
	return nil
}

// markFailed publishes an empty output: the source cannot be thumbnailed.
func (c *cache) markFailed(name string) {
	f, wname, err := c.create()
	if err != nil {
		return
	}
	f.Close()
	if err := c.publish(wname, name); err != nil {
		c.remove(wname)
	}
}

// evict deletes the least recently used outputs until the cache is at 90%
// of its cap.
func (c *cache) evict() {
	files := c.files()
	slices.SortFunc(files, func(a, b cfile) int { return a.mt.Compare(b.mt) })
	var total int64
	for _, f := range files {
		total += f.size
	}
	goal := c.max / 10 * 9
	n := 0
	for _, f := range files {
		if total <= goal {
			break
		}
		if err := c.root.Remove(f.name); err == nil || errors.Is(err, fs.ErrNotExist) {
			total -= f.size
			n++
		}
	}
	c.mu.Lock()
	c.size, c.evicting = total, false
	c.mu.Unlock()
	c.log.Info("thumbnail cache trimmed", "dir", c.dir, "removed", n, "bytes", total)
}

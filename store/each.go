package store

import (
	"context"
	"errors"
	"io"
	"os"
	"path"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// Each calls fn with every entry of the folder at rel that List would
// return, in the folder's own order (unsorted), reading it in batches: its
// memory does not grow with the folder, so a WebDAV PROPFIND of a folder
// of 100,000 entries streams. An error from fn stops it and is returned.
func (v *Volume) Each(ctx context.Context, rel string, opt ListOptions, fn func(Entry) error) error {
	return v.each(ctx, rel, opt, false, func(e Entry, _ []DeadProp) error { return fn(e) })
}

// EachProps is Each that also gives each entry's dead properties (a
// WebDAV PROPFIND that asks for them: allprop, or a property outside the
// DAV: namespace), nil for none or unreadable ones.
//
// They are read by name relative to the open folder, without opening the
// entry: one lgetxattr of /proc/self/fd/<folder>/<name> (the entry's own
// attribute, the last component not followed), where reading them through
// an opened file costs an open, a stat and a close per entry. The folder's
// descriptor confines it as the open would; a name from the folder is one
// component. A symbolic link (followed inside the volume, as StatProps
// does), a system without /proc, or any surprise falls back to the open.
func (v *Volume) EachProps(ctx context.Context, rel string, opt ListOptions, fn func(Entry, []DeadProp) error) error {
	return v.each(ctx, rel, opt, true, fn)
}

func (v *Volume) each(ctx context.Context, rel string, opt ListOptions, props bool, fn func(Entry, []DeadProp) error) error {
	r, err := cleanRel(rel)
	if err != nil {
		return err
	}
	if v.only != nil && r != "." {
		return ErrNotFound
	}
	if v.obj != nil {
		return v.eachObject(ctx, r, opt, func(e Entry) error { return fn(e, nil) }) // objects keep no dead properties
	}
	d, r, err := v.openIn(r, os.O_RDONLY|syscall.O_NONBLOCK)
	if err != nil {
		return mapErr(err)
	}
	defer d.Close()
	fi, err := d.Stat()
	if err != nil {
		return mapErr(err)
	}
	if !fi.IsDir() {
		return ErrNotDir
	}
	var pr *propsReader
	if props {
		pr = &propsReader{v: v, dir: d, rel: r}
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		des, err := d.ReadDir(256)
		for _, de := range des {
			if e, ok := v.entry(r, de, opt); ok {
				var ps []DeadProp
				if pr != nil {
					ps = pr.read(e)
				}
				if err := fn(e, ps); err != nil {
					return err
				}
			}
		}
		if errors.Is(err, io.EOF) || (err == nil && len(des) == 0) {
			return nil
		}
		if err != nil {
			return mapErr(err)
		}
	}
}

// propsReader reads the dead properties of the entries of one open
// folder, with one buffer for all of them.
type propsReader struct {
	v    *Volume
	dir  *os.File
	rel  string // the folder's cleaned path in the volume
	base string // "/proc/self/fd/<dir>/", made on first use
	buf  []byte
}

// propsOpens counts the entries whose dead properties were read by
// opening them (the fall back), for tests.
var propsOpens atomic.Int64

func (p *propsReader) read(e Entry) []DeadProp {
	if !e.Link {
		if p.base == "" {
			p.base = procFDPath(p.dir)
		}
		if p.buf == nil {
			p.buf = make([]byte, 1024) // grown once for a bigger set
		}
		for p.base != "" {
			n, err := lgetxattrPath(p.base+e.Name, propsXattr, p.buf)
			if errors.Is(err, unix.ERANGE) && len(p.buf) < MaxPropsBytes {
				p.buf = make([]byte, MaxPropsBytes)
				continue
			}
			if err == nil {
				ps, err := decodeProps(p.buf[:n])
				if err != nil {
					p.v.store.log.Warn("unreadable dead properties; served as none", "volume", "/"+p.v.VPath, "path", path.Join(p.rel, e.Name), "err", err)
					return nil
				}
				return ps
			}
			if isNoAttr(err) || errors.Is(err, unix.ENOTSUP) {
				return nil
			}
			break // gone, replaced, no /proc: as before, by opening it
		}
	}
	propsOpens.Add(1)
	_, ps, err := p.v.StatProps(path.Join(p.rel, e.Name))
	if err != nil {
		return nil
	}
	return ps
}

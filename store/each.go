package store

import (
	"context"
	"errors"
	"io"
	"os"
	"syscall"
)

// Each calls fn with every entry of the folder at rel that List would
// return, in the folder's own order (unsorted), reading it in batches: its
// memory does not grow with the folder, so a WebDAV PROPFIND of a folder
// of 100,000 entries streams. An error from fn stops it and is returned.
func (v *Volume) Each(ctx context.Context, rel string, opt ListOptions, fn func(Entry) error) error {
	r, err := cleanRel(rel)
	if err != nil {
		return err
	}
	if v.only != nil && r != "." {
		return ErrNotFound
	}
	if v.obj != nil {
		return v.eachObject(ctx, r, opt, fn)
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
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		des, err := d.ReadDir(256)
		for _, de := range des {
			if e, ok := v.entry(r, de, opt); ok {
				if err := fn(e); err != nil {
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

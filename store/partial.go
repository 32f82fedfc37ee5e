package store

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"syscall"
	"time"
)

// This file holds what resumable (up2k) uploads need from a volume: the
// state folder, sparse work files named <final name>.PARTIAL that survive
// restarts, and server-side copies and links of existing files.

// HistPath returns the volume's state folder (absolute), or "" when it
// could not be made.
func (v *Volume) HistPath() string { return v.hist }

// PartialOptions control how CreatePartial picks the final name.
type PartialOptions struct {
	// Replace keeps the asked name even when a file has it; that file is
	// replaced when the upload is published.
	Replace  bool
	ClientIP string // for copyparty's collision suffix
}

// CreatePartial reserves a final name for an upload of size bytes into
// folder dir (made when missing) and creates its work file
// <final>.PARTIAL, sparse, already size bytes long. The name is taken when
// a file or another upload has it; then copyparty's collision suffix is
// added. It returns the work file and the final name.
func (v *Volume) CreatePartial(dir, name string, size int64, opt PartialOptions) (*Temp, string, error) {
	d, err := cleanRel(dir)
	if err != nil {
		return nil, "", err
	}
	if v.outer != nil {
		return nil, "", ErrReadOnly // up2k works on volumes, never on views
	}
	if v.Flags.NoSub && d != "." {
		return nil, "", ErrNoSub
	}
	if err := v.checkTarget(d, name); err != nil {
		return nil, "", err
	}
	d = v.reach(d) // links.go
	if d != "." {
		if err := v.root.MkdirAll(d, 0o755); err != nil {
			return nil, "", mapErr(err)
		}
	}
	for i := range 10 {
		cand := name
		if i > 0 {
			cand = v.collisionName(name, opt.ClientIP, i-1)
		}
		fi, err := v.root.Lstat(path.Join(d, cand))
		switch {
		case err == nil && opt.Replace && i == 0:
			if fi.IsDir() {
				return nil, "", ErrIsDir
			}
		case err == nil:
			continue // taken
		case !errors.Is(err, fs.ErrNotExist):
			return nil, "", mapErr(err)
		}
		work := cand + PartialSuffix
		f, err := v.root.OpenFile(path.Join(d, work), os.O_RDWR|os.O_CREATE|os.O_EXCL|syscall.O_NONBLOCK, 0o644)
		if errors.Is(err, fs.ErrExist) {
			continue // another upload has this name
		}
		if err != nil {
			return nil, "", mapErr(err)
		}
		if err := f.Truncate(size); err != nil {
			f.Close()
			v.root.Remove(path.Join(d, work))
			return nil, "", v.writeErr(err, size)
		}
		return &Temp{File: f, v: v, dir: d, name: work}, cand, nil
	}
	return nil, "", ErrExists
}

// OpenPartial opens the work file of the upload named name in folder dir,
// made earlier by CreatePartial, for reading and writing.
func (v *Volume) OpenPartial(dir, name string) (*Temp, error) {
	d, err := cleanRel(dir)
	if err != nil {
		return nil, err
	}
	if err := checkName(name); err != nil {
		return nil, err
	}
	d = v.reach(d)
	work := name + PartialSuffix
	// A work file is hoard's own: never a link (which could lead the
	// chunks into another file), a fifo or a device.
	f, _, err := v.openLeaf(d, work, os.O_RDWR)
	if err != nil {
		return nil, err
	}
	return &Temp{File: f, v: v, dir: d, name: work}, nil
}

// Close closes the work file and keeps it on disk (to be opened again with
// OpenPartial). The Temp cannot be published afterwards.
func (t *Temp) Close() error {
	if t.done {
		return nil
	}
	t.done = true
	return t.File.Close()
}

// SyncDir fsyncs the folder dir of the volume, making the names in it
// durable.
func (v *Volume) SyncDir(dir string) error {
	d, err := cleanRel(dir)
	if err != nil {
		return err
	}
	return v.syncDir(v.reach(d))
}

// SetMtime sets the modification (and access) time of the file at rel.
func (v *Volume) SetMtime(rel string, t time.Time) error {
	r, err := cleanRel(rel)
	if err != nil {
		return err
	}
	return mapErr(v.root.Chtimes(v.reach(r), t, t))
}

// copyStep is how much CopyFile copies between checks of its context.
const copyStep = 64 << 20

// CopyFile publishes a copy of the file srcRel of volume src as name in
// folder dir of v (like an upload: temp file, fsync, no-clobber publish or
// collision rename, folder fsync). The kernel copies the bytes
// (copy_file_range, which clones them on file systems that can).
func (v *Volume) CopyFile(ctx context.Context, src *Volume, srcRel, dir, name string, opt PublishOptions) (string, fs.FileInfo, error) {
	sf, sfi, err := src.Open(srcRel)
	if err != nil {
		return "", nil, err
	}
	defer sf.Close()
	if err := v.CheckSize(sfi.Size()); err != nil {
		return "", nil, err
	}
	t, err := v.CreateTemp(dir)
	if err != nil {
		return "", nil, err
	}
	defer t.Abort()
	for done := int64(0); done < sfi.Size(); {
		if err := ctx.Err(); err != nil {
			return "", nil, err
		}
		n, err := io.CopyN(t.File, sf, min(copyStep, sfi.Size()-done))
		done += n
		if err != nil {
			return "", nil, v.writeErr(err, sfi.Size()-done)
		}
	}
	return t.Publish(name, opt)
}

// LinkFile publishes a hard link to the file srcRel as name in folder dir
// of the same volume (no clobbering; collision rename). The link shares
// the source's inode, so opt.Mtime is not applied. It fails where the file
// system has no hard links; callers then copy.
func (v *Volume) LinkFile(srcRel, dir, name string, opt PublishOptions) (string, fs.FileInfo, error) {
	s, err := cleanRel(srcRel)
	if err != nil {
		return "", nil, err
	}
	d, err := cleanRel(dir)
	if err != nil {
		return "", nil, err
	}
	if v.Flags.NoSub && d != "." {
		return "", nil, ErrNoSub
	}
	if err := v.checkTarget(d, name); err != nil {
		return "", nil, err
	}
	life, err := v.lifeFor(opt.Life)
	if err != nil {
		return "", nil, err
	}
	s, d = v.reach(s), v.reach(d) // links.go
	if d != "." {
		if err := v.root.MkdirAll(d, 0o755); err != nil {
			return "", nil, mapErr(err)
		}
	}
	var b [9]byte
	rand.Read(b[:])
	tmp := path.Join(d, ".hoard-"+base64.RawURLEncoding.EncodeToString(b[:])+PartialSuffix)
	if err := v.root.Link(s, tmp); err != nil {
		return "", nil, mapErr(err)
	}
	final, err := v.place(tmp, d, name, opt)
	if err != nil {
		v.root.Remove(tmp)
		return "", nil, err
	}
	if err := v.syncDir(d); err != nil {
		return "", nil, err
	}
	fi, err := v.root.Stat(final)
	if err != nil {
		return "", nil, mapErr(err)
	}
	now := v.store.now()
	if life > 0 {
		if err := v.scheduleExpiry(final, fi, now.Add(life)); err != nil {
			return "", nil, err
		}
	}
	v.store.emit(Event{Kind: Created, Vol: v, Rel: relOf(final), Size: fi.Size(), Mtime: fi.ModTime(), At: now, Uploader: opt.Uploader, ClientIP: opt.ClientIP})
	return relOf(final), fi, nil
}

// WriteErr describes a failed write to one of the volume's files: ENOSPC
// and EDQUOT become a *DiskFullError naming the free space (need is the
// size of the write); other errors map to the package's sentinels.
func (v *Volume) WriteErr(err error, need int64) error { return v.writeErr(err, need) }

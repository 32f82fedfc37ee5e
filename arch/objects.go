package arch

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"sync"
)

// Files of volumes on object storage (docs/s3.md) go into an archive as
// any other, their names, sizes and mtimes from the bucket listing; each
// body streams from its object by one GET (store.Volume.OpenObject) while
// it is written, so one object is open at a time. They are not read
// ahead as whole files (small local files are), and the archive
// modifiers (opus, mp3, w, j, p), which work on local files, keep an
// object as it is (as copyparty keeps a file it cannot convert).
//
// An object's body is pumped (pump): a goroutine reads the GET into
// buffers of objBuf while the archive writes the one before, so the
// store's answer and the client's response move at the same time (one
// goroutine taking turns left each side idle half the time, and read
// 256 KiB at a time). Memory: at most objAhead+2 buffers of objBuf per
// archive (objAhead waiting, one being filled, one being written): 4 MiB.

const (
	objBuf   = 1 << 20
	objAhead = 2
)

var objBufs = sync.Pool{New: func() any { b := make([]byte, objBuf); return &b }}

// addObject writes the entry e of the object fl.
func (a *archiveWriter) addObject(fl *File, e *entry) error {
	rc, fi, err := fl.Vol.OpenObject(a.ctx, fl.Rel)
	if err != nil {
		return fmt.Errorf("arch: %s: %w", fl.Name, err)
	}
	defer rc.Close()
	if fi.Size() != fl.Size {
		return fmt.Errorf("%w: %s was %d bytes, now %d", ErrChanged, fl.Name, fl.Size, fi.Size())
	}
	e.r, e.obj = rc, true // a ReadSeeker: zip=crc reads it twice (a second GET)
	return a.addEntry(fl, e)
}

// pump reads exactly n bytes of r and hands them to fn in order, in
// pieces of at most objBuf, reading the next pieces while fn runs. A
// short r is ErrChanged (an object's GET is of the version listed: its
// ETag is matched, so it cannot grow). fn's error stops it.
func (a *archiveWriter) pump(name string, r io.Reader, n int64, fn func([]byte) error) error {
	type piece struct {
		bp  *[]byte
		n   int
		err error
	}
	ctx, cancel := context.WithCancel(a.ctx)
	full := make(chan piece, objAhead)
	go func() {
		defer close(full)
		for left := n; left > 0; {
			bp := objBufs.Get().(*[]byte)
			k, err := io.ReadFull(r, (*bp)[:min(int64(objBuf), left)])
			left -= int64(k)
			select {
			case full <- piece{bp, k, err}:
			case <-ctx.Done():
				objBufs.Put(bp)
				return
			}
			if err != nil {
				return
			}
		}
	}()
	defer func() {
		cancel()
		for p := range full { // until the reader stopped: r is the caller's again
			objBufs.Put(p.bp)
		}
	}()
	got := int64(0)
	for p := range full {
		err := p.err
		if p.n > 0 {
			if werr := fn((*p.bp)[:p.n]); werr != nil {
				objBufs.Put(p.bp)
				return werr
			}
			got += int64(p.n)
		}
		objBufs.Put(p.bp)
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return fmt.Errorf("%w: %s ended at %d of %d bytes", ErrChanged, name, got, n)
			}
			return err
		}
		if err := a.ctx.Err(); err != nil {
			return err
		}
	}
	if got != n {
		if err := a.ctx.Err(); err != nil {
			return err
		}
		return fmt.Errorf("%w: %s ended at %d of %d bytes", ErrChanged, name, got, n)
	}
	return nil
}

// objectBody is body for an object: pumped into the archive, through crc
// when it is not nil.
func (a *archiveWriter) objectBody(e *entry, crc *uint32) error {
	return a.pump(e.name, e.r, e.size, func(p []byte) error {
		if crc != nil {
			*crc = crc32.Update(*crc, crc32.IEEETable, p)
		}
		return a.write(p)
	})
}

// objectCRC is crcOf for an object: its CRC by a pumped read, rewound.
func (a *archiveWriter) objectCRC(e *entry) (uint32, error) {
	var crc uint32
	if err := a.pump(e.name, e.r, e.size, func(p []byte) error {
		crc = crc32.Update(crc, crc32.IEEETable, p)
		return nil
	}); err != nil {
		return 0, err
	}
	if _, err := e.r.(io.Seeker).Seek(0, io.SeekStart); err != nil {
		return 0, err
	}
	return crc, nil
}

package store

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"sync"
)

// ObjectReader reads one version of an object of an object-store volume
// by ranged GETs, as a reader, a seeker and an io.ReaderAt (which, as
// os.File's, leaves the reading position alone): reads in order (hashing,
// a zip member, text) continue one GET; a read at another offset closes
// it and opens a GET from there to the end. It is safe for concurrent
// use (calls take turns).
type ObjectReader struct {
	mu  sync.Mutex
	r   io.ReadSeekCloser
	off int64 // where r is
	pos int64 // where Read goes on
}

// OpenObjectAt is OpenObject with an ObjectReader.
func (v *Volume) OpenObjectAt(ctx context.Context, rel string) (*ObjectReader, fs.FileInfo, error) {
	rc, fi, err := v.OpenObject(ctx, rel)
	if err != nil {
		return nil, nil, err
	}
	return &ObjectReader{r: rc}, fi, nil
}

// NewObjectReader wraps a reader from OpenObject.
func NewObjectReader(r io.ReadSeekCloser) *ObjectReader { return &ObjectReader{r: r} }

func (o *ObjectReader) Read(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if err := o.at(o.pos); err != nil {
		return 0, err
	}
	n, err := o.r.Read(p)
	o.off += int64(n)
	o.pos = o.off
	return n, err
}

// Seek sets where Read goes on (no request is made until it does).
func (o *ObjectReader) Seek(off int64, whence int) (int64, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		off += o.pos
	case io.SeekEnd:
		n, err := o.r.Seek(0, io.SeekEnd) // the size, from Stat
		if err != nil {
			return 0, err
		}
		o.off = n
		off += n
	default:
		return 0, errors.New("store: bad whence")
	}
	if off < 0 {
		return 0, errors.New("store: seek before the start of an object")
	}
	o.pos = off
	return off, nil
}

// at moves r to off.
func (o *ObjectReader) at(off int64) error {
	if off == o.off {
		return nil
	}
	if _, err := o.r.Seek(off, io.SeekStart); err != nil {
		return err
	}
	o.off = off
	return nil
}

// ReadAt reads len(p) bytes at off, or fewer with io.EOF at the end.
func (o *ObjectReader) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, errors.New("store: read before the start of an object")
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if err := o.at(off); err != nil {
		return 0, err
	}
	n, err := io.ReadFull(o.r, p)
	o.off += int64(n)
	if errors.Is(err, io.ErrUnexpectedEOF) {
		err = io.EOF
	}
	return n, err
}

// Close ends the reader's GET.
func (o *ObjectReader) Close() error { return o.r.Close() }

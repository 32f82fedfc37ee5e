package client

import (
	"context"
	"errors"
	"os"
	"syscall"

	"hoard/up2k/sha512x8"
)

// Big files are hashed from mappings of the file, so that the lanes read
// the page cache itself instead of a copy of it: with the machine to
// itself (the client hashes a file before it sends any of it) that keeps
// every lane of every core full, where reading into buffers leaves the
// lanes waiting for the reads.
const (
	canMap = true
	mapMin = 2 << 20 // the smallest file hashed from mappings
)

// mapWindow is how much of a chunk is mapped at a time (a multiple of
// the page size; tests make it smaller).
var mapWindow int64 = 1 << 20

// mmap is syscall.Mmap (tests make it fail).
var mmap = syscall.Mmap

// errNoMap sends a file back to hashing by reads: it cannot be mapped
// (a file system without mmap), or reading a mapping faulted though the
// file is as long as it was (an I/O error, which a read reports as one).
var errNoMap = errors.New("the file cannot be hashed from a mapping")

// hashMapped computes the chunk hashes of f (size bytes, cs per chunk)
// from mappings: h.par chunks at a time, a window of each in turn, so
// that the streams advance together and fill the lanes; at most
// cap(h.maps) windows are mapped at once. A file truncated under a
// mapping faults in the lanes, which sha512x8.NewMapped turns into
// errChanged here.
func (h *hasher) hashMapped(ctx context.Context, f *os.File, size, cs int64) ([]string, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, errNoMap
	}
	n := (size + cs - 1) / cs
	out := make([]string, n)
	var werr error
	var done int64 // bytes reported to progress
	for g := int64(0); g < n && werr == nil; g += int64(h.par) {
		ss := make([]*sha512x8.Stream, min(int64(h.par), n-g))
		for i := range ss {
			ss[i] = h.lanes.New()
		}
		for w := int64(0); w < cs && werr == nil; w += mapWindow {
			for i, s := range ss {
				off := (g+int64(i))*cs + w
				end := min((g+int64(i)+1)*cs, size)
				if off >= end {
					continue
				}
				select {
				case h.maps <- struct{}{}:
				case <-ctx.Done():
					werr = ctx.Err()
				}
				if werr != nil {
					break
				}
				var m []byte
				if err := rc.Control(func(fd uintptr) {
					m, werr = mmap(int(fd), off, int(min(mapWindow, end-off)), syscall.PROT_READ, syscall.MAP_SHARED|syscall.MAP_POPULATE)
				}); err != nil {
					werr = err
				}
				if werr != nil {
					<-h.maps
					if g == 0 && w == 0 && i == 0 {
						werr = errNoMap
					}
					break
				}
				s.Write(m, func() { syscall.Munmap(m); <-h.maps })
			}
		}
		// The streams are finished even after an error, so that every
		// mapping handed to them is removed.
		for _, s := range ss {
			s.Finish()
		}
		for i, s := range ss {
			sum := s.Sum()
			if s.Faulted() && werr == nil {
				werr = errChanged
				if fi, err := f.Stat(); err == nil && fi.Size() >= size {
					werr = errNoMap
				}
			}
			out[g+int64(i)] = b64.EncodeToString(sum[:33])
		}
		if werr == nil {
			k := min(int64(len(ss))*cs, size-g*cs)
			h.progress(k)
			done += k
		}
	}
	if werr != nil {
		h.progress(-done) // the file is not hashed after all (or is again by reads)
		return nil, werr
	}
	return out, nil
}

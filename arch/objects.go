package arch

import "fmt"

// Files of volumes on object storage (docs/s3.md) go into an archive as
// any other, their names, sizes and mtimes from the bucket listing; each
// body streams from its object by one GET (store.Volume.OpenObject) while
// it is written, so one object is open at a time and memory stays the
// copy buffer's. They are not read ahead (small local files are), and the
// archive modifiers (opus, mp3, w, j, p), which work on local files, keep
// an object as it is (as copyparty keeps a file it cannot convert).

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
	e.r = rc // a ReadSeeker: zip=crc reads it twice (a second GET)
	return a.addEntry(fl, e)
}

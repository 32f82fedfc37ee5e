package store

import (
	"errors"
	"time"

	"golang.org/x/sys/unix"
)

// Unpost (copyparty's --unpost): the uploader of a file may delete it
// without the d permission for a while after the upload. Who uploaded a
// file, from where and when is known to the index (it records every
// upload's account, address and time, and follows moves), not to store;
// store asks through UploadLookup, which idx implements, so the rule
// itself stays here.

// UploadInfo is what is known of one file's upload.
type UploadInfo struct {
	User  string    // account; "" anonymous
	IP    string    // client address
	At    time.Time // upload time
	Size  int64     // the file's size and mtime as uploaded, to tell a
	Mtime time.Time // file changed since (zero Mtime: not compared)
}

// UploadLookup finds the upload of a file: ok is false when the file is
// not known as an upload (scanned, or its volume is not indexed).
type UploadLookup interface {
	UploadOf(v *Volume, rel string) (info UploadInfo, ok bool, err error)
}

// SetUploadLookup sets where unpost learns who uploaded a file (main wires
// the index in). Without one, nothing can be unposted.
func (s *Store) SetUploadLookup(l UploadLookup) {
	s.ops.mu.Lock()
	s.ops.lookup = l
	s.ops.mu.Unlock()
}

// SetUnpost sets how long after an upload its uploader may still delete
// it without d (copyparty's --unpost, 12 hours by default); 0 turns
// unpost off.
func (s *Store) SetUnpost(d time.Duration) {
	s.ops.mu.Lock()
	s.ops.unpost = max(d, 0)
	s.ops.mu.Unlock()
}

// errOwnUpload marks an unpost refused for a file the asker did upload
// (too long ago, changed since): telling them so reveals nothing.
var errOwnUpload = errors.New("store: own upload")

// unpostOn refuses unpost when the server has it off, before anything is
// looked at.
func (s *Store) unpostOn() error {
	if s.UnpostWindow() <= 0 {
		return &OpError{Op: "delete", Kind: KindForbidden, Need: PermDelete, Msg: "the unpost feature is disabled in server config"}
	}
	return nil
}

// UnpostWindow is how long after an upload its uploader may still delete
// it (0: unpost is off). ?ups lists completed uploads only within it.
func (s *Store) UnpostWindow() time.Duration {
	s.ops.mu.RLock()
	defer s.ops.mu.RUnlock()
	return s.ops.unpost
}

// checkUnpost decides whether who may delete the file rel of v (described
// by st) as its uploader. The messages are copyparty's.
func (s *Store) checkUnpost(who Actor, v *Volume, rel string, st *unix.Stat_t) error {
	const op = "delete"
	s.ops.mu.RLock()
	lookup, window := s.ops.lookup, s.ops.unpost
	s.ops.mu.RUnlock()
	no := func(why string) error {
		return &OpError{Op: op, Kind: KindForbidden, Need: PermDelete, Msg: "you cannot delete this: " + why}
	}
	if window <= 0 {
		return &OpError{Op: op, Kind: KindForbidden, Need: PermDelete, Msg: "the unpost feature is disabled in server config"}
	}
	if !v.Perms(who.User).Has(PermWrite) {
		return forbid(op, who, v, PermDelete, "delete")
	}
	if lookup == nil {
		return no("file not found (unpost needs the index: -e2d)")
	}
	info, ok, err := lookup.UploadOf(v, rel)
	if err != nil {
		return err
	}
	mt := time.Unix(int64(st.Mtim.Sec), int64(st.Mtim.Nsec))
	switch {
	case !ok:
		return no("file not found")
	case info.IP != who.IP || info.User != who.User:
		return no("not uploaded by (You)")
	case s.now().Sub(info.At) > window:
		return own(no("uploaded too long ago"))
	case info.Size != st.Size || !info.Mtime.IsZero() && !info.Mtime.Equal(mt):
		return own(no("it changed since it was uploaded"))
	}
	return nil
}

// own marks an unpost refusal about the asker's own upload (errOwnUpload).
func own(err error) error {
	var e *OpError
	if errors.As(err, &e) {
		e.Err = errOwnUpload
	}
	return err
}

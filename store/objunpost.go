package store

import (
	"time"
)

// Unpost on an object-store volume: who uploaded an object, from where
// and when travel with it as its metadata (hoard-uploader, hoard-ip,
// hoard-at, written by PUT, multipart and up2k on S3), so the rule of
// unpost.go is decided from the object itself, on any node, with no
// index. A file replaced since carries its new upload's metadata; a move
// or copy keeps the original's (the upload it is).

// checkUnpostObject decides whether who may delete the object oi of v as
// its uploader. The messages are copyparty's, as in checkUnpost.
func (s *Store) checkUnpostObject(who Actor, v *Volume, oi ObjectInfo) error {
	const op = "delete"
	s.ops.mu.RLock()
	window := s.ops.unpost
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
	at, err := time.Parse(time.RFC3339Nano, oi.Meta["hoard-at"])
	ip, ok := oi.Meta["hoard-ip"]
	switch {
	case err != nil || !ok:
		return no("file not found") // not uploaded through hoard
	case ip != who.IP || oi.Meta["hoard-uploader"] != who.User:
		return no("not uploaded by (You)")
	case s.now().Sub(at) > window:
		return own(no("uploaded too long ago"))
	}
	return nil
}

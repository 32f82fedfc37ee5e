package store

import (
	"context"
	"os"
	"syscall"
	"time"
)

// openAny opens the file or folder at rel of v read-only (confined,
// checked against the state folder), for changes made through its
// descriptor: its mtime, its properties.
func (v *Volume) openAny(rel string) (*os.File, error) {
	r, err := cleanRel(rel)
	if err != nil {
		return nil, err
	}
	if err := v.inScope(r, true); err != nil {
		return nil, err
	}
	f, _, err := v.openIn(r, os.O_RDONLY|syscall.O_NONBLOCK) // guard.go
	if err != nil {
		return nil, mapErr(err)
	}
	return f, nil
}

// SetMtime sets the modification time of the file or folder at (WebDAV's
// PROPPATCH of DAV:getlastmodified). It needs the w permission. The time
// is set through the open descriptor and flushed before it returns, and
// a file's change is an event (Touched) the index follows, noted in the
// journal first so that a crash in between is replayed.
func (s *Store) SetMtime(ctx context.Context, who Actor, at Loc, t time.Time) error {
	const op = "set the time"
	v := at.Vol
	if v == nil {
		return refuse(op, KindForbidden, "no volume is mounted at %s", at.URLPath())
	}
	if !v.Perms(who.User).Has(PermWrite) {
		return forbid(op, who, v, PermWrite, "change properties")
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	f, err := v.openAny(at.Rel)
	if err != nil {
		return opErr(op, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return opErr(op, mapErr(err))
	}
	rel := at.Rel
	var pn *pendingNote
	ev := Event{Kind: Touched, Vol: v, Rel: rel, Size: fi.Size(), Mtime: t, At: s.now(), Uploader: who.User, ClientIP: who.IP}
	if fi.Mode().IsRegular() {
		pn = s.noteAsync(ev) // flushed while the time is
	}
	err = setMtime(f, t)
	if err == nil {
		err = fsyncFile(f)
	}
	nid, nerr := pn.wait()
	if err != nil {
		s.forget(v, nid)
		return opErr(op, v.writeErr(err, 0))
	}
	if !fi.Mode().IsRegular() {
		return nil
	}
	if nerr != nil {
		s.log.Error("noting a time change for the index failed; a crash before it is indexed shows the old time in search until a scan", "volume", "/"+v.VPath, "path", rel, "err", nerr)
	}
	if nfi, err := f.Stat(); err == nil {
		ev.Size, ev.Mtime = nfi.Size(), nfi.ModTime()
	}
	ev.Note = nid
	s.emit(ev)
	return nil
}

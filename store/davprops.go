package store

import (
	"context"
	"encoding/binary"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"

	"golang.org/x/sys/unix"
)

// openAny opens the file or folder at rel of v read-only (confined,
// checked against the state folder), for changes made through its
// descriptor: its mtime, its properties.
func (v *Volume) openAny(rel string) (*os.File, error) {
	if v.obj != nil {
		return nil, unbuilt("changing the time or properties of a file")
	}
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
	// A fifo, socket or device opens (without blocking), but it is no
	// file: its time and properties are not ours to change.
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() && !fi.IsDir() {
		f.Close()
		if err != nil {
			return nil, mapErr(err)
		}
		return nil, ErrNotRegular
	}
	return f, nil
}

// openToChange opens the file or folder at for a change of its
// properties, which needs w.
func openToChange(ctx context.Context, op string, who Actor, at Loc) (*Volume, *os.File, error) {
	v := at.Vol
	if v == nil {
		return nil, nil, refuse(op, KindForbidden, "no volume is mounted at %s", at.URLPath())
	}
	if !v.Perms(who.User).Has(PermWrite) {
		return nil, nil, forbid(op, who, v, PermWrite, "change properties")
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	f, err := v.openAny(at.Rel)
	if err != nil {
		return nil, nil, opErr(op, err)
	}
	return v, f, nil
}

// SetMtime sets the modification time of the file or folder at (WebDAV's
// PROPPATCH of DAV:getlastmodified). It needs the w permission. The time
// is set through the open descriptor and flushed before it returns, and
// a file's change is an event (Touched) the index follows, noted in the
// journal first so that a crash in between is replayed.
func (s *Store) SetMtime(ctx context.Context, who Actor, at Loc, t time.Time) error {
	const op = "set the time"
	v, f, err := openToChange(ctx, op, who, at)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := s.settle(v); err != nil { // a replay would set the old time (gcommit.go)
		return opErr(op, err)
	}
	return s.setMtimeOpen(v, who, at.Rel, f, t)
}

// setMtimeOpen sets the mtime of f, the file or folder rel of v, flushes
// it, and for a file emits Touched (noted ahead, while the flush runs).
func (s *Store) setMtimeOpen(v *Volume, who Actor, rel string, f *os.File, t time.Time) error {
	const op = "set the time"
	fi, err := f.Stat()
	if err != nil {
		return opErr(op, mapErr(err))
	}
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

// ---- dead properties (WebDAV)

// A file's or folder's dead properties (RFC 4918 section 4: set by a
// client, kept by the server) live in one extended attribute of it,
// propsXattr, read and written through its open descriptor, never by
// path. So they are confined like the file, go where a rename takes it,
// are copied with it (copyProps, by copyFileAt and copyTree) and vanish
// with it. The value is a small bounded encoding (encodeProps) of every
// property: its namespace, its local name and its value, a self-contained
// XML fragment (each element declares its own namespace), so that it is
// served back namespace-correctly in any reply.

const (
	propsXattr = "user.hoard.props"
	// MaxPropsBytes caps the encoded properties of one file.
	MaxPropsBytes = 64 << 10
	// MaxProps caps how many dead properties one file holds.
	MaxProps = 256
	// MaxPropName caps a property's namespace and local name, each.
	MaxPropName  = 1024
	propsVersion = 1
)

// PropName is a property's XML name.
type PropName struct{ Space, Local string }

// DeadProp is one dead property: its name and its value, a self-contained
// XML fragment (every element declares its namespace; text escaped).
type DeadProp struct {
	PropName
	Value string
}

// PropOp is one change of a PROPPATCH: set Prop, or (Remove) remove the
// property of Prop's name.
type PropOp struct {
	Remove bool
	Prop   DeadProp
}

// ErrNoProps is a file system that keeps no extended attributes: dead
// properties cannot be stored there.
var ErrNoProps = &Error{Kind: KindForbidden, Msg: "this volume's file system keeps no extended attributes, so no dead properties can be stored"}

// errPropsFull is a change that would make a file's properties larger
// than the caps.
func errPropsFull(why string) *Error {
	return &Error{Kind: KindStateFull, Msg: "the dead properties would exceed " + why}
}

// encodeProps encodes ps: version byte, count, then per property its
// namespace, local name and value, each length-prefixed (uvarint). It
// refuses what breaks the caps, so what it returns always decodes.
func encodeProps(ps []DeadProp) ([]byte, error) {
	if len(ps) > MaxProps {
		return nil, errPropsFull(fmt.Sprintf("%d properties per file", MaxProps))
	}
	b := []byte{propsVersion}
	b = binary.AppendUvarint(b, uint64(len(ps)))
	for _, p := range ps {
		if err := checkPropName(p.PropName); err != nil {
			return nil, err
		}
		for _, s := range []string{p.Space, p.Local, p.Value} {
			b = binary.AppendUvarint(b, uint64(len(s)))
			b = append(b, s...)
		}
		if len(b) > MaxPropsBytes {
			return nil, errPropsFull(fmt.Sprintf("%d bytes per file", MaxPropsBytes))
		}
	}
	return b, nil
}

var errBadProps = errors.New("store: corrupt dead properties")

// decodeProps decodes what encodeProps made; anything else (a value not
// of this encoding, a broken cap, a value that is not a self-contained
// XML fragment, a name twice) is refused whole.
func decodeProps(b []byte) ([]DeadProp, error) {
	if len(b) > MaxPropsBytes || len(b) < 2 || b[0] != propsVersion {
		return nil, errBadProps
	}
	b = b[1:]
	n, k := uvarint(b)
	if k <= 0 || n > MaxProps {
		return nil, errBadProps
	}
	b = b[k:]
	ps := make([]DeadProp, 0, n)
	seen := make(map[PropName]bool, n)
	for range n {
		var s [3]string
		for i := range s {
			l, k := uvarint(b)
			if k <= 0 || l > uint64(len(b)-k) {
				return nil, errBadProps
			}
			s[i] = string(b[k : k+int(l)])
			b = b[k+int(l):]
		}
		p := DeadProp{PropName{s[0], s[1]}, s[2]}
		if checkPropName(p.PropName) != nil || seen[p.PropName] || !ValidFragment(p.Value) {
			return nil, errBadProps
		}
		seen[p.PropName] = true
		ps = append(ps, p)
	}
	if len(b) != 0 {
		return nil, errBadProps
	}
	return ps, nil
}

// uvarint is binary.Uvarint refusing non-minimal encodings (k = 0): one
// set of properties has one encoding.
func uvarint(b []byte) (uint64, int) {
	v, k := binary.Uvarint(b)
	if k > 0 && len(binary.AppendUvarint(nil, v)) != k {
		return 0, 0
	}
	return v, k
}

// checkPropName refuses a name that is not an XML name (local part) or
// too long.
func checkPropName(n PropName) error {
	if len(n.Space) > MaxPropName || len(n.Local) > MaxPropName {
		return errPropsFull(fmt.Sprintf("%d bytes per property name", MaxPropName))
	}
	if !utf8.ValidString(n.Space) || strings.ContainsAny(n.Space, "\x00") {
		return &Error{Kind: KindInvalid, Msg: "a property's namespace is not valid UTF-8"}
	}
	if !xmlName(n.Local) {
		return &Error{Kind: KindInvalid, Msg: "a property's name is not an XML name"}
	}
	return nil
}

// xmlName reports whether s is an XML NCName (no colon).
func xmlName(s string) bool {
	if s == "" || !utf8.ValidString(s) {
		return false
	}
	for i, r := range s {
		switch {
		case r == '_' || unicode.IsLetter(r):
		case i > 0 && (r == '-' || r == '.' || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r) || unicode.Is(unicode.Mc, r) || r == 0xB7):
		default:
			return false
		}
	}
	return true
}

// ValidFragment reports whether v is well-formed XML content: text and
// balanced elements, every element and attribute prefix declared inside v.
func ValidFragment(v string) bool {
	if !utf8.ValidString(v) {
		return false
	}
	d := xml.NewDecoder(strings.NewReader("<r>" + v + "</r>"))
	d.Strict = true
	depth := 0
	for {
		t, err := d.RawToken()
		if errors.Is(err, io.EOF) {
			return depth == 0
		}
		if err != nil {
			return false
		}
		switch t := t.(type) {
		case xml.StartElement:
			if depth == 0 && t.Name.Local != "r" {
				return false
			}
			if t.Name.Space != "" && depth > 0 && !declared(t, t.Name.Space) {
				return false
			}
			for _, a := range t.Attr {
				if a.Name.Space != "" && a.Name.Space != "xmlns" && !declared(t, a.Name.Space) {
					return false
				}
			}
			depth++
		case xml.EndElement:
			depth--
			if depth == 0 {
				// Only the wrapper's own end may close it.
				if _, err := d.RawToken(); !errors.Is(err, io.EOF) {
					return false
				}
				return true
			}
		case xml.ProcInst, xml.Directive:
			return false
		}
	}
}

// declared reports whether the prefix p is declared on the element t
// itself (fragments declare their namespaces where they use them).
func declared(t xml.StartElement, p string) bool {
	if p == "xml" {
		return true
	}
	for _, a := range t.Attr {
		if a.Name.Space == "xmlns" && a.Name.Local == p {
			return true
		}
	}
	return false
}

// readProps reads the dead properties of the open file f; none when it
// has none or the file system keeps no extended attributes.
func readProps(f *os.File) ([]DeadProp, error) {
	buf := make([]byte, 4096)
	for {
		n, err := fgetxattr(f, propsXattr, buf)
		switch {
		case err == nil:
			return decodeProps(buf[:n])
		case isNoAttr(err), errors.Is(err, unix.ENOTSUP):
			return nil, nil
		case errors.Is(err, unix.ERANGE) && len(buf) < MaxPropsBytes:
			buf = make([]byte, MaxPropsBytes)
		default:
			return nil, err
		}
	}
}

// writeProps replaces the dead properties of the open file f.
func writeProps(f *os.File, ps []DeadProp) error {
	if len(ps) == 0 {
		err := fremovexattr(f, propsXattr)
		if err == nil || isNoAttr(err) || errors.Is(err, unix.ENOTSUP) {
			return nil
		}
		return err
	}
	b, err := encodeProps(ps)
	if err != nil {
		return err
	}
	err = fsetxattr(f, propsXattr, b)
	switch {
	case errors.Is(err, unix.ENOTSUP):
		return ErrNoProps
	case errors.Is(err, unix.ENOSPC), errors.Is(err, unix.E2BIG), errors.Is(err, unix.EDQUOT):
		return errPropsFull("what this file system holds per file")
	}
	return err
}

// copyProps gives dst the dead properties of src (a copy keeps them). A
// file system without extended attributes has none to copy.
func copyProps(dst, src *os.File) error {
	ps, err := readProps(src)
	if err != nil || len(ps) == 0 {
		return nil // a corrupt or unreadable set is not copied
	}
	err = writeProps(dst, ps)
	if errors.Is(err, ErrNoProps) {
		return nil // the destination's file system keeps none
	}
	return err
}

// StatProps describes the file or folder at rel and lists its dead
// properties, through one open descriptor.
func (v *Volume) StatProps(rel string) (fs.FileInfo, []DeadProp, error) {
	if v.obj != nil {
		fi, err := v.Stat(rel) // objects keep no dead properties
		return fi, nil, err
	}
	f, err := v.openAny(rel)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, mapErr(err)
	}
	ps, err := readProps(f)
	if err != nil {
		v.store.log.Warn("unreadable dead properties; served as none", "volume", "/"+v.VPath, "path", rel, "err", err)
		ps = nil
	}
	return fi, ps, nil
}

// PatchProps applies a PROPPATCH to the file or folder at: the changes of
// its dead properties in order, and a new mtime when mtime is not zero;
// all or nothing. It needs the r and w permissions. The changes are flushed
// before it returns; a file's new mtime reaches the index (Touched).
func (s *Store) PatchProps(ctx context.Context, who Actor, at Loc, ops []PropOp, mtime time.Time) error {
	const op = "change properties"
	if v := at.Vol; v != nil && v.Perms(who.User).Has(PermWrite) && !v.Perms(who.User).Has(PermRead) {
		// Properties are changed on what exists: someone who may not
		// read would learn what is there, and change others' files.
		return forbid(op, who, v, PermRead, "change properties")
	}
	if len(ops) == 0 {
		if mtime.IsZero() {
			return nil
		}
		return s.SetMtime(ctx, who, at, mtime)
	}
	v, f, err := openToChange(ctx, op, who, at)
	if err != nil {
		return err
	}
	defer f.Close()
	// A replay that wrote the file again would lose its properties and
	// time (gcommit.go).
	if _, err := s.settle(v); err != nil {
		return opErr(op, err)
	}
	// One change of a file's properties at a time (they are read,
	// changed and written back whole).
	if fi, err := f.Stat(); err == nil {
		if id, ok := idOf(fi); ok {
			defer s.lockFile(id)()
		}
	}
	old, err := readProps(f)
	if err != nil {
		old = nil // corrupt: replaced by the new set
	}
	ps := slices.Clone(old)
	for _, o := range ops {
		if err := checkPropName(o.Prop.PropName); err != nil {
			return err
		}
		i := slices.IndexFunc(ps, func(p DeadProp) bool { return p.PropName == o.Prop.PropName })
		switch {
		case o.Remove && i >= 0:
			ps = slices.Delete(ps, i, i+1)
		case o.Remove:
		case len(o.Prop.Value) > MaxPropsBytes:
			return errPropsFull(fmt.Sprintf("%d bytes per file", MaxPropsBytes))
		case !ValidFragment(o.Prop.Value):
			return &Error{Kind: KindInvalid, Msg: "a property's value is not well-formed XML"}
		case i >= 0:
			ps[i] = o.Prop
		default:
			ps = append(ps, o.Prop)
		}
	}
	if err := writeProps(f, ps); err != nil {
		return err
	}
	if !mtime.IsZero() {
		if err := s.setMtimeOpen(v, who, at.Rel, f, mtime); err != nil {
			writeProps(f, old) // all or nothing
			return err
		}
		return nil
	}
	if err := fsyncFile(f); err != nil {
		return opErr(op, v.writeErr(err, 0))
	}
	return nil
}

package arch

import (
	"archive/zip"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"hoard/store"
)

// Limits of reading a zip in place (archive/zip over an io.ReaderAt such
// as the open file); nothing is ever extracted to disk.
const (
	ZipMaxName      = 4096    // bytes of a member name
	ZipMaxMember    = 4 << 30 // bytes of one member's output
	zipMaxRatio     = 200     // uncompressed / compressed above this is a bomb…
	zipRatioFrom    = 1 << 20 // …once the member is larger than this
	zipNotValidText = "not a valid zip file"
)

// ZipListMax is how many members ZipList returns (a variable so tests can
// lower it).
var ZipListMax = 100_000

// ZipEntry is one member of a zip.
type ZipEntry struct {
	Name        string
	Size, CSize uint64
	Mod         time.Time
	Dir         bool
}

func invalid(err error, format string, args ...any) error {
	return &store.Error{Kind: store.KindInvalid, Msg: fmt.Sprintf(format, args...), Err: err}
}

// ZipDirMax bounds the bytes archive/zip may read to open a zip: its end
// records and its central directory (a variable so tests can lower it).
// archive/zip keeps every directory entry, ~300 bytes of memory for the
// 47 bytes of the smallest, and reads entries until one does not parse,
// whatever count the end record declares; so a zip that is little but
// central directory would cost six times its size per request. 16 MiB
// is ~120,000 members of ordinary names.
var ZipDirMax int64 = 16 << 20

var errZipDir = errors.New("zip central directory over the limit")

// dirCap is the io.ReaderAt archive/zip opens a zip through: it counts
// what the opening reads, failing past ZipDirMax, and then, once opened,
// lets the members' reads through.
type dirCap struct {
	r      io.ReaderAt
	left   int64
	opened bool
}

func (d *dirCap) ReadAt(p []byte, off int64) (int, error) {
	if d.opened {
		return d.r.ReadAt(p, off)
	}
	if int64(len(p)) > d.left {
		return 0, errZipDir
	}
	n, err := d.r.ReadAt(p, off)
	d.left -= int64(n)
	return n, err
}

func openZip(r io.ReaderAt, size int64) (*zip.Reader, error) {
	dc := &dirCap{r: r, left: ZipDirMax}
	zr, err := zip.NewReader(dc, size)
	dc.opened = true
	switch {
	case errors.Is(err, errZipDir):
		return nil, invalid(err, "this zip's central directory is larger than %d MiB; it is not read", ZipDirMax>>20)
	case err != nil && !errors.Is(err, zip.ErrInsecurePath):
		return nil, invalid(err, zipNotValidText)
	}
	return zr, nil
}

// ZipList lists the members of the zip r (size bytes) in central-directory
// order, at most ZipListMax; more is how many were left off. Members whose
// names CheckMemberName would refuse on length or encoding are skipped.
func ZipList(r io.ReaderAt, size int64) (list []ZipEntry, more int, err error) {
	zr, err := openZip(r, size)
	if err != nil {
		return nil, 0, err
	}
	list = make([]ZipEntry, 0, min(len(zr.File), ZipListMax))
	for _, m := range zr.File {
		if len(list) == ZipListMax {
			return list, len(zr.File) - ZipListMax, nil
		}
		if len(m.Name) > ZipMaxName || !utf8.ValidString(m.Name) {
			continue
		}
		list = append(list, ZipEntry{Name: m.Name, Size: m.UncompressedSize64, CSize: m.CompressedSize64, Mod: m.Modified, Dir: strings.HasSuffix(m.Name, "/")})
	}
	return list, 0, nil
}

// CheckMemberName refuses the member names ZipMember will not look up:
// empty, too long, not UTF-8, control characters, or names that would
// escape a folder if extracted (absolute, "..", backslashes).
func CheckMemberName(name string) error {
	switch {
	case name == "":
		return invalid(nil, "zget= needs a member name")
	case len(name) > ZipMaxName:
		return invalid(nil, "zget=: member name longer than %d bytes", ZipMaxName)
	case !utf8.ValidString(name):
		return invalid(nil, "zget=: member name is not UTF-8")
	case strings.ContainsAny(name, "\\\x00"), strings.HasPrefix(name, "/"):
		return invalid(nil, "zget=%q: unsafe member name", name)
	}
	for c := range strings.SplitSeq(name, "/") {
		if c == ".." {
			return invalid(nil, "zget=%q: unsafe member name", name)
		}
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f {
			return invalid(nil, "zget=: member name contains a control character")
		}
	}
	return nil
}

// ZipMember is one member of a zip opened for reading, decompressed.
// Read stops at Size and fails on a length or checksum mismatch.
type ZipMember struct {
	Name string
	Size uint64
	rc   io.ReadCloser
}

// OpenZipMember finds name in the zip r (size bytes) and opens it,
// refusing folders, members over ZipMaxMember and likely zip bombs.
func OpenZipMember(r io.ReaderAt, size int64, name string) (*ZipMember, error) {
	if err := CheckMemberName(name); err != nil {
		return nil, err
	}
	zr, err := openZip(r, size)
	if err != nil {
		return nil, err
	}
	var m *zip.File
	for _, zf := range zr.File {
		if zf.Name == name {
			m = zf
			break
		}
	}
	switch {
	case m == nil:
		return nil, &store.Error{Kind: store.KindNotFound, Msg: fmt.Sprintf("no member %q in this zip", name)}
	case strings.HasSuffix(m.Name, "/") || m.Mode().IsDir():
		return nil, invalid(nil, "zget=%q is a folder", name)
	case m.UncompressedSize64 > ZipMaxMember:
		return nil, invalid(nil, "zget=%q: member larger than %d bytes", name, int64(ZipMaxMember))
	case m.UncompressedSize64 > zipRatioFrom && m.UncompressedSize64 > zipMaxRatio*max(m.CompressedSize64, 1):
		return nil, invalid(nil, "zget=%q: compression ratio above %d: refusing a likely zip bomb", name, zipMaxRatio)
	}
	off, err := m.DataOffset()
	if err != nil || off < 0 || uint64(off)+m.CompressedSize64 > uint64(size) {
		return nil, invalid(err, "zget: member data lies outside the zip (truncated or corrupt)")
	}
	rc, err := m.Open()
	if err != nil {
		return nil, invalid(err, "zget: cannot read that member (unsupported method or corrupt)")
	}
	return &ZipMember{Name: m.Name, Size: m.UncompressedSize64, rc: rc}, nil
}

// Close closes the member.
func (m *ZipMember) Close() error { return m.rc.Close() }

// WriteTo copies the member to w, always keeping the latest piece read
// until the next read succeeds: the reader knows of a checksum or length
// mismatch only at the end, so a bad member is never written whole.
func (m *ZipMember) WriteTo(w io.Writer) (int64, error) {
	n, err := copyHoldLast(w, io.LimitReader(m.rc, int64(m.Size)+1))
	if err == nil && uint64(n) != m.Size {
		err = errors.New("zget: member size differs from its header")
	}
	return n, err
}

// copyHoldLast copies r to w, always keeping the latest piece read until
// the next read succeeds: on a read error the held piece is dropped.
func copyHoldLast(w io.Writer, r io.Reader) (int64, error) {
	a, b := make([]byte, 64<<10), make([]byte, 64<<10)
	held := 0
	var total int64
	for {
		n, err := r.Read(b)
		if err != nil && err != io.EOF {
			return total, err
		}
		if n > 0 || err == io.EOF {
			if held > 0 {
				if _, werr := w.Write(a[:held]); werr != nil {
					return total, werr
				}
				total += int64(held)
			}
			a, b, held = b, a, n
		}
		if err == io.EOF {
			if held > 0 {
				if _, werr := w.Write(a[:held]); werr != nil {
					return total, werr
				}
				total += int64(held)
			}
			return total, nil
		}
	}
}

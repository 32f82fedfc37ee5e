package arch

import (
	"encoding/binary"
	"hash/crc32"
	"io"
	"time"

	"golang.org/x/text/encoding/charmap"
)

// The zip writer stores (method 0, never deflates: media is compressed
// already) and streams: in the default and dos variants each body is
// followed by a data descriptor with its CRC; in the crc variant the file
// is read once for its CRC, which goes into the local header with the
// sizes, and read again for the body (checked against that CRC). Sizes are
// always known (they come from the walk), so local headers carry them too.
// zip64 extra fields are added per entry when a size or an offset needs
// them, and the zip64 end records when the central directory does.

const (
	sigLocal   = 0x04034b50
	sigCentral = 0x02014b50
	sigDesc    = 0x08074b50
	sigEnd     = 0x06054b50
	sigEnd64   = 0x06064b50
	sigLoc64   = 0x07064b50

	flagDesc = 1 << 3
	flagUTF8 = 1 << 11

	max32 = 0xffffffff
	max16 = 0xffff
)

type cdEntry struct {
	name  []byte
	flags uint16
	crc   uint32
	size  int64
	off   int64
	mode  uint32
	mtime time.Time
}

// zipName encodes an entry name. UTF-8 names carry flag bit 11. In the
// CP437 variants a name that code page 437 cannot hold (e.g. CJK, most
// accented capitals outside Latin-1's CP437 subset) is stored in UTF-8 with
// bit 11 for that entry alone: the alternative, copyparty's replacement of
// every such character by "_", loses the name and can make two entries
// collide; readers that ignore bit 11 show the UTF-8 bytes as mojibake but
// still extract every file.
func zipName(name string, cp437 bool) ([]byte, uint16) {
	if cp437 {
		if b, err := charmap.CodePage437.NewEncoder().Bytes([]byte(name)); err == nil && roundTrips(b, name) {
			return b, 0
		}
	}
	return []byte(name), flagUTF8
}

// roundTrips guards against encoders that substitute silently.
func roundTrips(b []byte, name string) bool {
	d, err := charmap.CodePage437.NewDecoder().Bytes(b)
	return err == nil && string(d) == name
}

// dosTime is the MS-DOS date and time of t in UTC, as copyparty writes it
// (two-second resolution, rounded up; the exact time is in the 0x5455
// extra field).
func dosTime(t time.Time) (uint16, uint16) {
	t = t.UTC().Add(time.Second)
	if t.Year() < 1980 {
		return 0, 1<<5 | 1
	}
	if t.Year() > 2107 {
		t = time.Date(2107, 12, 31, 23, 59, 58, 0, time.UTC)
	}
	return uint16(t.Hour()<<11 | t.Minute()<<5 | t.Second()>>1),
		uint16((t.Year()-1980)<<9 | int(t.Month())<<5 | t.Day())
}

// unixTime clamps t to the u32 of the extended-timestamp field.
func unixTime(t time.Time) uint32 {
	s := t.Unix()
	if s < 0 {
		return 0
	}
	if s > max32 {
		return max32
	}
	return uint32(s)
}

type le []byte

func (b le) u16(v uint16) le { return binary.LittleEndian.AppendUint16(b, v) }
func (b le) u32(v uint32) le { return binary.LittleEndian.AppendUint32(b, v) }
func (b le) u64(v uint64) le { return binary.LittleEndian.AppendUint64(b, v) }

func clamp32(v int64) uint32 {
	if v >= max32 {
		return max32
	}
	return uint32(v)
}

func (a *archiveWriter) zipEntry(fl *File, e *entry) error {
	name, flags := zipName(e.name, a.f.CP437)
	ce := cdEntry{name: name, size: e.size, off: a.off, mode: fl.Mode, mtime: fl.Mtime}
	z64 := e.size >= max32
	if a.f.CRCFirst {
		if !a.dry {
			crc, err := a.crcOf(e)
			if err != nil {
				return err
			}
			ce.crc = crc
		}
	} else {
		flags |= flagDesc
	}
	ce.flags = flags
	need := uint16(10)
	if z64 {
		need = 45
	}
	tm, dt := dosTime(fl.Mtime)
	extra := le(nil).u16(0x5455).u16(5)
	extra = append(extra, 1)
	extra = extra.u32(unixTime(fl.Mtime))
	if z64 {
		extra = extra.u16(1).u16(16).u64(uint64(e.size)).u64(uint64(e.size))
	}
	h := le(make([]byte, 0, 30+len(name)+len(extra))).
		u32(sigLocal).u16(need).u16(flags).u16(0).u16(tm).u16(dt).
		u32(ce.crc).u32(clamp32(e.size)).u32(clamp32(e.size)).
		u16(uint16(len(name))).u16(uint16(len(extra)))
	h = append(h, name...)
	h = append(h, extra...)
	if err := a.write(h); err != nil {
		return err
	}
	var crc uint32
	if err := a.body(e, &crc); err != nil {
		return err
	}
	if a.f.CRCFirst {
		if !a.dry && crc != ce.crc {
			return ErrChanged // the content changed between the two reads
		}
	} else {
		ce.crc = crc
		d := le(make([]byte, 0, 24)).u32(sigDesc).u32(crc)
		if z64 {
			d = d.u64(uint64(e.size)).u64(uint64(e.size))
		} else {
			d = d.u32(uint32(e.size)).u32(uint32(e.size))
		}
		if err := a.write(d); err != nil {
			return err
		}
	}
	a.cd = append(a.cd, ce)
	return nil
}

// crcOf reads e's content once for its CRC and rewinds it.
func (a *archiveWriter) crcOf(e *entry) (uint32, error) {
	var rs io.ReadSeeker
	switch {
	case e.data != nil || e.size == 0:
		return crc32.ChecksumIEEE(e.data), nil
	case e.file != nil:
		rs = e.file
	default:
		s, ok := e.r.(io.ReadSeeker)
		if !ok {
			// A transformed entry that cannot rewind: read it whole
			// through the CRC into memory would break the streaming
			// promise, so such a Transform must return a ReadSeeker.
			return 0, errNoSeek
		}
		rs = s
	}
	h := crc32.NewIEEE()
	n, err := io.Copy(h, io.LimitReader(rs, e.size))
	if err != nil {
		return 0, err
	}
	if n != e.size {
		return 0, ErrChanged
	}
	if _, err := rs.Seek(0, io.SeekStart); err != nil {
		return 0, err
	}
	return h.Sum32(), nil
}

var errNoSeek = &modError{"zip=crc needs a transformed entry it can read twice"}

type modError struct{ s string }

func (e *modError) Error() string { return "arch: " + e.s }

func (a *archiveWriter) zipEnd() error {
	start := a.off
	for _, ce := range a.cd {
		var z64 le
		if ce.size >= max32 {
			z64 = z64.u64(uint64(ce.size)).u64(uint64(ce.size))
		}
		if ce.off >= max32 {
			z64 = z64.u64(uint64(ce.off))
		}
		extra := le(nil).u16(0x5455).u16(5)
		extra = append(extra, 1)
		extra = extra.u32(unixTime(ce.mtime))
		need := uint16(10)
		if len(z64) > 0 {
			extra = extra.u16(1).u16(uint16(len(z64)))
			extra = append(extra, z64...)
			need = 45
		}
		tm, dt := dosTime(ce.mtime)
		h := le(make([]byte, 0, 46+len(ce.name)+len(extra))).
			u32(sigCentral).u16(0x031e).u16(need).u16(ce.flags).u16(0).u16(tm).u16(dt).
			u32(ce.crc).u32(clamp32(ce.size)).u32(clamp32(ce.size)).
			u16(uint16(len(ce.name))).u16(uint16(len(extra))).u16(0).
			u16(0).u16(0).u32((0o100000 | ce.mode) << 16).u32(clamp32(ce.off))
		h = append(h, ce.name...)
		h = append(h, extra...)
		if err := a.write(h); err != nil {
			return err
		}
	}
	end := a.off
	size := end - start
	n := int64(len(a.cd))
	if n >= max16 || size >= max32 || start >= max32 {
		r := le(make([]byte, 0, 76)).
			u32(sigEnd64).u64(44).u16(0x031e).u16(45).u32(0).u32(0).
			u64(uint64(n)).u64(uint64(n)).u64(uint64(size)).u64(uint64(start)).
			u32(sigLoc64).u32(0).u64(uint64(end)).u32(1)
		if err := a.write(r); err != nil {
			return err
		}
	}
	c16 := uint16(max16)
	if n < max16 {
		c16 = uint16(n)
	}
	r := le(make([]byte, 0, 22)).u32(sigEnd).u16(0).u16(0).u16(c16).u16(c16).
		u32(clamp32(size)).u32(clamp32(start)).u16(0)
	return a.write(r)
}

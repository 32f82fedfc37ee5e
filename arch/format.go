package arch

import (
	"fmt"
	"hoard/store"
	"strconv"
	"strings"
)

// Format is one archive variant, as ?tar=<v> or ?zip=<v> names it.
type Format struct {
	Zip      bool
	Pax      bool  // tar: POSIX pax headers instead of GNU ones
	Codec    Codec // tar: "" is uncompressed
	Level    int
	CP437    bool // zip: names in code page 437 (dos, crc)
	CRCFirst bool // zip: CRC and sizes in the local header, no data descriptor
	Mod      string
}

// Modifiers are the ?tar/?zip modifiers that replace entries by derived
// forms (transcodes, thumbnails, waveforms); see Transform.
var Modifiers = []string{"opus", "mp3", "j", "w", "p"}

func isMod(s string) bool {
	for _, m := range Modifiers {
		if s == m {
			return true
		}
	}
	return false
}

// ParseTar parses the value of ?tar: empty (GNU), or comma-separated
// tokens among pax, gnu, gz[:N], xz[:N], bz2[:N] and a modifier, e.g.
// "pax,xz:2". Anything else is an error, not a silent default.
func ParseTar(v string) (Format, error) {
	var f Format
	if v == "" {
		return f, nil
	}
	for _, tok := range strings.Split(v, ",") {
		name, lvl, hasLvl := strings.Cut(tok, ":")
		switch {
		case tok == "pax":
			f.Pax = true
		case tok == "gnu", tok == "":
		case name == "gz" || name == "xz" || name == "bz2":
			if f.Codec != "" {
				return f, badFormat("tar=%q names two compressions", v)
			}
			f.Codec = Codec(name)
			f.Level = f.Codec.DefaultLevel()
			if hasLvl {
				n, err := strconv.Atoi(lvl)
				if err != nil {
					return f, badFormat("tar=%q: level %q is not a number", v, lvl)
				}
				f.Level = n
			}
			if err := CheckLevel(f.Codec, f.Level); err != nil {
				return f, err
			}
		case isMod(tok):
			f.Mod = tok
		default:
			return f, badFormat("unknown tar format %q (want pax, gz[:0-9], xz[:0-9] or bz2[:1-9])", tok)
		}
	}
	return f, nil
}

// ParseZip parses the value of ?zip: empty or utf8 (UTF-8 names), dos
// (CP437 names) or crc (CP437, CRC in the local header), optionally with a
// modifier after a comma.
func ParseZip(v string) (Format, error) {
	f := Format{Zip: true}
	for _, tok := range strings.Split(v, ",") {
		switch {
		case tok == "", tok == "utf8", tok == "utf-8":
		case tok == "dos":
			f.CP437 = true
		case tok == "crc":
			f.CP437, f.CRCFirst = true, true
		case isMod(tok):
			f.Mod = tok
		default:
			return f, badFormat("unknown zip format %q (want utf8, dos or crc)", tok)
		}
	}
	return f, nil
}

// Ext is the file-name extension of the archive.
func (f Format) Ext() string {
	if f.Zip {
		return "zip"
	}
	if f.Codec != "" {
		return "tar." + string(f.Codec)
	}
	return "tar"
}

// ContentType is the archive's media type (copyparty's).
func (f Format) ContentType() string {
	switch {
	case f.Zip:
		return "application/zip"
	case f.Codec == Gzip:
		return "application/gzip"
	case f.Codec == XZ:
		return "application/x-xz"
	case f.Codec == Bzip2:
		return "application/x-bzip"
	}
	return "application/x-tar"
}

// Heavy reports whether the variant costs a core for its whole duration
// (xz, bz2, gz at level 6 and above), so callers cap how many run at once.
func (f Format) Heavy() bool {
	return f.Codec == XZ || f.Codec == Bzip2 || (f.Codec == Gzip && f.Level >= 6)
}

// Sized reports whether the archive's length is known before it is
// written (uncompressed, no modifier), so it can be sent with a
// Content-Length.
func (f Format) Sized() bool { return f.Codec == "" && f.Mod == "" }

// badFormat is an archive request that can never succeed as asked.
func badFormat(format string, args ...any) error {
	return &store.Error{Kind: store.KindInvalid, Msg: fmt.Sprintf(format, args...)}
}

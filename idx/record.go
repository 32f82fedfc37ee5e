package idx

import (
	"encoding/binary"
	"errors"
	"maps"
	"slices"
	"strings"
)

// Record is what the index knows of one file.
type Record struct {
	Rel      string            // slash-separated path inside the volume
	Size     int64             // bytes
	Mtime    int64             // modification time, Unix nanoseconds
	At       int64             // upload time, Unix seconds; 0 for files found by a scan
	Uploader string            // account name of the uploader; "" anonymous or scanned
	Wark     string            // up2k content identifier (44 characters)
	Chunks   []string          // up2k chunk hashes, in file order; none for empty files
	Tags     map[string]string // artist, album, title, track, year, genre, rate (kbps), dur (s)
	IP       string            // uploader's address; "" when scanned
	ETag     string            // the object's ETag on a volume on object storage ("" on disk)
}

// Name is the file name (the last path element).
func (r *Record) Name() string { return r.Rel[strings.LastIndexByte(r.Rel, '/')+1:] }

// ext is the lower-cased extension of a file name without its dot ("" when
// it has none, or the name starts with its only dot).
func ext(name string) string {
	i := strings.LastIndexByte(name, '.')
	if i <= 0 || i == len(name)-1 {
		return ""
	}
	return strings.ToLower(name[i+1:])
}

const recVersion = 1

// encode is the binary value of an 'r' key: a version byte, then varints
// and length-prefixed strings in field order, then the chunks and the tags
// (sorted by key).
func (r *Record) encode() []byte {
	b := make([]byte, 0, 64+len(r.Rel)+len(r.Uploader)+len(r.Wark)+45*len(r.Chunks))
	b = append(b, recVersion)
	str := func(s string) {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	str(r.Rel)
	b = binary.AppendVarint(b, r.Size)
	b = binary.AppendVarint(b, r.Mtime)
	b = binary.AppendVarint(b, r.At)
	str(r.Uploader)
	str(r.Wark)
	b = binary.AppendUvarint(b, uint64(len(r.Chunks)))
	for _, c := range r.Chunks {
		str(c)
	}
	keys := slices.Sorted(maps.Keys(r.Tags))
	b = binary.AppendUvarint(b, uint64(len(keys)))
	for _, k := range keys {
		str(k)
		str(r.Tags[k])
	}
	str(r.IP) // after the tags, so records written before it existed still decode
	if r.ETag != "" {
		str(r.ETag) // likewise
	}
	return b
}

var errCorrupt = errors.New("idx: corrupt file record")

// decodeRecord parses encode's output. It copies everything it keeps.
func decodeRecord(b []byte) (*Record, error) {
	if len(b) == 0 || b[0] != recVersion {
		return nil, errCorrupt
	}
	b = b[1:]
	bad := false
	uv := func() uint64 {
		v, n := binary.Uvarint(b)
		if n <= 0 {
			bad = true
			return 0
		}
		b = b[n:]
		return v
	}
	sv := func() int64 {
		v, n := binary.Varint(b)
		if n <= 0 {
			bad = true
			return 0
		}
		b = b[n:]
		return v
	}
	str := func() string {
		n := uv()
		if bad || n > uint64(len(b)) {
			bad = true
			return ""
		}
		s := string(b[:n])
		b = b[n:]
		return s
	}
	r := &Record{}
	r.Rel = str()
	r.Size = sv()
	r.Mtime = sv()
	r.At = sv()
	r.Uploader = str()
	r.Wark = str()
	if n := uv(); n > 0 && n <= 1<<16 && !bad {
		r.Chunks = make([]string, 0, n)
		for range n {
			r.Chunks = append(r.Chunks, str())
		}
	}
	if n := uv(); n > 0 && n <= 1<<10 && !bad {
		r.Tags = make(map[string]string, n)
		for range n {
			k := str()
			r.Tags[k] = str()
		}
	}
	if len(b) > 0 && !bad {
		r.IP = str()
	}
	if len(b) > 0 && !bad {
		r.ETag = str()
	}
	if bad {
		return nil, errCorrupt
	}
	return r, nil
}

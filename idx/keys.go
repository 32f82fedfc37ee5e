package idx

import (
	"encoding/binary"
	"fmt"
)

// Key families. Each key is built in a fresh, right-sized buffer.
const (
	famSchema  = 0x00 // 0x00 "schema" → version
	famSession = 'u'  // 'u' wark → session blob
	famChunk   = 'c'  // 'c' wark chunk-key → ""
	famFile    = 'f'  // 'f' wark rel → file meta
)

// schemaVersion is the layout this code writes. A database with another
// version is refused (sessions cannot be rebuilt by a scan).
const schemaVersion = "1"

// warkLen is the fixed length of a wark and of a chunk key.
const warkLen = 44

var schemaKey = []byte("\x00schema")

func checkWark(w string) error {
	if len(w) != warkLen {
		return fmt.Errorf("idx: wark %q is not %d characters", w, warkLen)
	}
	return nil
}

func key(fam byte, parts ...string) []byte {
	n := 1
	for _, p := range parts {
		n += len(p)
	}
	k := make([]byte, 1, n)
	k[0] = fam
	for _, p := range parts {
		k = append(k, p...)
	}
	return k
}

func sessionKey(wark string) []byte      { return key(famSession, wark) }
func chunkKey(wark, chunk string) []byte { return key(famChunk, wark, chunk) }
func fileKey(wark, rel string) []byte    { return key(famFile, wark, rel) }

// prefixEnd is the smallest key greater than every key starting with p
// (nil when there is none).
func prefixEnd(p []byte) []byte {
	end := make([]byte, len(p))
	copy(end, p)
	for i := len(end) - 1; i >= 0; i-- {
		end[i]++
		if end[i] != 0 {
			return end[:i+1]
		}
	}
	return nil
}

// File index families (files.go). They are a cache of the volume and can
// be rebuilt by a scan, so they carry their own schema version: a mismatch
// drops only these families (sessions and up2k's 'f' records stay).
const (
	famRec   = 'r' // 'r' id                         → record (record.go)
	famRel   = 'n' // 'n' rel                        → id
	famPath  = 'p' // 'p' lower(rel) 0x00 id         → ""
	famTri   = 't' // 't' field tri(3) block(4)      → id set (trigram postings, postings.go)
	famExt   = 'e' // 'e' lower(ext) 0x00 block(4)   → id set (postings.go)
	famSize  = 's' // 's' size(8) id                 → ""
	famMtime = 'm' // 'm' mtime-seconds(8) id        → ""
	famHash  = 'h' // 'h' chunk-hash(44) id          → ""
	famWark  = 'w' // 'w' wark(44) id                → ""
	famNum   = 'v' // 'v' field value(8) id          → "" (numeric tags)
	famName  = 'N' // 'N' lower(name) 0x00 id        → "" (anchored wildcards)
	famUp    = 'U' // 'U' upload-time(8) id          → "" (uploads, for ?ups and ?ru)
)

// fileFams are the families a file-index rebuild drops.
var fileFams = []byte{famRec, famRel, famPath, famTri, famExt, famSize, famMtime, famHash, famWark, famNum, famName, famUp}

// fileSchemaVersion is the layout of the file index families.
const fileSchemaVersion = "3"

var fileSchemaKey = []byte("\x00fschema")

// Trigram fields: which text a 't' posting comes from.
const (
	fieldPath   = 'p'
	fieldArtist = 'a'
	fieldAlbum  = 'b'
	fieldTitle  = 't'
	fieldGenre  = 'g'
)

// Numeric tag fields of 'v' keys.
const (
	fieldYear = 'y'
	fieldRate = 'r' // kbps
	fieldDur  = 'd' // milliseconds
)

// u64 encodes n big-endian, so byte order is numeric order.
func u64(n uint64) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], n)
	return b[:]
}

// s64 encodes a signed number so that byte order is numeric order.
func s64(n int64) []byte { return u64(uint64(n) ^ 1<<63) }

// idKey builds fam, the parts, then the 8-byte id.
func idKey(fam byte, id uint64, parts ...[]byte) []byte {
	n := 9
	for _, p := range parts {
		n += len(p)
	}
	k := make([]byte, 1, n)
	k[0] = fam
	for _, p := range parts {
		k = append(k, p...)
	}
	return append(k, u64(id)...)
}

// idOf is the id at the end of a posting key.
func idOf(k []byte) uint64 { return binary.BigEndian.Uint64(k[len(k)-8:]) }

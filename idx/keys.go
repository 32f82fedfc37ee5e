package idx

import (
	"encoding/binary"
	"fmt"
	"slices"
)

// This file is the key schema: every key the database holds is built
// here, and every part read back out of a key is read here. Keys are built
// in fresh, right-sized buffers (appendBlockKey excepted: it reuses its
// caller's), so a builder's result may be kept and appended to.

// Key families of upload state (sessions.go). They cannot be rebuilt by a
// scan.
const (
	famSchema  = 0x00 // 0x00 "schema" → version
	famSession = 'u'  // 'u' wark → session blob
	famChunk   = 'c'  // 'c' wark chunk-key → ""
	famFile    = 'f'  // 'f' wark rel → file meta
	famNote    = 'j'  // 'j' id(8) → journal note (journal.go)
	famSmall   = 'g'  // 'g' id(8) → a group-committed small upload (small.go)
)

// schemaVersion is the layout this code writes. A database with another
// version is refused (sessions cannot be rebuilt by a scan).
const schemaVersion = "1"

// warkLen is the fixed length of a wark and of a chunk key.
const warkLen = 44

var schemaKey = append([]byte{famSchema}, "schema"...)

func checkWark(w string) error {
	if len(w) != warkLen {
		return fmt.Errorf("idx: wark %q is not %d characters", w, warkLen)
	}
	return nil
}

// key builds fam followed by the parts.
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

// chunkPrefix starts the chunk keys of wark's session; filePrefix the
// file records of content wark.
func chunkPrefix(wark string) []byte { return key(famChunk, wark) }
func filePrefix(wark string) []byte  { return key(famFile, wark) }

// warkOfSession is the wark of a session key.
func warkOfSession(k []byte) string { return string(k[1:]) }

// afterPrefix is what follows prefix p in k: the chunk of a chunk key, the
// path of an up2k file record.
func afterPrefix(k, p []byte) string { return string(k[len(p):]) }

// famRange is the key range [lo, hi) of every key of the family fam.
func famRange(fam byte) (lo, hi []byte) { return []byte{fam}, []byte{fam + 1} }

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

// fileFamsSpan is a key range holding every file index family (and some
// others between them): what a compaction after a bulk scan covers.
func fileFamsSpan() (lo, hi []byte) {
	return []byte{slices.Min(fileFams)}, []byte{slices.Max(fileFams) + 1}
}

// fileSchemaVersion is the layout of the file index families.
const fileSchemaVersion = "3"

var fileSchemaKey = append([]byte{famSchema}, "fschema"...)

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

// idLen is the length of a key that is a family and an id alone ('r', 'j').
const idLen = 9

// idOf is the id at the end of a posting key (or of an 'n' value).
func idOf(k []byte) uint64 { return binary.BigEndian.Uint64(k[len(k)-8:]) }

// recKey is the key of the record with id.
func recKey(id uint64) []byte { return idKey(famRec, id) }

// noteKey is the key of the journal note with id.
func noteKey(id uint64) []byte  { return idKey(famNote, id) }
func smallKey(id uint64) []byte { return idKey(famSmall, id) }

// relKey is the key of the path rel, whose value is its record's id.
func relKey(rel string) []byte { return key(famRel, rel) }

// relOfKey is the path of an 'n' key.
func relOfKey(k []byte) string { return string(k[1:]) }

// relRange is the 'n' key range of rel itself (tree false) or of every
// path below the folder rel (tree true).
func relRange(rel string, tree bool) (lo, hi []byte) {
	if !tree {
		lo = relKey(rel)
		return lo, append(slices.Clone(lo), 0)
	}
	if rel == "" {
		return famRange(famRel)
	}
	return relKey(rel + "/"), relKey(rel + "0") // '0' follows '/'
}

// relAfter is the first 'n' key after rel's.
func relAfter(rel string) []byte { return append(relKey(rel), 0) }

// textEnd ends the text of 'p' and 'N' keys, before the id.
const textEnd = 0x00

// pathKey is the posting of the lower-cased path lrel; nameKey of the
// lower-cased file name lname. The text is followed by textEnd and the id.
func pathKey(lrel string, id uint64) []byte { return idKey(famPath, id, []byte(lrel), []byte{textEnd}) }
func nameKey(lname string, id uint64) []byte {
	return idKey(famName, id, []byte(lname), []byte{textEnd})
}

// pathPrefix starts the 'p' keys of every lower-cased path starting with
// lp; namePrefix the 'N' keys of every name starting with ln.
func pathPrefix(lp string) []byte { return key(famPath, lp) }
func namePrefix(ln string) []byte { return key(famName, ln) }

// textOfKey is the lower-cased path or name of a 'p' or 'N' key.
func textOfKey(k []byte) string { return string(k[1 : len(k)-9]) }

// sizeKey, mtimeKey and upKey are the postings of a size in bytes, an
// mtime in whole seconds and an upload time; numKey of a numeric tag's
// value in its field.
func sizeKey(size int64, id uint64) []byte { return idKey(famSize, id, s64(size)) }
func mtimeKey(sec int64, id uint64) []byte { return idKey(famMtime, id, s64(sec)) }
func upKey(at int64, id uint64) []byte     { return idKey(famUp, id, s64(at)) }
func numKey(field byte, n int64, id uint64) []byte {
	return idKey(famNum, id, []byte{field}, s64(n))
}

// upKeyLen is the length of an upKey.
const upKeyLen = 1 + 8 + 8

// sizeBound, mtimeBound and numBound are the smallest key of their family
// (and field) whose number is n or more, for ranges [bound(lo), bound(hi)).
func sizeBound(n int64) []byte            { return append([]byte{famSize}, s64(n)...) }
func mtimeBound(sec int64) []byte         { return append([]byte{famMtime}, s64(sec)...) }
func numBound(field byte, n int64) []byte { return append([]byte{famNum, field}, s64(n)...) }

// warkKey and hashKey are the postings of a file's wark and of each of its
// 44-character chunk hashes; contentPrefix (fam famWark or famHash) starts
// the postings of one wark or hash.
func warkKey(wark string, id uint64) []byte  { return idKey(famWark, id, []byte(wark)) }
func hashKey(chunk string, id uint64) []byte { return idKey(famHash, id, []byte(chunk)) }
func contentPrefix(fam byte, h string) []byte {
	return key(fam, h)
}

// Block posting lists (postings.go): a list is named by its prefix, and
// each of its blocks is a key of the prefix and the block's number.

// triList is the list of the trigram tri (3 bytes) of field's text.
func triList(field byte, tri string) []byte {
	return []byte{famTri, field, tri[0], tri[1], tri[2]}
}

// extList is the list of the lower-cased extension ext (no dot).
func extList(ext string) []byte { return append(append([]byte{famExt}, ext...), textEnd) }

// blockKey is the key of list's block holding id.
func blockKey(list []byte, id uint64) []byte {
	return appendBlockKey(make([]byte, 0, len(list)+4), list, uint32(id>>blockBits))
}

// appendBlockKey appends the key of list's block number b to dst.
func appendBlockKey(dst, list []byte, b uint32) []byte {
	return binary.BigEndian.AppendUint32(append(dst, list...), b)
}

// blockOfKey is the block number of a key of the list of length n, ok
// false when k is not one of that list's block keys.
func blockOfKey(k []byte, n int) (uint32, bool) {
	if len(k) != n+4 {
		return 0, false
	}
	return binary.BigEndian.Uint32(k[n:]), true
}

// blockFamily reports whether keys of k's family hold block postings.
func blockFamily(k []byte) bool { return len(k) > 0 && (k[0] == famTri || k[0] == famExt) }

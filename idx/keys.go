package idx

import "fmt"

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

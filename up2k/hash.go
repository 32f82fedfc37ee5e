package up2k

import (
	"context"
	"crypto/sha512"
	"encoding/base64"
	"io"
	"os"
	"strconv"
	"strings"
	"sync/atomic"

	"hoard/up2k/sha512x8"
)

// KeyLen is the length of copyparty's chunk hash: the first 33 bytes of
// the SHA-512 digest in URL-safe base64, 44 characters. It is also the
// length of a wark.
const KeyLen = 44

// fullLen is the unpadded URL-safe base64 length of a whole SHA-512 digest.
const fullLen = 86

var b64 = base64.RawURLEncoding

// ChunkHash returns copyparty's 44-character hash of one chunk's bytes.
func ChunkHash(data []byte) string {
	sum := sha512.Sum512(data)
	return b64.EncodeToString(sum[:33])
}

// hashAlphabet reports whether s uses only URL-safe base64 characters.
func hashAlphabet(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// ParseHash validates a chunk hash as a client sends it and returns its
// 44-character key and the form to compare with a computed digest (the
// hash without padding). Accepted: copyparty's 44 characters, the full
// 86-character digest with or without its "==" padding, and any prefix of
// it from 44 characters up.
func ParseHash(s string) (key, cmp string, err error) {
	cmp = s
	if len(s) == fullLen+2 && strings.HasSuffix(s, "==") {
		cmp = s[:fullLen]
	}
	if len(cmp) < KeyLen || len(cmp) > fullLen {
		return "", "", invalidf("chunk hash %q has %d characters; want 44 (copyparty) to 86 (full SHA-512)", clip(s), len(s))
	}
	if !hashAlphabet(cmp) {
		return "", "", invalidf("chunk hash %q is not URL-safe base64 (A-Z a-z 0-9 - _)", clip(s))
	}
	return cmp[:KeyLen], cmp, nil
}

// clip shortens s for an error message.
func clip(s string) string {
	if len(s) > 100 {
		return s[:100] + "…"
	}
	return s
}

// Wark is copyparty's upload identifier of a file with chunk hash keys
// keys: the first 44 characters of the URL-safe base64 of
// SHA-512(salt "\n" size "\n" keys joined by "\n").
func Wark(salt string, size int64, keys []string) string {
	h := sha512.New()
	h.Write([]byte(salt + "\n" + strconv.FormatInt(size, 10) + "\n"))
	for i, k := range keys {
		if i > 0 {
			h.Write([]byte{'\n'})
		}
		h.Write([]byte(k))
	}
	return b64.EncodeToString(h.Sum(nil)[:33])
}

// Identify returns the wark and chunk hashes of a file of size bytes
// whose whole content has the SHA-512 digest sum, when the file is one
// chunk (so sum is its chunk's digest); "" and nil otherwise. It lets an
// upload hashed whole (PUT, multipart) skip the index's second reading.
func Identify(salt string, sum []byte, size int64) (wark string, chunks []string) {
	if size <= 0 || len(sum) != 64 || NumChunks(size, ChunkSize(size)) != 1 {
		return "", nil
	}
	key := b64.EncodeToString(sum[:33])
	return Wark(salt, size, []string{key}), []string{key}
}

// MetaWark is copyparty's identifier of a file without chunks (an empty
// file): "#" and the URL-safe base64 of
// SHA-512(salt "\n" lmod "\n" size "\n" folder "\n" name), 44 characters
// in all. folder is the path inside the volume, "" for its top.
func MetaWark(salt string, lmod, size int64, folder, name string) string {
	sum := sha512.Sum512([]byte(salt + "\n" + strconv.FormatInt(lmod, 10) + "\n" + strconv.FormatInt(size, 10) + "\n" + folder + "\n" + name))
	return ("#" + base64.URLEncoding.EncodeToString(sum[:]))[:KeyLen]
}

// validWark reports whether s has the shape of a wark.
func validWark(s string) bool {
	if len(s) != KeyLen {
		return false
	}
	if s[0] == '#' {
		return hashAlphabet(s[1:])
	}
	return hashAlphabet(s)
}

// HashFile computes copyparty's chunk hashes and the wark of the first
// size bytes of f, reading it chunk by chunk (for the indexer's scan of
// files that were not uploaded through up2k). An empty file has no chunks
// and the metadata wark of folder/name.
func HashFile(ctx context.Context, f io.ReaderAt, size int64, salt string, lmod int64, folder, name string) (wark string, chunks []string, err error) {
	if size <= 0 {
		return MetaWark(salt, lmod, 0, folder, name), nil, nil
	}
	cs := ChunkSize(size)
	n := NumChunks(size, cs)
	if n >= minLaneChunks && sha512x8.Available() && !hashFileSingle && randomAccess(f) {
		if chunks, err = hashChunksLanes(ctx, f, size, cs, int(n)); err != nil {
			return "", nil, err
		}
		return Wark(salt, size, chunks), chunks, nil
	}
	chunks = make([]string, 0, n)
	// The indexer hashes every upload: a 4 KiB file must not cost a
	// 256 KiB buffer (hundreds of uploads a second made that most of the
	// garbage the collector saw).
	buf := make([]byte, min(256<<10, size))
	h := sha512.New()
	for i := range int(n) {
		if err := ctx.Err(); err != nil {
			return "", nil, err
		}
		off := int64(i) * cs
		h.Reset()
		want := chunkLen(size, cs, i)
		got, err := io.CopyBuffer(h, io.NewSectionReader(f, off, want), buf)
		if err != nil {
			return "", nil, err
		}
		if got != want {
			return "", nil, io.ErrUnexpectedEOF // the file shrank while being read
		}
		chunks = append(chunks, b64.EncodeToString(h.Sum(nil)[:33]))
	}
	return Wark(salt, size, chunks), chunks, nil
}

// RandomAccess marks an io.ReaderAt that reads anywhere at no extra cost
// (a local file behind a wrapper). HashFile reads eight chunks at once,
// jumping between them, only from such a reader or an *os.File; anything
// else (an object store's reader, whose every jump is a new ranged GET)
// is read in order, one chunk after the other.
type RandomAccess interface {
	io.ReaderAt
	RandomAccess()
}

func randomAccess(f io.ReaderAt) bool {
	switch f.(type) {
	case *os.File, RandomAccess:
		return true
	}
	return false
}

// minLaneChunks is the fewest chunks HashFile hashes through the lanes: a
// file of a chunk or two is done sooner by crypto/sha512 alone.
const minLaneChunks = 3

// hashFileSingle makes HashFile use crypto/sha512 only (tests compare).
var hashFileSingle bool

// laneBytes counts the bytes HashFile hashed through the lanes (tests).
var laneBytes atomic.Int64

// lanePiece is how much of a chunk is read at a time for the lanes; chunk
// sizes are multiples of it, so only a file's last piece is short.
const lanePiece = 128 << 10

// lanePieces bounds the pieces in flight: one per lane, 1 MiB whatever
// the file. 24 (3 MiB, reading ahead of the lanes) let the indexer's
// reader run ahead of the lanes, but beside a big upload's buffers it
// raised the peak RSS of three 1 GiB PUTs in a row by several MiB (issue
// 19's memory limit); the indexer works in the background, so its speed
// matters less than the upload's memory.
const lanePieces = 8

// hashChunksLanes hashes the n chunks of f eight at a time, one chunk per
// lane of the SHA-512 lanes (sha512x8), on one core: the indexer's second
// reading of an upload (a PUT of many chunks) costs about a quarter of the
// CPU of one crypto/sha512 stream (1 GiB: ~0.3 s against ~1 s here), and
// that CPU is taken from the uploads arriving meanwhile (issue 19).
func hashChunksLanes(ctx context.Context, f io.ReaderAt, size, cs int64, n int) ([]string, error) {
	h := sha512x8.NewHasher()
	defer h.Close()
	bufs := make(chan []byte, lanePieces)
	for range lanePieces {
		bufs <- make([]byte, lanePiece)
	}
	chunks := make([]string, n)
	streams := make([]*sha512x8.Stream, 8)
	for g := 0; g < n; g += 8 {
		k := min(8, n-g)
		for j := range k {
			streams[j] = h.New()
		}
		var rerr error
		for p := int64(0); p < cs && rerr == nil; p += lanePiece {
			if rerr = ctx.Err(); rerr != nil {
				break
			}
			for j := range k {
				clen := chunkLen(size, cs, g+j)
				if p >= clen {
					continue
				}
				want := min(lanePiece, clen-p)
				buf := <-bufs
				got, err := f.ReadAt(buf[:want], int64(g+j)*cs+p)
				if int64(got) < want {
					bufs <- buf
					rerr = err
					if err == nil || err == io.EOF {
						rerr = io.ErrUnexpectedEOF // the file shrank while being read
					}
					break
				}
				streams[j].Write(buf[:want], func() { bufs <- buf })
			}
		}
		// Every stream is finished even after an error, so that every
		// buffer handed to the lanes comes back before returning.
		for j := range k {
			streams[j].Finish()
		}
		for j := range k {
			sum := streams[j].Sum()
			chunks[g+j] = b64.EncodeToString(sum[:33])
		}
		if rerr != nil {
			return nil, rerr
		}
		laneBytes.Add(min(size, int64(g+k)*cs) - int64(g)*cs)
	}
	return chunks, nil
}

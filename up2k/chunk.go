package up2k

import "fmt"

// MaxChunks is the most chunks a file may have.
const MaxChunks = 4096

// MaxSize is the largest file an up2k handshake may announce (1 PiB).
// copyparty's sequence gives 256 GiB chunks there; anything larger is
// taken for a client bug.
const MaxSize = 1 << 50

// ChunkSize is copyparty's chunk size for a file of size bytes
// (up2k.py:up2k_chunksize): starting at 1 MiB, the candidates go
// 1, 1.5, 2, 3, 4, 6, 8, 12 … MiB (each "x, 1.5x" pair doubles), and the
// first one that gives at most 256 chunks wins, or, from 32 MiB on, at
// most 4096 chunks.
func ChunkSize(size int64) int64 {
	cs, step := int64(1<<20), int64(512<<10)
	for {
		for _, mul := range [2]int64{1, 2} {
			n := NumChunks(size, cs)
			if n <= 256 || (cs >= 32<<20 && n <= MaxChunks) {
				return cs
			}
			cs += step
			step *= mul
		}
	}
}

// specChunkSize is the chunk size read literally from the table of the
// interface description; 0 where the table leaves it open (above 1 TiB).
func specChunkSize(size int64) int64 {
	switch {
	case size <= 256<<20:
		return 1 << 20
	case size <= 384<<20:
		return 3 << 19
	case size <= 512<<20:
		return 2 << 20
	case size <= 1<<30:
		return 4 << 20
	case size <= 4<<30:
		return 16 << 20
	case size <= 128<<30:
		return 32 << 20
	case size <= 1<<40:
		return 256 << 20
	}
	return 0
}

// NumChunks is how many chunks of cs bytes a file of size bytes has.
func NumChunks(size, cs int64) int64 {
	n := size / cs
	if size%cs != 0 {
		n++
	}
	return n
}

// ChunkSizeFor derives the chunk size of a file of size bytes announced
// with n chunk hashes: copyparty's size when the count fits it, else the
// interface description's table read literally when the count fits that.
// Anything else is an *Error of kind Invalid naming what was expected.
func ChunkSizeFor(size int64, n int) (int64, error) {
	switch {
	case size < 0:
		return 0, invalidf("size %d is negative", size)
	case size > MaxSize:
		return 0, invalidf("size %d is larger than this server accepts (%d bytes)", size, int64(MaxSize))
	case n > MaxChunks:
		return 0, invalidf("%d chunk hashes; a file has at most %d chunks", n, MaxChunks)
	}
	cs := ChunkSize(size)
	want := NumChunks(size, cs)
	if int64(n) == want {
		return cs, nil
	}
	if alt := specChunkSize(size); alt != 0 && alt != cs && NumChunks(size, alt) == int64(n) {
		return alt, nil
	}
	return 0, invalidf("name or numchunks not according to spec: %d chunk hashes for %d bytes; expected %d (chunks of %d bytes)", n, size, want, cs)
}

// chunkLen is the length of chunk i of a file of size bytes in chunks of cs.
func chunkLen(size, cs int64, i int) int64 {
	off := int64(i) * cs
	return min(cs, size-off)
}

func invalidf(format string, args ...any) error {
	return &Error{Kind: Invalid, Msg: fmt.Sprintf(format, args...)}
}

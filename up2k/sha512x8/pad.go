package sha512x8

import "encoding/binary"

// BlockSize is SHA-512's block size: lanes advance in whole blocks.
const BlockSize = 128

// iv is SHA-512's initial hash value (FIPS 180-4, 5.3.5).
var iv = [8]uint64{
	0x6a09e667f3bcc908, 0xbb67ae8584caa73b, 0x3c6ef372fe94f82b, 0xa54ff53a5f1d36f1,
	0x510e527fade682d1, 0x9b05688c2b3e6c1f, 0x1f83d9abfb41bd6b, 0x5be0cd19137e2179,
}

// pad writes the final one or two blocks of a message of total bytes
// whose last total%128 bytes are tail, and returns them.
func pad(dst *[2 * BlockSize]byte, tail []byte, total uint64) []byte {
	n := copy(dst[:], tail)
	dst[n] = 0x80
	end := BlockSize
	if n >= BlockSize-16 {
		end = 2 * BlockSize
	}
	clear(dst[n+1 : end-16])
	binary.BigEndian.PutUint64(dst[end-16:], total>>61)
	binary.BigEndian.PutUint64(dst[end-8:], total<<3)
	return dst[:end]
}

// digest encodes a state as SHA-512's 64-byte sum.
func digest(s *[8]uint64) (sum [64]byte) {
	for i, v := range s {
		binary.BigEndian.PutUint64(sum[8*i:], v)
	}
	return sum
}

package sha512x8

import (
	"encoding/binary"
	"math/bits"
	"unsafe"
)

// compress runs the lanes: the AVX-512 kernel where the CPU has it,
// otherwise the same work one lane at a time in Go.
func compress(st *[8][8]uint64, ptrs *[8]*byte, strides *[8]uint64, mask uint8, n int) {
	if useLanes {
		blocks8(st, ptrs, strides, mask, n)
		return
	}
	for l := range 8 {
		if mask&(1<<l) == 0 {
			continue
		}
		var s [8]uint64
		for w := range 8 {
			s[w] = st[w][l]
		}
		block(&s, unsafe.Slice(ptrs[l], n*BlockSize))
		for w := range 8 {
			st[w][l] = s[w]
		}
	}
}

// block is FIPS 180-4's SHA-512 compression over whole blocks of p.
func block(s *[8]uint64, p []byte) {
	var w [80]uint64
	for ; len(p) >= BlockSize; p = p[BlockSize:] {
		for t := range 16 {
			w[t] = binary.BigEndian.Uint64(p[8*t:])
		}
		for t := 16; t < 80; t++ {
			v1, v2 := w[t-2], w[t-15]
			s1 := bits.RotateLeft64(v1, -19) ^ bits.RotateLeft64(v1, -61) ^ v1>>6
			s0 := bits.RotateLeft64(v2, -1) ^ bits.RotateLeft64(v2, -8) ^ v2>>7
			w[t] = s1 + w[t-7] + s0 + w[t-16]
		}
		a, b, c, d, e, f, g, h := s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7]
		for t := range 80 {
			t1 := h + (bits.RotateLeft64(e, -14) ^ bits.RotateLeft64(e, -18) ^ bits.RotateLeft64(e, -41)) + (e&f ^ ^e&g) + k[t] + w[t]
			t2 := (bits.RotateLeft64(a, -28) ^ bits.RotateLeft64(a, -34) ^ bits.RotateLeft64(a, -39)) + (a&b ^ a&c ^ b&c)
			h, g, f, e, d, c, b, a = g, f, e, d+t1, c, b, a, t1+t2
		}
		s[0] += a
		s[1] += b
		s[2] += c
		s[3] += d
		s[4] += e
		s[5] += f
		s[6] += g
		s[7] += h
	}
}

//go:build !amd64

package sha512x8

const haveAVX512 = false

func blocks8(st *[8][8]uint64, ptrs *[8]*byte, strides *[8]uint64, mask uint8, n int) {
	panic("sha512x8: no multi-buffer kernel on this architecture")
}

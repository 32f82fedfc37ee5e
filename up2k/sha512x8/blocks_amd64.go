package sha512x8

import "golang.org/x/sys/cpu"

// haveAVX512 says whether blocks8 can run: it needs AVX-512 F (the
// rotates, ternary logic, 128-bit block shuffles) and BW (the byte
// shuffle).
var haveAVX512 = cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW

// blocks8 runs SHA-512's compression function over n 128-byte blocks in
// each lane l whose bit is set in mask: st[w][l] is word w of lane l's
// state, ptrs[l] its data and strides[l] 128. An idle lane reads the same
// 128 bytes n times (its stride is 0) and its state is left as it was.
//
//go:noescape
func blocks8(st *[8][8]uint64, ptrs *[8]*byte, strides *[8]uint64, mask uint8, n int)

//go:build amd64 && !purego

package sha512x8

import "golang.org/x/sys/cpu"

// cpuHas says which of the extensions the kernel may need this CPU has.
// x/sys/cpu reports AVX-512 only where the OS also saves the ZMM and mask
// registers, and GODEBUG=cpu.avx512dq=off (or any other) turns one off,
// which is how TestFallbackWithoutExtension plays a CPU without it.
var cpuHas = map[string]bool{
	"AVX":      cpu.X86.HasAVX,
	"AVX512F":  cpu.X86.HasAVX512F,
	"AVX512BW": cpu.X86.HasAVX512BW,
	"AVX512DQ": cpu.X86.HasAVX512DQ,
	"AVX512VL": cpu.X86.HasAVX512VL,
}

// kernelBuilt: blocks8 is the assembly kernel here.
const kernelBuilt = true

// haveKernel says whether blocks8 can run on this CPU.
var haveKernel = kernelRuns(cpuHas)

// blocks8 runs SHA-512's compression function over n 128-byte blocks in
// each lane l whose bit is set in mask: st[w][l] is word w of lane l's
// state, ptrs[l] its data and strides[l] 128. An idle lane reads the same
// 128 bytes n times (its stride is 0) and its state is left as it was.
//
//go:noescape
func blocks8(st *[8][8]uint64, ptrs *[8]*byte, strides *[8]uint64, mask uint8, n int)

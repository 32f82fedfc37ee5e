//go:build !amd64 || purego

package sha512x8

// cpuHas: no kernel here, so no extension is looked for.
var cpuHas map[string]bool

// kernelBuilt: there is no assembly kernel on this architecture or with
// the purego tag; the lanes are the Go code in generic.go.
const kernelBuilt = false

var haveKernel = false

func blocks8(st *[8][8]uint64, ptrs *[8]*byte, strides *[8]uint64, mask uint8, n int) {
	panic("sha512x8: no multi-buffer kernel in this build")
}

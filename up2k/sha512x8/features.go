package sha512x8

// kernelNeeds names every x86-64 extension the instructions of
// blocks_amd64.s belong to, beyond the amd64 baseline. TestKernelNeeds
// reads the file and fails when an instruction of another extension (or
// a stale entry here) appears, so this list is the kernel's truth.
//
//   - AVX: VZEROUPPER
//   - AVX512F: every 512-bit integer operation (VPADDQ, VPRORQ,
//     VPTERNLOGQ, VPSRLQ, VPUNPCK[LH]QDQ, VSHUFI64X2, VMOVDQ[AU]64 and
//     their masked, broadcast forms)
//   - AVX512BW: VPSHUFB on 512-bit registers (the byte swap)
//   - AVX512DQ: KMOVB (loading the lane mask)
var kernelNeeds = []string{"AVX", "AVX512F", "AVX512BW", "AVX512DQ"}

// kernelRuns reports whether the kernel may run on a CPU offering the
// extensions that are true in has: all of kernelNeeds, or it falls back
// to the Go lanes (a CPU without one would fault on its first use).
func kernelRuns(has map[string]bool) bool {
	for _, n := range kernelNeeds {
		if !has[n] {
			return false
		}
	}
	return true
}

// useLanes says whether compress runs the AVX-512 kernel. It starts as
// haveKernel; tests turn it off to run the Go lanes on a CPU that has
// the kernel, and up2k's Config.SingleHash avoids the lanes altogether.
var useLanes = haveKernel

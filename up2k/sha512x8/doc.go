// Package sha512x8 computes SHA-512 over up to eight messages at once,
// one per 64-bit lane of the AVX-512 registers. One core hashes several
// chunks in parallel at a few times the speed of crypto/sha512's single
// stream, which is what verifying concurrent up2k chunks needs. Where
// AVX-512 is missing, Available reports false and callers use
// crypto/sha512.
package sha512x8

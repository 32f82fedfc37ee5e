package sha512x8

import (
	"crypto/sha512"
	"math/rand/v2"
	"testing"
)

// sum8 hashes up to eight messages through blocks8 alone, each lane
// advancing by its own number of blocks, idle lanes masked out.
func sum8(t testing.TB, msgs [][]byte) [][64]byte {
	var st [8][8]uint64
	var full [8][]byte
	for l := range 8 {
		for w := range 8 {
			st[w][l] = iv[w]
		}
		if l < len(msgs) {
			m := msgs[l]
			var pb [2 * BlockSize]byte
			whole := len(m) / BlockSize * BlockSize
			full[l] = append(append([]byte(nil), m[:whole]...), pad(&pb, m[whole:], uint64(len(m)))...)
		}
	}
	var idle [BlockSize]byte
	for {
		var ptrs [8]*byte
		var strides [8]uint64
		var mask uint8
		n := -1
		for l := range 8 {
			ptrs[l] = &idle[0]
			if len(full[l]) > 0 {
				if b := len(full[l]) / BlockSize; n < 0 || b < n {
					n = b
				}
			}
		}
		if n < 0 {
			break
		}
		// Run a random part of the shortest lane's blocks, so lanes
		// join and leave at different points.
		n = 1 + rand.IntN(n)
		for l := range 8 {
			if len(full[l]) > 0 {
				ptrs[l], strides[l], mask = &full[l][0], BlockSize, mask|1<<l
			}
		}
		blocks8(&st, &ptrs, &strides, mask, n)
		for l := range 8 {
			if mask&(1<<l) != 0 {
				full[l] = full[l][n*BlockSize:]
			}
		}
	}
	out := make([][64]byte, len(msgs))
	for l := range msgs {
		var s [8]uint64
		for w := range 8 {
			s[w] = st[w][l]
		}
		out[l] = digest(&s)
	}
	return out
}

func TestBlocks8(t *testing.T) {
	if !haveKernel {
		t.Skip("no AVX-512 here; the kernel is not used")
	}
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 300 {
		nl := 1 + round%8
		msgs := make([][]byte, nl)
		for l := range msgs {
			n := r.IntN(3000)
			switch r.IntN(4) {
			case 0:
				n = r.IntN(3) * BlockSize
			case 1:
				n = r.IntN(3)*BlockSize + BlockSize - 16 + r.IntN(3) - 1
			}
			msgs[l] = make([]byte, n)
			for i := range msgs[l] {
				msgs[l][i] = byte(r.Uint32())
			}
		}
		got := sum8(t, msgs)
		for l, m := range msgs {
			if want := sha512.Sum512(m); got[l] != want {
				t.Fatalf("round %d lane %d (%d bytes): got %x, want %x", round, l, len(m), got[l][:8], want[:8])
			}
		}
	}
}

func BenchmarkBlocks8(b *testing.B) {
	if !haveKernel {
		b.Skip("no AVX-512")
	}
	const per = 64 << 10
	data := make([]byte, 8*per)
	var st [8][8]uint64
	var ptrs [8]*byte
	var strides [8]uint64
	for l := range 8 {
		ptrs[l], strides[l] = &data[l*per], BlockSize
	}
	b.SetBytes(8 * per)
	for b.Loop() {
		blocks8(&st, &ptrs, &strides, 0xff, per/BlockSize)
	}
}

func BenchmarkStdlib(b *testing.B) {
	data := make([]byte, 64<<10)
	h := sha512.New()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		h.Write(data)
	}
}

package http

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"testing"
	"testing/quick"
	"time"
)

// pacedReader returns its bytes in reads of random sizes, sleeping now
// and then, and tells the test how many bytes are still to come.
type pacedReader struct {
	b    []byte
	rng  *rand.Rand
	slow time.Duration // a pause halfway
	half int
}

func (p *pacedReader) Read(q []byte) (int, error) {
	if len(p.b) == 0 {
		return 0, io.EOF
	}
	if p.slow > 0 && len(p.b) < p.half {
		time.Sleep(p.slow) // once, halfway
		p.slow = 0
	}
	n := min(len(q), len(p.b), 1+p.rng.IntN(300<<10))
	copy(q, p.b[:n])
	p.b = p.b[n:]
	return n, nil
}

// TestLowatProperty: whatever the body's size and the pace of its
// reads, a read never waits with a mark above the bytes still to come
// less lowatSlack (the last bytes always wake it), the mark is back to 1
// after the last byte and after done, every byte comes through, and a
// sender that slows down loses the mark for good.
func TestLowatProperty(t *testing.T) {
	prop := func(seed uint64, size32 uint32, cut bool) bool {
		return lowatRun(t, seed, size32, false, cut)
	}
	if err := quick.Check(prop, &quick.Config{MaxCount: 300}); err != nil {
		t.Fatal(err)
	}
	// a sender that pauses for over lowatSlow halfway
	if !lowatRun(t, 1, 6<<20, true, false) {
		t.Fatal("slow sender")
	}
}

func lowatRun(t *testing.T, seed uint64, size32 uint32, slow, cut bool) bool {
	{
		rng := rand.New(rand.NewPCG(seed, 7))
		size := int64(size32 % (12 << 20))
		body := bytes.Repeat([]byte{'x'}, int(size))
		src := &pacedReader{b: body, rng: rng, half: len(body) / 2}
		if slow {
			src.slow = lowatSlow + 100*time.Millisecond
		}
		l := &lowatReader{r: src, left: size, mark: 1, off: size < lowatFast+lowatMark+lowatSlack}
		mark, sets, bad := 1, 0, ""
		l.set = func(n int) error {
			sets++
			mark = n
			return nil
		}
		var got int64
		buf := make([]byte, 256<<10)
		for {
			if mark > 1 && int64(len(src.b)) < int64(mark)+lowatSlack {
				bad = "a read waits with a mark that the bytes still to come could miss"
				break
			}
			if cut && got > size/2 {
				break // the post failed midway
			}
			n, err := l.Read(buf[:1+rng.IntN(len(buf))])
			got += int64(n)
			if err != nil {
				if !errors.Is(err, io.EOF) {
					bad = err.Error()
				}
				break
			}
		}
		l.done()
		switch {
		case bad != "":
		case mark != 1:
			bad = "the mark stays raised after the body"
		case !cut && got != size:
			bad = "bytes lost"
		case !cut && size >= 3<<20 && sets == 0:
			bad = "a big body read fast never had the mark raised"
		case slow && sets > 2:
			bad = "a slow sender had the mark set again"
		}
		if bad != "" {
			t.Logf("seed %d size %d slow %v cut %v: %s (mark %d, %d sets)", seed, size, slow, cut, bad, mark, sets)
			return false
		}
		return true
	}
}

package up2k

import (
	"bytes"
	"crypto/sha512"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
	"testing/iotest"

	"hoard/store"
)

// checkReader's promise, for any bytes and any read sizes: the whole
// chunk comes out only when it matches its hash; otherwise its last byte
// never does, and the error says why (Invalid for other bytes, a short
// body for too few).
func TestCheckReaderProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 400 {
		n := 1 + rng.IntN(70000)
		data := make([]byte, n)
		for i := range data {
			data[i] = byte(rng.Uint32())
		}
		sent := ChunkHash(data)
		if rng.IntN(3) == 0 {
			sent = b64.EncodeToString(sha512Sum(data)) // the full digest form
		}
		_, cmp, _ := ParseHash(sent)
		body := data
		mode := rng.IntN(3) // 0 intact, 1 a flipped byte, 2 short
		switch mode {
		case 1:
			body = bytes.Clone(data)
			body[rng.IntN(n)] ^= byte(1 + rng.IntN(255))
		case 2:
			body = data[:rng.IntN(n)]
		}
		var src io.Reader = bytes.NewReader(body)
		if rng.IntN(2) == 0 {
			src = iotest.OneByteReader(src)
		} else if rng.IntN(2) == 0 {
			src = iotest.HalfReader(src)
		}
		cr := newCheckReader(src, int64(n), sent, cmp)
		var out []byte
		buf := make([]byte, 1+rng.IntN(9000))
		var err error
		for {
			var k int
			k, err = cr.Read(buf[:1+rng.IntN(len(buf))])
			out = append(out, buf[:k]...)
			if err != nil {
				break
			}
		}
		switch mode {
		case 0:
			if !errors.Is(err, io.EOF) || !bytes.Equal(out, data) {
				t.Fatalf("intact chunk of %d: got %d bytes, %v", n, len(out), err)
			}
		default:
			if len(out) >= n {
				t.Fatalf("mode %d: a bad chunk of %d came out whole", mode, n)
			}
			if mode == 1 && (KindOf(err) != Invalid || !cr.bad || !strings.Contains(err.Error(), "corrupted")) {
				t.Fatalf("flipped byte: %v", err)
			}
			if mode == 2 && !errors.Is(err, store.ErrShortBody) {
				t.Fatalf("short body: %v", err)
			}
		}
	}
}

func sha512Sum(b []byte) []byte {
	s := sha512.Sum512(b)
	return s[:]
}

// FuzzDecodeRemote: a session object from the bucket (which another S3
// client could have written) is either refused or a consistent session
// whose paths hoard could have chosen.
func FuzzDecodeRemote(f *testing.F) {
	w := strings.Repeat("w", 44)
	hs := []string{ChunkHash([]byte{1}), ChunkHash([]byte{2}), ChunkHash([]byte{1})}
	good, _ := json.Marshal(remoteRec{record: record{Wark: w, Dir: "a/b", Name: "f.bin", Asked: "f.bin", Size: 3<<20 - 5, CS: 1 << 20, Hashes: hs}})
	done, _ := json.Marshal(remoteRec{record: record{Wark: w, Dir: ".", Name: "f", Asked: "f", Size: 1, CS: 1 << 20, Hashes: hs[:1]}, Final: "f-2"})
	for _, s := range []string{string(good), string(done), "{}", "null", `{"wark":"` + w + `","dir":"..","name":"x"}`,
		strings.Replace(string(good), `"a/b"`, `"../b"`, 1), strings.Replace(string(good), `"f.bin"`, `".hist"`, 1),
		strings.Replace(string(done), `"f-2"`, `"../f"`, 1), strings.Replace(string(good), `1048576`, `0`, 1),
		strings.Replace(string(good), `{`, `{"upload":"ZmFrZS11cGxvYWQtaWQ",`, 1), strings.Replace(string(good), `{`, `{"upload":"a b\n",`, 1),
		strings.Replace(string(good), `{`, `{"upload":"`+strings.Repeat("x", 1025)+`",`, 1)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b string) {
		rs, err := decodeRemote(w, []byte(b))
		if err != nil {
			return
		}
		rec := rs.rec
		if len(rec.Upload) > 1024 || strings.ContainsFunc(rec.Upload, func(r rune) bool { return r <= ' ' || r > '~' }) {
			t.Fatalf("accepted the upload id %q", rec.Upload)
		}
		if rec.Wark != w || rs.t == nil || rs.t.n != len(rec.Hashes) || rec.Size <= 0 {
			t.Fatalf("accepted an inconsistent session: %+v", rec)
		}
		for _, p := range []string{rec.Dir + "/" + rec.Name, rec.Final} {
			if p == "" {
				continue
			}
			for c := range strings.SplitSeq(p, "/") {
				if c == ".." || strings.EqualFold(c, store.HistName) || strings.HasSuffix(c, store.PartialSuffix) {
					t.Fatalf("accepted the path %q", p)
				}
			}
		}
		var sum int64
		for u := 0; u < rs.t.nu; u++ {
			sum += rs.t.bytesOf(u)
		}
		if sum != rec.Size {
			t.Fatalf("chunks cover %d of %d bytes", sum, rec.Size)
		}
	})
}

// claimBusy (a chunk written by a post on this node, on an object-store
// volume): a second claim of any chunk held is refused with disk's
// answer, claims of other chunks, of the same chunk in another session or
// volume, and after the release, are taken.
func TestClaimBusy(t *testing.T) {
	const cs = 1 << 20
	var hashes []string
	for i := range 3 {
		hashes = append(hashes, ChunkHash(bytes.Repeat([]byte{byte(i)}, cs)))
	}
	tab, err := newTable(3*cs, cs, hashes)
	if err != nil {
		t.Fatal(err)
	}
	rs := &remoteSess{rec: remoteRec{record: record{Wark: strings.Repeat("W", 44), Name: "busy.bin"}}, t: tab}
	other := &remoteSess{rec: remoteRec{record: record{Wark: strings.Repeat("X", 44), Name: "busy.bin"}}, t: tab}
	v, v2 := &store.Volume{VPath: "a"}, &store.Volume{VPath: "b"}
	var c remoteCache
	rel, err := c.claimBusy(v, rs, []int{0, 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, us := range [][]int{{1}, {2, 0}} {
		_, err := c.claimBusy(v, rs, us)
		var e *Error
		if !errors.As(err, &e) || e.Kind != Invalid || !strings.Contains(e.Msg, "that chunk is already being written to") || !strings.Contains(e.Msg, "busy.bin") {
			t.Fatalf("claim of %v while 0 and 1 are held: %v", us, err)
		}
	}
	rel2, err := c.claimBusy(v, rs, []int{2})
	if err != nil {
		t.Fatalf("another chunk: %v", err)
	}
	rel3, err := c.claimBusy(v2, rs, []int{0})
	if err != nil {
		t.Fatalf("the same chunk in another volume: %v", err)
	}
	rel4, err := c.claimBusy(v, other, []int{0})
	if err != nil {
		t.Fatalf("the same chunk in another session: %v", err)
	}
	rel()
	rel2()
	rel3()
	rel4()
	if len(c.busy) != 0 {
		t.Fatalf("claims left after every release: %v", c.busy)
	}
	if rel, err := c.claimBusy(v, rs, []int{0, 1, 2}); err != nil {
		t.Fatalf("after the release: %v", err)
	} else {
		rel()
	}
}

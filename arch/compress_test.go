package arch

import (
	"bytes"
	"compress/gzip"
	"io"
	"testing"

	"github.com/ulikunitz/xz"
)

func TestEncoderRoundTrip(t *testing.T) {
	data := bytes.Repeat([]byte("hoard keeps every byte it acknowledged. "), 5000)
	for _, c := range []Codec{Gzip, XZ} {
		for _, level := range []int{0, 1, 6, 9} {
			var buf bytes.Buffer
			w, err := NewEncoder(c, level, &buf)
			if err != nil {
				t.Fatalf("NewEncoder(%s, %d) = %v", c, level, err)
			}
			if _, err := w.Write(data); err != nil {
				t.Fatal(err)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			var r io.Reader
			if c == Gzip {
				r, err = gzip.NewReader(&buf)
			} else {
				r, err = xz.NewReader(&buf)
			}
			if err != nil {
				t.Fatalf("%s level %d: reader: %v", c, level, err)
			}
			got, err := io.ReadAll(r)
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("%s level %d: round trip gave %d bytes, %v; want %d", c, level, len(got), err, len(data))
			}
		}
	}
}

func TestCheckLevel(t *testing.T) {
	for _, tc := range []struct {
		c     Codec
		level int
		ok    bool
	}{{Gzip, 0, true}, {Gzip, 9, true}, {Gzip, 10, false}, {XZ, -1, false}, {XZ, 5, true}, {"bz9", 1, false}} {
		if err := CheckLevel(tc.c, tc.level); (err == nil) != tc.ok {
			t.Errorf("CheckLevel(%q, %d) = %v, want ok=%v", tc.c, tc.level, err, tc.ok)
		}
	}
}

package http

import (
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkArchiveSmall: ?tar and ?zip of 5,000 files of 1-16 KiB in 50
// folders (bench/archive.sh's tree) through the real handler and a real
// loopback connection; the client reads the whole body.
func BenchmarkArchiveSmall(b *testing.B) {
	ts, dir := benchServer(b)
	r := rand.New(rand.NewPCG(1, 1))
	var total int64
	for i := range 5000 {
		d := filepath.Join(dir, "small", fmt.Sprintf("d%02d", i%50))
		if err := os.MkdirAll(d, 0o755); err != nil {
			b.Fatal(err)
		}
		data := make([]byte, 1024+r.IntN(15*1024))
		for j := range data {
			data[j] = byte(r.Uint32())
		}
		total += int64(len(data))
		if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("f%05d.dat", i)), data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	c := ts.Client()
	for _, q := range []string{"tar", "zip"} {
		b.Run(q, func(b *testing.B) {
			b.SetBytes(total)
			b.ReportAllocs()
			for b.Loop() {
				resp, err := c.Get(ts.URL + "/small/?" + q)
				if err != nil {
					b.Fatal(err)
				}
				n, _ := io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 || n < total {
					b.Fatalf("%s: %d bytes, status %d", q, n, resp.StatusCode)
				}
			}
		})
	}
}

package e2e

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"crypto/sha512"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"hoard/store"
)

// peakRSS reads the server's peak resident memory (VmHWM) in bytes.
func peakRSS(s *server) int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return n << 10
		}
	}
	return 0
}

// BenchmarkUp2kServer measures server-side verify+write throughput: a
// Go client posts pre-hashed chunks of a 1 GiB file over conns
// connections (stitch chunks per post), against the real binary on a
// volume in TMPDIR. It reports the server's peak RSS, and the limits
// measured in the same run: SHA-512 (crypto/sha512) over 2 cores,
// pwrite+fdatasync on the same disk, and receiving: the same client
// posting the same 4 MiB bodies over 4 connections to a server (in this
// process) that only reads them.
func BenchmarkUp2kServer(b *testing.B) {
	const size = 1 << 30
	data := make([]byte, size)
	rand.Read(data)
	f := newUp2kFile(data)
	for _, tc := range []struct{ conns, stitch int }{{conns: 4, stitch: 1}, {conns: 4, stitch: 4}, {conns: 64, stitch: 1}} {
		b.Run(fmt.Sprintf("conns=%d/stitch=%d", tc.conns, tc.stitch), func(b *testing.B) {
			vol := b.TempDir()
			s, err := startErr(b, "-v", vol+"::rw", "--log-level", "warn")
			if err != nil {
				b.Fatal(err)
			}
			defer s.stop()
			tr := &http.Transport{MaxIdleConnsPerHost: tc.conns, MaxConnsPerHost: tc.conns}
			c := &http.Client{Transport: tr, Timeout: 5 * time.Minute}
			b.SetBytes(size)
			b.ResetTimer()
			for i := range b.N {
				b.StopTimer()
				data[0]++ // new content each time, or the server copies the last one
				f.hashes[0] = up2kChunkHash(f.chunk(0))
				b.StartTimer()
				body := fmt.Sprintf(`{"name":"f%d","size":%d,"lmod":1,"hash":%s}`, i, size, jsonStrings(f.hashes))
				resp, err := c.Post(s.URL+"/", "application/json", strings.NewReader(body))
				if err != nil || resp.StatusCode != 200 {
					b.Fatalf("handshake: %v %v", err, resp)
				}
				var rep handshakeReply
				json.NewDecoder(resp.Body).Decode(&rep)
				resp.Body.Close()
				jobs := make(chan int)
				var wg sync.WaitGroup
				for range tc.conns {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for first := range jobs {
							last := min(first+tc.stitch, len(f.hashes))
							var hs []string
							var n int
							for k := first; k < last; k++ {
								hs = append(hs, f.hashes[k])
								n += len(f.chunk(k))
							}
							off := int64(first) * f.cs
							req, _ := http.NewRequest("POST", s.URL+"/", bytes.NewReader(data[off:off+int64(n)]))
							req.Header.Set("Content-Type", "application/octet-stream")
							req.Header.Set("X-Up2k-Wark", rep.Wark)
							req.Header.Set("X-Up2k-Hash", stitchHashes(hs))
							resp, err := c.Do(req)
							if err != nil {
								b.Error(err)
								continue
							}
							resp.Body.Close()
							if resp.StatusCode != 200 {
								b.Errorf("chunk: %d", resp.StatusCode)
							}
						}
					}()
				}
				for k := 0; k < len(f.hashes); k += tc.stitch {
					jobs <- k
				}
				close(jobs)
				wg.Wait()
				b.StopTimer()
				os.Remove(filepath.Join(vol, fmt.Sprintf("f%d", i)))
				b.StartTimer()
			}
			b.StopTimer()
			b.ReportMetric(float64(peakRSS(s))/(1<<20), "peakRSS-MiB")
		})
	}
	b.Run("limit=sha512x2", func(b *testing.B) {
		b.SetBytes(2 * 64 << 20)
		for range b.N {
			var wg sync.WaitGroup
			for k := range 2 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					sha512.Sum512(data[k*64<<20 : (k+1)*64<<20])
				}()
			}
			wg.Wait()
		}
	})
	b.Run("limit=receive", func(b *testing.B) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.CopyBuffer(io.Discard, r.Body, make([]byte, 256<<10))
		}))
		defer srv.Close()
		tr := &http.Transport{MaxIdleConnsPerHost: 4, MaxConnsPerHost: 4}
		defer tr.CloseIdleConnections()
		c := &http.Client{Transport: tr}
		b.SetBytes(size)
		for range b.N {
			jobs := make(chan int)
			var wg sync.WaitGroup
			for range 4 {
				wg.Go(func() {
					for k := range jobs {
						resp, err := c.Post(srv.URL, "application/octet-stream", bytes.NewReader(data[k<<22:(k+1)<<22]))
						if err != nil {
							b.Error(err)
							continue
						}
						resp.Body.Close()
					}
				})
			}
			for k := range size >> 22 {
				jobs <- k
			}
			close(jobs)
			wg.Wait()
		}
	})
	b.Run("limit=fdatasync-write", func(b *testing.B) {
		fh, err := os.Create(filepath.Join(b.TempDir(), "disk"))
		if err != nil {
			b.Fatal(err)
		}
		defer fh.Close()
		b.SetBytes(256 << 20)
		for range b.N {
			for j := range 256 {
				fh.WriteAt(data[j<<20:(j+1)<<20], int64(j)<<20)
			}
			if err := store.Datasync(fh); err != nil {
				b.Fatal(err)
			}
		}
	})
}

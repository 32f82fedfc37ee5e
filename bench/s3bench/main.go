// Command s3bench measures hoard on a volume on S3-compatible object
// storage (docs/s3.md) beside the same on a local volume and beside a
// direct S3 client (minio-go) moving the same bytes to and from the same
// MinIO: put-large, get-large, up2k-large (`hoard up`) and tar. bench/s3.sh
// starts MinIO and hoard and runs it; see there.
//
// Each round runs every scenario once per way, the ways in a rotated
// order (A B C, B C A, ...), so a machine that slows down over the run
// charges each alike; the report gives the median, min and max of ≥3
// rounds, the ratio of each hoard way to the direct client, and CPU
// seconds per GB of hoard and of MinIO (from /proc, user+system, per
// transfer).
package main

import (
	"archive/tar"
	"context"
	"crypto/sha512"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

type config struct {
	hoard     string // base URL of hoard
	s3Vol     string // hoard's URL path of the S3 volume, e.g. /s3
	locVol    string // hoard's URL path of the local volume, e.g. /loc
	endpoint  string // MinIO host:port
	bucket    string
	prefix    string // the S3 volume's key prefix
	hoardBin  string // for up2k-large
	size      int64
	rounds    int
	jobs      int
	hoardPID  int
	minioPIDs []int
	scenarios []string
}

// way is one of the compared ways of moving the bytes.
type way struct {
	name string
	run  func(ctx context.Context, scen string, round int) (int64, error) // bytes moved
}

func main() {
	var c config
	var pids, scen string
	flag.StringVar(&c.hoard, "hoard", "", "hoard's base URL (http://127.0.0.1:PORT)")
	flag.StringVar(&c.s3Vol, "s3-vol", "/s3", "URL path of hoard's volume on S3")
	flag.StringVar(&c.locVol, "local-vol", "/loc", "URL path of hoard's local volume (\"\": none)")
	flag.StringVar(&c.endpoint, "endpoint", "", "MinIO host:port (keys from AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY)")
	flag.StringVar(&c.bucket, "bucket", "bench", "bucket of the S3 volume")
	flag.StringVar(&c.prefix, "prefix", "vol", "key prefix of the S3 volume")
	flag.StringVar(&c.hoardBin, "hoard-bin", "", "hoard binary for up2k-large (hoard up)")
	size := flag.String("size", "1G", "bytes per transfer (K, M, G)")
	flag.IntVar(&c.rounds, "rounds", 3, "rounds (medians need 3 or more)")
	flag.IntVar(&c.jobs, "j", 4, "parallel connections of hoard up")
	flag.IntVar(&c.hoardPID, "hoard-pid", 0, "hoard's process id, for CPU per GB")
	flag.StringVar(&pids, "minio-pids", "", "MinIO's process ids, comma-separated, for CPU per GB")
	flag.StringVar(&scen, "scenario", "put-large,get-large,up2k-large,tar", "scenarios, comma-separated")
	mkBucket := flag.Bool("make-bucket", false, "only make -bucket at -endpoint and exit")
	flag.Parse()
	if *mkBucket {
		mc, err := minio.New(c.endpoint, &minio.Options{Creds: credentials.NewStaticV4(os.Getenv("AWS_ACCESS_KEY_ID"), os.Getenv("AWS_SECRET_ACCESS_KEY"), ""), Region: "us-east-1"})
		if err == nil {
			err = mc.MakeBucket(context.Background(), c.bucket, minio.MakeBucketOptions{})
		}
		if err != nil {
			fatalf("making bucket %s: %v", c.bucket, err)
		}
		return
	}
	var err error
	if c.size, err = parseSize(*size); err != nil || c.size < 1<<20 {
		fatalf("-size %q: want at least 1M", *size)
	}
	for _, p := range strings.Split(pids, ",") {
		if n, err := strconv.Atoi(strings.TrimSpace(p)); err == nil {
			c.minioPIDs = append(c.minioPIDs, n)
		}
	}
	c.scenarios = strings.Split(scen, ",")
	if c.hoard == "" || c.endpoint == "" || c.rounds < 1 {
		fatalf("need -hoard, -endpoint and -rounds ≥ 1")
	}
	ctx := context.Background()
	if err := run(ctx, &c); err != nil {
		fatalf("%v", err)
	}
}

func fatalf(f string, a ...any) {
	fmt.Fprintf(os.Stderr, "s3bench: "+f+"\n", a...)
	os.Exit(1)
}

func parseSize(s string) (int64, error) {
	t := strings.ToUpper(strings.TrimSpace(s))
	mul := int64(1)
	switch {
	case strings.HasSuffix(t, "G"):
		mul, t = 1<<30, t[:len(t)-1]
	case strings.HasSuffix(t, "M"):
		mul, t = 1<<20, t[:len(t)-1]
	case strings.HasSuffix(t, "K"):
		mul, t = 1<<10, t[:len(t)-1]
	}
	v, err := strconv.ParseInt(t, 10, 64)
	return v * mul, err
}

// data is the transfer's bytes: deterministic, incompressible, generated
// while sent (never held whole).
func data(size int64) io.Reader {
	var key [32]byte
	key[0] = 21
	return io.LimitReader(rand.NewChaCha8(key), size)
}

func run(ctx context.Context, c *config) error {
	mc, err := minio.New(c.endpoint, &minio.Options{Creds: credentials.NewStaticV4(os.Getenv("AWS_ACCESS_KEY_ID"), os.Getenv("AWS_SECRET_ACCESS_KEY"), ""), Region: "us-east-1"})
	if err != nil {
		return err
	}
	hc := &http.Client{Transport: &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 64}}
	tmp, err := os.MkdirTemp("", "s3bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	// The file hoard up sends, and the tar folder's content: made once.
	src := filepath.Join(tmp, "big.bin")
	f, err := os.Create(src)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, data(c.size)); err != nil {
		return err
	}
	f.Close()
	sum := fileSum(src)

	ways := []way{{"direct", func(ctx context.Context, scen string, round int) (int64, error) {
		return direct(ctx, c, mc, scen, round)
	}}, {"hoard-s3", func(ctx context.Context, scen string, round int) (int64, error) {
		return viaHoard(ctx, c, hc, c.s3Vol, src, sum, scen, round)
	}}}
	if c.locVol != "" {
		ways = append(ways, way{"hoard-local", func(ctx context.Context, scen string, round int) (int64, error) {
			return viaHoard(ctx, c, hc, c.locVol, src, sum, scen, round)
		}})
	}
	// Fixtures for get-large and tar, once per way: the same bytes.
	for _, w := range ways {
		if _, err := w.run(ctx, "prepare", 0); err != nil {
			return fmt.Errorf("%s: preparing: %w", w.name, err)
		}
	}
	type key struct{ scen, way string }
	secs := map[key][]float64{}
	cpuH, cpuM := map[key]float64{}, map[key]float64{}
	moved := map[key]int64{}
	unsupported := map[key]string{}
	for round := range c.rounds {
		for _, scen := range c.scenarios {
			for i := range ways {
				w := ways[(i+round)%len(ways)]
				k := key{scen, w.name}
				if unsupported[k] != "" {
					continue
				}
				h0, m0 := cpu(c.hoardPID), cpuAll(c.minioPIDs)
				t0 := time.Now()
				n, err := w.run(ctx, scen, round+1)
				d := time.Since(t0).Seconds()
				h1, m1 := cpu(c.hoardPID), cpuAll(c.minioPIDs)
				var ns *notSupported
				if errors.As(err, &ns) {
					unsupported[k] = ns.why
					continue
				}
				if err != nil {
					return fmt.Errorf("%s %s round %d: %w", w.name, scen, round+1, err)
				}
				secs[k] = append(secs[k], d)
				cpuH[k] += h1 - h0
				cpuM[k] += m1 - m0
				moved[k] += n
				fmt.Fprintf(os.Stderr, "round %d %-11s %-12s %7.1f MiB/s\n", round+1, scen, w.name, float64(n)/d/(1<<20))
			}
		}
	}
	fmt.Printf("\n%d rounds of %s; MiB/s median (min–max); ratio = hoard's median time / the direct client's; CPU s per GB (user+system)\n\n", c.rounds, fmtSize(c.size))
	fmt.Printf("%-11s %-12s %22s %8s %10s %10s\n", "scenario", "way", "MiB/s", "ratio", "hoard CPU", "MinIO CPU")
	for _, scen := range c.scenarios {
		base := median(secs[key{scen, "direct"}])
		for _, w := range ways {
			k := key{scen, w.name}
			if why := unsupported[k]; why != "" {
				fmt.Printf("%-11s %-12s %22s\n", scen, w.name, "unsupported: "+why)
				continue
			}
			s := secs[k]
			if len(s) == 0 {
				continue
			}
			per := float64(moved[k]) / float64(len(s))
			ratio := "-"
			if base > 0 && w.name != "direct" {
				ratio = fmt.Sprintf("%.2fx", median(s)/base)
			}
			gb := float64(moved[k]) / 1e9
			hcpu, mcpu := "-", "-"
			if c.hoardPID > 0 && w.name != "direct" {
				hcpu = fmt.Sprintf("%.2f", cpuH[k]/gb)
			}
			if len(c.minioPIDs) > 0 && (w.name != "hoard-local") {
				mcpu = fmt.Sprintf("%.2f", cpuM[k]/gb)
			}
			fmt.Printf("%-11s %-12s %8.1f (%5.1f–%5.1f) %8s %10s %10s\n", scen, w.name,
				per/median(s)/(1<<20), per/slices.Max(s)/(1<<20), per/slices.Min(s)/(1<<20), ratio, hcpu, mcpu)
		}
	}
	return nil
}

type notSupported struct{ why string }

func (e *notSupported) Error() string { return "unsupported: " + e.why }

// direct moves the scenario's bytes with minio-go alone: what hoard on S3
// is compared with.
func direct(ctx context.Context, c *config, mc *minio.Client, scen string, round int) (int64, error) {
	po := minio.PutObjectOptions{PartSize: 16 << 20, ContentType: "application/octet-stream"}
	switch scen {
	case "prepare":
		_, err := mc.PutObject(ctx, c.bucket, "direct/fix/big.bin", data(c.size), c.size, po)
		return c.size, err
	case "put-large", "up2k-large":
		k := fmt.Sprintf("direct/up/%s-%d.bin", scen, round)
		_, err := mc.PutObject(ctx, c.bucket, k, data(c.size), c.size, po)
		if err == nil {
			err = mc.RemoveObject(ctx, c.bucket, k, minio.RemoveObjectOptions{})
		}
		return c.size, err
	case "get-large", "tar": // tar: the object read as tar would read it
		o, err := mc.GetObject(ctx, c.bucket, "direct/fix/big.bin", minio.GetObjectOptions{})
		if err != nil {
			return 0, err
		}
		defer o.Close()
		return io.Copy(io.Discard, o)
	}
	return 0, fmt.Errorf("unknown scenario %q", scen)
}

// viaHoard moves the scenario's bytes through hoard's volume vol.
func viaHoard(ctx context.Context, c *config, hc *http.Client, vol, src string, sum [64]byte, scen string, round int) (int64, error) {
	base := c.hoard + vol
	switch scen {
	case "prepare": // untimed: the fixture, checked byte for byte once
		n, err := put(ctx, hc, base+"/hb-s3/fix/big.bin?replace", c.size)
		if err == nil {
			var got [64]byte
			if got, err = getSum(ctx, hc, base+"/hb-s3/fix/big.bin"); err == nil && got != sum {
				err = errors.New("the fixture read back through hoard differs")
			}
		}
		return n, err
	case "put-large":
		u := fmt.Sprintf("%s/hb-s3/up/put-%d.bin", base, round)
		n, err := put(ctx, hc, u, c.size)
		if err == nil {
			err = del(ctx, hc, u)
		}
		return n, err
	case "up2k-large":
		if c.hoardBin == "" {
			return 0, &notSupported{"no -hoard-bin for hoard up"}
		}
		folder := fmt.Sprintf("%s/hb-s3/up2k-%d/", base, round)
		cmd := exec.CommandContext(ctx, c.hoardBin, "up", "-ns", "-j", strconv.Itoa(c.jobs), folder, src)
		if out, err := cmd.CombinedOutput(); err != nil {
			return 0, fmt.Errorf("hoard up: %v\n%s", err, out)
		}
		// The size is checked here; reading the GiB back to hash it would
		// be timed, and the direct client reads nothing back (hoard up's
		// byte-identity is what the e2e suite shows).
		err := headSize(ctx, hc, folder+"big.bin", c.size)
		if err == nil {
			err = del(ctx, hc, strings.TrimSuffix(folder, "/"))
		}
		return c.size, err
	case "get-large":
		// Read and dropped as the direct client's GET is: hashing here
		// would time the harness's SHA-512, not the server (the bytes are
		// checked once, untimed, after "prepare").
		return getCount(ctx, hc, base+"/hb-s3/fix/big.bin", c.size)
	case "tar":
		req, _ := http.NewRequestWithContext(ctx, "GET", base+"/hb-s3/fix/?tar", nil)
		resp, err := hc.Do(req)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		if resp.StatusCode == http.StatusNotImplemented {
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
			return 0, &notSupported{strings.TrimSpace(string(b))}
		}
		if resp.StatusCode != http.StatusOK {
			return 0, fmt.Errorf("tar: %s", resp.Status)
		}
		tr := tar.NewReader(resp.Body)
		var n int64
		for {
			_, err := tr.Next()
			if errors.Is(err, io.EOF) {
				return n, nil
			}
			if err != nil {
				return n, err
			}
			m, err := io.Copy(io.Discard, tr)
			n += m
			if err != nil {
				return n, err
			}
		}
	}
	return 0, fmt.Errorf("unknown scenario %q", scen)
}

func put(ctx context.Context, hc *http.Client, u string, size int64) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, "PUT", u, data(size))
	if err != nil {
		return 0, err
	}
	req.ContentLength = size
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 300))
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		return 0, fmt.Errorf("PUT %s: %s %s", u, resp.Status, b)
	}
	return size, nil
}

func del(ctx context.Context, hc *http.Client, u string) error {
	req, _ := http.NewRequestWithContext(ctx, "POST", u+"?delete", nil)
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("delete %s: %s", u, resp.Status)
	}
	return nil
}

// getCount GETs u, drops the body and checks its size.
func getCount(ctx context.Context, hc *http.Client, u string, want int64) (int64, error) {
	req, _ := http.NewRequestWithContext(ctx, "GET", u, nil)
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	n, err := io.Copy(io.Discard, resp.Body)
	if err == nil && n != want {
		err = fmt.Errorf("GET %s: %d bytes, want %d", u, n, want)
	}
	return n, err
}

// headSize checks the size of u by a HEAD.
func headSize(ctx context.Context, hc *http.Client, u string, want int64) error {
	req, _ := http.NewRequestWithContext(ctx, "HEAD", u, nil)
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.ContentLength != want {
		return fmt.Errorf("HEAD %s: %s, %d bytes, want %d", u, resp.Status, resp.ContentLength, want)
	}
	return nil
}

func getSum(ctx context.Context, hc *http.Client, u string) ([64]byte, error) {
	req, _ := http.NewRequestWithContext(ctx, "GET", u, nil)
	resp, err := hc.Do(req)
	if err != nil {
		return [64]byte{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return [64]byte{}, fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	h := sha512.New()
	if _, err := io.Copy(h, resp.Body); err != nil {
		return [64]byte{}, err
	}
	return [64]byte(h.Sum(nil)), nil
}

func fileSum(p string) [64]byte {
	f, err := os.Open(p)
	if err != nil {
		fatalf("%v", err)
	}
	defer f.Close()
	h := sha512.New()
	io.Copy(h, f)
	return [64]byte(h.Sum(nil))
}

// cpu is a process's user+system CPU seconds, from /proc (0 without).
func cpu(pid int) float64 {
	if pid <= 0 {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (u + st) / 100 // USER_HZ: 100 on Linux
}

func cpuAll(pids []int) float64 {
	var s float64
	for _, p := range pids {
		s += cpu(p)
	}
	return s
}

func median(s []float64) float64 {
	if len(s) == 0 {
		return 0
	}
	s = slices.Sorted(slices.Values(s))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func fmtSize(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20:
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

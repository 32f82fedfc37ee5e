package idx

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The benchmarks run on a synthetic index of HOARD_IDX_FILES files
// (default 1,000,000) that benchIndex builds once into HOARD_IDX_DIR (or
// a temporary folder) and reuses across runs; it is never committed.
//
//	HOARD_IDX_DIR=/tmp/idx1m go test ./idx -run - -bench Query -benchtime 400x
//
// Building reports files/s and the on-disk size.

var benchVocab = strings.Fields(`alpha beta gamma delta epsilon zeta theta lambda sigma omega
	river mountain forest ocean desert island valley canyon glacier meadow
	report invoice draft final summary notes backup archive export import
	holiday birthday wedding concert festival vacation weekend morning evening night
	rock jazz blues metal house techno ambient classical folk punk
	red green blue yellow purple orange black white silver golden
	project client server module widget engine kernel driver plugin script`)

var benchExts = []string{"jpg", "jpg", "jpg", "png", "mp3", "mp3", "flac", "txt", "pdf", "log", "mp4", "mkv", "docx", "zip", "go", "json"}

// benchRecord is file i of the synthetic tree: folders three or four deep,
// names of two or three words and a number, sizes spread over 1 B to
// 10 GiB, mtimes over ten years, tags on audio files.
func benchRecord(r *rand.Rand, i int) *Record {
	w := func() string { return benchVocab[r.IntN(len(benchVocab))] }
	depth := 2 + r.IntN(3)
	parts := make([]string, 0, depth+1)
	for d := range depth {
		parts = append(parts, w()+strconv.Itoa(r.IntN(10+d*20)))
	}
	e := benchExts[r.IntN(len(benchExts))]
	name := w() + " " + w()
	if r.IntN(2) == 0 {
		name += "_" + w()
	}
	parts = append(parts, name+"_"+strconv.Itoa(i)+"."+e)
	rec := &Record{
		Rel:   strings.Join(parts, "/"),
		Size:  int64(1) << r.IntN(34) * int64(1+r.IntN(3)) / 2,
		Mtime: time.Date(2015, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(r.Int64N(int64(3650 * 24 * time.Hour)))).UnixNano(),
		Wark:  fmt.Sprintf("%044x", i),
	}
	rec.Chunks = []string{fmt.Sprintf("c%043x", i)}
	if e == "mp3" || e == "flac" {
		rec.Tags = map[string]string{
			"artist": title(w()) + " " + title(w()),
			"album":  w() + " " + w(),
			"title":  w() + " " + w() + " " + w(),
			"genre":  []string{"Rock", "Jazz", "Blues", "Electronic", "Classical", "Folk"}[r.IntN(6)],
			"year":   strconv.Itoa(1950 + r.IntN(75)),
			"rate":   strconv.Itoa([]int{96, 128, 192, 256, 320, 1411}[r.IntN(6)]),
			"dur":    strconv.Itoa(30 + r.IntN(900)),
		}
	}
	return rec
}

func benchIndex(b *testing.B) *DB {
	b.Helper()
	n := 1_000_000
	if s := os.Getenv("HOARD_IDX_FILES"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	dir := os.Getenv("HOARD_IDX_DIR")
	if dir == "" {
		dir = b.TempDir()
	}
	dir = filepath.Join(dir, strconv.Itoa(n))
	c := NewCache(256 << 20)
	defer c.Release()
	d, err := Open(dir, Options{Cache: c, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { d.Close() })
	if d.nextID.Load() >= uint64(n) {
		logFamilies(b, d)
		return d
	}
	r := rand.New(rand.NewPCG(1, 2))
	start := time.Now()
	for i := range n {
		if err := d.PutRecord(benchRecord(r, i)); err != nil {
			b.Fatal(err)
		}
	}
	if err := d.db.Flush(); err != nil {
		b.Fatal(err)
	}
	took := time.Since(start)
	// Queries run on the settled index (as a server does once its scan is
	// long done), not on the pile of level-0 files a bulk load leaves.
	if err := d.db.Compact(context.Background(), []byte{0}, []byte{0xff}, true); err != nil {
		b.Fatal(err)
	}
	b.Logf("built %d files in %v: %.0f files/s", n, took.Round(time.Millisecond), float64(n)/took.Seconds())
	var size int64
	filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			size += fi.Size()
		}
		return nil
	})
	b.Logf("on disk after flush: %.1f MiB (%.0f bytes/file)", float64(size)/(1<<20), float64(size)/float64(n))
	logFamilies(b, d)
	return d
}

// logFamilies logs the estimated size on disk of each file index family.
func logFamilies(b *testing.B, d *DB) {
	var parts []string
	for _, f := range fileFams {
		n, err := d.db.EstimateDiskUsage([]byte{f}, []byte{f + 1})
		if err != nil {
			b.Fatal(err)
		}
		parts = append(parts, fmt.Sprintf("%c %.1f", f, float64(n)/(1<<20)))
	}
	b.Logf("MiB by family: %s", strings.Join(parts, ", "))
}

// benchForms are the query forms; %w is replaced by a vocabulary word,
// %d by a number, so repeated runs do not hit one cached answer.
var benchForms = []struct{ name, q string }{
	{"word", "%w"},
	{"word-rare", "%w %w %w"},
	{"two-words", "%w %w"},
	{"phrase", `"%w %w"`},
	{"glob-ext", "*.%e"},
	{"glob-leading-short", "*%c*"},
	{"glob-mid", "%w*%w"},
	{"size", "size:>%dG"},
	{"size-eq", "size:=%d"},
	{"date", "date:%y-0%m-1%m"},
	{"date-range", "date:>%y-01-01 date:<%y-02-01"},
	{"path", "path:%w%d/%w"},
	{"ext", "ext:%e"},
	{"ext-list", "ext:%e,%e"},
	{"artist", "artist:%w"},
	{"year", "year:%y"},
	{"rate", "rate:>=%r"},
	{"dur", "dur:>%D"},
	{"combined", "%w ext:%e size:>1K date:>2018-01-01 -%w"},
	{"negated-only", "-%w"},
}

func fillQuery(r *rand.Rand, q string) string {
	var b strings.Builder
	for i := 0; i < len(q); i++ {
		if q[i] != '%' || i+1 == len(q) {
			b.WriteByte(q[i])
			continue
		}
		i++
		switch q[i] {
		case 'w':
			b.WriteString(benchVocab[r.IntN(len(benchVocab))])
		case 'e':
			b.WriteString(benchExts[r.IntN(len(benchExts))])
		case 'c':
			b.WriteByte("abcdefghiklmnoprstuvwy"[r.IntN(22)])
		case 'd':
			b.WriteString(strconv.Itoa(r.IntN(10)))
		case 'y':
			b.WriteString(strconv.Itoa(2015 + r.IntN(10)))
		case 'm':
			b.WriteString(strconv.Itoa(1 + r.IntN(8)))
		case 'r':
			b.WriteString(strconv.Itoa([]int{128, 256, 320, 1000}[r.IntN(4)]))
		case 'D':
			b.WriteString(strconv.Itoa(60 * (1 + r.IntN(15))))
		}
	}
	return b.String()
}

// searchDB runs a query on one database as the Indexer does for a volume
// at the root, returning the number of hits (at most n) and the plan.
func searchDB(d *DB, q *Query, n int) (int, string, error) {
	snap := d.db.NewSnapshot()
	defer snap.Close()
	p, err := makePlan(snap, d.db, "", q.Terms)
	if err != nil {
		return 0, "", err
	}
	hits := 0
	err = p.run(context.Background(), snap, "", q.Terms, func(*cand) bool {
		hits++
		return hits <= n
	})
	return min(hits, n), p.Name(), err
}

// BenchmarkQuery reports p50 and p99 latency of each query form with
// n = 200 (the default hit count), on the synthetic index.
func BenchmarkQuery(b *testing.B) {
	d := benchIndex(b)
	for _, f := range benchForms {
		b.Run(f.name, func(b *testing.B) {
			r := rand.New(rand.NewPCG(3, uint64(len(f.name))))
			var lat []time.Duration
			plans := map[string]int{}
			hits := 0
			for b.Loop() {
				q, err := Parse(fillQuery(r, f.q))
				if err != nil {
					b.Fatal(err)
				}
				t0 := time.Now()
				n, plan, err := searchDB(d, q, 200)
				lat = append(lat, time.Since(t0))
				if err != nil {
					b.Fatal(err)
				}
				plans[plan]++
				hits += n
			}
			slices.Sort(lat)
			pct := func(p float64) float64 {
				return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Microseconds()) / 1000
			}
			b.ReportMetric(pct(0.50), "p50-ms")
			b.ReportMetric(pct(0.99), "p99-ms")
			b.ReportMetric(float64(hits)/float64(len(lat)), "hits/op")
			b.Logf("%s: plans %v", f.name, plans)
		})
	}
}

func title(w string) string { return strings.ToUpper(w[:1]) + w[1:] }

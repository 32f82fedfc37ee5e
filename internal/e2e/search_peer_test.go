package e2e

// TestSearchVsCopyparty runs the same searches against hoard -e2dsa and
// copyparty -e2dsa serving one generated tree, alternating the servers
// query by query, and logs the median latency of each form and the ratio.
// It runs only when asked:
//
//	HOARD_CMP_DIR=/tmp/cmp100k HOARD_CMP_FILES=100000 go test ./internal/e2e -run VsCopyparty -v -timeout 60m
//
// The tree (empty-ish sparse files, never committed) is made once and
// reused. copyparty has its own query syntax; each form is translated.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

var cmpVocab = strings.Fields(`alpha beta gamma delta epsilon zeta theta lambda sigma omega
	river mountain forest ocean desert island valley canyon glacier meadow
	report invoice draft final summary notes backup archive export import
	holiday birthday wedding concert festival vacation weekend morning evening night
	rock jazz blues metal house techno ambient classical folk punk
	red green blue yellow purple orange black white silver golden
	project client server module widget engine kernel driver plugin script`)

var cmpExts = []string{"jpg", "jpg", "jpg", "png", "mp3", "mp3", "flac", "txt", "pdf", "log", "mp4", "mkv", "docx", "zip", "go", "json"}

func makeComparisonTree(t *testing.T, dir string, n int) {
	marker := filepath.Join(dir, ".done-"+strconv.Itoa(n))
	if _, err := os.Stat(marker); err == nil {
		return
	}
	r := rand.New(rand.NewPCG(1, 2))
	w := func() string { return cmpVocab[r.IntN(len(cmpVocab))] }
	t0 := time.Now()
	for i := range n {
		depth := 2 + r.IntN(3)
		parts := []string{dir}
		for d := range depth {
			parts = append(parts, w()+strconv.Itoa(r.IntN(10+d*20)))
		}
		name := w() + " " + w()
		if r.IntN(2) == 0 {
			name += "_" + w()
		}
		parts = append(parts, name+"_"+strconv.Itoa(i)+"."+cmpExts[r.IntN(len(cmpExts))])
		p := filepath.Join(parts...)
		os.MkdirAll(filepath.Dir(p), 0o755)
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		f.Truncate(int64(r.IntN(64 << 10)))
		f.Close()
		mt := time.Date(2015, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(r.Int64N(int64(3650 * 24 * time.Hour))))
		os.Chtimes(p, mt, mt)
	}
	os.WriteFile(marker, nil, 0o644)
	t.Logf("made %d files in %v", n, time.Since(t0).Round(time.Second))
}

func copypartyWordQuery(w string) string {
	return fmt.Sprintf("( path like *%s* or name like *%s* )", w, w)
}

// comparisonQuery draws one query of a form for both servers.
func comparisonQuery(r *rand.Rand, form string) (hq, cq string) {
	w := func() string { return cmpVocab[r.IntN(len(cmpVocab))] }
	e := func() string { return cmpExts[r.IntN(len(cmpExts))] }
	switch form {
	case "word":
		x := w()
		return x, copypartyWordQuery(x)
	case "two-words":
		a, b := w(), w()
		return a + " " + b, copypartyWordQuery(a) + " and " + copypartyWordQuery(b)
	case "glob-ext":
		x := e()
		return "*." + x, "name like *." + x
	case "size":
		k := 1 + r.IntN(60)
		return fmt.Sprintf("size:>%dK", k), fmt.Sprintf("size > %g", float64(k)/1024)
	case "date":
		d := time.Date(2015+r.IntN(10), time.Month(1+r.IntN(12)), 1+r.IntN(28), 0, 0, 0, 0, time.UTC)
		return "date:" + d.Format(time.DateOnly), "date >= " + d.Format(time.DateOnly) + " and date < " + d.AddDate(0, 0, 1).Format(time.DateOnly)
	case "path":
		p := w() + strconv.Itoa(r.IntN(10)) + "/" + w()
		return "path:" + p, "path like " + p + "*"
	case "combined":
		x, y := w(), e()
		return x + " ext:" + y + " size:>1K date:>2018-01-01", copypartyWordQuery(x) + " and name like *." + y + " and size > 0.0009765625 and date > 2018-01-01"
	}
	panic(form)
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// timedSearch posts q and returns the latency and hit count, retrying
// after a rate-limit answer (that wait is not counted).
func timedSearch(t *testing.T, url, q string) (time.Duration, int) {
	body, _ := json.Marshal(map[string]any{"q": q, "n": 200})
	for range 20 {
		t0 := time.Now()
		resp, err := http.Post(url+"/?srch", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		var out struct {
			Hits []json.RawMessage `json:"hits"`
		}
		b := new(bytes.Buffer)
		b.ReadFrom(resp.Body)
		resp.Body.Close()
		d := time.Since(t0)
		if resp.StatusCode == 429 || resp.StatusCode == 503 {
			time.Sleep(800 * time.Millisecond)
			continue
		}
		if resp.StatusCode != 200 {
			t.Fatalf("%s %q: %d %s", url, q, resp.StatusCode, b)
		}
		if err := json.Unmarshal(b.Bytes(), &out); err != nil {
			t.Fatalf("%s %q: %v", url, q, err)
		}
		return d, len(out.Hits)
	}
	t.Fatalf("%s %q: rate-limited 20 times", url, q)
	return 0, 0
}

func TestSearchVsCopyparty(t *testing.T) {
	dir := os.Getenv("HOARD_CMP_DIR")
	if dir == "" {
		t.Skip("set HOARD_CMP_DIR (and HOARD_CMP_FILES) to compare with copyparty")
	}
	n := 100000
	if s := os.Getenv("HOARD_CMP_FILES"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	rounds := 30
	if s := os.Getenv("HOARD_CMP_ROUNDS"); s != "" {
		rounds, _ = strconv.Atoi(s)
	}
	tree := filepath.Join(dir, "tree")
	makeComparisonTree(t, tree, n)

	// copyparty, its database outside the tree.
	cpHist := t.TempDir()
	port := freePort(t)
	cp := exec.Command("/usr/bin/python3", "-m", "copyparty", "-i", "127.0.0.1", "-p", strconv.Itoa(port), "-v", tree+"::r", "-e2dsa", "--hist", cpHist, "--no-mutagen")
	cp.Dir = "/work/peers/copyparty"
	out, _ := cp.StderrPipe()
	cp.Stdout = cp.Stderr
	if err := cp.Start(); err != nil {
		t.Skipf("copyparty: %v", err)
	}
	defer func() { cp.Process.Signal(os.Interrupt); cp.Wait() }()
	scanned := make(chan time.Time, 1)
	t0 := time.Now()
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "volumes in") {
				scanned <- time.Now()
			}
		}
	}()
	hs := start(t, "-v", tree+"::r", "-e2dsa", "--hist", t.TempDir())
	th0 := time.Now()
	waitReadyLong(t, hs)
	t.Logf("hoard first scan of %d files: %v", n, time.Since(th0).Round(time.Millisecond))
	select {
	case at := <-scanned:
		t.Logf("copyparty first scan of %d files: %v", n, at.Sub(t0).Round(time.Millisecond))
	case <-time.After(30 * time.Minute):
		t.Fatal("copyparty did not finish its scan in 30 min")
	}
	cpURL := "http://127.0.0.1:" + strconv.Itoa(port)
	forms := []string{"word", "two-words", "glob-ext", "size", "date", "path", "combined"}
	for _, form := range forms {
		r := rand.New(rand.NewPCG(9, uint64(len(form))))
		var hl, cl []time.Duration
		mism := 0
		for i := range rounds {
			hq, cq := comparisonQuery(r, form)
			var hd, cd time.Duration
			var hn, cn int
			if i%2 == 0 { // A B, then B A
				hd, hn = timedSearch(t, hs.URL, hq)
				cd, cn = timedSearch(t, cpURL, cq)
			} else {
				cd, cn = timedSearch(t, cpURL, cq)
				hd, hn = timedSearch(t, hs.URL, hq)
			}
			hl, cl = append(hl, hd), append(cl, cd)
			if hn != cn && hn < 200 {
				mism++
				t.Logf("%s: hoard %q %d hits, copyparty %q %d hits", form, hq, hn, cq, cn)
			}
		}
		slices.Sort(hl)
		slices.Sort(cl)
		hm, cm := hl[len(hl)/2], cl[len(cl)/2]
		t.Logf("%-10s hoard p50 %7.2f ms  copyparty p50 %8.2f ms  copyparty/hoard %.1fx  (hit-count mismatches %d/%d)",
			form, float64(hm.Microseconds())/1000, float64(cm.Microseconds())/1000, float64(cm)/float64(hm), mism, rounds)
	}
}

func waitReadyLong(t *testing.T, s *server) {
	t.Helper()
	for range 36000 {
		resp, _ := s.do(t, "POST", "/", []byte(`{"q":"zzzz"}`), "Content-Type: application/json")
		if resp.StatusCode == 200 {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal("hoard's first scan did not finish")
}

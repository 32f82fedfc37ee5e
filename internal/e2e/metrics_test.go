package e2e

import (
	"bufio"
	"bytes"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// scrape reads /.cpr/metrics as user (password pw) and returns every
// series (name{labels} as printed) with its value.
func scrape(t *testing.T, s *server, pw string) map[string]float64 {
	t.Helper()
	resp, body := s.do(t, "GET", "/.cpr/metrics", nil, "PW: "+pw)
	wantStatus(t, resp, body, 200)
	out := map[string]float64{}
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
		out[line[:i]] = v
	}
	return out
}

// TestMetrics scrapes before and after a scripted workload (PUTs, an up2k
// upload with one corrupted chunk, GETs, a 404) and checks each series
// moved by exactly what the workload did.
func TestMetrics(t *testing.T) {
	vol, priv := t.TempDir(), t.TempDir()
	s := start(t, "--stats", "-e2d", "-a", "adm:apw", "-a", "bob:bpw", "-a", "boss2:b2pw",
		"-v", vol+"::rw:A,adm", "-v", priv+":priv:r:A,boss2")

	before := scrape(t, s, "apw")
	if _, ok := before[`hoard_volume_free_bytes{volume="/"}`]; !ok {
		t.Fatalf("no free-space series for /: %v", before)
	}
	if _, ok := before[`hoard_volume_free_bytes{volume="/priv"}`]; ok {
		t.Fatal("adm, not an admin of /priv, sees its series")
	}
	if other := scrape(t, s, "b2pw"); other[`hoard_volume_free_bytes{volume="/priv"}`] == 0 || other[`hoard_volume_free_bytes{volume="/"}`] != 0 {
		t.Fatalf("boss2 should see /priv's series only")
	}

	// 3 PUTs.
	var putBytes float64
	sizes := []int{1000, 2001, 3002}
	putCode := 0
	for i, n := range sizes {
		resp, b := s.do(t, "PUT", fmt.Sprintf("/p%d.bin", i), randomBytes(n))
		if resp.StatusCode/100 != 2 {
			t.Fatalf("PUT: %d %s", resp.StatusCode, b)
		}
		putCode = resp.StatusCode
		putBytes += float64(n)
	}
	// An up2k upload with one corrupted chunk post.
	f := newUp2kFile(randomBytes(3<<20 + 5))
	rep := up2kHandshake(t, s, "/u/", "u.bin", f, 1600000000, nil)
	bad := bytes.Clone(f.chunk(1))
	bad[99] ^= 1
	resp, b := postChunks(t, s, rep.Purl, rep.Wark, f.hashes[1], bad)
	wantStatus(t, resp, b, 400)
	for i := range f.hashes {
		postChunk(t, s, rep, f, i)
	}
	wantUploaded(t, filepath.Join(vol, "u/u.bin"), f.data, 1600000000)
	// 4 GETs and a 404.
	var getBytes float64
	for _, i := range []int{0, 1, 2, 0} {
		resp, b := s.do(t, "GET", fmt.Sprintf("/p%d.bin", i), nil)
		wantStatus(t, resp, b, 200)
		getBytes += float64(len(b))
	}
	resp, b = s.do(t, "GET", "/nope.bin", nil)
	wantStatus(t, resp, b, 404)
	getBytes += float64(len(b))

	// The index hears of the uploads a moment later.
	var after map[string]float64
	deadline := time.Now().Add(20 * time.Second)
	for {
		after = scrape(t, s, "apw")
		if after[`hoard_index_files{volume="/"}`]-before[`hoard_index_files{volume="/"}`] == 4 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	d := func(k string) float64 { return after[k] - before[k] }
	want := map[string]float64{
		fmt.Sprintf(`hoard_http_requests_total{code="%d",route="put"}`, putCode): 3,
		`hoard_http_request_body_bytes_total{route="put"}`:                       putBytes,
		`hoard_http_request_duration_seconds_count{route="put"}`:                 3,
		`hoard_http_requests_total{code="200",route="up2k_handshake"}`:           1,
		`hoard_http_requests_total{code="200",route="up2k_chunk"}`:               float64(len(f.hashes)),
		`hoard_http_requests_total{code="400",route="up2k_chunk"}`:               1,
		`hoard_http_request_body_bytes_total{route="up2k_chunk"}`:                float64(len(f.data) + len(bad)),
		`hoard_http_requests_total{code="200",route="get"}`:                      4,
		`hoard_http_requests_total{code="404",route="get"}`:                      1,
		`hoard_http_response_body_bytes_total{route="get"}`:                      getBytes,
		`hoard_uploads_finished_total{kind="put"}`:                               3,
		`hoard_uploads_finished_total{kind="multipart"}`:                         0,
		`hoard_uploads_finished_total{kind="up2k"}`:                              1,
		`hoard_uploads_in_progress{kind="put"}`:                                  0,
		`hoard_uploads_in_progress{kind="up2k"}`:                                 0,
		`hoard_up2k_chunk_verify_failures_total`:                                 1,
		`hoard_index_files{volume="/"}`:                                          4,
		`hoard_downloads_active`:                                                 0,
	}
	for k, w := range want {
		if _, ok := after[k]; !ok {
			t.Errorf("%s: missing", k)
			continue
		}
		if got := d(k); got != w {
			t.Errorf("%s: moved by %v, want %v", k, got, w)
		}
	}
	if d("hoard_fsync_duration_seconds_count") < 4 {
		t.Errorf("fsyncs timed: %v, want at least one per upload", d("hoard_fsync_duration_seconds_count"))
	}
	for k := range after {
		if strings.Contains(k, "route=") && !strings.Contains(k, `route="`) || strings.Contains(k, "p0.bin") {
			t.Errorf("a raw path in a label: %s", k)
		}
	}

	// OpenMetrics when asked.
	resp, b = s.do(t, "GET", "/.cpr/metrics", nil, "PW: apw", "Accept: application/openmetrics-text; version=0.0.1")
	wantStatus(t, resp, b, 200)
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/openmetrics-text") || !bytes.HasSuffix(b, []byte("# EOF\n")) {
		t.Fatalf("OpenMetrics: Content-Type %q, tail %q", ct, b[max(0, len(b)-20):])
	}
	// Refusals: a user who administers nothing, anonymous.
	resp, b = s.do(t, "GET", "/.cpr/metrics", nil, "PW: bpw")
	wantStatus(t, resp, b, 403)
	resp, b = s.do(t, "GET", "/.cpr/metrics", nil)
	wantStatus(t, resp, b, 401)
	if bytes.Contains(b, []byte("hoard_")) {
		t.Fatal("metrics leaked to anonymous")
	}
	// A wrong password (an admin's name, an unknown one, the PW header) is
	// 401, not anonymous and not the admin.
	for _, h := range []string{basicAuth("adm:wrong"), basicAuth("nobody:apw2"), "PW: apw2"} {
		resp, b = s.do(t, "GET", "/.cpr/metrics", nil, h)
		wantStatus(t, resp, b, 401)
		if bytes.Contains(b, []byte("hoard_")) || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Basic ") {
			t.Fatalf("wrong password %q: challenge %q, body %.200s", h, resp.Header.Get("WWW-Authenticate"), b)
		}
	}
}

// TestMetricsOff: without --stats the page is not there, even for admins.
func TestMetricsOff(t *testing.T) {
	s := start(t, "-a", "adm:apw", "-v", t.TempDir()+"::rw:A,adm")
	resp, b := s.do(t, "GET", "/.cpr/metrics", nil, "PW: apw")
	wantStatus(t, resp, b, 404)
	if bytes.Contains(b, []byte("hoard_")) {
		t.Fatal("metrics served without --stats")
	}
}

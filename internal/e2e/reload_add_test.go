package e2e

// SIGHUP mounts and serves a volume new to the process (issue 18).

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestReloadAddVolume: a volume added to the config file is served after
// SIGHUP, as if it had been there at start: PUT, GET of what it held, an
// up2k upload, search (e2ds: its first scan runs) and its metrics. An up2k
// chunk in flight on another volume across the reload is taken; the
// server then stops cleanly (the added volume's database closed in
// order) and serves the volume again from the config at the next start.
func TestReloadAddVolume(t *testing.T) {
	up, nv := t.TempDir(), t.TempDir()
	writeFile(t, nv, "pre.txt", []byte("there before"))
	base := "[accounts]\n  ann: pw\n\n[/up]\n  " + up + "\n  accs:\n    rw: ann\n    A: ann\n"
	withNew := base + "\n[/nv]\n  " + nv + "\n  accs:\n    rw: ann\n    A: ann\n  flags:\n    e2ds\n"
	conf := configFile(t, base)
	s := start(t, "-c", conf, "--stats")
	auth := "PW: pw"
	if _, ok := scrape(t, s, "pw")[`hoard_volume_free_bytes{volume="/nv"}`]; ok {
		t.Fatal("/nv has metrics before it is configured")
	}

	// An unfinished upload on /up, one chunk of it in flight across the reload.
	f := newUp2kFile(randomBytes(3<<20 + 5))
	rep := up2kHandshake(t, s, "/up/", "big.bin", f, 1600000000, nil, auth)
	postChunk(t, s, rep, f, 0, auth)
	pr, pw := io.Pipe()
	req, _ := http.NewRequest("POST", s.URL+escapePurl(rep.Purl), pr)
	req.ContentLength = int64(len(f.chunk(1)))
	req.Header.Set("Content-Type", "application/octet-stream")
	req.Header.Set("X-Up2k-Wark", rep.Wark)
	req.Header.Set("X-Up2k-Hash", f.hashes[1])
	req.Header.Set("PW", "pw")
	req.Header.Set("Expect", "100-continue") // the half below reaches the handler before the reload
	cont := &http.Client{Transport: &http.Transport{ExpectContinueTimeout: time.Minute}}
	defer cont.CloseIdleConnections()
	type result struct {
		code int
		body string
		err  error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := cont.Do(req)
		if err != nil {
			done <- result{err: err}
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		done <- result{code: resp.StatusCode, body: string(b)}
	}()
	half := len(f.chunk(1)) / 2
	if _, err := pw.Write(f.chunk(1)[:half]); err != nil {
		t.Fatal(err)
	}

	resp, b := s.do(t, "GET", "/nv/pre.txt", nil, auth)
	wantStatus(t, resp, b, 404)
	if err := os.WriteFile(conf, []byte(withNew), 0o644); err != nil {
		t.Fatal(err)
	}
	hup(t, s, 1)
	if l := waitLog(t, s, "configuration reloaded"); !strings.Contains(l, "added=/nv") || strings.Contains(l, "reload refused") {
		t.Fatalf("the reload does not say it added /nv:\n%s", l)
	}
	if _, err := pw.Write(f.chunk(1)[half:]); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	if r := <-done; r.err != nil || r.code != 200 || r.body != "thank" {
		t.Fatalf("the chunk in flight across the reload: %d %q %v", r.code, r.body, r.err)
	}

	// The new volume serves: what it held, a PUT, an up2k upload.
	resp, b = s.do(t, "GET", "/nv/pre.txt", nil, auth)
	wantStatus(t, resp, b, 200)
	if string(b) != "there before" {
		t.Fatalf("GET /nv/pre.txt = %q", b)
	}
	resp, b = s.do(t, "PUT", "/nv/put.txt", []byte("put after the reload"), auth)
	wantStatus(t, resp, b, 201)
	wantFile(t, nv, "put.txt", []byte("put after the reload"))
	resp, b = s.do(t, "GET", "/nv/put.txt", nil, auth)
	wantStatus(t, resp, b, 200)
	g := newUp2kFile(randomBytes(2<<20 + 11))
	up2kUpload(t, s, "/nv/", "u2k.bin", g, 1600000000, 2, auth)
	wantUploaded(t, filepath.Join(nv, "u2k.bin"), g.data, 1600000000)

	// Its index: the first scan found what it held, uploads are indexed.
	waitReady(t, s, auth)
	waitHits(t, s, "txt", []string{"/nv/pre.txt", "/nv/put.txt"}, auth)
	waitHits(t, s, "u2k", []string{"/nv/u2k.bin"}, auth)
	m := scrape(t, s, "pw")
	if _, ok := m[`hoard_volume_free_bytes{volume="/nv"}`]; !ok {
		t.Fatalf("no free-space series for the added volume: %v", m)
	}
	if n, ok := m[`hoard_index_files{volume="/nv"}`]; !ok || n < 3 {
		t.Fatalf("index files of the added volume = %v %v", n, ok)
	}

	// The upload on /up finishes.
	for i := 2; i < len(f.hashes); i++ {
		postChunk(t, s, rep, f, i, auth)
	}
	wantUploaded(t, filepath.Join(up, "big.bin"), f.data, 1600000000)

	// A clean stop, then the next start serves /nv from the config file,
	// its index intact.
	if err := s.stop(); err != nil {
		t.Fatalf("hoard did not stop cleanly after adding a volume: %v\n%s", err, s.logs)
	}
	if l := s.logs.String(); strings.Contains(l, "closing failed") {
		t.Fatalf("closing failed:\n%s", l)
	}
	s2 := start(t, "-c", conf)
	if l := s2.logs.String(); strings.Contains(l, "did not stop cleanly") || strings.Contains(l, "crash") {
		t.Fatalf("the restart found an unclean stop:\n%s", l)
	}
	waitReady(t, s2, auth)
	waitHits(t, s2, "txt", []string{"/nv/pre.txt", "/nv/put.txt"}, auth)
	resp, b = s2.do(t, "GET", "/nv/u2k.bin", nil, auth)
	wantStatus(t, resp, b, 200)
}

// TestReloadAddVolumeFails: a reload whose new volume cannot be mounted
// (its source is a file; its state folder is locked by another hoard) is
// refused, naming the volume, and changes nothing: the old password still
// works, the new one does not, another new volume of the same reload is
// not served and its state folder is free again. Fixed, the next reload
// serves both.
func TestReloadAddVolumeFails(t *testing.T) {
	a, fresh, locked := t.TempDir(), t.TempDir(), t.TempDir()
	writeFile(t, fresh, "f.txt", []byte("fresh"))
	file := writeFile(t, t.TempDir(), "plain.txt", []byte("not a folder"))
	conf := func(pw, extra string) string {
		c := "[accounts]\n  ann: " + pw + "\n\n[/a]\n  " + a + "\n  accs:\n    rw: ann\n"
		c += "\n[/fresh]\n  " + fresh + "\n  accs:\n    rw: ann\n  flags:\n    e2d\n"
		if extra != "" {
			c += "\n[/bad]\n  " + extra + "\n  accs:\n    rw: ann\n"
		}
		return c
	}
	cf := configFile(t, "[accounts]\n  ann: pw1\n\n[/a]\n  "+a+"\n  accs:\n    rw: ann\n")
	s := start(t, "-c", cf)
	other := start(t, "-v", locked+"::rw") // holds locked's state folder

	check := func(n int, why string) {
		t.Helper()
		hup(t, s, n)
		l := s.logs.String()
		if strings.Count(l, "reload refused") != n || !strings.Contains(l, "/bad") || !strings.Contains(l, why) {
			t.Fatalf("reload %d: want it refused naming /bad and %q:\n%s", n, why, l)
		}
		resp, b := s.do(t, "PUT", "/a/x.txt", []byte("x"), "PW: pw1")
		wantStatus(t, resp, b, 201)
		resp, b = s.do(t, "PUT", "/a/y.txt", []byte("y"), "PW: pw2")
		if resp.StatusCode != 401 && resp.StatusCode != 403 {
			t.Fatalf("reload %d: the refused reload's password works: %d %s", n, resp.StatusCode, b)
		}
		resp, b = s.do(t, "GET", "/fresh/f.txt", nil, "PW: pw1")
		wantStatus(t, resp, b, 404)
		// The refused reload let go of /fresh's state folder.
		o2, err := startErr(t, "-v", fresh+"::rw")
		if err != nil {
			t.Fatalf("reload %d: /fresh's state folder stays locked after the refused reload: %v", n, err)
		}
		if err := o2.stop(); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(cf, []byte(conf("pw2", file)), 0o644); err != nil {
		t.Fatal(err)
	}
	check(1, "not a folder")
	if err := os.WriteFile(cf, []byte(conf("pw2", locked)), 0o644); err != nil {
		t.Fatal(err)
	}
	check(2, "another hoard")

	if err := other.stop(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cf, []byte(conf("pw2", locked)), 0o644); err != nil {
		t.Fatal(err)
	}
	hup(t, s, 3)
	waitLog(t, s, "added=")
	resp, b := s.do(t, "GET", "/fresh/f.txt", nil, "PW: pw2")
	wantStatus(t, resp, b, 200)
	resp, b = s.do(t, "PUT", "/bad/z.txt", []byte("z"), "PW: pw2")
	wantStatus(t, resp, b, 201)
	wantFile(t, locked, "z.txt", []byte("z"))
	waitHits(t, s, "f.txt", nil, "PW: pw2") // e2d without a scan: only what is uploaded
	resp, b = s.do(t, "PUT", "/fresh/g.txt", []byte("g"), "PW: pw2")
	wantStatus(t, resp, b, 201)
	waitHits(t, s, "g.txt", []string{"/fresh/g.txt"}, "PW: pw2")
}

// TestReloadAddVolumeResumes: an up2k upload left unfinished in a
// volume's state folder by an earlier run resumes, its received chunk
// kept, once a reload adds the volume to a server started without it.
func TestReloadAddVolumeResumes(t *testing.T) {
	up, nv := t.TempDir(), t.TempDir()
	first := start(t, "-v", nv+":nv:rw")
	f := newUp2kFile(randomBytes(3<<20 + 1))
	rep := up2kHandshake(t, first, "/nv/", "r.bin", f, 1600000000, nil)
	postChunk(t, first, rep, f, 0)
	if err := first.stop(); err != nil {
		t.Fatal(err)
	}
	base := "[/up]\n  " + up + "\n  accs:\n    rw: *\n"
	conf := configFile(t, base)
	s := start(t, "-c", conf)
	if err := os.WriteFile(conf, []byte(base+"\n[/nv]\n  "+nv+"\n  accs:\n    rw: *\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	hup(t, s, 1)
	waitLog(t, s, "added=/nv")
	var mid handshakeReply
	for range 100 { // its chunk is re-checked in the background first
		resp, b := postHandshake(t, s, "/nv/", map[string]any{"name": "r.bin", "size": len(f.data), "lmod": 1600000000, "hash": f.hashes})
		if resp.StatusCode == 200 {
			if err := json.Unmarshal(b, &mid); err != nil {
				t.Fatal(err)
			}
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(mid.Hash) != len(f.hashes)-1 || mid.Wark != rep.Wark {
		t.Fatalf("after the reload the upload needs %d chunks (wark %s), want %d (wark %s)", len(mid.Hash), mid.Wark, len(f.hashes)-1, rep.Wark)
	}
	for i := 1; i < len(f.hashes); i++ {
		postChunk(t, s, rep, f, i)
	}
	wantUploaded(t, filepath.Join(nv, "r.bin"), f.data, 1600000000)
}

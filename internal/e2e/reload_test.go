package e2e

// SIGHUP reloads the accounts, volumes and shares of the command line and
// its config files.

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// reloadConf is the config file of TestReload: ann's password, and
// whether /gone is served.
func reloadConf(up, gone, annPW string, withGone bool) string {
	c := fmt.Sprintf("[accounts]\n  ann: %s\n  bob: pwb\n\n[/up]\n  %s\n  accs:\n    rw: ann\n", annPW, up)
	if withGone {
		c += fmt.Sprintf("\n[/gone]\n  %s\n  accs:\n    r: *\n    rw: ann\n", gone)
	}
	return c
}

// hup sends SIGHUP and waits for the n-th reload's outcome in the log.
func hup(t *testing.T, s *server, n int) {
	t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		l := s.logs.String()
		if strings.Count(l, "configuration reloaded")+strings.Count(l, "reload refused") >= n {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("reload %d not logged:\n%s", n, s.logs)
}

// TestReload: SIGHUP while an up2k chunk is being received and while
// uploads are unfinished loses nothing; a changed password takes effect;
// a removed volume answers 404 while its unfinished upload waits in its
// state folder and resumes when the volume comes back; a config error
// names its file and line and keeps the configuration served.
func TestReload(t *testing.T) {
	up, gone := t.TempDir(), t.TempDir()
	writeFile(t, gone, "old.txt", []byte("here before"))
	conf := configFile(t, reloadConf(up, gone, "pw1", true))
	s := start(t, "-c", conf)

	// Two unfinished uploads: one in /up, one in /gone.
	f := newUp2kFile(randomBytes(4<<20 + 7)) // 5 chunks of 1 MiB
	rep := up2kHandshake(t, s, "/up/", "big.bin", f, 1600000000, nil, "PW: pw1")
	postChunk(t, s, rep, f, 0, "PW: pw1")
	g := newUp2kFile(randomBytes(2<<20 + 3))
	grep := up2kHandshake(t, s, "/gone/", "g.bin", g, 1600000000, nil, "PW: pw1")
	postChunk(t, s, grep, g, 0, "PW: pw1")

	// A chunk in flight across the reload: half its body before, half after.
	pr, pw := io.Pipe()
	req, _ := http.NewRequest("POST", s.URL+escapePurl(rep.Purl), pr)
	req.ContentLength = int64(len(f.chunk(1)))
	req.Header.Set("Content-Type", "application/octet-stream")
	req.Header.Set("X-Up2k-Wark", rep.Wark)
	req.Header.Set("X-Up2k-Hash", f.hashes[1])
	req.Header.Set("PW", "pw1")
	// Expect: 100-continue holds the body back until the handler reads it,
	// which it does only after the request is authenticated: so the half
	// written below is in the server's hands before the reload, however
	// slow the machine.
	req.Header.Set("Expect", "100-continue")
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

	// New password for ann, /gone removed.
	if err := os.WriteFile(conf, []byte(reloadConf(up, gone, "pw2", false)), 0o644); err != nil {
		t.Fatal(err)
	}
	hup(t, s, 1)
	if _, err := pw.Write(f.chunk(1)[half:]); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	if r := <-done; r.err != nil || r.code != 200 || r.body != "thank" {
		t.Fatalf("the chunk in flight across the reload: %d %q %v", r.code, r.body, r.err)
	}

	// The old password is gone, the new one works.
	resp, b := s.do(t, "PUT", "/up/x.txt", []byte("x"), "PW: pw1")
	if resp.StatusCode != 401 && resp.StatusCode != 403 {
		t.Fatalf("old password after the reload: %d %s", resp.StatusCode, b)
	}
	resp, b = s.do(t, "PUT", "/up/x.txt", []byte("x"), "PW: pw2")
	wantStatus(t, resp, b, 201)
	// The removed volume: 404, its files and its upload's work file kept.
	resp, b = s.do(t, "GET", "/gone/old.txt", nil)
	wantStatus(t, resp, b, 404)
	if !pathExists(gone, "g.bin.PARTIAL") && !hasPartial(t, gone) {
		t.Fatal("the removed volume's unfinished upload lost its work file")
	}
	// A chunk for the removed volume's upload is refused (no volume is
	// mounted there, as for any unmounted path), and stays needed.
	resp, b = postChunks(t, s, grep.Purl, grep.Wark, g.hashes[1], g.chunk(1), "PW: pw2")
	if resp.StatusCode != 403 && resp.StatusCode != 404 {
		t.Fatalf("a chunk for the removed volume: %d %s", resp.StatusCode, b)
	}
	// The upload in /up goes on with the new password.
	for i := 2; i < len(f.hashes); i++ {
		postChunk(t, s, rep, f, i, "PW: pw2")
	}
	wantUploaded(t, filepath.Join(up, "big.bin"), f.data, 1600000000)

	// A broken config: the reload is refused with file:line, pw2 still works.
	if err := os.WriteFile(conf, []byte(reloadConf(up, gone, "pw3", false)+"\n[/bad]\n  "+up+"\n  accs:\n    rwz: ann\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	hup(t, s, 2)
	if l := s.logs.String(); !strings.Contains(l, "reload refused") || !strings.Contains(l, conf+":") {
		t.Fatalf("a broken config's reload does not name file:line:\n%s", l)
	}
	resp, b = s.do(t, "PUT", "/up/y.txt", []byte("y"), "PW: pw2")
	wantStatus(t, resp, b, 201)

	// /gone comes back: its upload resumes where it was.
	if err := os.WriteFile(conf, []byte(reloadConf(up, gone, "pw2", true)), 0o644); err != nil {
		t.Fatal(err)
	}
	hup(t, s, 3)
	resp, b = s.do(t, "GET", "/gone/old.txt", nil)
	wantStatus(t, resp, b, 200)
	mid := up2kHandshake(t, s, "/gone/", "g.bin", g, 1600000000, nil, "PW: pw2")
	if len(mid.Hash) != len(g.hashes)-1 {
		t.Fatalf("after the volume came back the upload needs %d chunks, want %d", len(mid.Hash), len(g.hashes)-1)
	}
	for i := 1; i < len(g.hashes); i++ {
		postChunk(t, s, grep, g, i, "PW: pw2")
	}
	wantUploaded(t, filepath.Join(gone, "g.bin"), g.data, 1600000000)
}

// hasPartial reports whether dir holds an unfinished upload's work file.
func hasPartial(t *testing.T, dir string) bool {
	for _, p := range tree(t, dir) {
		if strings.HasSuffix(p, ".PARTIAL") {
			return true
		}
	}
	return false
}

// TestReloadShares: SIGHUP reads shares.json again, so a share the
// operator removed from the file stops resolving without a restart.
func TestReloadShares(t *testing.T) {
	dir := shareSetup(t)
	s := start(t, shareArgs(dir)...)
	p := makeShare(t, s, "apw", map[string]any{"k": "k1", "vp": []string{"/proj/"}, "pw": "", "exp": "60", "perms": []string{"read"}}, 201)
	makeShare(t, s, "apw", map[string]any{"k": "k2", "vp": []string{"/proj/"}, "pw": "", "exp": "60", "perms": []string{"read"}}, 201)
	resp, b := s.do(t, "GET", p+"a.txt", nil)
	wantStatus(t, resp, b, 200)
	file := filepath.Join(dir, ".hist", "shares.json")
	var list []map[string]any
	raw := readFile(t, file)
	if err := json.Unmarshal(raw, &list); err != nil || len(list) != 2 {
		t.Fatalf("shares.json: %v %s", err, raw)
	}
	list = slices.DeleteFunc(list, func(m map[string]any) bool { return m["key"] == "k1" || m["k"] == "k1" })
	if len(list) != 1 {
		t.Fatalf("no share k1 in %s", raw)
	}
	out, _ := json.Marshal(list)
	if err := os.WriteFile(file, out, 0o600); err != nil {
		t.Fatal(err)
	}
	hup(t, s, 1)
	resp, b = s.do(t, "GET", p+"a.txt", nil)
	wantStatus(t, resp, b, 404)
	resp, b = s.do(t, "GET", "/shr/k2/a.txt", nil)
	wantStatus(t, resp, b, 200)
}

// TestReloadU2C: SIGHUP (with an account and an indexed volume added)
// while copyparty's u2c.py is uploading a big file: the upload goes on
// and finishes intact, in one session.
func TestReloadU2C(t *testing.T) {
	u2cNeed(t)
	vol, src := t.TempDir(), t.TempDir()
	writeFile(t, src, "huge.bin", randomBytes(200<<20+17))
	conf := configFile(t, fmt.Sprintf("[accounts]\n  u: pw\n\n[/]\n  %s\n  accs:\n    rw: u\n", vol))
	s := start(t, "-c", conf)
	py := os.Getenv("HOARD_PYTHON")
	if py == "" {
		py = "python3"
	}
	cmd := exec.Command(py, os.Getenv("HOARD_U2C"), "-ns", "-j", "1", "--sz", "1", "-a", "pw", s.URL+"/up/", src)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	partial := filepath.Join(vol, "up", filepath.Base(src), "huge.bin.PARTIAL")
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(5 * time.Millisecond) {
		if fi, err := os.Stat(partial); err == nil && fi.Sys().(*syscall.Stat_t).Blocks*512 >= 20<<20 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the upload never got going:\n%s", out.String())
		}
	}
	extra := t.TempDir() // a volume added by the same reload
	writeFile(t, extra, "e.txt", []byte("extra"))
	if err := os.WriteFile(conf, []byte(fmt.Sprintf("[accounts]\n  u: pw\n  v: pw2\n\n[/]\n  %s\n  accs:\n    rw: u, v\n\n[/extra]\n  %s\n  accs:\n    r: v\n  flags:\n    e2ds\n", vol, extra)), 0o644); err != nil {
		t.Fatal(err)
	}
	hup(t, s, 1)
	if _, err := os.Stat(filepath.Join(vol, "up", filepath.Base(src), "huge.bin")); err == nil {
		t.Fatal("the upload finished before the reload; the test proves nothing")
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("u2c across the reload: %v\n%s\nserver log:\n%s", err, out.String(), s.logs)
	}
	if n := u2cSameTree(t, src, filepath.Join(vol, "up", filepath.Base(src))); n != 1 {
		t.Fatal("huge.bin not compared")
	}
	if n := strings.Count(s.logs.String(), `msg="upload started"`); n != 1 {
		t.Fatalf("%d upload sessions; the reload must not restart the upload", n)
	}
	resp, b := s.do(t, "GET", "/", nil, "PW: pw2")
	wantStatus(t, resp, b, 200)
	resp, b = s.do(t, "GET", "/extra/e.txt", nil, "PW: pw2")
	wantStatus(t, resp, b, 200)
}

// TestReloadVolumeFlags: SIGHUP changes the flags that rule new requests
// (sz, rand) on a volume being served, and back; a flag that needs a
// restart (e2d: an index to open and scan) is logged as such and keeps
// its old value.
func TestReloadVolumeFlags(t *testing.T) {
	dir := t.TempDir()
	conf := func(flags string) string {
		c := "[/pub]\n  " + dir + "\n  accs:\n    rw: *\n"
		if flags != "" {
			c += "  flags:\n    " + flags + "\n"
		}
		return c
	}
	cf := configFile(t, conf(""))
	s := start(t, "-c", cf)
	before := s.logs.String()
	small, big := []byte("ten bytes!"), randomBytes(1500)
	resp, b := s.do(t, "PUT", "/pub/a.txt", small)
	wantStatus(t, resp, b, 201)

	if err := os.WriteFile(cf, []byte("[global]\n  srch-hits: 5\n"+conf("rand, e2d, sz: 1k-2k")), 0o644); err != nil {
		t.Fatal(err)
	}
	hup(t, s, 1)
	resp, b = s.do(t, "PUT", "/pub/b.txt", small)
	if resp.StatusCode != 400 && resp.StatusCode != 413 {
		t.Fatalf("a 10-byte PUT under sz=1k-2k: %d %s\n%s", resp.StatusCode, b, s.logs)
	}
	if pathExists(dir, "b.txt") {
		t.Fatal("the refused PUT left its file")
	}
	resp, b = s.do(t, "PUT", "/pub/c.txt", big)
	wantStatus(t, resp, b, 201)
	if pathExists(dir, "c.txt") {
		t.Fatalf("rand is on, yet the upload kept its name: %s", b)
	}
	logs := waitLog(t, s, "needs a restart: e2d")
	if !strings.Contains(logs, "volume flags changed") || !strings.Contains(logs, "sz rand") {
		t.Fatalf("the changed flags are not logged:\n%s", logs)
	}
	// A server-wide option the reload cannot take up is named, alone.
	if n := strings.Count(logs, "needs a restart: --"); n != 1 || !strings.Contains(logs, "needs a restart: --srch-hits") || strings.Contains(before, "needs a restart") {
		t.Fatalf("want one line naming --srch-hits:\n%s", logs)
	}
	// e2d kept its old value: no index, so search says how to enable it.
	resp, b = s.do(t, "POST", "/pub/", []byte(`{"q":"c"}`), "Content-Type: application/json")
	if resp.StatusCode == 200 {
		t.Fatalf("search answered although e2d needs a restart: %s", b)
	}

	// And back: the flags go, the small PUT works again. A volume this
	// process never mounted is mounted and served.
	other := t.TempDir()
	writeFile(t, other, "o.txt", []byte("other"))
	if err := os.WriteFile(cf, []byte(conf("")+"[/new]\n  "+other+"\n  accs:\n    r: *\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	hup(t, s, 2)
	resp, b = s.do(t, "PUT", "/pub/d.txt", small)
	wantStatus(t, resp, b, 201)
	wantFile(t, dir, "d.txt", small)
	waitLog(t, s, "added=/new")
	resp, b = s.do(t, "GET", "/new/o.txt", nil)
	wantStatus(t, resp, b, 200)
}

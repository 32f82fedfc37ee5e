package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// WebDAV (http/dav.go) with real clients (litmus, rclone, cadaver,
// davfs2) and by hand: the permission matrix, bad input, streaming.
// Each client's test skips with a message when its program is missing;
// .ci/run installs them.

// davUA makes a PUT a WebDAV client's PUT (http.davClient).
const davUA = "User-Agent: litmus/0.13 neon/0.33.0"

func needProgram(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("%s is not installed; skipping (the CI installs it: .ci/run)", name)
	}
	return p
}

// davAgree checks that the disk, ?ls and search agree on the volume at
// dir (mounted at /): every folder's ?ls lists what the disk holds, and a
// search for "txt" finds exactly the .txt files on disk. mounts are pairs
// of a volume's name below / and its folder, checked the same way.
func davAgree(t *testing.T, s *server, dir string, auth string, mounts ...string) {
	t.Helper()
	var want []string
	var names []string
	for i := 0; i+1 < len(mounts); i += 2 {
		names = append(names, mounts[i])
		want = append(want, davAgreeVol(t, s, mounts[i+1], "/"+mounts[i], auth, nil)...)
	}
	want = append(want, davAgreeVol(t, s, dir, "", auth, names)...)
	slices.Sort(want)
	waitAllHits(t, s, "txt", want, auth)
}

// waitAllHits is waitHits with room for 10,000 hits (not the default 200).
func waitAllHits(t *testing.T, s *server, q string, want []string, hdr ...string) {
	t.Helper()
	var got []string
	for range 300 {
		code, r := postSearch(t, s, map[string]any{"q": q, "n": 10000}, hdr...)
		if code == http.StatusTooManyRequests {
			// Search's cost limit: a loaded machine makes each search dearer
			// (the message names the wait, under a second or two).
			time.Sleep(time.Second)
			continue
		}
		if code != 200 {
			t.Fatalf("search %q = %d %s", q, code, r.Error)
		}
		got = r.hrefs()
		if slices.Equal(got, want) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	var missing, extra []string
	for _, w := range want {
		if !slices.Contains(got, w) {
			missing = append(missing, w)
		}
	}
	for _, g := range got {
		if !slices.Contains(want, g) {
			extra = append(extra, g)
		}
	}
	t.Fatalf("search %q: %d hits, want %d; missing %.20q, extra %.20q", q, len(got), len(want), missing, extra)
}

// davAgreeVol compares ?ls with the disk for one volume mounted at url
// ("" for /) and returns the search hits its .txt files should give.
func davAgreeVol(t *testing.T, s *server, dir, url, auth string, mounts []string) []string {
	t.Helper()
	var want []string
	dirs := []string{""}
	for _, p := range tree(t, dir) {
		if strings.HasPrefix(p, ".") || strings.Contains(p, "/.") {
			continue // the state folder, and dot files ?ls leaves out
		}
		fi, err := os.Lstat(filepath.Join(dir, p))
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case fi.Mode()&os.ModeSymlink != 0:
		case fi.IsDir():
			dirs = append(dirs, p)
		case strings.HasSuffix(p, ".txt"):
			want = append(want, url+"/"+hrefEscape(p))
		}
	}
	for _, d := range dirs {
		var disk []string
		ents, err := os.ReadDir(filepath.Join(dir, d))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), ".") || e.Type()&os.ModeSymlink != 0 {
				continue
			}
			n := e.Name()
			if e.IsDir() {
				n += "/"
			}
			disk = append(disk, n)
		}
		slices.Sort(disk)
		u := url + "/" + d
		if d != "" {
			u += "/"
		}
		got := mgLs(t, s, u, auth)
		if d == "" {
			got = slices.DeleteFunc(got, func(n string) bool { return slices.Contains(mounts, strings.TrimSuffix(n, "/")) })
		}
		if !slices.Equal(got, disk) {
			t.Errorf("?ls %s = %q, disk has %q", u, got, disk)
		}
	}
	return want
}

// hrefEscape escapes a path as hoard's hrefs do (http.escapePath).
func hrefEscape(p string) string {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		c := p[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-._~!$&'()*+=@/", c) >= 0 {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return b.String()
}

// litmusLine is one test's result line of litmus' output (it redraws
// each line, so the last match on a line counts).
var litmusLine = regexp.MustCompile(`(\d+)\. (\w+)\.*\s*(pass|FAIL|SKIPPED|WARNING)`)

// litmusAllowed are the litmus failures this server is known to have,
// each justified in docs/http.md (WebDAV). Anything else fails the test.
var litmusAllowed = map[string]bool{}

func TestDAVLitmus(t *testing.T) {
	litmus := needProgram(t, "litmus")
	dir := t.TempDir()
	s := start(t, "-a", "u:pw", "-v", dir+"::rwmd,u")
	for _, suite := range []string{"basic", "copymove", "props", "locks", "http"} {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		cmd := exec.CommandContext(ctx, litmus, s.URL+"/", "u", "pw")
		cmd.Dir = t.TempDir()
		cmd.Env = append(os.Environ(), "TESTS="+suite)
		out, _ := cmd.CombinedOutput() // it exits 1 on any failure; the lines decide
		cancel()
		passed, failed := 0, 0
		for line := range strings.SplitSeq(string(out), "\n") {
			ms := litmusLine.FindAllStringSubmatch(line, -1)
			if len(ms) == 0 {
				continue
			}
			m := ms[len(ms)-1]
			name := suite + "/" + m[2]
			switch m[3] {
			case "pass":
				passed++
			case "FAIL":
				failed++
				if !litmusAllowed[name] {
					t.Errorf("litmus %s failed: %s", name, line)
				}
			case "WARNING":
				t.Logf("litmus %s: %s", name, line)
			}
		}
		if passed == 0 {
			t.Fatalf("litmus %s: no test passed; output:\n%s\nserver log:\n%s", suite, out, s.logs)
		}
		switch suite {
		case "basic", "copymove", "http":
			if failed != 0 || !strings.Contains(string(out), "100.0%") {
				t.Errorf("litmus %s is not at 100%%:\n%s", suite, out)
			}
		}
		t.Logf("litmus %s: %d passed, %d failed (allowed)", suite, passed, failed)
	}
}

// rcloneArgs configure a webdav remote by flags only: no config file.
func rcloneRun(t *testing.T, s *server, args ...string) string {
	t.Helper()
	rc := needProgram(t, "rclone")
	home := t.TempDir()
	obs, err := exec.Command(rc, "obscure", "pw").Output()
	if err != nil {
		t.Fatalf("rclone obscure: %v", err)
	}
	base := []string{"--config", filepath.Join(home, "none.conf"), "--webdav-url", s.URL + "/", "--webdav-user", "u", "--webdav-pass", strings.TrimSpace(string(obs)), "--webdav-vendor", "owncloud", "--low-level-retries", "1", "--retries", "1"}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, rc, append(base, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+home, "RCLONE_CONFIG="+filepath.Join(home, "none.conf"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("rclone %s: %v\n%s\nserver log (tail):\n%s", strings.Join(args, " "), err, out, tail(s.logs.String(), 3000))
	}
	return string(out)
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

func TestDAVRclone(t *testing.T) {
	t.Parallel()
	needProgram(t, "rclone")
	vol, local, down := t.TempDir(), t.TempDir(), t.TempDir()
	old := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
	for i := range 20 {
		p := writeFile(t, local, fmt.Sprintf("f%02d.txt", i), seededBytes(uint64(i), 1000+i*777))
		os.Chtimes(p, old.Add(time.Duration(i)*time.Hour), old.Add(time.Duration(i)*time.Hour))
	}
	writeFile(t, local, "sub/deeper/big.txt", randomBytes(3<<20+5))
	writeFile(t, local, "sub/empty.txt", nil)
	writeFile(t, local, "sub/ünï cödé.txt", []byte("names"))
	auth := basicAuth("u:pw")
	s := start(t, "-a", "u:pw", "-v", vol+"::rwmd,u", "-e2dsa")
	waitReady(t, s, auth)

	rcloneRun(t, s, "sync", local, ":webdav:bk")
	// Change and delete local files; sync again.
	writeFile(t, local, "f03.txt", []byte("changed content"))
	os.Remove(filepath.Join(local, "f04.txt"))
	os.RemoveAll(filepath.Join(local, "sub/deeper"))
	writeFile(t, local, "new/added.txt", []byte("added"))
	rcloneRun(t, s, "sync", local, ":webdav:bk")
	out := rcloneRun(t, s, "check", "--download", local, ":webdav:bk")
	if !strings.Contains(out, "0 differences found") {
		t.Errorf("rclone check:\n%s", out)
	}
	if pathExists(vol, "bk/f04.txt") || pathExists(vol, "bk/sub/deeper") {
		t.Error("files deleted locally are still on the server")
	}
	// Down into an empty folder: byte-identical, mtimes kept.
	rcloneRun(t, s, "sync", ":webdav:bk", down)
	if a, b := snapshot(t, local), snapshot(t, down); !maps2Equal(a, b) {
		t.Errorf("synced down tree differs:\nlocal %v\ndown  %v", a, b)
	}
	for i := range 20 {
		if i == 3 || i == 4 {
			continue
		}
		n := fmt.Sprintf("f%02d.txt", i)
		want := old.Add(time.Duration(i) * time.Hour)
		for _, p := range []string{filepath.Join(vol, "bk", n), filepath.Join(down, n)} {
			fi, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			if d := fi.ModTime().Sub(want); d < -time.Second || d > time.Second {
				t.Errorf("%s: mtime %v, want %v", p, fi.ModTime(), want)
			}
		}
	}
	davAgree(t, s, vol, auth)
}

func maps2Equal(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestDAVCadaver(t *testing.T) {
	cadaver := needProgram(t, "cadaver")
	vol, home := t.TempDir(), t.TempDir()
	src := writeFile(t, home, "src.txt", []byte("through cadaver\n"))
	os.WriteFile(filepath.Join(home, ".netrc"), []byte("machine 127.0.0.1\nlogin u\npassword pw\n"), 0o600)
	auth := basicAuth("u:pw")
	s := start(t, "-a", "u:pw", "-v", vol+"::rwmd,u", "-e2dsa")
	waitReady(t, s, auth)
	script := strings.Join([]string{
		"mkcol cdir",
		"put " + src + " cdir/a.txt",
		"get cdir/a.txt " + filepath.Join(home, "got.txt"),
		"copy cdir/a.txt cdir/b.txt",
		"move cdir/b.txt cdir/c.txt",
		"mkcol cdir/sub",
		"copy cdir/c.txt cdir/sub/d.txt",
		"delete cdir/a.txt",
		"ls cdir",
		"quit",
	}, "\n") + "\n"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, cadaver, "-t", s.URL+"/")
	cmd.Env = append(os.Environ(), "HOME="+home)
	cmd.Stdin = strings.NewReader(script)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("cadaver: %v\n%s", err, out)
	}
	if n := strings.Count(string(out), "succeeded"); n != 9 {
		t.Errorf("%d steps succeeded, want 9:\n%s", n, out)
	}
	if got := mgRead(t, home, "got.txt"); got != "through cadaver\n" {
		t.Errorf("get = %q", got)
	}
	want := []string{"cdir", "cdir/c.txt", "cdir/sub", "cdir/sub/d.txt"}
	if got := slices.DeleteFunc(tree(t, vol), func(p string) bool { return strings.HasPrefix(p, ".hist") }); !slices.Equal(got, want) {
		t.Errorf("disk = %q, want %q", got, want)
	}
	if mgRead(t, vol, "cdir/c.txt") != "through cadaver\n" || mgRead(t, vol, "cdir/sub/d.txt") != "through cadaver\n" {
		t.Error("contents differ")
	}
	davAgree(t, s, vol, auth)
}

// TestDAVDavfs2 mounts hoard with davfs2 (as root, where /dev/fuse
// exists) and writes, reads, renames and deletes through the mount.
// (Listing the mount is not checked: on some kernels davfs2's readdir
// fails with EINVAL against any server, copyparty included.)
func TestDAVDavfs2(t *testing.T) {
	mountDavfs := needProgram(t, "mount.davfs")
	if os.Geteuid() != 0 {
		t.Skip("davfs2 mounts need root here; skipping")
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skip("no /dev/fuse; skipping the davfs2 mount")
	}
	vol, work := t.TempDir(), t.TempDir()
	// davfs2 runs as its own user (davfs2): it must reach its cache.
	os.Chmod(filepath.Dir(work), 0o755)
	os.Chmod(work, 0o755)
	mnt, cache := filepath.Join(work, "mnt"), filepath.Join(work, "cache")
	os.Mkdir(mnt, 0o755)
	os.Mkdir(cache, 0o777)
	os.Chmod(cache, 0o777)
	conf := filepath.Join(work, "davfs2.conf")
	os.WriteFile(conf, []byte("use_locks 1\ncache_dir "+cache+"\ndelay_upload 0\n"), 0o644)
	auth := basicAuth("u:pw")
	s := start(t, "-a", "u:pw", "-v", vol+"::rwmd,u", "-e2dsa")
	waitReady(t, s, auth)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, mountDavfs, "-o", "conf="+conf, s.URL+"/", mnt)
	cmd.Stdin = strings.NewReader("u\npw\n") // username and password prompts
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Skipf("davfs2 cannot mount here (%v): %s", err, out)
	}
	mounted := true
	umount := func() {
		if mounted {
			if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
				t.Errorf("umount: %v %s", err, out)
			}
			mounted = false
		}
	}
	defer umount()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	data := seededBytes(7, 200000)
	must(os.WriteFile(filepath.Join(mnt, "w.txt"), data, 0o644))
	must(os.Mkdir(filepath.Join(mnt, "dir"), 0o755))
	must(os.WriteFile(filepath.Join(mnt, "dir", "gone.txt"), []byte("bye"), 0o644))
	got, err := os.ReadFile(filepath.Join(mnt, "w.txt"))
	must(err)
	if !bytes.Equal(got, data) {
		t.Error("read back through the mount differs")
	}
	must(os.Rename(filepath.Join(mnt, "w.txt"), filepath.Join(mnt, "dir", "renamed.txt")))
	must(os.Remove(filepath.Join(mnt, "dir", "gone.txt")))
	umount() // davfs2 uploads what it still caches
	wantFile(t, vol, "dir/renamed.txt", data)
	if pathExists(vol, "w.txt") || pathExists(vol, "dir/gone.txt") {
		t.Errorf("disk after the mount: %q", tree(t, vol))
	}
	davAgree(t, s, vol, auth)
}

// davReq sends a WebDAV request.
func davReq(t *testing.T, s *server, method, p string, body string, hdr ...string) (*http.Response, []byte) {
	t.Helper()
	var b []byte
	if body != "" {
		b = []byte(body)
	}
	return s.do(t, method, p, b, hdr...)
}

const propfindAll = `<?xml version="1.0"?><D:propfind xmlns:D="DAV:"><D:allprop/></D:propfind>`

const lockBody = `<?xml version="1.0"?><D:lockinfo xmlns:D="DAV:"><D:lockscope><D:exclusive/></D:lockscope><D:locktype><D:write/></D:locktype><D:owner>me</D:owner></D:lockinfo>`

// TestDAVOptions: the headers clients look for; --no-dav turns it off.
func TestDAVOptions(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, dir, "a.txt", []byte("a"))
	s := start(t, "-v", dir+"::rwmd")
	resp, body := davReq(t, s, "OPTIONS", "/", "")
	if resp.StatusCode/100 != 2 || resp.Header.Get("DAV") != "1, 2" || resp.Header.Get("MS-Author-Via") != "DAV" || !strings.Contains(resp.Header.Get("Allow"), "PROPFIND") {
		t.Errorf("OPTIONS: %d %v %s", resp.StatusCode, resp.Header, body)
	}
	resp, body = davReq(t, s, "PROPFIND", "/", "", "Depth: 1")
	wantStatus(t, resp, body, http.StatusMultiStatus)
	if !strings.Contains(string(body), "<D:href>/a.txt</D:href>") {
		t.Errorf("PROPFIND: %s", body)
	}
	// Depth: infinity needs --dav-inf.
	resp, body = davReq(t, s, "PROPFIND", "/", "", "Depth: infinity")
	wantStatus(t, resp, body, http.StatusForbidden)
	if !strings.Contains(string(body), "propfind-finite-depth") {
		t.Errorf("infinite PROPFIND: %s", body)
	}
	// GET of a folder is still hoard's listing.
	resp, body = davReq(t, s, "GET", "/", "", davUA)
	wantStatus(t, resp, body, http.StatusOK)
	if !strings.Contains(resp.Header.Get("Content-Type"), "text/html") {
		t.Errorf("GET / as a DAV client: %s", resp.Header.Get("Content-Type"))
	}

	off := t.TempDir()
	writeFile(t, off, "a.txt", []byte("a"))
	s2 := start(t, "-v", off+"::rwmd", "--no-dav")
	resp, _ = davReq(t, s2, "OPTIONS", "/", "")
	if resp.Header.Get("DAV") != "" {
		t.Errorf("--no-dav: OPTIONS still says DAV: %q", resp.Header.Get("DAV"))
	}
	for _, m := range []string{"PROPFIND", "MKCOL", "DELETE", "LOCK", "MOVE"} {
		resp, body := davReq(t, s2, m, "/a.txt", "", "Destination: /b.txt")
		wantStatus(t, resp, body, http.StatusMethodNotAllowed)
	}
	// And a DAV client's PUT follows copyparty's rules: a new name.
	resp, body = davReq(t, s2, "PUT", "/a.txt", "new", davUA)
	wantStatus(t, resp, body, http.StatusCreated)
	if mgRead(t, off, "a.txt") != "a" {
		t.Error("--no-dav: a PUT replaced the file")
	}

	inf := t.TempDir()
	writeFile(t, inf, "x/y/z.txt", []byte("z"))
	s3 := start(t, "-v", inf+"::r", "--dav-inf")
	resp, body = davReq(t, s3, "PROPFIND", "/", "", "Depth: infinity")
	wantStatus(t, resp, body, http.StatusMultiStatus)
	if !strings.Contains(string(body), "<D:href>/x/y/z.txt</D:href>") {
		t.Errorf("--dav-inf PROPFIND: %s", body)
	}
}

// TestDAVPutMtime: a WebDAV PUT replaces (with d), sets X-OC-Mtime and
// says so; PROPPATCH sets the mtime as Windows and rclone send it.
func TestDAVPutMtime(t *testing.T) {
	dir := t.TempDir()
	auth := basicAuth("u:pw")
	s := start(t, "-a", "u:pw", "-v", dir+"::rwmd,u", "-e2dsa")
	waitReady(t, s, auth)
	resp, body := davReq(t, s, "PUT", "/m.txt", "one", auth, "X-OC-Mtime: 1500000000")
	wantStatus(t, resp, body, http.StatusCreated)
	if resp.Header.Get("X-OC-Mtime") != "accepted" {
		t.Errorf("X-OC-Mtime reply %q", resp.Header.Get("X-OC-Mtime"))
	}
	fi, _ := os.Stat(filepath.Join(dir, "m.txt"))
	if fi == nil || fi.ModTime().Unix() != 1500000000 {
		t.Fatalf("mtime %v", fi)
	}
	resp, body = davReq(t, s, "PUT", "/m.txt", "two", auth, "X-OC-Mtime: 1600000000")
	wantStatus(t, resp, body, http.StatusNoContent)
	if mgRead(t, dir, "m.txt") != "two" {
		t.Error("not replaced")
	}
	pp := `<?xml version="1.0"?><D:propertyupdate xmlns:D="DAV:" xmlns:Z="urn:schemas-microsoft-com:"><D:set><D:prop><Z:Win32LastModifiedTime>Wed, 02 Jan 2019 03:04:05 GMT</Z:Win32LastModifiedTime><Z:Win32FileAttributes>00000020</Z:Win32FileAttributes></D:prop></D:set></D:propertyupdate>`
	resp, body = davReq(t, s, "PROPPATCH", "/m.txt", pp, auth)
	wantStatus(t, resp, body, http.StatusMultiStatus)
	if strings.Count(string(body), "200 OK") != 2 {
		t.Errorf("PROPPATCH: %s", body)
	}
	fi, _ = os.Stat(filepath.Join(dir, "m.txt"))
	if fi.ModTime().UTC() != time.Date(2019, 1, 2, 3, 4, 5, 0, time.UTC) {
		t.Errorf("mtime after PROPPATCH %v", fi.ModTime())
	}
	// A protected live property is refused, and nothing else of the
	// request is done (the dead property is not set either).
	pp = `<?xml version="1.0"?><D:propertyupdate xmlns:D="DAV:" xmlns:X="urn:x"><D:set><D:prop><D:getlastmodified>Wed, 02 Jan 2001 03:04:05 GMT</D:getlastmodified><X:dead>v</X:dead><D:getetag>"x"</D:getetag></D:prop></D:set></D:propertyupdate>`
	resp, body = davReq(t, s, "PROPPATCH", "/m.txt", pp, auth)
	wantStatus(t, resp, body, http.StatusMultiStatus)
	if strings.Count(string(body), "403 Forbidden") != 1 || strings.Count(string(body), "424 Failed Dependency") != 2 {
		t.Errorf("PROPPATCH of a protected property: %s", body)
	}
	resp, body = davReq(t, s, "PROPFIND", "/m.txt", `<D:propfind xmlns:D="DAV:"><D:prop><X:dead xmlns:X="urn:x"/></D:prop></D:propfind>`, auth, "Depth: 0")
	wantStatus(t, resp, body, http.StatusMultiStatus)
	if !strings.Contains(string(body), "404 Not Found") {
		t.Errorf("a refused PROPPATCH set a dead property: %s", body)
	}
	fi, _ = os.Stat(filepath.Join(dir, "m.txt"))
	if fi.ModTime().Year() != 2019 {
		t.Errorf("a refused PROPPATCH changed the mtime: %v", fi.ModTime())
	}
	// macOS Finder's side files are written like any other file.
	for _, n := range []string{"._m.txt", ".DS_Store"} {
		resp, body = davReq(t, s, "PUT", "/"+n, "finder", auth, "User-Agent: WebDAVFS/3.0.0 (03008000) Darwin/22.1.0")
		wantStatus(t, resp, body, http.StatusCreated)
		if mgRead(t, dir, n) != "finder" {
			t.Errorf("%s not written", n)
		}
	}
	davAgree(t, s, dir, auth)
}

// TestDAVPerms is the permission matrix over WebDAV: each method needs
// its letters (anonymous: 401, a known user: 403), and a refusal
// changes nothing.
func TestDAVPerms(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	users := []string{"r", "w", "m", "d", "rw", "wm", "rwm", "rwd", "rwmd"}
	args := []string{"-v", dir + "::"}
	var groups []string
	for _, u := range users {
		args = append(args, "-a", "u"+u+":pw-"+u)
		groups = append(groups, u+",u"+u)
	}
	args[1] += strings.Join(groups, ":")
	// Each row comes from its own forwarded address, so that the wrong
	// passwords of the "badpw" rows are not slowed down by each other
	// (TestDAVWrongPasswordSlows shows they are, from one address).
	args = append(args, "-a", "nobody:pw-nobody", "-a", "admin:pw-admin", "-e2dsa", "--xff-src", "127.0.0.0/8")
	args[1] += ":rwmd,admin"
	s := start(t, args...)
	admin := basicAuth("admin:pw-admin")
	waitReady(t, s, admin)
	// Fixtures are uploaded through WebDAV, so the index knows them.
	mk := func(rel, data string) {
		t.Helper()
		resp, body := davReq(t, s, "PUT", "/"+rel, data, admin, davUA)
		if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusNoContent {
			t.Fatalf("fixture %s: %d %s", rel, resp.StatusCode, body)
		}
		if data == "" && !pathExists(dir, rel) {
			t.Fatalf("fixture %s missing", rel)
		}
	}
	var from string // the row's forwarded client address
	davReq := func(t *testing.T, s *server, method, p string, body string, hdr ...string) (*http.Response, []byte) {
		t.Helper()
		return davReq(t, s, method, p, body, append(hdr, "X-Forwarded-For: "+from)...)
	}
	type op struct {
		name string
		need string
		code int
		run  func(who, auth string) (*http.Response, []byte)
		done func(who string) bool
	}
	ops := []op{
		{"PROPFIND", "r", 207, func(who, auth string) (*http.Response, []byte) {
			return davReq(t, s, "PROPFIND", "/", propfindAll, auth, "Depth: 1")
		}, nil},
		{"PUT", "w", 201, func(who, auth string) (*http.Response, []byte) {
			return davReq(t, s, "PUT", "/put-"+who+".txt", "new", auth, davUA)
		}, func(who string) bool { return pathExists(dir, "put-"+who+".txt") }},
		{"PUT over", "wd", 204, func(who, auth string) (*http.Response, []byte) {
			mk("po-"+who+".txt", "old")
			return davReq(t, s, "PUT", "/po-"+who+".txt", "new", auth, davUA)
		}, func(who string) bool { return fileHolds(dir, "po-"+who+".txt", "new") }},
		{"MKCOL", "w", 201, func(who, auth string) (*http.Response, []byte) {
			return davReq(t, s, "MKCOL", "/mk-"+who, "", auth)
		}, func(who string) bool { return pathExists(dir, "mk-"+who) }},
		{"DELETE", "d", 204, func(who, auth string) (*http.Response, []byte) {
			mk("del-"+who+".txt", "x")
			return davReq(t, s, "DELETE", "/del-"+who+".txt", "", auth)
		}, func(who string) bool { return !pathExists(dir, "del-"+who+".txt") }},
		{"COPY", "rw", 201, func(who, auth string) (*http.Response, []byte) {
			mk("cp-"+who+".txt", "x")
			return davReq(t, s, "COPY", "/cp-"+who+".txt", "", auth, "Destination: "+s.URL+"/copied-"+who+".txt")
		}, func(who string) bool { return pathExists(dir, "copied-"+who+".txt") }},
		{"COPY over", "rwd", 204, func(who, auth string) (*http.Response, []byte) {
			mk("co-"+who+".txt", "new")
			mk("co-old-"+who+".txt", "old")
			return davReq(t, s, "COPY", "/co-"+who+".txt", "", auth, "Destination: /co-old-"+who+".txt")
		}, func(who string) bool { return fileHolds(dir, "co-old-"+who+".txt", "new") }},
		{"MOVE", "mw", 201, func(who, auth string) (*http.Response, []byte) {
			mk("mv-"+who+".txt", "x")
			return davReq(t, s, "MOVE", "/mv-"+who+".txt", "", auth, "Destination: /moved-"+who+".txt")
		}, func(who string) bool {
			return pathExists(dir, "moved-"+who+".txt") && !pathExists(dir, "mv-"+who+".txt")
		}},
		{"PROPPATCH", "rw", 207, // r too: no existence oracle (TestDAVNoExistenceOracle)
			func(who, auth string) (*http.Response, []byte) {
				mk("pp-"+who+".txt", "x")
				os.Chtimes(filepath.Join(dir, "pp-"+who+".txt"), time.Unix(1e9, 0), time.Unix(1e9, 0))
				return davReq(t, s, "PROPPATCH", "/pp-"+who+".txt", `<D:propertyupdate xmlns:D="DAV:"><D:set><D:prop><D:getlastmodified>Wed, 02 Jan 2019 03:04:05 GMT</D:getlastmodified></D:prop></D:set></D:propertyupdate>`, auth)
			}, func(who string) bool {
				fi, err := os.Stat(filepath.Join(dir, "pp-"+who+".txt"))
				return err == nil && fi.ModTime().Year() == 2019
			}},
		{"LOCK", "rw", 200, // r too: no existence oracle (TestDAVNoExistenceOracle)
			func(who, auth string) (*http.Response, []byte) {
				return davReq(t, s, "LOCK", "/lk-"+who+".txt", lockBody, auth, "Depth: 0")
			}, nil},
	}
	row := 0
	for _, o := range ops {
		for _, u := range append([]string{"anon", "nobody", "badpw"}, users...) {
			auth, ok := matrixAuth(u, o.need)
			row++
			from = fmt.Sprintf("198.51.%d.%d", row/250, 1+row%250)
			if o.name == "LOCK" {
				mk("lk-"+u+".txt", "x")
			}
			before := snapshot(t, dir)
			resp, body := o.run(u, auth)
			want := o.code
			switch {
			case ok:
			case u == "anon", u == "badpw":
				want = http.StatusUnauthorized
			case o.name == "PUT over" && strings.Contains(u, "w") && !strings.Contains(u, "r"):
				// Without r, copyparty's PUT: a new name, never a refusal
				// that tells what exists (TestDAVNoExistenceOracle).
				want = http.StatusCreated
			default:
				want = http.StatusForbidden
			}
			if resp.StatusCode != want {
				t.Errorf("%s as %s: %d %s, want %d", o.name, u, resp.StatusCode, body, want)
			}
			if want == http.StatusUnauthorized && !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Basic ") {
				t.Errorf("%s as %s: 401 without a Basic challenge: %q", o.name, u, resp.Header.Get("WWW-Authenticate"))
			}
			if o.done != nil && o.done(u) != ok {
				t.Errorf("%s as %s: done = %v, want %v", o.name, u, !ok, ok)
			}
			if !ok && o.done == nil {
				wantSameSnapshot(t, before, snapshot(t, dir))
			}
		}
	}
	davAgree(t, s, dir, admin)
}

// TestDAVLocks: a lock binds its account; another account's token is
// refused like none (423); the owner writes with it; UNLOCK by another
// account is refused.
func TestDAVLocks(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "l.txt", []byte("locked"))
	a, b := basicAuth("a:pa"), basicAuth("b:pb")
	s := start(t, "-a", "a:pa", "-a", "b:pb", "-v", dir+"::rwmd,a,b", "-e2dsa")
	waitReady(t, s, a)
	resp, body := davReq(t, s, "LOCK", "/l.txt", lockBody, a, "Depth: 0", "Timeout: Second-600")
	wantStatus(t, resp, body, http.StatusOK)
	tok := resp.Header.Get("Lock-Token")
	if !strings.HasPrefix(tok, "<opaquelocktoken:") {
		t.Fatalf("Lock-Token %q", tok)
	}
	ifh := "If: (" + tok + ")"
	for _, w := range []struct {
		method, path, body string
		hdr                []string
	}{
		{"PUT", "/l.txt", "b's", []string{davUA}},
		{"DELETE", "/l.txt", "", nil},
		{"MOVE", "/l.txt", "", []string{"Destination: /m.txt"}},
		{"PROPPATCH", "/l.txt", `<D:propertyupdate xmlns:D="DAV:"><D:set><D:prop><D:getlastmodified>Wed, 02 Jan 2019 03:04:05 GMT</D:getlastmodified></D:prop></D:set></D:propertyupdate>`, nil},
	} {
		for _, h := range [][]string{{b}, {b, ifh}, {a}} {
			resp, body := davReq(t, s, w.method, w.path, w.body, append(h, w.hdr...)...)
			wantStatus(t, resp, body, http.StatusLocked)
		}
	}
	if mgRead(t, dir, "l.txt") != "locked" {
		t.Fatal("a locked file changed")
	}
	// Another account can neither unlock nor take the lock.
	resp, body = davReq(t, s, "UNLOCK", "/l.txt", "", b, "Lock-Token: "+tok)
	wantStatus(t, resp, body, http.StatusLocked)
	resp, body = davReq(t, s, "LOCK", "/l.txt", lockBody, b, "Depth: 0")
	wantStatus(t, resp, body, http.StatusLocked)
	// The owner writes with the token.
	resp, body = davReq(t, s, "PUT", "/l.txt", "a's", a, ifh, davUA)
	wantStatus(t, resp, body, http.StatusNoContent)
	resp, body = davReq(t, s, "UNLOCK", "/l.txt", "", a, "Lock-Token: "+tok)
	wantStatus(t, resp, body, http.StatusNoContent)
	resp, body = davReq(t, s, "PUT", "/l.txt", "b's", b, davUA)
	wantStatus(t, resp, body, http.StatusNoContent)
	if mgRead(t, dir, "l.txt") != "b's" {
		t.Error("not written after UNLOCK")
	}
	// A lock on an unmapped URL makes an empty file; a w-only... the
	// locker fills it.
	resp, body = davReq(t, s, "LOCK", "/new.txt", lockBody, a, "Depth: 0")
	wantStatus(t, resp, body, http.StatusCreated)
	if !fileHolds(dir, "new.txt", "") {
		t.Error("LOCK of an unmapped URL made no empty file")
	}
	resp, body = davReq(t, s, "PUT", "/new.txt", "filled", a, "If: ("+resp.Header.Get("Lock-Token")+")", davUA)
	wantStatus(t, resp, body, http.StatusNoContent)
	// A deleted file's lock goes with it.
	resp, body = davReq(t, s, "LOCK", "/gone.txt", lockBody, a, "Depth: 0")
	wantStatus(t, resp, body, http.StatusCreated)
	gtok := resp.Header.Get("Lock-Token")
	resp, body = davReq(t, s, "DELETE", "/gone.txt", "", a, "If: ("+gtok+")")
	wantStatus(t, resp, body, http.StatusNoContent)
	resp, body = davReq(t, s, "PUT", "/gone.txt", "again", b, davUA)
	wantStatus(t, resp, body, http.StatusCreated)
	davAgree(t, s, dir, a)
}

// TestDAVBadInput: each refused with a clear 4xx and nothing changed.
func TestDAVBadInput(t *testing.T) {
	t.Parallel()
	dir, other, outside := t.TempDir(), t.TempDir(), t.TempDir()
	writeFile(t, dir, "a.txt", []byte("a"))
	writeFile(t, dir, "f/in.txt", []byte("in"))
	writeFile(t, dir, "over.txt", []byte("over"))
	writeFile(t, outside, "secret.txt", []byte("secret"))
	if err := os.Symlink(outside, filepath.Join(dir, "out")); err != nil {
		t.Fatal(err)
	}
	auth := basicAuth("u:pw")
	s := start(t, "-a", "u:pw", "-v", dir+"::rwmd,u", "-v", other+":b:rwmd,u", "-e2dsa")
	waitReady(t, s, auth)
	before, beforeOut, beforeOther := snapshot(t, dir), snapshot(t, outside), snapshot(t, other)
	cases := []struct {
		name, method, path, body string
		hdr                      []string
		code                     int
	}{
		{"another host", "MOVE", "/a.txt", "", []string{"Destination: http://evil.example/a.txt"}, http.StatusBadGateway},
		{"another scheme", "COPY", "/a.txt", "", []string{"Destination: ftp://" + strings.TrimPrefix(s.URL, "http://") + "/x.txt"}, http.StatusBadGateway},
		{"dot dot", "MOVE", "/a.txt", "", []string{"Destination: /f/../../x.txt"}, http.StatusBadRequest},
		{"encoded dot dot", "MOVE", "/a.txt", "", []string{"Destination: /f/%2e%2e/%2E%2E/x.txt"}, http.StatusBadRequest},
		{"encoded slash", "MOVE", "/a.txt", "", []string{"Destination: /f%2f..%2fx.txt"}, http.StatusBadRequest},
		{"encoded backslash", "COPY", "/a.txt", "", []string{"Destination: /f%5c..%5cx.txt"}, http.StatusBadRequest},
		{"encoded NUL", "COPY", "/a.txt", "", []string{"Destination: /x%00.txt"}, http.StatusBadRequest},
		{"no destination", "MOVE", "/a.txt", "", nil, http.StatusBadRequest},
		{"into the share links' folder", "COPY", "/a.txt", "", []string{"Destination: /shr/a.txt"}, http.StatusForbidden},
		{"onto the metrics page", "COPY", "/a.txt", "", []string{"Destination: /.cpr/metrics"}, http.StatusForbidden},
		{"symlink out at the destination", "COPY", "/a.txt", "", []string{"Destination: /out/secret.txt"}, 0},
		{"into a symlink out", "MOVE", "/a.txt", "", []string{"Destination: /out/new.txt"}, 0},
		{"onto itself", "MOVE", "/a.txt", "", []string{"Destination: /a.txt"}, http.StatusForbidden},
		{"copy onto itself", "COPY", "/f", "", []string{"Destination: /f"}, http.StatusForbidden},
		{"into its own subfolder", "MOVE", "/f", "", []string{"Destination: /f/sub/f"}, 0},
		{"copy into its own subfolder", "COPY", "/f", "", []string{"Destination: /f/f2"}, http.StatusForbidden},
		{"no overwrite", "COPY", "/a.txt", "", []string{"Destination: /over.txt", "Overwrite: F"}, http.StatusPreconditionFailed},
		{"bad overwrite", "COPY", "/a.txt", "", []string{"Destination: /x.txt", "Overwrite: maybe"}, http.StatusBadRequest},
		{"bad depth", "MOVE", "/f", "", []string{"Destination: /g", "Depth: 0"}, http.StatusBadRequest},
		{"hist source", "MOVE", "/.hist", "", []string{"Destination: /h"}, 0},
		{"hist destination", "COPY", "/a.txt", "", []string{"Destination: /.hist/a.txt"}, 0},
		{"hist inside", "MOVE", "/a.txt", "", []string{"Destination: /f/.HIST/a.txt"}, 0},
		{"hist delete", "DELETE", "/.hist", "", nil, 0},
		{"hist mkcol", "MKCOL", "/.hist/x", "", nil, 0},
		{"hist propfind", "PROPFIND", "/.hist", "", []string{"Depth: 1"}, http.StatusNotFound},
		{"volume top", "DELETE", "/", "", nil, 0},
		{"malformed propfind", "PROPFIND", "/", "<D:propfind xmlns:D='DAV:'><D:prop>", []string{"Depth: 0"}, http.StatusBadRequest},
		{"empty namespace", "PROPFIND", "/", `<D:propfind xmlns:D="DAV:"><D:prop><x:a xmlns:x=""/></D:prop></D:propfind>`, []string{"Depth: 0"}, http.StatusBadRequest},
		{"not propfind", "PROPFIND", "/", `<D:lockinfo xmlns:D="DAV:"/>`, []string{"Depth: 0"}, http.StatusBadRequest},
		{"deep propfind", "PROPFIND", "/", `<D:propfind xmlns:D="DAV:"><D:prop>` + strings.Repeat("<D:x>", 5000) + strings.Repeat("</D:x>", 5000) + `</D:prop></D:propfind>`, []string{"Depth: 0"}, http.StatusBadRequest},
		{"huge propfind", "PROPFIND", "/", `<D:propfind xmlns:D="DAV:"><D:prop>` + strings.Repeat("<D:getetag/>", 200000) + `</D:prop></D:propfind>`, []string{"Depth: 0"}, http.StatusRequestEntityTooLarge},
		{"huge proppatch", "PROPPATCH", "/a.txt", `<D:propertyupdate xmlns:D="DAV:"><D:set><D:prop><D:getlastmodified>` + strings.Repeat("x", 2<<20) + `</D:getlastmodified></D:prop></D:set></D:propertyupdate>`, nil, http.StatusRequestEntityTooLarge},
		{"deep proppatch", "PROPPATCH", "/a.txt", `<D:propertyupdate xmlns:D="DAV:"><D:set><D:prop>` + strings.Repeat("<D:x>", 100) + strings.Repeat("</D:x>", 100) + `</D:prop></D:set></D:propertyupdate>`, nil, http.StatusBadRequest},
		{"malformed proppatch", "PROPPATCH", "/a.txt", `<D:propertyupdate xmlns:D="DAV:"><D:set>`, nil, http.StatusBadRequest},
		{"huge lock", "LOCK", "/a.txt", `<D:lockinfo xmlns:D="DAV:"><D:owner>` + strings.Repeat("o", 2<<20) + `</D:owner></D:lockinfo>`, nil, http.StatusRequestEntityTooLarge},
		{"deep lock", "LOCK", "/a.txt", `<D:lockinfo xmlns:D="DAV:"><D:lockscope><D:exclusive/></D:lockscope><D:locktype><D:write/></D:locktype><D:owner>` + strings.Repeat("<D:x>", 100) + strings.Repeat("</D:x>", 100) + `</D:owner></D:lockinfo>`, nil, http.StatusBadRequest},
		{"malformed lock", "LOCK", "/a.txt", `<D:lockinfo xmlns:D="DAV:"><D:lockscope>`, nil, http.StatusBadRequest},
		{"lock without scope", "LOCK", "/a.txt", `<D:lockinfo xmlns:D="DAV:"/>`, nil, http.StatusBadRequest},
		{"bad If", "PUT", "/a.txt", "x", []string{"If: (<tok", davUA}, http.StatusBadRequest},
		{"unknown token", "PUT", "/a.txt", "x", []string{"If: (<opaquelocktoken:nope>)", davUA}, http.StatusPreconditionFailed},
		{"mkcol with body", "MKCOL", "/newdir", "<x/>", nil, http.StatusUnsupportedMediaType},
		{"unlock without token", "UNLOCK", "/a.txt", "", nil, http.StatusBadRequest},
		{"unlock unknown token", "UNLOCK", "/a.txt", "", []string{"Lock-Token: <opaquelocktoken:nope>"}, http.StatusConflict},
		{"put no parent", "PUT", "/nope/x.txt", "x", []string{davUA}, http.StatusConflict},
		{"mkcol no parent", "MKCOL", "/nope/x", "", nil, http.StatusConflict},
	}
	for _, c := range cases {
		resp, body := davReq(t, s, c.method, c.path, c.body, append([]string{auth}, c.hdr...)...)
		if c.code != 0 && resp.StatusCode != c.code {
			t.Errorf("%s: %d %s, want %d", c.name, resp.StatusCode, body, c.code)
		}
		if c.code == 0 && (resp.StatusCode < 400 || resp.StatusCode >= 500) {
			t.Errorf("%s: %d %s, want a 4xx", c.name, resp.StatusCode, body)
		}
		if resp.StatusCode >= 400 && len(bytes.TrimSpace(body)) == 0 {
			t.Errorf("%s: %d with no message", c.name, resp.StatusCode)
		}
	}
	wantSameSnapshot(t, before, snapshot(t, dir))
	wantSameSnapshot(t, beforeOut, snapshot(t, outside))
	wantSameSnapshot(t, beforeOther, snapshot(t, other))
	// MOVE into another volume, by absolute URL on this host, works.
	resp, body := davReq(t, s, "MOVE", "/a.txt", "", auth, "Destination: "+s.URL+"/b/a.txt")
	wantStatus(t, resp, body, http.StatusCreated)
	if !fileHolds(other, "a.txt", "a") || pathExists(dir, "a.txt") {
		t.Error("the cross-volume MOVE did not happen")
	}
	davAgree(t, s, dir, auth, "b", other)

	// Outside every volume: a server with no volume at /.
	v := t.TempDir()
	writeFile(t, v, "a.txt", []byte("a"))
	s2 := start(t, "-a", "u:pw", "-v", v+":v:rwmd,u")
	for _, d := range []string{"/elsewhere/a.txt", "/a.txt", "/"} {
		resp, body := davReq(t, s2, "MOVE", "/v/a.txt", "", auth, "Destination: "+d)
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("MOVE to %s, outside every volume: %d %s, want 403", d, resp.StatusCode, body)
		}
	}
	if !fileHolds(v, "a.txt", "a") {
		t.Error("a refused MOVE moved the file")
	}
}

// TestDAVPropfindStream: a PROPFIND of a folder of 100,000 files streams
// its 207: the server's peak memory grows by far less than the body.
func TestDAVPropfindStream(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("slow: 100,000 files")
	}
	dir := t.TempDir()
	big := filepath.Join(dir, "big")
	os.Mkdir(big, 0o755)
	const n = 100000
	for i := range n {
		if err := os.WriteFile(filepath.Join(big, fmt.Sprintf("file-with-a-longish-name-%06d.bin", i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s := start(t, "-v", dir+"::r")
	// Warm up (first request paths, buffers), then measure the peak.
	resp, body := davReq(t, s, "PROPFIND", "/", "", "Depth: 1")
	wantStatus(t, resp, body, http.StatusMultiStatus)
	hwm := func() int64 {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
		if err != nil {
			t.Skipf("no /proc: %v", err)
		}
		for line := range strings.SplitSeq(string(b), "\n") {
			if strings.HasPrefix(line, "VmHWM:") {
				var kb int64
				fmt.Sscanf(strings.TrimSpace(strings.TrimPrefix(line, "VmHWM:")), "%d", &kb)
				return kb << 10
			}
		}
		t.Skip("no VmHWM")
		return 0
	}
	h0 := hwm()
	req, _ := http.NewRequest("PROPFIND", s.URL+"/big/", nil)
	req.Header.Set("Depth", "1")
	r, err := slowClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	if r.StatusCode != http.StatusMultiStatus {
		t.Fatalf("status %d", r.StatusCode)
	}
	sc := bufio.NewScanner(r.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	responses, size := 0, 0
	for sc.Scan() {
		size += len(sc.Bytes()) + 1
		if bytes.HasPrefix(sc.Bytes(), []byte("<D:response>")) {
			responses++
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if responses != n+1 {
		t.Fatalf("%d responses, want %d", responses, n+1)
	}
	grew := hwm() - h0
	t.Logf("body %d MiB, server peak memory grew %d MiB", size>>20, grew>>20)
	// A server that buffered the body would grow by more than all of it;
	// one that streams grows by its buffers and garbage (more under -race,
	// whose shadow memory scales with the heap).
	limit := int64(size) / 4
	if raceEnabled {
		limit = int64(size) / 2
	}
	if grew > limit {
		t.Errorf("server peak memory grew by %d bytes for a %d-byte body: not streamed", grew, size)
	}
}

// TestDAVLockNull: an account with w but not d may fill the empty file
// its own LOCK made, and nothing else that exists. (A LOCK needs r too:
// one without r is refused, whatever is there.)
func TestDAVLockNull(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "empty.txt", nil)
	w := basicAuth("w:pw")
	s := start(t, "-a", "w:pw", "-a", "wo:pw-wo", "-v", dir+"::rw,w:w,wo")
	resp, body := davReq(t, s, "LOCK", "/blind.txt", lockBody, basicAuth("wo:pw-wo"), "Depth: 0")
	wantStatus(t, resp, body, http.StatusForbidden)
	if pathExists(dir, "blind.txt") {
		t.Error("a refused LOCK made a file")
	}
	resp, body = davReq(t, s, "LOCK", "/made.txt", lockBody, w, "Depth: 0")
	wantStatus(t, resp, body, http.StatusCreated)
	tok := resp.Header.Get("Lock-Token")
	resp, body = davReq(t, s, "PUT", "/made.txt", "filled", w, davUA)
	wantStatus(t, resp, body, http.StatusLocked) // without its token
	resp, body = davReq(t, s, "PUT", "/made.txt", "filled", w, davUA, "If: ("+tok+")")
	wantStatus(t, resp, body, http.StatusNoContent)
	if !fileHolds(dir, "made.txt", "filled") {
		t.Error("the lock-null file was not filled")
	}
	// An empty file the LOCK did not make needs d, lock or not.
	resp, body = davReq(t, s, "LOCK", "/empty.txt", lockBody, w, "Depth: 0")
	wantStatus(t, resp, body, http.StatusOK)
	resp, body = davReq(t, s, "PUT", "/empty.txt", "mine now", w, davUA, "If: ("+resp.Header.Get("Lock-Token")+")")
	wantStatus(t, resp, body, http.StatusForbidden)
	if !fileHolds(dir, "empty.txt", "") {
		t.Error("an empty file was replaced without d")
	}
}

// TestDAVLockNoOracle: a LOCK by someone who may not lock is refused the
// same whether or not the folder it names exists (it answered 409 for a
// missing folder before the permission was looked at), and makes nothing.
func TestDAVLockNoOracle(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "secret/a.txt", []byte("a"))
	s := start(t, "-a", "u:pw", "-v", dir+"::g:rg,u")
	for _, auth := range []struct {
		name   string
		header []string
		status int
	}{
		{name: "anonymous", status: http.StatusUnauthorized},
		{name: "user without w", header: []string{basicAuth("u:pw")}, status: http.StatusForbidden},
	} {
		for _, p := range []string{"/secret/new.txt", "/nothere/new.txt"} {
			resp, body := davReq(t, s, "LOCK", p, lockBody, append([]string{"Depth: 0"}, auth.header...)...)
			if resp.StatusCode != auth.status {
				t.Errorf("%s: LOCK %s: %d %s, want %d", auth.name, p, resp.StatusCode, body, auth.status)
			}
		}
	}
	if pathExists(dir, "secret/new.txt") {
		t.Error("a refused LOCK made a file")
	}
}

// TestDAVPropfindMounts: a volume mounted inside another is listed as
// its URL resolves; the folder it shadows on the outer volume's disk is
// never shown, not even by Depth: infinity.
func TestDAVPropfindMounts(t *testing.T) {
	outer, inner := t.TempDir(), t.TempDir()
	writeFile(t, outer, "m/hidden.txt", []byte("shadowed"))
	writeFile(t, outer, "top.txt", []byte("t"))
	writeFile(t, inner, "shown.txt", []byte("s"))
	s := start(t, "-v", outer+"::r", "-v", inner+":m:r", "--dav-inf")
	for _, depth := range []string{"1", "infinity"} {
		resp, body := davReq(t, s, "PROPFIND", "/", "", "Depth: "+depth)
		wantStatus(t, resp, body, http.StatusMultiStatus)
		b := string(body)
		if strings.Contains(b, "hidden.txt") || strings.Count(b, "<D:href>/m/</D:href>") != 1 {
			t.Errorf("Depth %s: %s", depth, b)
		}
		if depth == "infinity" && !strings.Contains(b, "<D:href>/m/shown.txt</D:href>") {
			t.Errorf("Depth %s lacks the mounted volume's file: %s", depth, b)
		}
	}
}

// TestDAVRpLoc: behind a proxy's prefix (--rp-loc), every href and lock
// root carries it, and a Destination must too.
func TestDAVRpLoc(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "a.txt", []byte("a"))
	s := start(t, "-v", dir+"::rwmd", "--rp-loc", "/files")
	resp, body := davReq(t, s, "PROPFIND", "/files/", "", "Depth: 1")
	wantStatus(t, resp, body, http.StatusMultiStatus)
	if !strings.Contains(string(body), "<D:href>/files/a.txt</D:href>") || strings.Contains(string(body), "<D:href>/a.txt") {
		t.Errorf("PROPFIND hrefs: %s", body)
	}
	resp, body = davReq(t, s, "LOCK", "/files/a.txt", lockBody, "Depth: 0")
	wantStatus(t, resp, body, http.StatusOK)
	if !strings.Contains(string(body), "<D:lockroot><D:href>/files/a.txt</D:href>") {
		t.Errorf("LOCK reply: %s", body)
	}
	resp, body = davReq(t, s, "PROPFIND", "/files/a.txt", `<D:propfind xmlns:D="DAV:"><D:prop><D:lockdiscovery/></D:prop></D:propfind>`, "Depth: 0")
	if !strings.Contains(string(body), "<D:lockroot><D:href>/files/a.txt</D:href>") {
		t.Errorf("lockdiscovery: %s", body)
	}
	tok := resp.Header.Get("Lock-Token")
	_ = tok
	resp, body = davReq(t, s, "MOVE", "/files/a.txt", "", "Destination: /b.txt")
	wantStatus(t, resp, body, http.StatusBadGateway)
}

// TestDAVProppatchIndexed: a PROPPATCH of the mtime reaches the index at
// once (search by date finds the new time, not the old), and the file
// keeps its upload record (uploader) there.
func TestDAVProppatchIndexed(t *testing.T) {
	dir := t.TempDir()
	auth := basicAuth("u:pw")
	s := start(t, "-a", "u:pw", "-v", dir+"::rwmd,u", "-e2dsa")
	waitReady(t, s, auth)
	resp, body := davReq(t, s, "PUT", "/p.txt", "content", auth, "X-OC-Mtime: 1500000000")
	wantStatus(t, resp, body, http.StatusCreated)
	waitAllHits(t, s, "date:2017-07-14", []string{"/p.txt"}, auth)
	pp := `<?xml version="1.0"?><D:propertyupdate xmlns:D="DAV:"><D:set><D:prop><D:getlastmodified>Wed, 02 Jan 2019 03:04:05 GMT</D:getlastmodified></D:prop></D:set></D:propertyupdate>`
	resp, body = davReq(t, s, "PROPPATCH", "/p.txt", pp, auth)
	wantStatus(t, resp, body, http.StatusMultiStatus)
	if !strings.Contains(string(body), "200 OK") {
		t.Fatalf("PROPPATCH: %s", body)
	}
	waitAllHits(t, s, "date:2019-01-02", []string{"/p.txt"}, auth)
	waitAllHits(t, s, "date:2017-07-14", nil, auth)
	ls := getListing(t, s, "/?ls", auth)
	found := false
	for _, f := range ls.Files {
		if f.Href == "p.txt" {
			found = true
			if f.Ts != time.Date(2019, 1, 2, 3, 4, 5, 0, time.UTC).Unix() {
				t.Errorf("?ls ts %d", f.Ts)
			}
		}
	}
	if !found {
		t.Errorf("?ls lacks p.txt: %+v", ls)
	}
	// The hit has the new mtime.
	code, r := postSearch(t, s, map[string]any{"q": "date:2019-01-02"}, auth)
	if code != 200 || len(r.Hits) != 1 {
		t.Fatalf("search %d %+v", code, r)
	}
	if h := r.Hits[0]; h.MT != time.Date(2019, 1, 2, 3, 4, 5, 0, time.UTC).Unix() {
		t.Errorf("hit %+v", h)
	}
	// It keeps its upload record: still the uploader's upload.
	if got := upsPaths(t, s, "", auth); !slices.Contains(got, "/p.txt") {
		t.Errorf("?ups after PROPPATCH: %v", got)
	}
}

// TestDAVMtimeFar: X-OC-Mtime sets the file's mtime exactly (a fraction
// was off by 128 ns), up to 2262; past it, where nanoseconds since 1970
// no longer fit in 64 bits (2286 came out as 1901), it is refused and
// nothing is written.
func TestDAVMtimeFar(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := start(t, "-v", dir+"::rw")
	for _, hdr := range []string{"10000000000", "1e300", "NaN", "-1"} {
		resp, body := davReq(t, s, "PUT", "/far.txt", "x", davUA, "X-OC-Mtime: "+hdr)
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("X-OC-Mtime: %s: %d %s, want 400", hdr, resp.StatusCode, body)
		}
	}
	if _, err := os.Lstat(filepath.Join(dir, "far.txt")); !os.IsNotExist(err) {
		t.Errorf("a refused PUT left a file: %v", err)
	}
	for name, tc := range map[string]struct {
		hdr  string
		want time.Time
	}{
		"a.txt": {"1700000000.25", time.Unix(1700000000, 250_000_000)},
		"b.txt": {"9000000000", time.Unix(9_000_000_000, 0)}, // 2255
	} {
		resp, body := davReq(t, s, "PUT", "/"+name, "x", davUA, "X-OC-Mtime: "+tc.hdr)
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("PUT %s: %d %s", name, resp.StatusCode, body)
		}
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if !fi.ModTime().Equal(tc.want) {
			t.Errorf("%s: mtime %v, want %v (X-OC-Mtime: %s)", name, fi.ModTime().UTC(), tc.want.UTC(), tc.hdr)
		}
	}
}

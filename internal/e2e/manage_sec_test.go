package e2e

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestDAVLockStaysInItsVolume: a WebDAV lock is a right over one volume's
// files. A user who may write the volume mounted at / takes a Depth:
// infinity lock on its top; a volume mounted below it (/priv) is another
// account's, which the first may not even read. The lock must not cover
// /priv: its owner keeps writing there (PUT, MKCOL, DELETE, LOCK), and
// its PROPFIND shows no lock of the other account (with its token).
func TestDAVLockStaysInItsVolume(t *testing.T) {
	t.Parallel()
	top, priv := t.TempDir(), t.TempDir()
	writeFile(t, priv, "old.txt", []byte("old"))
	s := start(t, "-a", "eve:evepw", "-a", "bob:bobpw", "-v", top+"::rwmd,eve", "-v", priv+":priv:rwmd,bob")
	eve, bob := basicAuth("eve:evepw"), basicAuth("bob:bobpw")

	resp, body := davReq(t, s, "LOCK", "/", lockBody, eve, "Depth: infinity", "Timeout: Second-3600")
	wantStatus(t, resp, body, http.StatusOK)
	tok := resp.Header.Get("Lock-Token")
	if tok == "" {
		t.Fatal("no lock token")
	}

	resp, body = davReq(t, s, "PUT", "/priv/new.txt", "new", bob, davUA)
	wantStatus(t, resp, body, http.StatusCreated)
	resp, body = davReq(t, s, "MKCOL", "/priv/col", "", bob)
	wantStatus(t, resp, body, http.StatusCreated)
	resp, body = davReq(t, s, "DELETE", "/priv/old.txt", "", bob)
	wantStatus(t, resp, body, http.StatusNoContent)
	resp, body = davReq(t, s, "PROPFIND", "/priv/", propfindAll, bob, "Depth: 1")
	wantStatus(t, resp, body, http.StatusMultiStatus)
	if strings.Contains(string(body), strings.Trim(tok, "<>")) {
		t.Errorf("bob's PROPFIND of /priv shows eve's lock token: %s", body)
	}
	resp, body = davReq(t, s, "LOCK", "/priv/new.txt", lockBody, bob, "Depth: 0")
	wantStatus(t, resp, body, http.StatusOK)
	// eve's lock still holds in her own volume.
	resp, body = davReq(t, s, "PUT", "/x.txt", "x", bob, davUA)
	if resp.StatusCode != http.StatusForbidden && resp.StatusCode != http.StatusLocked {
		t.Errorf("PUT under eve's lock by bob: %d %s", resp.StatusCode, body)
	}
	resp, body = davReq(t, s, "PUT", "/x.txt", "x", eve, davUA)
	if resp.StatusCode != http.StatusLocked {
		t.Errorf("PUT under eve's lock without its token: %d %s, want 423", resp.StatusCode, body)
	}
	resp, body = davReq(t, s, "PUT", "/x.txt", "x", eve, davUA, "If: ("+tok+")")
	wantStatus(t, resp, body, http.StatusCreated)
}

// TestManageNoExistenceOracle: someone with no permission in a volume
// learns nothing of what it holds from file management: deleting (also
// as an unpost), copying or moving into it (copyparty's API and WebDAV,
// COPY with Depth: 0 included), making a folder there. An existing file,
// an existing folder and a missing name get the same answer, and nothing
// there changes.
func TestManageNoExistenceOracle(t *testing.T) {
	t.Parallel()
	top, priv, drop := t.TempDir(), oracleSetup(t), oracleSetup(t)
	writeFile(t, top, "a.txt", []byte("A"))
	writeFile(t, top, "src/b.txt", []byte("B"))
	s := start(t, "-a", "eve:evepw", "-a", "adm:admpw", "-v", top+"::r:rwmd,eve", "-v", priv+":priv:rwmd,adm", "-v", drop+":drop:w,eve:rwmd,adm", "--unpost", "3600", "-e2d")
	before, dropBefore := snapshot(t, priv), snapshot(t, drop)
	type probe struct {
		method, path, body string
		hdr                []string
	}
	probes := []probe{
		{"POST", "/priv/{}?delete&unpost", "", nil},
		{"POST", "/priv/{}?delete", "", nil},
		{"POST", "/?delete&unpost", `["/priv/{}"]`, []string{"Content-Type: application/json"}},
		{"POST", "/a.txt?copy=/priv/{}", "", nil},
		{"POST", "/a.txt?move=/priv/{}", "", nil},
		{"POST", "/src/?copy=/priv/{}&replace", "", nil},
		{"COPY", "/src/", "", []string{"Destination: /priv/{}", "Depth: 0", "Overwrite: F"}},
		{"COPY", "/src/", "", []string{"Destination: /priv/{}", "Depth: 0", "Overwrite: T"}},
		{"COPY", "/src/", "", []string{"Destination: /priv/{}/x", "Depth: 0"}},
		{"COPY", "/a.txt", "", []string{"Destination: /priv/{}", "Overwrite: F"}},
		{"MOVE", "/a.txt", "", []string{"Destination: /priv/{}", "Overwrite: F"}},
		{"DELETE", "/priv/{}", "", nil},
		{"MKCOL", "/priv/{}", "", nil},
		{"PROPFIND", "/priv/{}", "", []string{"Depth: 0"}},
		{"LOCK", "/priv/{}", lockBody, nil},
		{"UNLOCK", "/priv/{}", "", []string{"Lock-Token: <opaquelocktoken:x>"}},
		// eve may write /drop, not read it: her unpost of what is not
		// her upload says the same whatever is there.
		{"POST", "/drop/{}?delete&unpost", "", nil},
		{"POST", "/?delete&unpost", `["/drop/{}"]`, []string{"Content-Type: application/json"}},
	}
	for _, who := range []struct {
		name string
		hdr  []string
	}{{"eve", []string{basicAuth("eve:evepw")}}, {"anonymous", nil}} {
		for _, p := range probes {
			var first string
			for i, name := range []string{probeFile, probeFolder, probeMissing} {
				sub := func(x string) string { return strings.ReplaceAll(x, "{}", name) }
				var hdr []string
				for _, h := range p.hdr {
					hdr = append(hdr, sub(h))
				}
				resp, body := davReq(t, s, p.method, sub(p.path), sub(p.body), append(hdr, who.hdr...)...)
				got := strconv.Itoa(resp.StatusCode) + " " + strings.ReplaceAll(string(body), name, "{}")
				if i == 0 {
					first = got
				} else if got != first {
					t.Errorf("%s: %s %s tells %s from %s:\n  %s\n  %s", who.name, p.method, p.path, name, probeFile, first, got)
				}
			}
		}
	}
	wantSameSnapshot(t, before, snapshot(t, priv))
	wantSameSnapshot(t, dropBefore, snapshot(t, drop))
}

// TestDAVPropfindInfinityLinkLoops: with --dav-inf, a PROPFIND of Depth:
// infinity lists a symbolic link to a folder as a folder but does not
// walk into it (as archives and the indexer do not): two links back to
// their own folder (made outside hoard) would otherwise make the answer
// 2^64 responses long, one request holding a core and the disk for good.
func TestDAVPropfindInfinityLinkLoops(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, dir, "d/f.txt", []byte("f"))
	writeFile(t, dir, "d/sub/g.txt", []byte("g"))
	for _, l := range []string{"d/a", "d/b", "d/sub/up"} {
		if err := os.Symlink(".", filepath.Join(dir, l)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("sub", filepath.Join(dir, "d/tosub")); err != nil {
		t.Fatal(err)
	}
	s := start(t, "-v", dir+"::r", "--dav-inf")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "PROPFIND", s.URL+"/d/", nil)
	req.Header.Set("Depth", "infinity")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		t.Fatalf("PROPFIND Depth: infinity over link loops did not end: %v (%d bytes read)", err, len(body))
	}
	if len(body) >= 1<<20 {
		t.Fatalf("PROPFIND Depth: infinity over link loops: more than 1 MiB of answer")
	}
	var hrefs []string
	for _, m := range regexp.MustCompile(`<D:href>([^<]*)</D:href>`).FindAllStringSubmatch(string(body), -1) {
		hrefs = append(hrefs, m[1])
	}
	slices.Sort(hrefs)
	want := []string{"/d/", "/d/a/", "/d/b/", "/d/f.txt", "/d/sub/", "/d/sub/g.txt", "/d/sub/up/", "/d/tosub/"}
	if !slices.Equal(hrefs, want) {
		t.Errorf("PROPFIND Depth: infinity lists %q, want %q", hrefs, want)
	}
}

// TestDAVLockOwnerBounded: a LOCK body is parsed before any permission
// is checked, so its DAV:owner must be bounded as it is kept (a
// self-contained fragment repeats the body's namespace on each element:
// 1 MiB could have made gigabytes). Anonymous, who may do nothing here,
// gets 413 at once and the server goes on; an owner of a normal size
// still works for a writer.
func TestDAVLockOwnerBounded(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, dir, "a.txt", []byte("a"))
	s := start(t, "-a", "u:pw", "-v", dir+"::rwmd,u")
	ns := "urn:" + strings.Repeat("n", 800_000)
	els := strings.Repeat(`<a:x a:y="1"/>`, 9000)
	body := `<D:lockinfo xmlns:D="DAV:" xmlns:a="` + ns + `"><D:lockscope><D:exclusive/></D:lockscope><D:locktype><D:write/></D:locktype><D:owner>` + els + `</D:owner></D:lockinfo>`
	t0 := time.Now()
	resp, rb := davReq(t, s, "LOCK", "/a.txt", body)
	wantStatus(t, resp, rb, http.StatusRequestEntityTooLarge)
	if dt := time.Since(t0); dt > 5*time.Second {
		t.Errorf("the refusal took %v", dt)
	}
	resp, rb = davReq(t, s, "LOCK", "/a.txt", `<D:lockinfo xmlns:D="DAV:"><D:lockscope><D:exclusive/></D:lockscope><D:locktype><D:write/></D:locktype><D:owner><D:href>mailto:`+strings.Repeat("u", 3000)+`@example.com</D:href></D:owner></D:lockinfo>`, basicAuth("u:pw"))
	wantStatus(t, resp, rb, http.StatusOK)
	resp, rb = davReq(t, s, "LOCK", "/a.txt", body, basicAuth("u:pw"))
	wantStatus(t, resp, rb, http.StatusRequestEntityTooLarge)
}

// TestCopyLeavesOtherVolumesOut: a folder whose tree on disk holds
// another volume's folder (a private volume nested in a public one, as
// -v /srv::rw -v /srv/docs/private:docs/private:r,adm) or a folder a
// mount hides must not be copied: the copy would put that volume's files
// where its URL no longer guards them. Refused like a move of it (409),
// by copyparty's API and WebDAV, and nothing is made.
func TestCopyLeavesOtherVolumesOut(t *testing.T) {
	t.Parallel()
	top := t.TempDir()
	writeFile(t, top, "docs/readme.txt", []byte("hi"))
	writeFile(t, top, "docs/private/secret.txt", []byte("CANARY-7f3a"))
	writeFile(t, top, "pics/hidden/shadowed.txt", []byte("CANARY-7f3a"))
	other := t.TempDir()
	s := start(t, "-a", "eve:evepw", "-a", "adm:admpw",
		"-v", top+"::rw,eve:A,adm", "-v", top+"/docs/private:docs/private:r,adm", "-v", other+":pics/hidden:r,adm")
	eve := basicAuth("eve:evepw")
	resp, body := s.do(t, "GET", "/docs/private/secret.txt", nil, eve)
	wantStatus(t, resp, body, http.StatusForbidden)
	for _, src := range []string{"/docs", "/pics"} {
		resp, body = s.do(t, "POST", src+"?copy=/stolen"+src, nil, eve)
		wantStatus(t, resp, body, http.StatusConflict)
		resp, body = davReq(t, s, "COPY", src+"/", "", eve, "Destination: /dav"+src)
		wantStatus(t, resp, body, http.StatusConflict)
	}
	for _, p := range []string{"/stolen/docs/private/secret.txt", "/dav/docs/private/secret.txt", "/stolen/pics/hidden/shadowed.txt", "/dav/pics/hidden/shadowed.txt"} {
		if _, body := s.do(t, "GET", p, nil, eve); strings.Contains(string(body), "CANARY-7f3a") {
			t.Errorf("GET %s: another volume's file was copied where eve reads it", p)
		}
	}
	if pathExists(top, "stolen") || pathExists(top, "dav") {
		t.Error("a refused copy made something")
	}
	// A folder without any is copied as before.
	resp, body = s.do(t, "POST", "/docs/readme.txt?copy=/mine/readme.txt", nil, eve)
	wantStatus(t, resp, body, http.StatusCreated)
}

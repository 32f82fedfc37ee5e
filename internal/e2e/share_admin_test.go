package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestShareAdminPerVolume: admin is per volume. A user sees and edits
// their own shares; another user's share only when admin of every volume
// it reaches (the one it lies in, and any whose folder lies inside the
// shared folder on disk). Admin of one volume lists and edits nothing of
// the others, and ?dls shows it only the downloads of its own volumes.
func TestShareAdminPerVolume(t *testing.T) {
	t.Parallel()
	adm, priv := t.TempDir(), t.TempDir()
	writeFile(t, adm, "pub/a.txt", []byte("adm file"))
	writeFile(t, priv, "docs/secret.txt", []byte("PRIVATE"))
	writeFile(t, priv, "docs/inner/deep.txt", []byte("INNER"))
	writeFile(t, priv, "other/o.txt", []byte("other"))
	big, _ := os.Create(filepath.Join(priv, "other", "big.bin"))
	big.Truncate(64 << 20)
	big.Close()
	inner := filepath.Join(priv, "docs", "inner")
	s := start(t, "-a", "alice:apw", "-a", "mallory:mpw", "-a", "boss:bpw", "-a", "carol:cpw", "-a", "root:rpw",
		"-v", adm+":adm:A,mallory:A,boss:A,root",
		"-v", priv+":priv:rw,alice:A,boss:A,root",
		"-v", inner+":inner:A,carol:A,root")
	makeShare(t, s, "apw", map[string]any{"k": "adocs", "vp": []string{"/priv/docs/"}, "perms": []string{"read"}}, 201)
	makeShare(t, s, "apw", map[string]any{"k": "aother", "vp": []string{"/priv/other/"}, "exp": "60", "perms": []string{"read"}}, 201)
	makeShare(t, s, "mpw", map[string]any{"k": "mpub", "vp": []string{"/adm/pub/"}, "perms": []string{"read"}}, 201)

	keys := func(pw string) []string {
		var ks []string
		for _, r := range listShares(t, s, pw) {
			ks = append(ks, r.K)
		}
		slices.Sort(ks)
		return ks
	}
	for pw, want := range map[string][]string{
		"apw": {"adocs", "aother"}, // her own
		"mpw": {"mpub"},            // admin of /adm only: his own, not alice's
		"cpw": nil,                 // admin of /inner only
		"bpw": {"aother", "mpub"},  // admin of /adm and /priv, not of /inner, which adocs reaches
		"rpw": {"adocs", "aother", "mpub"},
	} {
		if got := keys(pw); !slices.Equal(got, want) {
			t.Errorf("%s lists shares %v, want %v", pw, got, want)
		}
	}
	resp, body := s.do(t, "GET", "/?shares", nil, "PW: mpw")
	wantStatus(t, resp, body, 200)
	if strings.Contains(string(body), "adocs") || strings.Contains(string(body), "aother") {
		t.Errorf("?shares page for mallory shows alice's shares: %s", body)
	}

	// Editing: not by an admin of another volume.
	for _, act := range []string{"rm", "30"} {
		for _, pw := range []string{"mpw", "cpw"} {
			resp, body := s.do(t, "POST", "/shr/aother?eshare="+act, nil, "PW: "+pw)
			wantStatus(t, resp, body, 403)
		}
		resp, body := s.do(t, "POST", "/shr/adocs?eshare="+act, nil, "PW: bpw")
		wantStatus(t, resp, body, 403)
	}
	for _, k := range []string{"adocs/secret.txt", "aother/o.txt"} {
		resp, body := s.do(t, "GET", "/shr/"+k, nil)
		wantStatus(t, resp, body, 200)
	}
	// By the owner, and by an admin of every volume the share reaches.
	resp, body = s.do(t, "POST", "/shr/aother?eshare=30", nil, "PW: apw")
	wantStatus(t, resp, body, 303)
	resp, body = s.do(t, "POST", "/shr/aother?eshare=rm", nil, "PW: bpw")
	wantStatus(t, resp, body, 303)
	resp, body = s.do(t, "POST", "/shr/mpub?eshare=rm", nil, "PW: bpw")
	wantStatus(t, resp, body, 303)
	resp, body = s.do(t, "POST", "/shr/adocs?eshare=rm", nil, "PW: rpw")
	wantStatus(t, resp, body, 303)
	if got := keys("rpw"); len(got) != 0 {
		t.Fatalf("after the deletes: %v", got)
	}

	// ?dls: a download in /priv is shown to admins of /priv only.
	req, _ := http.NewRequest("GET", s.URL+"/priv/other/big.bin", nil)
	req.Header.Set("PW", "apw")
	dl, err := (&http.Client{}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer dl.Body.Close()
	if _, err := io.CopyN(io.Discard, dl.Body, 1<<20); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(dlsGet(t, s, "PW: bpw")) != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the download is not listed for an admin of its volume")
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, pw := range []string{"mpw", "cpw"} {
		if rows := dlsGet(t, s, "PW: "+pw); len(rows) != 0 {
			b, _ := json.Marshal(rows)
			t.Errorf("%s (admin of another volume) sees downloads in /priv: %s", pw, b)
		}
	}
	// ?ru: the same rule (uploads into /priv only for its admins).
	resp, body = s.do(t, "PUT", "/priv/other/up.txt", []byte("x"), "PW: apw")
	wantStatus(t, resp, body, 201)
	resp, body = s.do(t, "GET", "/?ru&j", nil, "PW: mpw")
	wantStatus(t, resp, body, 200)
	if strings.Contains(string(body), "/priv/") {
		t.Errorf("?ru for the admin of /adm shows /priv: %s", body)
	}
	resp, body = s.do(t, "GET", "/?ru&j", nil, "PW: bpw")
	wantStatus(t, resp, body, 200)
	if !strings.Contains(string(body), "/priv/other/up.txt") {
		t.Errorf("?ru for the admin of /priv lacks its upload: %s", body)
	}
}

// TestShareShadowedByMount: a folder that another volume is mounted over
// (here its own folder on disk, carved out as a private volume) is that
// volume's by URL; a share of the folder around it reaches it neither by
// URL nor by listing nor in an archive, though it lies below on disk.
func TestShareShadowedByMount(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "proj/a.txt", []byte("public"))
	writeFile(t, dir, "proj/hidden/x.txt", []byte("BOBS-PRIVATE"))
	s := start(t, "-a", "alice:apw", "-a", "bob:bpw",
		"-v", dir+"::rw,alice", "-v", filepath.Join(dir, "proj", "hidden")+":proj/hidden:A,bob")
	resp, body := s.do(t, "GET", "/proj/hidden/x.txt", nil, "PW: apw")
	wantStatus(t, resp, body, 403) // alice may not, by URL
	makeShare(t, s, "apw", map[string]any{"k": "p", "vp": []string{"/proj/"}, "perms": []string{"read", "write"}}, 201)
	for _, target := range []string{"/shr/p/hidden/x.txt", "/shr/p/hidden/", "/shr/p/hidden/?ls", "/shr/p/?ls", "/shr/p/", "/shr/p/?tar", "/shr/p/hidden/?tar"} {
		resp, body := s.do(t, "GET", target, nil)
		if strings.Contains(string(body), "BOBS-PRIVATE") || strings.Contains(string(body), "x.txt") || strings.Contains(string(body), "hidden/") {
			t.Errorf("%s: %d %.300q", target, resp.StatusCode, body)
		}
	}
	resp, body = s.do(t, "POST", "/shr/p/?tar", []byte(`["hidden"]`), "Content-Type: application/json")
	if resp.StatusCode < 400 || strings.Contains(string(body), "BOBS-PRIVATE") {
		t.Errorf("selecting the hidden folder: %d %.200q", resp.StatusCode, body)
	}
	resp, body = s.do(t, "PUT", "/shr/p/hidden/planted.txt", []byte("x"))
	if resp.StatusCode < 400 {
		t.Errorf("PUT into the hidden folder through the share: %d %s", resp.StatusCode, body)
	}
	if _, err := os.Stat(filepath.Join(dir, "proj", "hidden", "planted.txt")); err == nil {
		t.Error("a file was planted in the other volume")
	}
	resp, body = s.do(t, "GET", "/shr/p/a.txt", nil)
	wantStatus(t, resp, body, 200)
}

// TestShareThroughLink: a share is served through a view that follows no
// symbolic link to its folder (nor, for a share of files, to a file), so
// one that could not be served is refused when made, and one whose folder
// became a link since is "gone", not the link's target.
func TestShareThroughLink(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "real/x.txt", []byte("X"))
	writeFile(t, dir, "other/secret.txt", []byte("SECRET"))
	os.Symlink("real", filepath.Join(dir, "lnk"))
	os.Symlink("x.txt", filepath.Join(dir, "real", "l.txt"))
	s := start(t, "-a", "alice:apw", "-v", dir+"::rw,alice")
	for _, vp := range [][]string{{"/lnk/"}, {"/lnk/x.txt"}, {"/real/l.txt"}, {"/real/x.txt", "/real/l.txt"}} {
		makeShare(t, s, "apw", map[string]any{"k": "bad", "vp": vp, "perms": []string{"read"}}, 400)
	}
	makeShare(t, s, "apw", map[string]any{"k": "ok", "vp": []string{"/real/"}, "perms": []string{"read"}}, 201)
	resp, body := s.do(t, "GET", "/shr/ok/x.txt", nil)
	wantStatus(t, resp, body, 200)
	// The shared folder replaced by a link to another folder: not served.
	if err := os.Rename(filepath.Join(dir, "real"), filepath.Join(dir, "real.old")); err != nil {
		t.Fatal(err)
	}
	os.Symlink("other", filepath.Join(dir, "real"))
	resp, body = s.do(t, "GET", "/shr/ok/secret.txt", nil)
	if resp.StatusCode != 404 || strings.Contains(string(body), "SECRET") {
		t.Fatalf("after the swap: %d %q", resp.StatusCode, body)
	}
}

// TestShareNoFileKeys: on a volume with file keys (fk), where g lets
// anyone download a file given its key, a share serves its files without
// keys, and none of its answers (listings, upload replies) hands out a
// file's key: the key opens the file at its own URL, outside the share,
// for as long as the file is unchanged, so a visitor would keep access
// after the share expired or was deleted.
func TestShareNoFileKeys(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "proj/a.txt", []byte("KEYED-CONTENT"))
	s := start(t, "-a", "alice:apw", "-v", dir+"::g:rw,alice:c,fk")
	resp, body := s.do(t, "GET", "/proj/a.txt", nil)
	if resp.StatusCode < 400 {
		t.Fatalf("without its key: %d %q", resp.StatusCode, body)
	}
	makeShare(t, s, "apw", map[string]any{"k": "fkd", "vp": []string{"/proj/"}, "perms": []string{"read", "write"}}, 201)
	makeShare(t, s, "apw", map[string]any{"k": "fkf", "vp": []string{"/proj/a.txt"}}, 201)
	keyRE := regexp.MustCompile(`[?&]k=[A-Za-z0-9_-]+`)
	for _, p := range []string{"/shr/fkd/?ls", "/shr/fkd/?ls=t", "/shr/fkd/", "/shr/fkf/?ls", "/shr/fkf/"} {
		resp, body := s.do(t, "GET", p, nil)
		if resp.StatusCode >= 400 && !strings.HasPrefix(p, "/shr/fkf") {
			t.Errorf("GET %s: %d %q", p, resp.StatusCode, body)
		}
		if k := keyRE.Find(body); k != nil {
			t.Errorf("GET %s hands out a file key (%s): %.300q", p, k, body)
		}
	}
	resp, body = s.do(t, "GET", "/shr/fkd/a.txt", nil)
	if resp.StatusCode != 200 || string(body) != "KEYED-CONTENT" {
		t.Errorf("the shared file without a key: %d %q", resp.StatusCode, body)
	}
	resp, body = s.do(t, "PUT", "/shr/fkd/up.txt?j", []byte("new"))
	wantStatus(t, resp, body, 201)
	if k := keyRE.Find(body); k != nil {
		t.Errorf("an upload into the share hands out a file key (%s): %s", k, body)
	}
	resp, body = s.do(t, "PUT", "/shr/fkd/up2.txt", []byte("new"))
	wantStatus(t, resp, body, 201)
	if k := keyRE.Find(body); k != nil {
		t.Errorf("an upload into the share hands out a file key (%s): %s", k, body)
	}
}

// TestShareDeleteWithBothCookies: a browser that logged in to its account
// (cppwd at /) and then to one of its own password shares (cppwd at the
// share's path) sends both cookies to the share's path, the share's
// first. Deleting the share from the shares page (POST ?eshare=rm) is an
// account's act: it takes the account's cookie, and neither fails as a
// wrong password nor clears the account's cookie (a logout).
func TestShareDeleteWithBothCookies(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, dir, "docs/a.txt", []byte("a"))
	s := start(t, "-a", "alice:apw", "-v", dir+"::rw,alice")
	makeShare(t, s, "apw", map[string]any{"k": "both", "vp": []string{"/docs/"}, "pw": "sharepw"}, 201)
	cookies := "Cookie: cppwd=sharepw; cppwd=apw" // the longer path first (RFC 6265)
	resp, body := s.do(t, "GET", "/shr/both/a.txt", nil, cookies)
	wantStatus(t, resp, body, 200)
	resp, body = s.do(t, "POST", "/shr/both?eshare=rm", nil, cookies)
	wantStatus(t, resp, body, 303)
	for _, c := range resp.Cookies() {
		if c.Name == "cppwd" {
			t.Errorf("deleting the share set a cppwd cookie (%q, path %q): the account was logged out", c.Value, c.Path)
		}
	}
	resp, body = s.do(t, "GET", "/shr/both/a.txt", nil, cookies)
	wantStatus(t, resp, body, 404)
	// The share's cookie alone is no account's password.
	makeShare(t, s, "apw", map[string]any{"k": "two", "vp": []string{"/docs/"}, "pw": "sharepw"}, 201)
	resp, body = s.do(t, "POST", "/shr/two?eshare=rm", nil, "Cookie: cppwd=sharepw")
	wantStatus(t, resp, body, 401)
}

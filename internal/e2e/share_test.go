package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// shareSetup makes a volume with a folder to share and a sibling whose
// name starts the same.
func shareSetup(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	writeFile(t, dir, "proj/a.txt", []byte("file a"))
	writeFile(t, dir, "proj/sub/deep.txt", []byte("deep"))
	writeFile(t, dir, "proj-secret/x.txt", []byte("SECRET"))
	writeFile(t, dir, "projx.txt", []byte("SECRET2"))
	writeFile(t, dir, "top.txt", []byte("top file"))
	if err := os.Symlink("../proj-secret/x.txt", filepath.Join(dir, "proj", "link.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../proj-secret", filepath.Join(dir, "proj", "outdir")); err != nil {
		t.Fatal(err)
	}
	return dir
}

func shareArgs(dir string, extra ...string) []string {
	return append([]string{"-a", "alice:apw", "-a", "bob:bpw", "-a", "boss:xpw", "-a", "reader:rpw",
		"-v", dir + "::rwmd,alice,bob:A,boss:r,reader"}, extra...)
}

func TestShareFolderEndToEnd(t *testing.T) {
	dir := shareSetup(t)
	s := start(t, shareArgs(dir)...)
	p := makeShare(t, s, "apw", map[string]any{"k": "projkey", "vp": []string{"/proj/"}, "pw": "", "exp": "60", "perms": []string{"read"}}, 201)
	if p != "/shr/projkey/" {
		t.Fatalf("share path %q", p)
	}
	// Anonymous use: the folder, its files, its subfolders, ?ls.
	for path, want := range map[string]string{"/shr/projkey/a.txt": "file a", "/shr/projkey/sub/deep.txt": "deep"} {
		resp, body := s.do(t, "GET", path, nil)
		wantStatus(t, resp, body, 200)
		if string(body) != want {
			t.Fatalf("%s: %q", path, body)
		}
	}
	resp, body := s.do(t, "GET", "/shr/projkey/", nil)
	wantStatus(t, resp, body, 200)
	if !strings.Contains(string(body), "a.txt") || strings.Contains(string(body), "proj-secret") {
		t.Fatalf("listing: %s", body)
	}
	resp, body = s.do(t, "GET", "/shr/projkey/?ls", nil)
	wantStatus(t, resp, body, 200)
	if !strings.Contains(string(body), `"sub/"`) {
		t.Fatalf("?ls: %s", body)
	}
	resp, _ = s.do(t, "GET", "/shr/projkey", nil)
	if resp.StatusCode != 301 || resp.Header.Get("Location") != "/shr/projkey/" {
		t.Fatalf("no-slash: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	// Exactly the shared scope.
	for _, target := range []string{
		"/shr/projkey/../proj-secret/x.txt", "/shr/projkey/%2e%2e/proj-secret/x.txt", "/shr/projkey/..%2fproj-secret/x.txt",
		"/shr/projkey/sub/../../projx.txt", "/shr/projkey/%2E%2E%2Fprojx.txt", "/shr/projkey/..%5cprojx.txt",
		"/shr/projkey-secret/x.txt", "/shr/projke/../proj-secret/x.txt", "/shr/projkeyx/", "/shr/projkey/link.txt",
		"/shr/projkey/.hist/shares.json", "/shr/../proj-secret/x.txt", "/shr/%2e%2e/top.txt", "/shr/projkey%2f..%2f..%2ftop.txt",
		"/shr/", "/shr", "/shr/projkey/?tree", "/shr/projkey/?ru&j",
	} {
		resp, body := rawRequest(t, s, "GET", target, nil)
		if resp.StatusCode < 400 || strings.Contains(string(body), "SECRET") || strings.Contains(string(body), "top file") {
			t.Errorf("%s: %d %.200s", target, resp.StatusCode, body)
		}
	}
	// Archives of the share: only the shared folder, the link to a file
	// outside it left out.
	for _, target := range []string{"/shr/projkey/?tar", "/shr/projkey/?zip", "/shr/projkey/?tar=gz", "/shr/projkey/sub/?tar"} {
		resp, body := rawRequest(t, s, "GET", target, nil)
		if resp.StatusCode != 200 || strings.Contains(string(body), "SECRET") || strings.Contains(string(body), "top file") ||
			strings.Contains(string(body), "link.txt") {
			t.Errorf("%s: %d %.200q", target, resp.StatusCode, body)
		}
	}
	// Decoded: exactly the shared files, byte for byte; neither link
	// (to a file and to a folder outside the share) is followed.
	for _, c := range []struct{ target, format string }{
		{target: "/shr/projkey/?tar", format: "tar"}, {target: "/shr/projkey/?zip", format: "zip"}, {target: "/shr/projkey/?tar=gz", format: "tar=gz"},
		{target: "/shr/projkey/?tar=pax", format: "tar"}, {target: "/shr/projkey/sub/?zip", format: "zip"},
	} {
		resp, body := rawRequest(t, s, "GET", c.target, nil)
		if resp.StatusCode != 200 {
			t.Errorf("%s: %d", c.target, resp.StatusCode)
			continue
		}
		files := map[string]string{}
		for name, data := range readArchive(t, c.format, body) {
			if !strings.HasSuffix(name, "/") {
				files[name] = string(data)
			}
		}
		want := map[string]string{"a.txt": "file a", "sub/deep.txt": "deep"}
		if strings.Contains(c.target, "/sub/") {
			want = map[string]string{"deep.txt": "deep"}
		}
		if len(files) != len(want) {
			t.Errorf("%s: files %v, want %v", c.target, files, want)
		}
		for name, data := range files {
			_, rel, _ := strings.Cut(name, "/")
			if want[rel] != data || strings.Contains(name, "link") || strings.Contains(name, "outdir") {
				t.Errorf("%s: %s = %q, want only %v", c.target, name, data, want)
			}
		}
	}
	// A share without read permission gets no archive.
	up := makeShare(t, s, "apw", map[string]any{"k": "dropkey", "vp": []string{"/proj/"}, "pw": "", "exp": "60", "perms": []string{"write"}}, 201)
	if resp, body := rawRequest(t, s, "GET", up+"?tar", nil); resp.StatusCode < 400 || strings.Contains(string(body), "file a") {
		t.Errorf("?tar in a write-only share: %d %.200q", resp.StatusCode, body)
	}
	if resp, _ := rawRequest(t, s, "GET", "/shr/projkey/?tar=nope", nil); resp.StatusCode != 400 {
		t.Errorf("?tar=nope in a share: %d, want 400", resp.StatusCode)
	}
	// Read-only share: no uploads.
	resp, body = s.do(t, "PUT", "/shr/projkey/new.txt", []byte("x"))
	if resp.StatusCode != 401 && resp.StatusCode != 403 {
		t.Fatalf("PUT into read-only share: %d %s", resp.StatusCode, body)
	}
	if _, err := os.Stat(filepath.Join(dir, "proj", "new.txt")); err == nil {
		t.Fatal("file created through a read-only share")
	}
}

func TestShareWriteFileAndPassword(t *testing.T) {
	dir := shareSetup(t)
	s := start(t, shareArgs(dir)...)
	// A write share takes anonymous uploads into the shared folder only.
	makeShare(t, s, "apw", map[string]any{"k": "drop", "vp": []string{"/proj/sub/"}, "exp": 0, "perms": []string{"read", "write"}}, 201)
	resp, body := s.do(t, "PUT", "/shr/drop/up.txt", []byte("uploaded"))
	wantStatus(t, resp, body, 201)
	if b, _ := os.ReadFile(filepath.Join(dir, "proj", "sub", "up.txt")); string(b) != "uploaded" {
		t.Fatalf("upload landed elsewhere: %q", b)
	}
	// A file share reaches that file only.
	if p := makeShare(t, s, "apw", map[string]any{"k": "onefile", "vp": []string{"/top.txt"}, "perms": []string{"read"}}, 201); p != "/shr/onefile/top.txt" {
		t.Fatalf("file share path %q", p)
	}
	for _, path := range []string{"/shr/onefile/top.txt", "/shr/onefile"} {
		resp, body := s.do(t, "GET", path, nil)
		wantStatus(t, resp, body, 200)
		if string(body) != "top file" {
			t.Fatalf("%s: %q", path, body)
		}
	}
	for _, path := range []string{"/shr/onefile/projx.txt", "/shr/onefile/top.txt/x", "/shr/onefile/proj/a.txt"} {
		resp, body := s.do(t, "GET", path, nil)
		if resp.StatusCode != 404 {
			t.Fatalf("%s: %d %s", path, resp.StatusCode, body)
		}
	}
	// A password share wants its password, nothing else.
	makeShare(t, s, "bpw", map[string]any{"k": "locked", "vp": []string{"/proj/"}, "pw": "s3cret", "exp": "10", "perms": []string{"read"}}, 201)
	for _, hdr := range [][]string{nil, {"PW: wrong"}, {"PW: bpw"}, {"PW: apw"}} {
		resp, body := s.do(t, "GET", "/shr/locked/a.txt", nil, hdr...)
		wantStatus(t, resp, body, 401)
	}
	resp, body = s.do(t, "GET", "/shr/locked/a.txt?pw=s3cret", nil)
	wantStatus(t, resp, body, 200)
	resp, body = s.do(t, "GET", "/shr/locked/a.txt", nil, "PW: s3cret")
	wantStatus(t, resp, body, 200)
	resp, body = s.do(t, "GET", "/shr/locked/a.txt", nil, "Cookie: cppwd=s3cret")
	wantStatus(t, resp, body, 200)
}

func TestShareListDeleteExpireRestart(t *testing.T) {
	t.Parallel()
	dir := shareSetup(t)
	s := start(t, shareArgs(dir)...)
	makeShare(t, s, "apw", map[string]any{"k": "a1", "vp": []string{"/proj/"}, "pw": "x", "exp": "60", "perms": []string{"read"}}, 201)
	makeShare(t, s, "bpw", map[string]any{"k": "b1", "vp": "/top.txt", "exp": 0, "perms": "read"}, 201)
	makeShare(t, s, "apw", map[string]any{"k": "soon", "vp": []string{"/proj/"}, "exp": "0.03", "perms": []string{"read"}}, 201)
	rows := listShares(t, s, "apw")
	if len(rows) != 2 || rows[0].K != "a1" || !rows[0].PW || rows[0].Un != "alice" || rows[0].T1 == 0 || rows[0].VP != "/proj" {
		t.Fatalf("alice's shares: %+v", rows)
	}
	if rows := listShares(t, s, "bpw"); len(rows) != 1 || rows[0].K != "b1" || rows[0].T1 != 0 || rows[0].Files[0] != "top.txt" {
		t.Fatalf("bob's shares: %+v", rows)
	}
	if rows := listShares(t, s, "xpw"); len(rows) != 3 {
		t.Fatalf("admin sees %d shares", len(rows))
	}
	resp, body := s.do(t, "GET", "/?shares", nil)
	wantStatus(t, resp, body, 401)
	resp, body = s.do(t, "GET", "/?shares", nil, "PW: apw")
	wantStatus(t, resp, body, 200)
	if !strings.Contains(string(body), "a1") || strings.Contains(string(body), "b1") || !strings.Contains(resp.Header.Get("Content-Security-Policy"), "default-src 'none'") {
		t.Fatalf("HTML ?shares: %s", body)
	}
	// Expiry: gone on time.
	resp, body = s.do(t, "GET", "/shr/soon/a.txt", nil)
	wantStatus(t, resp, body, 200)
	time.Sleep(2200 * time.Millisecond)
	resp, body = s.do(t, "GET", "/shr/soon/a.txt", nil)
	wantStatus(t, resp, body, 404)
	if rows := listShares(t, s, "apw"); len(rows) != 1 {
		t.Fatalf("expired share still listed: %+v", rows)
	}
	// Extend: by the creator, from the current expiry.
	resp, body = s.do(t, "POST", "/shr/a1?eshare=30", nil, "PW: apw")
	wantStatus(t, resp, body, 303)
	if rows := listShares(t, s, "apw"); len(rows) != 1 || rows[0].T1 < time.Now().Unix()+85*60 {
		t.Fatalf("after extending: %+v", rows)
	}
	resp, body = s.do(t, "POST", "/shr/a1?eshare=abc", nil, "PW: apw")
	wantStatus(t, resp, body, 400)
	// Delete: not by another user; by the creator or an admin.
	resp, body = s.do(t, "POST", "/shr/a1?eshare=rm", nil, "PW: bpw")
	wantStatus(t, resp, body, 403)
	resp, body = s.do(t, "POST", "/shr/a1?eshare=rm", nil)
	wantStatus(t, resp, body, 401)
	// Restart: the shares survive.
	if err := s.stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, ".hist", "shares.json")); err != nil {
		t.Fatal(err)
	}
	s = start(t, shareArgs(dir)...)
	resp, body = s.do(t, "GET", "/shr/a1/a.txt?pw=x", nil)
	wantStatus(t, resp, body, 200)
	resp, body = s.do(t, "GET", "/shr/b1/top.txt", nil)
	wantStatus(t, resp, body, 200)
	resp, body = s.do(t, "GET", "/shr/a1/a.txt", nil)
	wantStatus(t, resp, body, 401)
	resp, body = s.do(t, "POST", "/shr/a1?eshare=rm", nil, "PW: apw")
	wantStatus(t, resp, body, 303)
	resp, body = s.do(t, "POST", "/shr/b1/top.txt?eshare=rm", nil, "PW: xpw")
	wantStatus(t, resp, body, 303)
	for _, k := range []string{"a1", "b1"} {
		resp, body = s.do(t, "GET", "/shr/"+k+"/a.txt?pw=x", nil)
		wantStatus(t, resp, body, 404)
	}
	if rows := listShares(t, s, "xpw"); len(rows) != 0 {
		t.Fatalf("after deletes: %+v", rows)
	}
	// Deleted stays deleted across a restart.
	s.stop()
	s = start(t, shareArgs(dir)...)
	resp, body = s.do(t, "GET", "/shr/b1/top.txt", nil)
	wantStatus(t, resp, body, 404)
}

func TestShareSeveralFiles(t *testing.T) {
	dir := shareSetup(t)
	s := start(t, shareArgs(dir)...)
	if p := makeShare(t, s, "apw", map[string]any{"k": "multi", "vp": []string{"/top.txt", "/projx.txt"}, "exp": "5", "perms": []string{"read", "write"}}, 201); p != "/shr/multi/" {
		t.Fatalf("path %q", p)
	}
	resp, body := s.do(t, "GET", "/shr/multi/", nil)
	wantStatus(t, resp, body, 200)
	page := string(body)
	if !strings.Contains(page, "top.txt") || !strings.Contains(page, "projx.txt") || strings.Contains(page, "proj-secret") || strings.Contains(page, ">proj/<") {
		t.Fatalf("listing: %s", page)
	}
	resp, body = s.do(t, "GET", "/shr/multi/?ls", nil)
	wantStatus(t, resp, body, 200)
	var ls struct {
		Dirs  []any `json:"dirs"`
		Files []any `json:"files"`
	}
	if err := json.Unmarshal(body, &ls); err != nil || len(ls.Files) != 2 || len(ls.Dirs) != 0 {
		t.Fatalf("?ls: %v %s", err, body)
	}
	for path, code := range map[string]int{"/shr/multi/top.txt": 200, "/shr/multi/projx.txt": 200, "/shr/multi/proj/a.txt": 404, "/shr/multi/proj-secret/x.txt": 404, "/shr/multi/other.txt": 404} {
		resp, body := s.do(t, "GET", path, nil)
		if resp.StatusCode != code {
			t.Errorf("%s: %d %s", path, resp.StatusCode, body)
		}
	}
	resp, body = s.do(t, "PUT", "/shr/multi/new.txt", []byte("x"))
	if resp.StatusCode < 400 {
		t.Fatalf("PUT into a several-file share: %d %s", resp.StatusCode, body)
	}
	for _, vps := range [][]string{{"/top.txt", "/proj/"}, {"/top.txt", "/proj/a.txt"}, {"/top.txt", "/nope.txt"}, {"/proj/", "/proj/sub/"}} {
		makeShare(t, s, "apw", map[string]any{"k": "bad", "vp": vps}, 400)
	}
}

func TestShareBadInput(t *testing.T) {
	dir := shareSetup(t)
	s := start(t, shareArgs(dir)...)
	makeShare(t, s, "apw", map[string]any{"k": "taken", "vp": []string{"/proj/"}, "perms": []string{"read"}}, 201)
	before := userTree(t, dir)
	for _, tc := range []struct {
		pw   string
		body string
		code int
	}{
		{pw: "apw", body: `{"k":"../x","vp":["/proj/"],"perms":["read"]}`, code: 400},
		{pw: "apw", body: `{"k":"a/b","vp":["/proj/"],"perms":["read"]}`, code: 400},
		{pw: "apw", body: `{"k":"a b","vp":["/proj/"],"perms":["read"]}`, code: 400},
		{pw: "apw", body: `{"k":"..","vp":["/proj/"],"perms":["read"]}`, code: 400},
		{pw: "apw", body: `{"k":"` + strings.Repeat("k", 65) + `","vp":["/proj/"]}`, code: 400},
		{pw: "apw", body: `{"k":"taken","vp":["/proj/"],"perms":["read"]}`, code: 400},
		{pw: "apw", body: `{"k":"n1","vp":["/nope/"],"perms":["read"]}`, code: 400},
		{pw: "apw", body: `{"k":"n2","vp":["/proj/../proj-secret/"],"perms":["read"]}`, code: 400},
		{pw: "apw", body: `{"k":"n3","vp":["/shr/taken/"],"perms":["read"]}`, code: 400},
		{pw: "apw", body: `{"k":"n4","vp":["/proj/a.txt","/proj/sub/deep.txt"],"perms":["read"]}`, code: 400},
		{pw: "apw", body: `{"k":"n5","vp":["/proj/"],"exp":"-5","perms":["read"]}`, code: 400},
		{pw: "apw", body: `{"k":"n6","vp":["/proj/"],"exp":"soon","perms":["read"]}`, code: 400},
		{pw: "apw", body: `{"k":"n7","vp":["/proj/"],"exp":"1e300","perms":["read"]}`, code: 400},
		{pw: "apw", body: `{"k":"n8","vp":["/proj/"],"perms":["admin"]}`, code: 400},
		{pw: "apw", body: `{"k":"n9","vp":["/proj/"],"perms":["read"]`, code: 400},
		{pw: "apw", body: `["k","vp"]`, code: 400},
		{pw: "apw", body: `{"k":"n10","vp":[1,2],"perms":["read"]}`, code: 400},
		{pw: "rpw", body: `{"k":"n11","vp":["/proj/"],"perms":["read","write"]}`, code: 403},
		{pw: "", body: `{"k":"n12","vp":["/proj/"],"perms":["read"]}`, code: 401},
	} {
		hdr := []string{"Content-Type: text/plain"}
		if tc.pw != "" {
			hdr = append(hdr, "PW: "+tc.pw)
		}
		resp, body := s.do(t, "POST", "/?share", []byte(tc.body), hdr...)
		if resp.StatusCode != tc.code {
			t.Errorf("%s: %d %s, want %d", tc.body, resp.StatusCode, body, tc.code)
		}
	}
	if rows := listShares(t, s, "xpw"); len(rows) != 1 {
		t.Fatalf("bad requests made shares: %+v", rows)
	}
	if got := userTree(t, dir); strings.Join(got, ",") != strings.Join(before, ",") {
		t.Fatalf("volume changed: %v", got)
	}
	// The request path is shared when vp is absent; curl -d works.
	resp, body := s.do(t, "POST", "/proj/sub/?share", []byte(`{"k":"bypath"}`), "PW: apw", "Content-Type: application/x-www-form-urlencoded")
	wantStatus(t, resp, body, 201)
	resp, body = s.do(t, "GET", "/shr/bypath/deep.txt", nil)
	wantStatus(t, resp, body, 200)
}

package e2e

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"
)

// TestArchiveMounts: a folder's archive holds the volumes mounted below
// it that the user may read, where their URLs put them (a real folder a
// mount hides stays out, as it does for URLs), after the folder's own
// sub-folders; each volume keeps its own dotfile permission. Selections
// resolve names the same way.
func TestArchiveMounts(t *testing.T) {
	t.Parallel()
	top, music, live, priv, deep, wo := t.TempDir(), t.TempDir(), t.TempDir(), t.TempDir(), t.TempDir(), t.TempDir()
	writeFile(t, top, "a.txt", []byte("a"))
	writeFile(t, top, "sub/s.txt", []byte("s"))
	writeFile(t, top, "music/hidden.txt", []byte("hidden by the /music volume"))
	writeFile(t, music, "m.mp3", []byte("m"))
	writeFile(t, music, ".dot", []byte("dot"))
	writeFile(t, music, "live/l.txt", []byte("hidden by the /music/live volume"))
	writeFile(t, live, "x.txt", []byte("x"))
	writeFile(t, priv, "p.txt", []byte("p"))
	writeFile(t, deep, "d.txt", []byte("d"))
	writeFile(t, wo, "w.txt", []byte("w"))
	s := start(t, "-a", "u:pw",
		"-v", top+"::r", "-v", music+":music:r:r.,u", "-v", live+":music/live:r",
		"-v", priv+":sub/priv:r,u", "-v", deep+":deep/er:r", "-v", wo+":wo:w",
		"-v", top+":sub/again:r") // the top folder again, below itself: a loop, not entered

	anon := map[string][]byte{"a.txt": []byte("a"), "sub/s.txt": []byte("s"), "music/m.mp3": []byte("m"),
		"music/live/x.txt": []byte("x"), "deep/er/d.txt": []byte("d")}
	user := map[string][]byte{"sub/priv/p.txt": []byte("p"), "music/.dot": []byte("dot")}
	for k, v := range anon {
		user[k] = v
	}
	for _, format := range []string{"tar", "zip", "zip=crc", "tar=gz"} {
		resp, body := s.do(t, "GET", "/?"+format, nil)
		wantStatus(t, resp, body, 200)
		wantArchiveFiles(t, "anonymous "+format, readArchive(t, format, body), "top/", anon)
		resp, body = s.do(t, "GET", "/?"+format, nil, basicAuth("u:pw"))
		wantStatus(t, resp, body, 200)
		wantArchiveFiles(t, "u "+format, readArchive(t, format, body), "top/", user)
		resp, body = s.do(t, "GET", "/music/?"+format+"&nodot", nil, basicAuth("u:pw"))
		wantStatus(t, resp, body, 200)
		wantArchiveFiles(t, "u /music/ nodot "+format, readArchive(t, format, body), "music/", map[string][]byte{"m.mp3": []byte("m"), "live/x.txt": []byte("x")})
	}

	// copyparty's order: a folder's files, its sub-folders, then its mounts
	resp, body := s.do(t, "GET", "/?tar", nil, basicAuth("u:pw"))
	wantStatus(t, resp, body, 200)
	var order []string
	tr := tar.NewReader(bytes.NewReader(body))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		order = append(order, strings.TrimPrefix(h.Name, "top/"))
	}
	if got, want := strings.Join(order, " "), "a.txt sub/s.txt sub/priv/p.txt deep/er/d.txt music/.dot music/m.mp3 music/live/x.txt"; got != want {
		t.Errorf("order %q, want %q", got, want)
	}

	// selections: names resolve as URLs do
	sel, _ := json.Marshal([]string{"music/live", "deep", "a.txt"})
	resp, body = s.do(t, "POST", "/?zip", sel, "Content-Type: application/json")
	wantStatus(t, resp, body, 200)
	wantArchiveFiles(t, "selection", readArchive(t, "zip", body), "", map[string][]byte{"music/live/x.txt": []byte("x"), "deep/er/d.txt": []byte("d"), "a.txt": []byte("a")})
	sel, _ = json.Marshal([]string{"sub/priv"})
	resp, body = s.do(t, "POST", "/?tar", sel, "Content-Type: application/json")
	wantStatus(t, resp, body, 403)
	resp, body = s.do(t, "POST", "/?tar", sel, "Content-Type: application/json", basicAuth("u:pw"))
	wantStatus(t, resp, body, 200)
	wantArchiveFiles(t, "u selection", readArchive(t, "tar", body), "", map[string][]byte{"sub/priv/p.txt": []byte("p")})
	// a volume the user may not read; files that mounts hide (no URL)
	for name, code := range map[string]int{"wo": 403, "music/hidden.txt": 400, "music/live/l.txt": 400} {
		sel, _ = json.Marshal([]string{name})
		resp, body = s.do(t, "POST", "/?tar", sel, "Content-Type: application/json")
		wantStatus(t, resp, body, code)
	}
}

// TestArchiveVirtualFolders: a folder no volume has, with volumes mounted
// below it (the server's root when only /music is mounted, or /deep for
// /deep/er), is archived as the volumes below it that the user may read;
// when there is none, the answer is the listing's 401/403.
func TestArchiveVirtualFolders(t *testing.T) {
	t.Parallel()
	music, deep, priv, wo := t.TempDir(), t.TempDir(), t.TempDir(), t.TempDir()
	writeFile(t, music, "m.mp3", []byte("m"))
	writeFile(t, deep, "d.txt", []byte("d"))
	writeFile(t, priv, "p.txt", []byte("p"))
	s := start(t, "-a", "u:pw", "-v", music+":music:r", "-v", deep+":deep/er:r", "-v", priv+":p:r,u", "-v", wo+":wo/x:w")
	anon := map[string][]byte{"music/m.mp3": []byte("m"), "deep/er/d.txt": []byte("d")}
	for _, format := range []string{"tar", "zip"} {
		resp, body := s.do(t, "GET", "/?"+format, nil)
		wantStatus(t, resp, body, 200)
		wantArchiveFiles(t, "anonymous / "+format, readArchive(t, format, body), "top/", anon)
		resp, body = s.do(t, "GET", "/?"+format, nil, basicAuth("u:pw"))
		wantStatus(t, resp, body, 200)
		wantArchiveFiles(t, "u / "+format, readArchive(t, format, body), "top/", map[string][]byte{"music/m.mp3": []byte("m"), "deep/er/d.txt": []byte("d"), "p/p.txt": []byte("p")})
		resp, body = s.do(t, "GET", "/deep/?"+format, nil)
		wantStatus(t, resp, body, 200)
		wantArchiveFiles(t, "/deep/ "+format, readArchive(t, format, body), "deep/", map[string][]byte{"er/d.txt": []byte("d")})
	}
	resp, body := s.do(t, "GET", "/wo/?tar", nil)
	wantStatus(t, resp, body, 401)
	resp, body = s.do(t, "GET", "/wo/?tar", nil, basicAuth("u:pw"))
	wantStatus(t, resp, body, 403)
	resp, body = s.do(t, "GET", "/nothing/?tar", nil)
	wantStatus(t, resp, body, 404)
	sel, _ := json.Marshal([]string{"deep", "music/m.mp3"})
	resp, body = s.do(t, "POST", "/?zip", sel, "Content-Type: application/json")
	wantStatus(t, resp, body, 200)
	wantArchiveFiles(t, "selection at /", readArchive(t, "zip", body), "", map[string][]byte{"music/m.mp3": []byte("m"), "deep/er/d.txt": []byte("d")})
	sel, _ = json.Marshal([]string{"p"})
	resp, body = s.do(t, "POST", "/?zip", sel, "Content-Type: application/json")
	wantStatus(t, resp, body, 403)
	sel, _ = json.Marshal([]string{"nothing"})
	resp, body = s.do(t, "POST", "/?zip", sel, "Content-Type: application/json")
	wantStatus(t, resp, body, 400)
}

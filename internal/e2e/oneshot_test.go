package e2e

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"hoard/up2k"
)

// TestUp2kOneShot: one-shot posts (a small file's handshake and bytes in
// one request, up2k.OneShotHeader) against the built binary: the same
// permissions as a handshake and a chunk post (anonymous refused where it
// may only read, nothing written), a write-only folder takes them and its
// answer names no file key, a wrong password and a share are refused, the
// file lands whole with its time, and a second one finds it there.
func TestUp2kOneShot(t *testing.T) {
	t.Parallel()
	vol, drop := t.TempDir(), t.TempDir()
	s := start(t, "-a", "u:pw", "-v", vol+"::r:rw,u:c,fk=8", "-v", drop+":drop:w")
	data := seededBytes(31, 5000)
	f := newUp2kFile(data)
	hs, _ := json.Marshal(map[string]any{"name": "one shot.bin", "size": len(data), "lmod": 1600000000, "hash": f.hashes})
	oneShot := func(folder string, hdr ...string) (*http.Response, handshakeReply, []byte) {
		t.Helper()
		hdr = append(hdr, "Content-Type: application/octet-stream", up2k.OneShotHeader+": "+base64.RawURLEncoding.EncodeToString(hs))
		resp, body := s.do(t, "POST", folder, data, hdr...)
		var rep handshakeReply
		if resp.StatusCode == 200 {
			if err := json.Unmarshal(body, &rep); err != nil {
				t.Fatalf("%s: 200 with %q", folder, body)
			}
		}
		return resp, rep, body
	}

	resp, _, body := oneShot("/")
	if resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden {
		t.Fatalf("anonymous one-shot where it may only read: %d %s", resp.StatusCode, body)
	}
	if pathExists(vol, "one shot.bin") {
		t.Fatal("a refused one-shot wrote its file")
	}
	wantNoPartial(t, vol)

	resp, _, body = oneShot("/", "PW: wrong")
	if resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden {
		t.Fatalf("one-shot with a wrong password: %d %s", resp.StatusCode, body)
	}
	// A share that may write: up2k is not served inside shares (a
	// one-shot post no more than a handshake): refused, nothing written.
	makeShare(t, s, "pw", map[string]any{"k": "os", "vp": []string{"/"}, "perms": []string{"read", "write"}}, 201)
	resp, _, body = oneShot("/shr/os/")
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "share") {
		t.Fatalf("one-shot into a share: %d %s", resp.StatusCode, body)
	}
	if pathExists(vol, "one shot.bin") {
		t.Fatal("a refused one-shot wrote its file")
	}

	resp, rep, body := oneShot("/", "PW: pw")
	if resp.StatusCode != 200 || len(rep.Hash) != 0 || resp.Header.Get(up2k.DoneHeader) != "/one%20shot.bin" {
		t.Fatalf("one-shot: %d %q %s", resp.StatusCode, resp.Header.Get(up2k.DoneHeader), body)
	}
	wantFile(t, vol, "one shot.bin", data)
	if mt, err := volMtime(filepath.Join(vol, "one shot.bin")); err != nil || !mt.Equal(time.Unix(1600000000, 0)) {
		t.Errorf("mtime %v (%v), want the handshake's lmod", mt, err)
	}
	resp, rep, body = oneShot("/", "PW: pw")
	if resp.StatusCode != 200 || len(rep.Hash) != 0 || resp.Header.Get(up2k.DoneHeader) != "" || rep.Name != "one shot.bin" {
		t.Fatalf("again: %d %q %s, want it found there", resp.StatusCode, resp.Header.Get(up2k.DoneHeader), body)
	}

	// Write-only: taken, and the answer names no file key (nor can it be read back).
	resp, rep, body = oneShot("/drop/")
	if resp.StatusCode != 200 || resp.Header.Get(up2k.DoneHeader) == "" {
		t.Fatalf("write-only one-shot: %d %s", resp.StatusCode, body)
	}
	wantFile(t, drop, "one shot.bin", data)
	var raw map[string]any
	json.Unmarshal(body, &raw)
	if _, ok := raw["fk"]; ok {
		t.Errorf("a write-only folder's one-shot answer names a file key: %s", body)
	}
	if resp, _ := s.do(t, "GET", "/drop/one%20shot.bin", nil); resp.StatusCode == 200 {
		t.Error("the write-only file reads back")
	}
	wantNoPartial(t, vol)
	wantNoPartial(t, drop)
}

// TestUpOneShotTree: hoard up into an empty folder switches to one-shot
// posts once the server has needed a few files, so a tree of small files
// costs about one request each; every file arrives whole; a re-run sends
// no bytes (the server has them all: plain handshakes only).
func TestUpOneShotTree(t *testing.T) {
	t.Parallel()
	vol, src := t.TempDir(), t.TempDir()
	tree := filepath.Join(src, "small")
	const n = 300
	var total int64
	for i := range n {
		b := seededBytes(uint64(500+i), 1+i*211)
		writeFile(t, tree, fmt.Sprintf("d%d/f%03d", i%7, i), b)
		total += int64(len(b))
	}
	s := start(t, "-v", vol+"::rw")
	px := newUpProxy(t, s.URL)
	code, out, errOut := hoardUp(t, "--json", px.URL+"/", tree)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	sameTree(t, tree, filepath.Join(vol, "small"))
	wantNoPartial(t, vol)
	// At most the handshakes in flight before the switch (32 at -j 8)
	// and the few that decide it go the old way.
	one, hs := px.oneShots.Load(), px.handshakes.Load()
	t.Logf("%d files: %d one-shot posts, %d handshakes", n, one, hs)
	if one < n-60 || one+hs != n {
		t.Errorf("%d one-shot posts and %d handshakes for %d new files; want most one-shot, one request each", one, hs, n)
	}
	if got := px.ackedBytes.Load(); got != total {
		t.Errorf("%d bytes acknowledged, want %d", got, total)
	}
	if sum := lastSummary(t, out); sum.Uploaded != n || sum.Sent != total {
		t.Errorf("summary %+v", sum)
	}

	px.reset()
	code, out, errOut = hoardUp(t, "--json", px.URL+"/", tree)
	if code != 0 {
		t.Fatalf("re-run: exit %d\n%s\n%s", code, out, errOut)
	}
	if sum := lastSummary(t, out); px.posts.Load() != 0 || px.oneShots.Load() != 0 || sum.Present != n || sum.Sent != 0 {
		t.Errorf("re-run: %d posts, %d one-shot, summary %+v; want none, all present", px.posts.Load(), px.oneShots.Load(), sum)
	}
}

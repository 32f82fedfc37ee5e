package e2e

// Refused up2k input: every case gets the status of contract.md and
// changes nothing on disk outside the upload's own work file.

import (
	"bytes"
	"crypto/sha512"
	"encoding/hex"
	"io/fs"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// snapshotUserFiles records every path below dir except the state folder and work
// files, with a digest of each file's content.
func snapshotUserFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if rel == ".hist" {
			return filepath.SkipDir
		}
		if strings.HasSuffix(rel, ".PARTIAL") {
			return nil
		}
		if d.IsDir() {
			out[rel] = "dir"
			return nil
		}
		b, _ := os.ReadFile(p)
		s := sha512.Sum512(b)
		out[rel] = hex.EncodeToString(s[:8])
		return nil
	})
	return out
}

func wantSameUserFiles(t *testing.T, what string, before, after map[string]string) {
	t.Helper()
	if !maps.Equal(before, after) {
		t.Errorf("%s changed the volume:\nbefore %v\nafter  %v", what, slices.Sorted(maps.Keys(before)), slices.Sorted(maps.Keys(after)))
	}
}

func TestUp2kBadHandshakes(t *testing.T) {
	t.Parallel()
	vol := t.TempDir()
	s := start(t, "-a", "u:pw", "-v", vol+"::r:rw,u")
	writeFile(t, vol, "keep.txt", []byte("keep"))
	h1 := up2kChunkHash([]byte("a"))
	ten := make([]string, 10)
	for i := range ten {
		ten[i] = up2kChunkHash([]byte{byte(i)})
	}
	many := make([]string, 4097)
	for i := range many {
		many[i] = h1
	}
	bigName := strings.Repeat("n", 300)
	for _, tc := range []struct {
		name string
		body string
		code int
		msg  string
	}{
		{name: "count too small", body: `{"name":"a","size":10485760,"hash":` + jsonStrings(ten[:9]) + `}`, code: 400, msg: "expected 10"},
		{name: "count too large", body: `{"name":"a","size":10485760,"hash":` + jsonStrings(append(ten, h1)) + `}`, code: 400, msg: "expected 10"},
		{name: "hashes for an empty file", body: `{"name":"a","size":0,"hash":["` + h1 + `"]}`, code: 400, msg: "expected 0"},
		{name: "negative size", body: `{"name":"a","size":-1,"hash":[]}`, code: 400, msg: "negative"},
		{name: "huge size", body: `{"name":"a","size":9223372036854775807,"hash":["` + h1 + `"]}`, code: 400, msg: "larger than"},
		{name: "size past int64", body: `{"name":"a","size":99999999999999999999,"hash":["` + h1 + `"]}`, code: 400, msg: "size"},
		{name: "fractional size", body: `{"name":"a","size":1.5,"hash":["` + h1 + `"]}`, code: 400, msg: "integer"},
		{name: "size as a string", body: `{"name":"a","size":"1","hash":["` + h1 + `"]}`, code: 400, msg: "integer"},
		{name: "size as an exponent", body: `{"name":"a","size":1e3,"hash":["` + h1 + `"]}`, code: 400, msg: "integer"},
		{name: "no size", body: `{"name":"a","hash":["` + h1 + `"]}`, code: 400, msg: "size"},
		{name: "more than 4096 chunks", body: `{"name":"a","size":1099511627776000,"hash":` + jsonStrings(many) + `}`, code: 400, msg: "4096"},
		{name: "standard base64", body: `{"name":"a","size":1,"hash":["` + h1[:43] + `+"]}`, code: 400, msg: "URL-safe"},
		{name: "slash in a hash", body: `{"name":"a","size":1,"hash":["` + h1[:43] + `/"]}`, code: 400, msg: "URL-safe"},
		{name: "short hash", body: `{"name":"a","size":1,"hash":["` + h1[:43] + `"]}`, code: 400, msg: "characters"},
		{name: "long hash", body: `{"name":"a","size":1,"hash":["` + strings.Repeat("A", 87) + `"]}`, code: 400, msg: "characters"},
		{name: "hash not a string", body: `{"name":"a","size":1,"hash":[5]}`, code: 400, msg: "hash"},
		{name: "no hash list", body: `{"name":"a","size":1}`, code: 400, msg: "hash"},
		{name: "slash in the name", body: `{"name":"a/b","size":1,"hash":["` + h1 + `"]}`, code: 400, msg: "slash"},
		{name: "dot-dot name", body: `{"name":"..","size":1,"hash":["` + h1 + `"]}`, code: 400, msg: "bad file name"},
		{name: "NUL in the name", body: `{"name":"a\u0000b","size":1,"hash":["` + h1 + `"]}`, code: 400, msg: "bad file name"},
		{name: "empty name", body: `{"name":"","size":1,"hash":["` + h1 + `"]}`, code: 400, msg: "bad file name"},
		{name: "name too long", body: `{"name":"` + bigName + `","size":1,"hash":["` + h1 + `"]}`, code: 400, msg: "255"},
		{name: "PARTIAL name", body: `{"name":"x.PARTIAL","size":1,"hash":["` + h1 + `"]}`, code: 400, msg: "PARTIAL"},
		{name: "state folder name", body: `{"name":".hist","size":1,"hash":["` + h1 + `"]}`, code: 400, msg: "reserved"},
		{name: "no name", body: `{"size":1,"hash":["` + h1 + `"]}`, code: 400, msg: "name"},
		{name: "bad replace", body: `{"name":"a","size":1,"hash":["` + h1 + `"],"replace":"always"}`, code: 400, msg: "replace"},
		{name: "invalid json", body: `{"name":`, code: 400, msg: "invalid json"},
		{name: "a JSON array", body: `["a"]`, code: 400, msg: "invalid json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := snapshotUserFiles(t, vol)
			resp, b := s.do(t, "POST", "/up/", []byte(tc.body), "Content-Type: application/json", "PW: pw")
			wantStatus(t, resp, b, tc.code)
			if !strings.Contains(string(b), tc.msg) {
				t.Errorf("message %q does not name %q", b, tc.msg)
			}
			if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
				t.Errorf("error Content-Type %q", resp.Header.Get("Content-Type"))
			}
			wantSameUserFiles(t, tc.name, before, snapshotUserFiles(t, vol))
			if names := tree(t, vol); slices.ContainsFunc(names, func(n string) bool { return strings.HasSuffix(n, ".PARTIAL") }) {
				t.Errorf("a refused handshake left a work file: %v", names)
			}
		})
	}
	// A JSON body over 1 MiB: 413.
	big := bytes.Repeat([]byte(" "), 1<<20+10)
	resp, b := s.do(t, "POST", "/up/", append([]byte(`{"name":"a",`), big...), "Content-Type: application/json", "PW: pw")
	wantStatus(t, resp, b, http.StatusRequestEntityTooLarge)
	// No write permission: 401 anonymous, 403 for a known user without w.
	body := []byte(`{"name":"a","size":1,"hash":["` + h1 + `"]}`)
	resp, b = s.do(t, "POST", "/up/", body, "Content-Type: application/json")
	wantStatus(t, resp, b, 401)
	if err := s.stop(); err != nil {
		t.Fatal(err)
	}
	s2 := start(t, "-a", "u:pw", "-a", "v:pw2", "-v", vol+"::r:rw,u")
	resp, b = s2.do(t, "POST", "/up/", body, "Content-Type: application/json", "PW: pw2")
	wantStatus(t, resp, b, 403)
	if names := tree(t, vol); slices.Contains(names, "up") {
		t.Fatalf("refused handshakes made folders: %v", names)
	}
}

func TestUp2kBadChunks(t *testing.T) {
	t.Parallel()
	vol := t.TempDir()
	other := t.TempDir()
	s := start(t, "-a", "u:pw", "-a", "v:pw2", "-v", vol+"::rw,u", "-v", other+":o:rw,v")
	f := newUp2kFile(randomBytes(3<<20 + 100)) // 4 chunks
	rep := up2kHandshake(t, s, "/up/", "f.bin", f, 1600000000, nil, "PW: pw")
	postChunk(t, s, rep, f, 0, "PW: pw")
	writeFile(t, vol, "keep.txt", []byte("keep"))
	g := newUp2kFile(randomBytes(2 << 20))
	for _, tc := range []struct {
		name string
		hash string
		wark string
		body []byte
		hdr  []string
		path string
		code int
		msg  string
	}{
		{name: "unknown wark", hash: f.hashes[1], wark: g.hashes[0], body: f.chunk(1), code: 400, msg: "unknown wark"},
		{name: "not a wark", hash: f.hashes[1], wark: "x", body: f.chunk(1), code: 400, msg: "unknown wark"},
		{name: "chunk not in the session", hash: g.hashes[0], body: g.chunk(0), code: 400, msg: "unknown chunk wtf"},
		{name: "body longer than the chunk", hash: f.hashes[1], body: append(bytes.Clone(f.chunk(1)), 'x'), code: 400, msg: "too much"},
		{name: "body shorter than the chunk", hash: f.hashes[1], body: f.chunk(1)[:1000], code: 400, msg: "bytes"},
		{name: "stitched body too short", hash: stitchHashes(f.hashes[1:3]), body: f.chunk(1), code: 400, msg: "bytes"},
		{name: "subchunk past the chunk", hash: f.hashes[1], body: f.chunk(1)[:1000], hdr: []string{"X-Up2k-Subc: 1048000"}, code: 400, msg: "exceeds chunksize"},
		{name: "subchunk offset not a number", hash: f.hashes[1], body: f.chunk(1)[:1000], hdr: []string{"X-Up2k-Subc: -5"}, code: 400, msg: "Subc"},
		{name: "subchunk of two chunks", hash: stitchHashes(f.hashes[1:3]), body: append(bytes.Clone(f.chunk(1)), f.chunk(2)...), hdr: []string{"X-Up2k-Subc: 0"}, code: 400, msg: "single subchunk"},
		{name: "subchunk resumed without a start", hash: f.hashes[2], body: f.chunk(2)[:100], hdr: []string{"X-Up2k-Subc: 500"}, code: 400, msg: "resume-point"},
		{name: "hash with a bad alphabet", hash: "+" + f.hashes[1][1:], body: f.chunk(1), code: 400, msg: "URL-safe"},
		{name: "hash of the wrong length", hash: f.hashes[1][:40], body: f.chunk(1), code: 400, msg: "characters"},
		{name: "wrong stitch prefix", hash: f.hashes[1] + ",3,zzz", body: append(bytes.Clone(f.chunk(1)), f.chunk(2)...), code: 400, msg: "expected prefix"},
		{name: "not siblings", hash: f.hashes[1] + "," + f.hashes[3], body: append(bytes.Clone(f.chunk(1)), f.chunk(3)...), code: 400, msg: "only sibling chunks"},
		{name: "chunk named twice", hash: f.hashes[1] + "," + f.hashes[1], body: append(bytes.Clone(f.chunk(1)), f.chunk(1)...), code: 400, msg: "twice"},
		{name: "no hash header", hash: "", body: f.chunk(1), code: 400, msg: "need hash and wark"},
		{name: "corrupt chunk", hash: f.hashes[1], body: bytes.Repeat([]byte{1}, len(f.chunk(1))), code: 400, msg: "corrupted"},
		{name: "no password", hash: f.hashes[1], body: f.chunk(1), hdr: []string{"PW:"}, code: 401, msg: ""},
		{name: "another user's session", hash: f.hashes[1], body: f.chunk(1), hdr: []string{"PW: pw2"}, code: 403, msg: ""},
		{name: "another user's session via their volume", hash: f.hashes[1], body: f.chunk(1), hdr: []string{"PW: pw2"}, path: "/o/", code: 400, msg: "unknown wark"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := snapshotUserFiles(t, vol)
			beforeO := snapshotUserFiles(t, other)
			wark := rep.Wark
			if tc.wark != "" {
				wark = tc.wark
			}
			p := rep.Purl
			if tc.path != "" {
				p = tc.path
			}
			hdr := append([]string{"PW: pw"}, tc.hdr...)
			resp, b := s.do(t, "POST", p, tc.body, append([]string{"Content-Type: application/octet-stream", "X-Up2k-Wark: " + wark, "X-Up2k-Hash: " + tc.hash}, hdr...)...)
			wantStatus(t, resp, b, tc.code)
			if !strings.Contains(string(b), tc.msg) {
				t.Errorf("message %q does not name %q", b, tc.msg)
			}
			wantSameUserFiles(t, tc.name, before, snapshotUserFiles(t, vol))
			wantSameUserFiles(t, tc.name, beforeO, snapshotUserFiles(t, other))
		})
	}
	// A chunked body (no Content-Length) is refused.
	req, _ := http.NewRequest("POST", s.URL+"/up/", struct{ *bytes.Reader }{bytes.NewReader(f.chunk(1))})
	req.Header.Set("Content-Type", "application/octet-stream")
	req.Header.Set("X-Up2k-Wark", rep.Wark)
	req.Header.Set("X-Up2k-Hash", f.hashes[1])
	req.Header.Set("PW", "pw")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 400 {
		t.Fatalf("chunked body: %d", resp.StatusCode)
	}
	// Every refused chunk is still needed; the good ones complete it.
	again := up2kHandshake(t, s, "/up/", "f.bin", f, 1600000000, nil, "PW: pw")
	if !slices.Equal(again.Hash, f.hashes[1:]) {
		t.Fatalf("after refused chunks the server needs %v", again.Hash)
	}
	for i := 1; i < 4; i++ {
		postChunk(t, s, rep, f, i, "PW: pw")
	}
	wantUploaded(t, filepath.Join(vol, "up/f.bin"), f.data, 1600000000)
	if names := tree(t, other); slices.ContainsFunc(names, func(n string) bool { return !strings.HasPrefix(n, ".hist") }) {
		t.Fatalf("the other volume changed: %v", names)
	}
}

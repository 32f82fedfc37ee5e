package http

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"hoard/up2k"
)

// oneShotReq is a one-shot POST of body to folder with handshake hs (JSON).
func oneShotReq(folder, hs, body string) *http.Request {
	req := httptest.NewRequest("POST", folder, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/octet-stream")
	req.Header.Set(up2k.OneShotHeader, base64.RawURLEncoding.EncodeToString([]byte(hs)))
	return req
}

// TestOneShotRoute: a one-shot POST publishes its file (up2k.DoneHeader,
// need empty), the same again finds it there (no DoneHeader, nothing
// written), other content under the name gets another name, as a
// handshake's would; handshakes name the capability.
func TestOneShotRoute(t *testing.T) {
	srv, dir := newUp2kServer(t)
	h := up2k.ChunkHash([]byte("one"))
	hs := `{"name": "f1", "size": 3, "lmod": 1234567890, "hash": ["` + h + `"]}`
	w := httptest.NewRecorder()
	srv.ServeHTTP(w, oneShotReq("/d/", hs, "one"))
	var rep hsReply
	if w.Code != 200 || json.Unmarshal(w.Body.Bytes(), &rep) != nil || len(rep.Need) != 0 || w.Header().Get(up2k.DoneHeader) != "/d/f1" {
		t.Fatalf("one-shot: %d %q %s", w.Code, w.Header().Get(up2k.DoneHeader), w.Body)
	}
	if w.Header().Get(up2k.OneShotHeader) != "1" {
		t.Error("a one-shot reply does not name the capability")
	}
	fi, err := os.Stat(filepath.Join(dir, "d", "f1"))
	if b, _ := os.ReadFile(filepath.Join(dir, "d", "f1")); err != nil || string(b) != "one" || fi.ModTime().Unix() != 1234567890 {
		t.Fatalf("file: %q %v", b, err)
	}
	// Again: there already, nothing written.
	w = httptest.NewRecorder()
	srv.ServeHTTP(w, oneShotReq("/d/", hs, "one"))
	if w.Code != 200 || json.Unmarshal(w.Body.Bytes(), &rep) != nil || len(rep.Need) != 0 || w.Header().Get(up2k.DoneHeader) != "" || rep.Name != "f1" {
		t.Fatalf("again: %d %q %s", w.Code, w.Header().Get(up2k.DoneHeader), w.Body)
	}
	// Other content, same name: another name, the first file untouched.
	h2 := up2k.ChunkHash([]byte("two"))
	w = httptest.NewRecorder()
	srv.ServeHTTP(w, oneShotReq("/d/", `{"name": "f1", "size": 3, "hash": ["`+h2+`"]}`, "two"))
	if w.Code != 200 || json.Unmarshal(w.Body.Bytes(), &rep) != nil || rep.Name == "f1" || w.Header().Get(up2k.DoneHeader) == "" {
		t.Fatalf("collision: %d %s", w.Code, w.Body)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "d", "f1")); string(b) != "one" {
		t.Fatalf("the first file became %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "d", rep.Name)); string(b) != "two" {
		t.Fatalf("%s holds %q", rep.Name, b)
	}
	// A handshake names the capability too.
	req := httptest.NewRequest("POST", "/d/", strings.NewReader(`{"name": "g", "size": 3, "hash": ["`+h+`"]}`))
	req.Header.Set("Content-Type", "application/json")
	w = httptest.NewRecorder()
	srv.ServeHTTP(w, req)
	if w.Code != 200 || w.Header().Get(up2k.OneShotHeader) != "1" {
		t.Fatalf("handshake: %d, %s %q", w.Code, up2k.OneShotHeader, w.Header().Get(up2k.OneShotHeader))
	}
}

// TestOneShotBadInput: every malformed one-shot POST is a clear 4xx and
// leaves nothing in the volume (no file, no work file).
func TestOneShotBadInput(t *testing.T) {
	srv, dir := newUp2kServer(t)
	h := up2k.ChunkHash([]byte("one"))
	big := strings.Repeat("x", up2k.OneShotMax+1)
	hb := up2k.ChunkHash([]byte(big))
	for _, tc := range []struct {
		name, header, body string
		code               int
	}{
		{"not base64", "!!!", "one", 400},
		{"padded base64", base64.URLEncoding.EncodeToString([]byte(`{"name":"a","size":3,"hash":["` + h + `"]}`)), "one", 400},
		{"not JSON", base64.RawURLEncoding.EncodeToString([]byte(`{"name":`)), "one", 400},
		{"an array", base64.RawURLEncoding.EncodeToString([]byte(`[1]`)), "one", 400},
		{"a search", base64.RawURLEncoding.EncodeToString([]byte(`{"q":"a"}`)), "one", 400},
		{"no name", base64.RawURLEncoding.EncodeToString([]byte(`{"size":3,"hash":["` + h + `"]}`)), "one", 400},
		{"two hashes", base64.RawURLEncoding.EncodeToString([]byte(`{"name":"a","size":3,"hash":["` + h + `","` + h + `"]}`)), "one", 400},
		{"no hash", base64.RawURLEncoding.EncodeToString([]byte(`{"name":"a","size":3,"hash":[]}`)), "one", 400},
		{"empty file", base64.RawURLEncoding.EncodeToString([]byte(`{"name":"a","size":0,"hash":[]}`)), "", 400},
		{"size is not the body", base64.RawURLEncoding.EncodeToString([]byte(`{"name":"a","size":4,"hash":["` + h + `"]}`)), "one", 400},
		{"too big", base64.RawURLEncoding.EncodeToString([]byte(`{"name":"a","size":` + strconv.Itoa(len(big)) + `,"hash":["` + hb + `"]}`)), big, 400},
		{"wrong bytes", base64.RawURLEncoding.EncodeToString([]byte(`{"name":"a","size":3,"hash":["` + h + `"]}`)), "two", 400},
		{"a path in the name", base64.RawURLEncoding.EncodeToString([]byte(`{"name":"../a","size":3,"hash":["` + h + `"]}`)), "one", 400},
		{"header too long", strings.Repeat("A", maxOneShotHeader+1), "one", http.StatusRequestHeaderFieldsTooLarge},
	} {
		w := httptest.NewRecorder()
		req := httptest.NewRequest("POST", "/bad/", strings.NewReader(tc.body))
		req.Header.Set("Content-Type", "application/octet-stream")
		req.Header.Set(up2k.OneShotHeader, tc.header)
		srv.ServeHTTP(w, req)
		if w.Code != tc.code {
			t.Errorf("%s: %d %s, want %d", tc.name, w.Code, w.Body, tc.code)
		}
	}
	// Nothing published; what a refused chunk leaves is the session's
	// (dropped by its lifetime), never a file under a user's name.
	entries, _ := os.ReadDir(filepath.Join(dir, "bad"))
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), ".") {
			t.Errorf("left in the folder: %s", e.Name())
		}
	}
}

// FuzzOneShotOf: any header and length give a handshake of one chunk
// whose size is the length, or an error; never a panic.
func FuzzOneShotOf(f *testing.F) {
	h := up2k.ChunkHash([]byte("one"))
	for _, s := range []string{
		`{"name":"a","size":3,"hash":["` + h + `"]}`,
		`{"name":"a","size":3,"hash":["` + h + `"],"replace":true,"life":5}`,
		`{"name":"a","size":0,"hash":[]}`,
		`{"q":"x"}`, `[]`, `{`, `null`,
	} {
		f.Add(base64.RawURLEncoding.EncodeToString([]byte(s)), int64(3))
	}
	f.Add("%%%", int64(-1))
	f.Fuzz(func(t *testing.T, v string, n int64) {
		hs, err := oneShotOf(v, n)
		if err != nil {
			return
		}
		if len(hs.Hashes) != 1 || hs.Size != n || n <= 0 || n > up2k.OneShotMax {
			t.Fatalf("accepted %q for %d bytes: size %d, %d hashes", v, n, hs.Size, len(hs.Hashes))
		}
	})
}

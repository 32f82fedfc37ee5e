package http

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hoard/store"
	"hoard/up2k"
)

// newUp2kServer serves a temporary volume at / (rwd for everyone) with an
// up2k manager keeping sessions in memory.
func newUp2kServer(t testing.TB) (*Server, string) {
	t.Helper()
	st, dir, quiet := testStore(t, "rwd")
	up, err := up2k.New(up2k.Config{Store: st, DBs: map[*store.Volume]up2k.SessionStore{st.Volumes()[0]: up2k.NewMemStore()}, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { up.Close() })
	return New(Config{Store: st, Logger: quiet, Up2k: up}), dir
}

// FuzzHandshakeJSON posts arbitrary handshake bodies: the answer is a
// handshake or a client error, never a crash, a hang or an unexplained
// 500. (That refused input leaves nothing behind is shown end to end in
// internal/e2e/up2k_bad_test.go.)
func FuzzHandshakeJSON(f *testing.F) {
	h := up2k.ChunkHash([]byte("one"))
	for _, s := range []string{
		`{"name": "f1", "size": 3, "lmod": 1234567890, "hash": ["` + h + `"]}`,
		`{"name": "f1", "size": 3, "hash": ["` + h + `"], "replace": "mt", "rand": true, "life": 5, "umod": true}`,
		`{"name": "e", "size": 0, "hash": []}`,
		`{"name": "a/b", "size": 3, "hash": ["` + h + `"]}`,
		`{"name": "x", "size": -1, "hash": []}`,
		`{"name": "x", "size": 1.5, "hash": ["` + h + `"]}`,
		`{"name": "x", "size": 3, "hash": [1, 2]}`,
		`{"q": "a"}`,
		`[]`, `null`, `{`, `{"name": null, "size": null, "hash": null}`,
	} {
		f.Add(s)
	}
	srv, _ := newUp2kServer(f)
	f.Fuzz(func(t *testing.T, body string) {
		req := httptest.NewRequest("POST", "/fz/", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, req)
		switch w.Code {
		case 200:
			var rep map[string]any
			if err := json.Unmarshal(w.Body.Bytes(), &rep); err != nil {
				t.Fatalf("200 with a body that is not JSON: %q", w.Body)
			}
			if _, ok := rep["error"]; ok {
				t.Fatalf("200 with an error: %q", w.Body)
			}
		case 400, 409, 413, 422:
		case 500:
			// disk full names free space; a search without an index
			// says how to enable it, as JSON
			if !strings.Contains(w.Body.String(), "free") && !strings.Contains(w.Body.String(), `"error":"search is disabled`) {
				t.Fatalf("500 for %q: %q", body, w.Body)
			}
			fallthrough
		case 501:
			if !bytes.Contains(w.Body.Bytes(), []byte(`"error"`)) && w.Code == 501 {
				t.Fatalf("search answer without a JSON error: %q", w.Body)
			}
		default:
			t.Fatalf("status %d for %q: %q", w.Code, body, w.Body)
		}
	})
}

// TestUp2kChunkRoute: a chunk POST reaches the session and completes it;
// without a manager both routes answer 501.
func TestUp2kChunkRoute(t *testing.T) {
	srv, dir := newUp2kServer(t)
	h := up2k.ChunkHash([]byte("one"))
	req := httptest.NewRequest("POST", "/d/", strings.NewReader(`{"name": "f1", "size": 3, "lmod": 1234567890, "hash": ["`+h+`"]}`))
	req.Header.Set("Content-Type", "text/plain;charset=UTF-8")
	w := httptest.NewRecorder()
	srv.ServeHTTP(w, req)
	if w.Code != 200 || !strings.Contains(w.Body.String(), `"wark":"XMbpLRqVdtGmgggqjUI6uSoNMTqZVX4K6zr74XA1BRKc"`) {
		t.Fatalf("handshake: %d %s", w.Code, w.Body)
	}
	req = httptest.NewRequest("POST", "/d/", strings.NewReader("one"))
	req.Header.Set("Content-Type", "application/octet-stream")
	req.Header.Set("X-Up2k-Hash", h)
	req.Header.Set("X-Up2k-Wark", "XMbpLRqVdtGmgggqjUI6uSoNMTqZVX4K6zr74XA1BRKc")
	w = httptest.NewRecorder()
	srv.ServeHTTP(w, req)
	if w.Code != 200 || w.Body.String() != "thank" {
		t.Fatalf("chunk: %d %s", w.Code, w.Body)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "d", "f1")); err != nil || string(b) != "one" {
		t.Fatalf("file: %q %v", b, err)
	}
	bare, _ := newTestServer(t, "rw")
	for _, ct := range []string{"application/json", "application/octet-stream"} {
		req := httptest.NewRequest("POST", "/", strings.NewReader("{}"))
		req.Header.Set("Content-Type", ct)
		w := httptest.NewRecorder()
		bare.ServeHTTP(w, req)
		if w.Code != http.StatusNotImplemented {
			t.Fatalf("%s without up2k: %d", ct, w.Code)
		}
	}
}

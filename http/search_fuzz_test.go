package http

import (
	"encoding/json"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"hoard/idx"
	"hoard/store"
)

// newSearchServer serves a temporary indexed volume at / (read for
// everyone) whose index holds a few records.
func newSearchServer(t testing.TB) *Server {
	t.Helper()
	dir := t.TempDir()
	spec, err := store.ParseVolume(dir + "::r:c,e2d")
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(store.Config{Volumes: []store.VolumeSpec{spec}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	db, err := idx.Open(filepath.Join(t.TempDir(), "idx"), idx.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	for i, rel := range []string{"music/Daft Punk - One.mp3", "docs/report.txt", "a b/c.log"} {
		rec := &idx.Record{Rel: rel, Size: int64(1000 * i), Mtime: 1.6e18, Wark: strings.Repeat(string(rune('A'+i)), 44), Chunks: []string{strings.Repeat(string(rune('a'+i)), 44)}}
		if err := db.PutRecord(rec); err != nil {
			t.Fatal(err)
		}
	}
	ix := idx.New(idx.Config{Store: st, DBs: map[*store.Volume]*idx.DB{st.Volumes()[0]: db}})
	ix.Start()
	t.Cleanup(ix.Close)
	return New(Config{Store: st, Index: ix})
}

// FuzzSearchJSON posts arbitrary search bodies: the answer is always JSON,
// 200 with hits or a client error naming the problem, never a crash.
func FuzzSearchJSON(f *testing.F) {
	for _, s := range []string{
		`{"q": "report"}`, `{"q": "size:>1K ext:mp3,txt", "n": 1}`, `{"q": "size:>5X"}`, `{"q": "\"open"}`,
		`{"q": 5}`, `{"q": "a", "n": -1}`, `{"q": "a", "n": 1e99}`, `{"srch": true, "hash": ["` + strings.Repeat("a", 44) + `"]}`,
		`{"srch": 1, "hash": "x"}`, `{"srch": true, "hash": ["!"]}`, `{"q": "artist:x"}`, `{"q": null}`, `{"srch": null}`,
	} {
		f.Add(s)
	}
	srv := newSearchServer(f)
	f.Fuzz(func(t *testing.T, body string) {
		req := httptest.NewRequest("POST", "/?srch", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.RemoteAddr = "192.0.2.1:1234"
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, req)
		var rep struct {
			Hits  []map[string]any `json:"hits"`
			Error string           `json:"error"`
		}
		if err := json.Unmarshal(w.Body.Bytes(), &rep); err != nil {
			t.Fatalf("%d with a body that is not JSON for %q: %q", w.Code, body, w.Body)
		}
		switch w.Code {
		case 200:
			if rep.Hits == nil || rep.Error != "" {
				t.Fatalf("200 without hits for %q: %q", body, w.Body)
			}
		case 400, 429:
			if rep.Error == "" {
				t.Fatalf("%d without an error for %q", w.Code, body)
			}
		case 500:
			if !strings.Contains(rep.Error, "-e2ts") {
				t.Fatalf("500 for %q: %q", body, rep.Error)
			}
		default:
			t.Fatalf("status %d for %q: %q", w.Code, body, w.Body)
		}
	})
}

// TestSearchHandler: hits carry rp, fn, sz, href; hash search finds by
// chunk and by wark.
func TestSearchHandler(t *testing.T) {
	srv := newSearchServer(t)
	for _, c := range []struct{ body, want string }{
		{`{"q": "daft"}`, `"href":"/music/Daft%20Punk%20-%20One.mp3"`},
		{`{"q": "path:/a\u0020b"}`, `"rp":"a%20b/c.log","fn":"c.log","sz":2000`},
		{`{"srch": true, "hash": ["` + strings.Repeat("b", 44) + `"]}`, `"rp":"docs/report.txt"`},
		{`{"srch": true, "hash": ["` + strings.Repeat("C", 44) + `"]}`, `"rp":"a%20b/c.log"`},
	} {
		req := httptest.NewRequest("POST", "/", strings.NewReader(c.body))
		req.Header.Set("Content-Type", "text/plain")
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, req)
		if w.Code != 200 || !strings.Contains(w.Body.String(), c.want) {
			t.Errorf("%s: %d %s, want %s", c.body, w.Code, w.Body, c.want)
		}
	}
}

// TestHrefOf: each path element escaped on its own, slashes kept.
func TestHrefOf(t *testing.T) {
	for _, c := range []struct{ vpath, rel, want string }{
		{"", "a.txt", "/a.txt"},
		{"music", "Daft Punk/One #1?.mp3", "/music/Daft%20Punk/One%20%231%3F.mp3"},
		{"a/b", "c%d/ü e", "/a/b/c%25d/%C3%BC%20e"},
		{"", "", "/"},
	} {
		if got := hrefOf(&store.Volume{VPath: c.vpath}, c.rel); got != c.want {
			t.Errorf("hrefOf(%q, %q) = %q, want %q", c.vpath, c.rel, got, c.want)
		}
	}
}

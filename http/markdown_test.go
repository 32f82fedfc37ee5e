package http

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestMarkdownHostileBounded: Markdown whose rendering cost grows with the
// square of its length (unguarded, each of these takes goldmark well over
// ten seconds of CPU) is answered within about the render budget, as the
// text it is, whole; ordinary Markdown is still rendered.
func TestMarkdownHostileBounded(t *testing.T) {
	s, dir := newTestServer(t, "r")
	hostile := map[string]string{
		"quotes.md": strings.Repeat(">", 256<<10),                                // nested block quotes on one line
		"links.md":  strings.Repeat("[a](", 64<<10),                              // unclosed link destinations
		"deep.md":   strings.Repeat("*", 3000) + "a" + strings.Repeat("*", 3000), // nested emphasis
	}
	hostile["ok.md"] = "# Title\n\nsome *text* and a [link](x.md)\n"
	for name, body := range hostile {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for name, body := range hostile {
		start := time.Now()
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/"+name+"?v", nil))
		took := time.Since(start)
		if rec.Code != http.StatusOK {
			t.Fatalf("%s: status %d: %s", name, rec.Code, rec.Body.String())
		}
		if took > mdBudget+3*time.Second {
			t.Errorf("%s: took %v, want about the budget %v", name, took, mdBudget)
		}
		ct := rec.Header().Get("Content-Type")
		if name == "ok.md" {
			if !strings.HasPrefix(ct, "text/html") || !strings.Contains(rec.Body.String(), "<h1") {
				t.Errorf("%s: not rendered: %s %q", name, ct, rec.Body.String())
			}
			continue
		}
		if strings.HasPrefix(ct, "text/html") || rec.Body.String() != body {
			t.Errorf("%s: want the file itself as text, got %s, %d bytes", name, ct, rec.Body.Len())
		}
	}
}

// TestMarkdownRendersBusy: with every render slot taken, ?v of Markdown is
// a 503 with Retry-After, and the slot is free again afterwards.
func TestMarkdownRendersBusy(t *testing.T) {
	s, dir := newTestServer(t, "r")
	os.WriteFile(filepath.Join(dir, "a.md"), []byte("# a\n"), 0o644)
	for range cap(mdSlots) {
		mdSlots <- struct{}{}
	}
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/a.md?v", nil))
	for range cap(mdSlots) {
		<-mdSlots
	}
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" {
		t.Fatalf("busy: status %d, Retry-After %q", rec.Code, rec.Header().Get("Retry-After"))
	}
	rec = httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/a.md?v", nil))
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "<h1") {
		t.Fatalf("after: status %d %q", rec.Code, rec.Body.String())
	}
}

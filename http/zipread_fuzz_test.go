package http

import (
	"archive/zip"
	"bytes"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hoard/arch"
)

// FuzzZipRead serves ?zls and ?zget from arbitrary bytes: never a panic,
// never a 5xx, and never more bytes than a member declares.
func FuzzZipRead(f *testing.F) {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, _ := zw.Create("a.txt")
	w.Write([]byte(strings.Repeat("hello ", 100)))
	w, _ = zw.CreateHeader(&zip.FileHeader{Name: "s/b.bin", Method: zip.Store})
	w.Write([]byte{1, 2, 3})
	zw.Close()
	f.Add(buf.Bytes(), "a.txt")
	f.Add(buf.Bytes(), "s/b.bin")
	f.Add(buf.Bytes()[:buf.Len()/2], "a.txt")
	f.Add([]byte("PK\x05\x06\x00\x00\x00\x00\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x00\x00"), "x")
	s, dir := newTestServer(f, "r")
	f.Fuzz(func(t *testing.T, data []byte, member string) {
		if err := os.WriteFile(filepath.Join(dir, "f.zip"), data, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, target := range []string{"/f.zip?zls", "/f.zip?zget=" + url.QueryEscape(member)} {
			rec := httptest.NewRecorder()
			func() {
				defer func() {
					if r := recover(); r != nil && r != http.ErrAbortHandler {
						t.Fatalf("%s: panic %v", target, r)
					}
				}()
				s.ServeHTTP(rec, httptest.NewRequest("GET", target, nil))
			}()
			if rec.Code >= 500 {
				t.Fatalf("%s: status %d %s", target, rec.Code, rec.Body)
			}
			if rec.Code == 200 && strings.Contains(target, "zget") && rec.Body.Len() > arch.ZipMaxMember {
				t.Fatalf("%s: %d bytes", target, rec.Body.Len())
			}
		}
	})
}

// TestZlsCap: past the member cap the listing is cut and says by how much.
func TestZlsCap(t *testing.T) {
	s, dir := newTestServer(t, "r")
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for i := range 10 {
		w, _ := zw.Create(strings.Repeat("x", i+1))
		w.Write([]byte("y"))
	}
	zw.Close()
	if err := os.WriteFile(filepath.Join(dir, "f.zip"), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	old := arch.ZipListMax
	arch.ZipListMax = 4
	defer func() { arch.ZipListMax = old }()
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest("GET", "/f.zip?zls", nil))
	if rec.Code != 200 || rec.Header().Get("X-Truncated") != "6" || strings.Count(rec.Body.String(), `"fn"`) != 4 {
		t.Fatalf("%d %q %s", rec.Code, rec.Header().Get("X-Truncated"), rec.Body)
	}
}

package e2e

import (
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"testing"
)

func TestSmokePutGet(t *testing.T) {
	dir := t.TempDir()
	s := start(t, "-v", dir+"::rw")
	resp, body := s.do(t, "PUT", "/hello.txt", []byte("hello\n"))
	wantStatus(t, resp, body, http.StatusCreated)
	got, err := os.ReadFile(filepath.Join(dir, "hello.txt"))
	if err != nil || !bytes.Equal(got, []byte("hello\n")) {
		t.Fatalf("stored file = %q, %v", got, err)
	}
	resp, body = s.do(t, "GET", "/hello.txt", nil)
	wantStatus(t, resp, body, http.StatusOK)
	if string(body) != "hello\n" {
		t.Fatalf("GET body = %q", body)
	}
}

package e2e

// A stream that outlasts its request's checks (?tail of a growing file)
// stops when the access it was let through with ends: the share deleted
// or expired, the permission taken away by a reload. What was written
// after that is never sent.

import (
	"bytes"
	"fmt"
	"os"
	"testing"
	"time"
)

// appendTo appends s to the file p.
func appendTo(t *testing.T, p, s string) {
	t.Helper()
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

func TestTailEndsWithAccess(t *testing.T) {
	t.Run("share deleted", func(t *testing.T) {
		dir := t.TempDir()
		p := writeFile(t, dir, "logs/app.log", []byte("line 1\n"))
		s := start(t, "-a", "alice:apw", "-v", dir+"::rw,alice")
		makeShare(t, s, "apw", map[string]any{"k": "logs", "vp": []string{"/logs/"}}, 201)
		tr := startTail(t, s, "/shr/logs/app.log?tail")
		tr.waitLen(t, 7, 5*time.Second)
		appendTo(t, p, "line 2\n")
		tr.waitLen(t, 14, 5*time.Second)
		resp, body := s.do(t, "POST", "/shr/logs?eshare=rm", nil, "PW: apw")
		wantStatus(t, resp, body, 303)
		resp, body = s.do(t, "GET", "/shr/logs/app.log", nil)
		wantStatus(t, resp, body, 404)
		appendTo(t, p, "AFTER-REVOKE\n")
		tr.waitEnd(t, 5*time.Second)
		if got := tr.bytes(); bytes.Contains(got, []byte("AFTER")) || string(got) != "line 1\nline 2\n" {
			t.Errorf("the stream sent %q", got)
		}
	})
	t.Run("share expired", func(t *testing.T) {
		dir := t.TempDir()
		p := writeFile(t, dir, "app.log", []byte("line 1\n"))
		s := start(t, "-a", "alice:apw", "-v", dir+"::rw,alice")
		makeShare(t, s, "apw", map[string]any{"k": "short", "vp": []string{"/app.log"}, "exp": 0.05}, 201) // 3 s
		tr := startTail(t, s, "/shr/short/app.log?tail")
		tr.waitLen(t, 7, 5*time.Second)
		time.Sleep(3500 * time.Millisecond)
		appendTo(t, p, "AFTER-EXPIRY\n")
		tr.waitEnd(t, 5*time.Second)
		if got := tr.bytes(); string(got) != "line 1\n" {
			t.Errorf("the stream sent %q", got)
		}
	})
	t.Run("read taken away by a reload", func(t *testing.T) {
		dir := t.TempDir()
		p := writeFile(t, dir, "app.log", []byte("line 1\n"))
		conf := func(anon string) string {
			return fmt.Sprintf("[accounts]\n  ann: pw1\n\n[/]\n  %s\n  accs:\n    rw: ann\n%s", dir, anon)
		}
		cf := configFile(t, conf("    r: *\n"))
		s := start(t, "-c", cf)
		tr := startTail(t, s, "/app.log?tail")
		tr.waitLen(t, 7, 5*time.Second)
		appendTo(t, p, "line 2\n")
		tr.waitLen(t, 14, 5*time.Second)
		if err := os.WriteFile(cf, []byte(conf("")), 0o644); err != nil {
			t.Fatal(err)
		}
		hup(t, s, 1)
		resp, body := s.do(t, "GET", "/app.log", nil)
		wantStatus(t, resp, body, 401)
		appendTo(t, p, "AFTER-RELOAD\n")
		tr.waitEnd(t, 5*time.Second)
		if got := tr.bytes(); string(got) != "line 1\nline 2\n" {
			t.Errorf("the stream sent %q", got)
		}
	})
}

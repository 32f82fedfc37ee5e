package store

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestSharesPersistAndExpire(t *testing.T) {
	file := filepath.Join(t.TempDir(), "shares.json")
	now := time.Unix(1000, 0)
	clock := func() time.Time { return now }
	s, err := OpenShares(file, clock)
	if err != nil {
		t.Fatal(err)
	}
	a := Share{Key: "a", VPath: "x", Perms: "r", Creator: "u", Created: 1000, Expires: 1060}
	if err := a.SetPassword("pw"); err != nil {
		t.Fatal(err)
	}
	if err := s.Add(a); err != nil {
		t.Fatal(err)
	}
	if err := s.Add(Share{Key: "b", VPath: "y", Perms: "rw", Creator: "v", Created: 1000}); err != nil {
		t.Fatal(err)
	}
	if err := s.Add(Share{Key: "a"}); !errors.Is(err, ErrExists) {
		t.Fatalf("duplicate key: %v", err)
	}
	if err := s.Add(Share{Key: "../x"}); !errors.Is(err, ErrShareKey) {
		t.Fatalf("bad key: %v", err)
	}
	// Reopened from disk: the same shares, the password still checks.
	s2, err := OpenShares(file, clock)
	if err != nil {
		t.Fatal(err)
	}
	got, ok := s2.Get("a")
	if !ok || !got.HasPassword() || !got.CheckPassword("pw") || got.CheckPassword("nope") || got.VPath != "x" {
		t.Fatalf("reloaded %+v %v", got, ok)
	}
	if raw, _ := os.ReadFile(file); len(raw) == 0 || contains(raw, "\"pw\"") {
		t.Fatalf("file holds a clear password or nothing: %s", raw)
	}
	// Expiry on time; an expired key can be taken again.
	now = time.Unix(1060, 0)
	if _, ok := s2.Get("a"); ok {
		t.Fatal("expired share still served")
	}
	if n := len(s2.List()); n != 1 {
		t.Fatalf("%d listed", n)
	}
	if err := s2.Add(Share{Key: "a", VPath: "z", Perms: "r"}); err != nil {
		t.Fatal(err)
	}
	if err := s2.Delete("b"); err != nil {
		t.Fatal(err)
	}
	if err := s2.Delete("b"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second delete: %v", err)
	}
	s3, _ := OpenShares(file, clock)
	if _, ok := s3.Get("b"); ok {
		t.Fatal("deleted share came back")
	}
	if sh, ok := s3.Get("a"); !ok || sh.VPath != "z" {
		t.Fatalf("retaken key: %+v", sh)
	}
	// A corrupt file is an error, not an empty set.
	os.WriteFile(file, []byte("{nope"), 0o600)
	if _, err := OpenShares(file, clock); err == nil {
		t.Fatal("corrupt file accepted")
	}
}

func contains(b []byte, s string) bool { return strings.Contains(string(b), s) }

package store

import (
	"bytes"
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

// TestNewShareKeyUnbiased: share keys come from rejection sampling, so a
// byte past the largest multiple of the alphabet's size is thrown away
// rather than folded onto the first letters (modulo bias).
func TestNewShareKeyUnbiased(t *testing.T) {
	size := len(shareKeyAlphabet)
	limit := 256 - 256%size
	// 250 would be 250 % 57 = 22 under a modulo; it must be skipped.
	src := bytes.NewReader([]byte{250, 1, byte(limit), 2, 255, 3, 0, 0, 0, 0, 0, 0})
	if got, want := newShareKey(src, 3), string([]byte{shareKeyAlphabet[1], shareKeyAlphabet[2], shareKeyAlphabet[3]}); got != want {
		t.Fatalf("newShareKey = %q, want %q", got, want)
	}
	// Every byte value below the limit maps to each letter equally often.
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	count := map[rune]int{}
	for _, c := range newShareKey(bytes.NewReader(bytes.Repeat(all, 2)), limit) {
		count[c]++
	}
	for _, c := range shareKeyAlphabet {
		if count[c] != limit/size {
			t.Errorf("%c drawn %d times of %d, want %d", c, count[c], limit, limit/size)
		}
	}
	for range 100 {
		k := NewShareKey(12)
		if len(k) != 12 || CheckShareKey(k) != nil || strings.Trim(k, shareKeyAlphabet) != "" {
			t.Fatalf("NewShareKey = %q", k)
		}
	}
}

// TestKeyOK: without fk or with r anything goes; else only the file's key.
func TestKeyOK(t *testing.T) {
	v := &Volume{secret: []byte("0123456789abcdef")}
	v.setFlags(Flags{FK: 8})
	fi, err := os.Stat(filepath.Join(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	key := v.FileKey("a.txt", fi)
	for _, tc := range []struct {
		name string
		perm Perm
		key  string
		want bool
	}{
		{name: "right key", perm: PermGet, key: key, want: true},
		{name: "wrong key", perm: PermGet, key: "AAAAAAAA", want: false},
		{name: "no key", perm: PermGet, key: "", want: false},
		{name: "reader needs none", perm: PermRead, key: "", want: true},
	} {
		if got := v.KeyOK(tc.perm, "a.txt", fi, tc.key); got != tc.want {
			t.Errorf("%s: KeyOK = %v, want %v", tc.name, got, tc.want)
		}
	}
	if !(&Volume{}).KeyOK(PermGet, "a.txt", fi, "") {
		t.Error("a volume without fk wants a key")
	}
}

// TestTooManyShares: the share past the cap is refused with a kind (507,
// the state at its cap), not a plain error that answers 500, and nothing
// is saved.
func TestTooManyShares(t *testing.T) {
	defer func(n int) { maxShares = n }(maxShares)
	maxShares = 2
	file := filepath.Join(t.TempDir(), "shares.json")
	s, err := OpenShares(file, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"a", "b"} {
		if err := s.Add(Share{Key: k, VPath: "x", Perms: "r", Creator: "u"}); err != nil {
			t.Fatal(err)
		}
	}
	before, _ := os.ReadFile(file)
	err = s.Add(Share{Key: "c", VPath: "x", Perms: "r", Creator: "u"})
	k, msg, _, ok := Classify(err)
	if !ok || k != KindStateFull || !strings.Contains(msg, "already") {
		t.Fatalf("share past the cap: %v (kind %v, ok %v)", err, k, ok)
	}
	if after, _ := os.ReadFile(file); !bytes.Equal(before, after) || len(s.List()) != 2 {
		t.Fatal("a refused share changed the saved shares")
	}
}

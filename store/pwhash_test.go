package store

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"
)

// Hashes made by copyparty's pwhash.py (Python's hashlib) with salt
// "saltsaltsalt" and password "hunter2".
func TestPwHashCopypartyVectors(t *testing.T) {
	for _, tc := range []struct{ alg, want string }{
		{"sha2", "+COnOHl2B1nyvllS5o2OZPHNUNqLM1HlO"},
		{"sha2,1000", "+qmAHuH7kmRpmIWVfjhV_jwfvUFxs3sbg"},
		{"scrypt", "+18zE76YOmR5zm0LTONa2juRytIxwx1fX"},
		{"scrypt,10,3,8,1", "+ME8ms_pobbZZYJVvkfj5TNLGrI9LVROS"},
	} {
		h, err := ParsePwHash(tc.alg, "saltsaltsalt")
		if err != nil {
			t.Fatal(err)
		}
		got, err := h.Hash("hunter2")
		if err != nil || got != tc.want {
			t.Errorf("%s: Hash = %q, %v; want %q", tc.alg, got, err, tc.want)
		}
		if !IsPwHash(got) {
			t.Errorf("%s: IsPwHash(%q) = false", tc.alg, got)
		}
	}
	h, err := ParsePwHash("argon2,1,8,1", "saltsaltsalt")
	if err != nil {
		t.Fatal(err)
	}
	a, err := h.Hash("hunter2")
	b, _ := h.Hash("hunter3")
	if err != nil || !IsPwHash(a) || a == b {
		t.Errorf("argon2: %q, %q, %v", a, b, err)
	}
	if h.String() != "argon2,1,8,1,19" {
		t.Errorf("String = %q", h.String())
	}
}

func TestParsePwHashErrors(t *testing.T) {
	for _, tc := range []struct{ alg, salt, want string }{
		{"md5", "saltsaltsalt", "want argon2"},
		{"argon2,x", "saltsaltsalt", "not a positive number"},
		{"argon2,1,2,3,4,5", "saltsaltsalt", "at most 4"},
		{"argon2,3,256,4,16", "saltsaltsalt", "from 19 to 19"},
		{"scrypt,40", "saltsaltsalt", "from 1 to 24"},
		{"sha2", "short", "at least 8"},
	} {
		_, err := ParsePwHash(tc.alg, tc.salt)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParsePwHash(%q, %q) = %v, want an error with %q", tc.alg, tc.salt, err, tc.want)
		}
	}
	if h, err := ParsePwHash("none", ""); h != nil || err != nil {
		t.Errorf("none: %v, %v", h, err)
	}
}

func FuzzParsePwHash(f *testing.F) {
	for _, s := range []string{"argon2", "argon2,3,256,4,19", "scrypt,13,2,8,4", "sha2,1", "none", "sha2,,", "scrypt,24,100,64,64"} {
		f.Add(s, "saltsaltsalt")
	}
	f.Fuzz(func(t *testing.T, alg, salt string) {
		h, err := ParsePwHash(alg, salt)
		if err != nil || h == nil {
			return
		}
		h2, err := ParsePwHash(h.String(), salt)
		if err != nil || h2.String() != h.String() {
			t.Fatalf("%q: String %q does not parse back: %v", alg, h.String(), err)
		}
	})
}

func FuzzIsPwHash(f *testing.F) {
	f.Add("+COnOHl2B1nyvllS5o2OZPHNUNqLM1HlO")
	f.Add("+COnOHl2B1nyvllS5o2OZPHNUNqLM1Hl=")
	f.Fuzz(func(t *testing.T, s string) {
		if IsPwHash(s) && (len(s) != 33 || s[0] != '+' || strings.ContainsAny(s[1:], "+/=")) {
			t.Fatalf("IsPwHash(%q) = true", s)
		}
	})
}

// TestAuthenticateHashed: accounts given as hashes or clear passwords
// verify; each password is hashed once however many ask at once, a wrong
// one once too; the hash itself is no password.
func TestAuthenticateHashed(t *testing.T) {
	h, err := ParsePwHash("sha2,2000", "saltsaltsalt")
	if err != nil {
		t.Fatal(err)
	}
	edHash, _ := h.Hash("ed-pw")
	s, err := Open(Config{
		Accounts: []Account{{"ed", edHash}, {"k", "k-pw"}},
		Volumes:  []VolumeSpec{{Src: t.TempDir(), Perms: map[string]Perm{"*": PermRead}}},
		PwHash:   h,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if u, ok := s.Authenticate("ed-pw"); !ok || u != "ed" {
				t.Errorf("ed-pw: %q, %v", u, ok)
			}
		}()
	}
	wg.Wait()
	if n := s.acct.Load().hashed.hashes.Load(); n != 1 {
		t.Errorf("20 logins hashed %d times, want 1", n)
	}
	for range 3 {
		if u, ok := s.Authenticate("k-pw"); !ok || u != "k" {
			t.Errorf("k-pw: %q, %v", u, ok)
		}
		if u, ok := s.Authenticate("wrong"); ok {
			t.Errorf("wrong password gave %q", u)
		}
		if u, ok := s.Authenticate(edHash); ok {
			t.Errorf("the stored hash as a password gave %q", u)
		}
	}
	if n := s.acct.Load().hashed.hashes.Load(); n != 4 {
		t.Errorf("hashes = %d, want 4 (ed, k, wrong, the hash)", n)
	}
}

// TestAuthenticateHashedWaitEnds: a login that waits for a busy hasher
// gives up when its context ends, and the password is hashed later.
func TestAuthenticateHashedWaitEnds(t *testing.T) {
	h, _ := ParsePwHash("sha2,10", "saltsaltsalt")
	s, err := Open(Config{
		Accounts: []Account{{"ed", "ed-pw"}},
		Volumes:  []VolumeSpec{{Src: t.TempDir(), Perms: map[string]Perm{"*": PermRead}}},
		PwHash:   h,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for range cap(s.acct.Load().hashed.slots) {
		s.acct.Load().hashed.slots <- struct{}{} // every hasher busy
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, ok := s.AuthenticateContext(ctx, "ed-pw"); ok {
		t.Fatal("authenticated without a hasher")
	}
	for range cap(s.acct.Load().hashed.slots) {
		<-s.acct.Load().hashed.slots
	}
	if u, ok := s.Authenticate("ed-pw"); !ok || u != "ed" {
		t.Errorf("after the hashers freed: %q, %v", u, ok)
	}
}

func TestHashedAccountsSamePassword(t *testing.T) {
	h, _ := ParsePwHash("sha2,10", "saltsaltsalt")
	hash, _ := h.Hash("same")
	_, err := Open(Config{
		Accounts: []Account{{"a", "same"}, {"b", hash}},
		Volumes:  []VolumeSpec{{Src: t.TempDir(), Perms: map[string]Perm{"*": PermRead}}},
		PwHash:   h,
	})
	if err == nil || !strings.Contains(err.Error(), "same password") {
		t.Errorf("Open = %v, want the same-password error", err)
	}
}

package store

import (
	"context"
	"crypto/sha512"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/crypto/argon2"
	"golang.org/x/crypto/scrypt"
)

// PwHash is copyparty's account-password hashing (--ah-alg, --ah-salt):
// a password is stored as "+" and the URL-safe base64 of a 24-byte
// digest of the password and a salt shared by all accounts. The digest's
// parameters are not in the stored form; they come from --ah-alg, which
// is "argon2", "scrypt" or "sha2", each optionally followed by its
// comma-separated parameters (copyparty's defaults: argon2,3,256,4,19 is
// time cost 3, 256 MiB, 4 lanes, version 19; scrypt,13,2,8,4 is cost
// 2<<13, 2 rounds, block size 8, parallelism 4; sha2,424242 is 424242
// rounds of SHA-512). Hashes made by copyparty with the same salt and
// parameters verify here and the other way round.
type PwHash struct {
	alg  string
	p    []int
	salt []byte
}

// pwHashLen is the length of a stored hash: "+" and 32 base64 characters.
const pwHashLen = 33

// ParsePwHash parses --ah-alg; it returns nil for "none" (or "").
func ParsePwHash(alg, salt string) (*PwHash, error) {
	name, params, _ := strings.Cut(alg, ",")
	h := &PwHash{alg: name, salt: []byte(salt)}
	var defaults []int
	switch name {
	case "", "none":
		return nil, nil
	case "argon2":
		defaults = []int{3, 256, 4, 19}
	case "scrypt":
		defaults = []int{13, 2, 8, 4}
	case "sha2":
		defaults = []int{424242}
	default:
		return nil, fmt.Errorf("password hashing algorithm %q: want argon2, scrypt, sha2 or none", name)
	}
	h.p = defaults
	if params != "" {
		parts := strings.Split(params, ",")
		if len(parts) > len(defaults) {
			return nil, fmt.Errorf("--ah-alg %q: %s takes at most %d parameters", alg, name, len(defaults))
		}
		for i, s := range parts {
			n, err := strconv.Atoi(strings.TrimSpace(s))
			if err != nil || n < 1 {
				return nil, fmt.Errorf("--ah-alg %q: parameter %q is not a positive number", alg, s)
			}
			h.p[i] = n
		}
	}
	limits := map[string][][2]int{
		"argon2": {{1, 100}, {1, 4096}, {1, 255}, {19, 19}},
		"scrypt": {{1, 24}, {1, 100}, {1, 64}, {1, 64}},
		"sha2":   {{1, 100_000_000}},
	}[name]
	for i, n := range h.p {
		if n < limits[i][0] || n > limits[i][1] {
			return nil, fmt.Errorf("--ah-alg %q: parameter %d (%d) must be from %d to %d", alg, i+1, n, limits[i][0], limits[i][1])
		}
	}
	if name == "scrypt" && h.p[2]*h.p[3] >= 1<<30 {
		return nil, fmt.Errorf("--ah-alg %q: block size times parallelism is too large", alg)
	}
	if len(h.salt) < 8 {
		return nil, errors.New("--ah-salt: want at least 8 characters")
	}
	return h, nil
}

// String is the algorithm with its parameters, as --ah-alg spells it.
func (h *PwHash) String() string {
	s := h.alg
	for _, n := range h.p {
		s += "," + strconv.Itoa(n)
	}
	return s
}

// Hash returns the stored form of a password.
func (h *PwHash) Hash(pw string) (string, error) {
	if pw == "" {
		return "", errors.New("empty password")
	}
	if len(pw) > 255 {
		return "", errors.New("password too long (at most 255 bytes)")
	}
	var sum []byte
	switch h.alg {
	case "argon2":
		sum = argon2.IDKey([]byte(pw), h.salt, uint32(h.p[0]), uint32(h.p[1])*1024, uint8(h.p[2]), 24)
	case "scrypt":
		sum = []byte(pw)
		for range h.p[1] {
			var err error
			if sum, err = scrypt.Key(sum, h.salt, 2<<h.p[0], h.p[2], h.p[3], 24); err != nil {
				return "", fmt.Errorf("scrypt: %w", err)
			}
		}
	case "sha2":
		d := []byte("\n")
		m := sha512.New()
		for range h.p[0] {
			m.Reset()
			m.Write(h.salt)
			m.Write([]byte(pw))
			m.Write(d)
			d = m.Sum(d[:0])
		}
		sum = d[:24]
	}
	return "+" + base64.URLEncoding.EncodeToString(sum), nil
}

// IsPwHash reports whether s has the form of a stored hash.
func IsPwHash(s string) bool {
	if len(s) != pwHashLen || s[0] != '+' {
		return false
	}
	b, err := base64.RawURLEncoding.DecodeString(s[1:])
	return err == nil && len(b) == 24
}

// hashAuth verifies passwords against hashed accounts. Hashing is slow on
// purpose (argon2 takes a quarter of a second and 256 MiB by default), so
// a password verified once is remembered by its keyed digest, as is a
// wrong one (a client retrying a wrong password costs one hash), and at
// most a few hashes run at once.
type hashAuth struct {
	h *PwHash

	mu       sync.Mutex
	verified map[[32]byte]string // at most one entry per account
	wrong    map[[32]byte]bool   // bounded by maxWrong
	inflight map[[32]byte]*hashCall
	slots    chan struct{}
	hashes   atomic.Int64 // hashes computed, for tests
}

type hashCall struct {
	done chan struct{}
	user string // the verdict, set with the call's removal from inflight
	ok   bool
	err  error
}

const maxWrong = 4096

func newHashAuth(h *PwHash) *hashAuth {
	return &hashAuth{
		h:        h,
		verified: map[[32]byte]string{},
		wrong:    map[[32]byte]bool{},
		inflight: map[[32]byte]*hashCall{},
		slots:    make(chan struct{}, 2),
	}
}

// errGaveUp is the result of a hash its asker stopped waiting for before
// it started; another asker of the same password hashes it then.
var errGaveUp = errors.New("gave up waiting to hash")

// AuthenticateContext is Authenticate that gives up waiting for a hash
// when ctx ends.
func (s *Store) AuthenticateContext(ctx context.Context, pw string) (user string, ok bool) {
	k := s.pwKey(pw)
	ac := s.acct.Load()
	a := ac.hashed
	if a == nil {
		user, ok = ac.users[k]
		return user, ok
	}
	for {
		a.mu.Lock()
		if user, ok := a.verified[k]; ok {
			a.mu.Unlock()
			return user, true
		}
		if a.wrong[k] {
			a.mu.Unlock()
			return "", false
		}
		c := a.inflight[k]
		if c == nil { // the first asker hashes; others with the same password wait for it
			c = &hashCall{done: make(chan struct{})}
			a.inflight[k] = c
			a.mu.Unlock()
			a.compute(ctx, k, c, pw, func(hash string) (string, bool) {
				u, ok := ac.users[s.pwKey(hash)]
				return u, ok
			})
		} else {
			a.mu.Unlock()
			select {
			case <-c.done:
			case <-ctx.Done():
				return "", false
			}
		}
		if errors.Is(c.err, errGaveUp) && ctx.Err() == nil {
			continue
		}
		if c.err != nil {
			return "", false
		}
		return c.user, c.ok
	}
}

// compute hashes pw in one of the slots, waiting for a slot at most until
// ctx ends. A hash once started runs to its end.
func (a *hashAuth) compute(ctx context.Context, k [32]byte, c *hashCall, pw string, verdict func(hash string) (string, bool)) {
	var hash string
	select {
	case a.slots <- struct{}{}:
		hash, c.err = a.h.Hash(pw)
		a.hashes.Add(1)
		<-a.slots
	case <-ctx.Done():
		c.err = errGaveUp
	}
	if c.err == nil {
		c.user, c.ok = verdict(hash)
	}
	// The verdict is recorded in the same step that ends the call, so an
	// asker arriving in between never finds neither and hashes again.
	a.mu.Lock()
	if c.err == nil {
		if c.ok {
			a.verified[k] = c.user
		} else {
			if len(a.wrong) >= maxWrong {
				clear(a.wrong)
			}
			a.wrong[k] = true
		}
	}
	delete(a.inflight, k)
	a.mu.Unlock()
	close(c.done)
}

// hashAccounts turns the accounts' passwords into their hashes. A clear
// password is hashed here and its hash logged, so it can replace the
// password in the configuration (copyparty does the same).
func (s *Store) hashAccounts(h *PwHash, list []Account) (*accounts, error) {
	ac := &accounts{users: map[[32]byte]string{}}
	byHash := map[string]string{}
	for _, a := range list {
		stored := a.Pass
		if !IsPwHash(stored) {
			var err error
			if stored, err = h.Hash(a.Pass); err != nil {
				return nil, fmt.Errorf("account %q: %w", a.User, err)
			}
			s.log.Warn("account has a clear password while --ah-alg is on; put its hash in the configuration instead", "user", a.User, "hash", stored)
		}
		if other, ok := byHash[stored]; ok {
			return nil, fmt.Errorf("accounts %q and %q have the same password (passwords identify users and must be unique)", other, a.User)
		}
		byHash[stored] = a.User
		ac.users[s.pwKey(stored)] = a.User
	}
	ac.hashed = newHashAuth(h)
	return ac, nil
}

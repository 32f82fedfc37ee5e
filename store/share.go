package store

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
)

// Share is a temporary link to one file or folder (or to some files of one
// folder), made by a user and reachable under the share prefix by its key.
type Share struct {
	Key     string   `json:"k"`
	VPath   string   `json:"vp"`              // URL path of the shared folder (or of the folder holding Files), no slashes at the ends
	Files   []string `json:"files,omitempty"` // shared file names inside VPath; empty shares the whole folder
	Perms   string   `json:"perms"`           // letters of rwmd the share grants
	PWSalt  string   `json:"pw_salt,omitempty"`
	PWHash  string   `json:"pw_hash,omitempty"` // hex SHA-256 of salt+password; empty: no password
	Creator string   `json:"un"`
	Created int64    `json:"t0"` // Unix seconds
	Expires int64    `json:"t1"` // Unix seconds; 0 never
}

// Shares is the durable set of shares: one JSON file, rewritten whole
// (temp file, fsync, rename, folder fsync) on every change.
type Shares struct {
	mu   sync.Mutex
	file string
	m    map[string]*Share
	now  func() time.Time
}

// MaxShares caps how many shares exist at once.
const MaxShares = 10000

// maxShares is MaxShares; tests lower it.
var maxShares = MaxShares

// ErrTooManyShares is a new share refused because MaxShares exist: the
// server's table of shares is at its cap (507), until some expire or are
// deleted.
var ErrTooManyShares = &Error{Kind: KindStateFull, Msg: fmt.Sprintf("there are already %d shares; delete or let expire some first", MaxShares)}

var shareKeyRE = regexp.MustCompile(`^[0-9A-Za-z_-]{1,64}$`)

// ErrShareKey is a share key hoard does not accept.
var ErrShareKey = &Error{Kind: KindInvalid, Msg: "a share key is 1 to 64 of the characters 0-9 A-Z a-z _ -"}

// shareKeyAlphabet leaves out the look-alikes 0 O 1 l I.
const shareKeyAlphabet = "abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789"

// NewShareKey returns a random share key of n characters, each uniform
// over shareKeyAlphabet.
func NewShareKey(n int) string { return newShareKey(rand.Reader, n) }

// newShareKey draws from r by rejection sampling: bytes at or above the
// largest multiple of the alphabet's size are thrown away, so no
// character is likelier than another (a plain modulo favours the first
// 256 mod 57 of them).
func newShareKey(r io.Reader, n int) string {
	const size = len(shareKeyAlphabet)
	const limit = 256 - 256%size
	out := make([]byte, 0, n)
	buf := make([]byte, 2*n)
	for len(out) < n {
		if _, err := io.ReadFull(r, buf); err != nil {
			panic("store: no randomness: " + err.Error()) // crypto/rand never fails on supported systems
		}
		for _, b := range buf {
			if int(b) < limit && len(out) < n {
				out = append(out, shareKeyAlphabet[int(b)%size])
			}
		}
	}
	return string(out)
}

// CheckShareKey validates a share key.
func CheckShareKey(k string) error {
	if !shareKeyRE.MatchString(k) {
		return &Error{Kind: KindInvalid, Msg: fmt.Sprintf("share key %q: %s", k, ErrShareKey.Msg), is: ErrShareKey}
	}
	return nil
}

// OpenShares loads the shares kept in file (none when it does not exist).
func OpenShares(file string, now func() time.Time) (*Shares, error) {
	if now == nil {
		now = time.Now
	}
	s := &Shares{file: file, m: map[string]*Share{}, now: now}
	b, err := readStateFile(file, 1<<30)
	if errors.Is(err, os.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, fmt.Errorf("shares: %w", err)
	}
	var list []*Share
	if err := json.Unmarshal(b, &list); err != nil {
		return nil, fmt.Errorf("shares file %s is corrupt: %w", file, err)
	}
	for _, sh := range list {
		if CheckShareKey(sh.Key) == nil {
			s.m[sh.Key] = sh
		}
	}
	return s, nil
}

// Reload reads the shares file again (an operator edited it): its
// shares replace those in memory. A file that cannot be read or parsed
// changes nothing.
func (s *Shares) Reload() (int, error) {
	n, err := OpenShares(s.file, s.now)
	if err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m = n.m
	return len(s.m), nil
}

func (sh *Share) expired(now time.Time) bool {
	return sh.Expires != 0 && now.Unix() >= sh.Expires
}

// SetPassword stores a salted hash of pw; "" removes the password.
func (sh *Share) SetPassword(pw string) error {
	if pw == "" {
		sh.PWSalt, sh.PWHash = "", ""
		return nil
	}
	salt := make([]byte, 16)
	if _, err := rand.Read(salt); err != nil {
		return err
	}
	sh.PWSalt = hex.EncodeToString(salt)
	sum := sha256.Sum256([]byte(sh.PWSalt + pw))
	sh.PWHash = hex.EncodeToString(sum[:])
	return nil
}

// HasPassword reports whether the share needs a password.
func (sh *Share) HasPassword() bool { return sh.PWHash != "" }

// CheckPassword reports whether pw is the share's password.
func (sh *Share) CheckPassword(pw string) bool {
	if sh.PWHash == "" {
		return true
	}
	sum := sha256.Sum256([]byte(sh.PWSalt + pw))
	return subtle.ConstantTimeCompare([]byte(hex.EncodeToString(sum[:])), []byte(sh.PWHash)) == 1
}

// Get returns the live share with this key.
func (s *Shares) Get(key string) (Share, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sh, ok := s.m[key]
	if !ok || sh.expired(s.now()) {
		return Share{}, false
	}
	return *sh, true
}

// Add stores a new share durably. A key in use by a live share gives
// ErrExists; an expired one is replaced.
func (s *Shares) Add(sh Share) error {
	if err := CheckShareKey(sh.Key); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.purge()
	if old, ok := s.m[sh.Key]; ok && !old.expired(s.now()) {
		return fmt.Errorf("share key %q: %w", sh.Key, ErrExists)
	}
	if len(s.m) >= maxShares {
		return ErrTooManyShares
	}
	sh.Files = slices.Clone(sh.Files)
	s.m[sh.Key] = &sh
	if err := s.save(); err != nil {
		delete(s.m, sh.Key)
		return err
	}
	return nil
}

// Delete removes a share durably.
func (s *Shares) Delete(key string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	sh, ok := s.m[key]
	if !ok {
		return ErrNotFound
	}
	delete(s.m, key)
	if err := s.save(); err != nil {
		s.m[key] = sh
		return err
	}
	return nil
}

// SetExpiry changes when a live share expires (Unix seconds, 0 never).
func (s *Shares) SetExpiry(key string, t1 int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	sh, ok := s.m[key]
	if !ok || sh.expired(s.now()) {
		return ErrNotFound
	}
	old := sh.Expires
	sh.Expires = t1
	if err := s.save(); err != nil {
		sh.Expires = old
		return err
	}
	return nil
}

// List returns the live shares, by creation time.
func (s *Shares) List() []Share {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	var out []Share
	for _, sh := range s.m {
		if !sh.expired(now) {
			out = append(out, *sh)
		}
	}
	slices.SortFunc(out, func(a, b Share) int {
		if a.Created != b.Created {
			return int(a.Created - b.Created)
		}
		return strings.Compare(a.Key, b.Key)
	})
	return out
}

// purge forgets expired shares (saved with the next change).
func (s *Shares) purge() {
	now := s.now()
	for k, sh := range s.m {
		if sh.expired(now) {
			delete(s.m, k)
		}
	}
}

func (s *Shares) save() error {
	list := make([]*Share, 0, len(s.m))
	for _, sh := range s.m {
		list = append(list, sh)
	}
	slices.SortFunc(list, func(a, b *Share) int { return strings.Compare(a.Key, b.Key) })
	b, err := json.MarshalIndent(list, "", " ")
	if err != nil {
		return err
	}
	if err := writeFileAtomic(s.file, b); err != nil {
		return fmt.Errorf("saving shares: %w", err)
	}
	return nil
}

// Grants is what the share's letters (rwmd) allow, before they are cut
// to what its creator may do.
func (sh *Share) Grants() Perm {
	// Only rwmd mean something in a share; ParsePerm reads them as
	// everywhere else (an empty set is no access).
	p, _ := ParsePerm(strings.Map(func(c rune) rune {
		if strings.ContainsRune("rwmd", c) {
			return c
		}
		return -1
	}, sh.Perms))
	return p
}

// ShareAccess resolves a share: the volume and folder it lies in (vol is
// nil when no volume has its path any more) and what its visitors may do
// there, which is what the share grants cut to what its creator may still
// do. A share of files takes no uploads: its scope is those files, and an
// upload would make another.
func (s *Store) ShareAccess(sh Share) (vol *Volume, base string, perm Perm) {
	vol, base = s.Resolve(splitPath(sh.VPath))
	if vol == nil {
		return nil, "", 0
	}
	perm = sh.Grants() & vol.Perms(sh.Creator)
	if len(sh.Files) > 0 {
		perm &^= PermWrite | PermMove | PermDelete
	}
	return vol, base, perm
}

// ShareReach returns the volumes a share reaches: the one its folder lies
// in, and every volume whose folder on disk lies inside the shared folder
// (through the share's view of the disk they are reachable too, whatever
// their own URL). A share whose volume is gone reaches every volume, so
// that only its creator, or an admin of everything, handles it.
func (s *Store) ShareReach(sh Share) []*Volume {
	vol, base, _ := s.ShareAccess(sh)
	if vol == nil {
		return s.Volumes()
	}
	out := []*Volume{vol}
	dir := filepath.Join(vol.Src, filepath.FromSlash(base))
	for _, w := range s.mounted() {
		if w == vol {
			continue
		}
		if rel, err := filepath.Rel(dir, w.Src); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") && len(sh.Files) == 0 {
			out = append(out, w)
		}
	}
	return out
}

// MayManageShare reports whether user may see the share among theirs and
// change or delete it: its creator may; anyone else only as an admin
// (permission a) of every volume it reaches. Admin is per volume: being
// admin of one volume says nothing about shares of another.
func (s *Store) MayManageShare(user string, sh Share) bool {
	if user == "" {
		return false
	}
	if sh.Creator == user {
		return true
	}
	for _, v := range s.ShareReach(sh) {
		if !v.Perms(user).Has(PermAdmin) {
			return false
		}
	}
	return true
}

// OpenShare opens the view a share is served through (Confine at its
// folder; for a share of files, ConfineFiles) and says what its visitors
// may do there (ShareAccess). When the folder is gone, is no folder, or is
// reached through a symbolic link, the error is ErrNotFound, ErrNotDir or
// ErrOutside. The caller calls release when done with the view.
func (s *Store) OpenShare(sh Share) (view *Volume, perm Perm, release func() error, err error) {
	vol, base, perm := s.ShareAccess(sh)
	if vol == nil {
		return nil, 0, nil, ErrNotFound
	}
	if len(sh.Files) > 0 {
		view, release, err = vol.ConfineFiles(base, sh.Files)
	} else {
		view, release, err = vol.Confine(base)
	}
	if err != nil {
		return nil, 0, nil, err
	}
	return view, perm, release, nil
}

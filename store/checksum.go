package store

import (
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"fmt"
	"hash"
	"strings"

	"golang.org/x/crypto/blake2b"
	"golang.org/x/crypto/blake2s"
)

// Checksums are the algorithms an upload's ck= may name (copyparty's set);
// "blake2" and "blake2s" are accepted as aliases of b2 and b2s.
var Checksums = []string{"sha512", "no", "md5", "sha1", "sha256", "b2", "b2s"}

// ValidChecksum reports whether name is one of Checksums or an alias.
func ValidChecksum(name string) bool {
	_, err := NewChecksum(name)
	return err == nil
}

// NewChecksum returns a fresh hash for the algorithm; nil for "no".
func NewChecksum(name string) (hash.Hash, error) {
	switch name {
	case "sha512":
		return sha512.New(), nil
	case "no":
		return nil, nil
	case "md5":
		return md5.New(), nil
	case "sha1":
		return sha1.New(), nil
	case "sha256":
		return sha256.New(), nil
	case "b2", "blake2":
		return blake2b.New512(nil)
	case "b2s", "blake2s":
		return blake2s.New256(nil)
	}
	return nil, fmt.Errorf("unknown checksum %q (valid: %s)", name, strings.Join(Checksums, ", "))
}

package store

import (
	"fmt"
	"strings"
)

// Perm is a set of permissions on a volume, copyparty's letters.
type Perm uint16

const (
	PermRead   Perm = 1 << iota // r: list, download, search, archive
	PermWrite                   // w: upload
	PermMove                    // m: move and rename
	PermDelete                  // d: delete, overwrite (replace), append
	PermGet                     // g: download by exact URL without listing
	PermUpGet                   // G: g, and uploads report the file's URL and key
	PermHTML                    // h: g, and folders serve their index.html
	PermDot                     // .: dotfiles in listings and archives
	PermAdmin                   // a: recent uploads of everyone, active downloads
)

// PermAll is what the letter A grants.
const PermAll = PermRead | PermWrite | PermMove | PermDelete | PermAdmin | PermDot

// ParsePerm parses copyparty's permission letters, e.g. "rw" or "A".
func ParsePerm(letters string) (Perm, error) {
	if letters == "" {
		return 0, fmt.Errorf("empty permission set")
	}
	var p Perm
	for _, c := range letters {
		switch c {
		case 'r':
			p |= PermRead
		case 'w':
			p |= PermWrite
		case 'm':
			p |= PermMove
		case 'd':
			p |= PermDelete
		case 'g':
			p |= PermGet
		case 'G':
			p |= PermGet | PermUpGet
		case 'h':
			p |= PermGet | PermHTML
		case '.':
			p |= PermDot
		case 'a':
			p |= PermAdmin
		case 'A':
			p |= PermAll
		default:
			return 0, fmt.Errorf("unknown permission letter %q in %q (valid: rwmdgGha.A)", c, letters)
		}
	}
	return p, nil
}

// Has reports whether every permission in q is in p.
func (p Perm) Has(q Perm) bool { return p&q == q }

// Any reports whether p has at least one permission of q.
func (p Perm) Any(q Perm) bool { return p&q != 0 }

// Names lists the permissions in copyparty's order and spelling, as the
// listing's "perms" field carries them.
func (p Perm) Names() []string {
	names := []string{}
	for _, e := range []struct {
		p    Perm
		name string
	}{
		{PermRead, "read"}, {PermWrite, "write"}, {PermMove, "move"}, {PermDelete, "delete"},
		{PermDot, "dot"}, {PermGet, "get"}, {PermUpGet, "upget"}, {PermHTML, "html"}, {PermAdmin, "admin"},
	} {
		if p.Has(e.p) {
			names = append(names, e.name)
		}
	}
	return names
}

func (p Perm) String() string {
	var b strings.Builder
	for _, e := range []struct {
		p Perm
		c byte
	}{
		{PermRead, 'r'}, {PermWrite, 'w'}, {PermMove, 'm'}, {PermDelete, 'd'}, {PermGet, 'g'},
		{PermUpGet, 'G'}, {PermHTML, 'h'}, {PermDot, '.'}, {PermAdmin, 'a'},
	} {
		if p.Has(e.p) {
			b.WriteByte(e.c)
		}
	}
	return b.String()
}

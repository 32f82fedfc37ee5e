package up2k

import "strings"

// HashList is a parsed X-Up2k-Hash header: the first chunk's hash, and
// either the full hashes of the chunks after it or prefixes of them.
type HashList struct {
	First    string   // first hash as sent
	Rest     []string // following hashes (full) or prefixes
	Prefixed bool     // Rest holds prefixes (copyparty's stitched forms)
}

// ParseHashList parses X-Up2k-Hash: one hash; a comma list of full hashes
// of consecutive chunks (the interface description); copyparty's compact
// "<h0>,<n>,<p1><p2>…" where n is one digit and the third field is the
// first n characters of each following hash run together; or any list
// whose second entry is shorter than 44 characters (first full, rest
// prefixes). Entries are trimmed of spaces.
func ParseHashList(h string) (HashList, error) {
	if len(h) > 1<<20 {
		return HashList{}, invalidf("X-Up2k-Hash is too long")
	}
	parts := strings.Split(h, ",")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	if parts[0] == "" {
		return HashList{}, invalidf("need hash and wark headers for binary POST (X-Up2k-Hash is empty)")
	}
	if _, _, err := ParseHash(parts[0]); err != nil {
		return HashList{}, err
	}
	hl := HashList{First: parts[0]}
	switch {
	case len(parts) == 1:
	case len(parts) == 3 && len(parts[1]) == 1:
		n := int(parts[1][0] - '0')
		if n < 1 || n > 9 {
			return HashList{}, invalidf("stitched X-Up2k-Hash: prefix length %q is not a digit from 1 to 9", parts[1])
		}
		sib := parts[2]
		if sib == "" || !hashAlphabet(sib) {
			return HashList{}, invalidf("stitched X-Up2k-Hash: the prefixes %q are not URL-safe base64", clip(sib))
		}
		for i := 0; i < len(sib); i += n {
			hl.Rest = append(hl.Rest, sib[i:min(i+n, len(sib))])
		}
		hl.Prefixed = true
	case len(parts[1]) < KeyLen:
		for _, p := range parts[1:] {
			if p == "" || len(p) > KeyLen || !hashAlphabet(p) {
				return HashList{}, invalidf("X-Up2k-Hash: sibling prefix %q is not 1 to 44 URL-safe base64 characters", clip(p))
			}
		}
		hl.Rest = parts[1:]
		hl.Prefixed = true
	default:
		for _, p := range parts[1:] {
			if _, _, err := ParseHash(p); err != nil {
				return HashList{}, err
			}
		}
		hl.Rest = parts[1:]
	}
	if len(hl.Rest) >= MaxChunks {
		return HashList{}, invalidf("X-Up2k-Hash names %d chunks; a file has at most %d", len(hl.Rest)+1, MaxChunks)
	}
	return hl, nil
}

// resolve maps a hash list to the unique chunk indexes of t, in order,
// checking that they exist, are distinct, and lie back to back in the
// file (name is the file's, for messages).
func (t *table) resolve(hl HashList, name string) ([]int, error) {
	key0, _, _ := ParseHash(hl.First)
	u0, ok := t.lookup(key0)
	if !ok {
		if hl.Prefixed {
			return nil, invalidf("unknown chunk0 [%s]", hl.First)
		}
		return nil, invalidf("unknown chunk wtf: %s", hl.First)
	}
	out := []int{u0}
	seen := map[int]bool{u0: true}
	for _, p := range hl.Rest {
		var u int
		if hl.Prefixed {
			// copyparty: the next entry of the unique-hash list.
			u = out[len(out)-1] + 1
			if u >= t.nu || !strings.HasPrefix(t.key(u), p) {
				next := "(none)"
				if u < t.nu {
					next = t.key(u)
				}
				return nil, invalidf("next sibling chunk does not start with expected prefix [%s]: [%s]", p, next)
			}
		} else {
			key, _, _ := ParseHash(p)
			if u, ok = t.lookup(key); !ok {
				return nil, invalidf("unknown chunk wtf: %s", p)
			}
		}
		if seen[u] {
			return nil, invalidf("chunk %s is named twice in X-Up2k-Hash", t.sentOf(u))
		}
		seen[u] = true
		prev := out[len(out)-1]
		if gap := t.start(u) - t.start(prev) - t.cs; gap != 0 {
			return nil, invalidf("only sibling chunks can be stitched; gap of %d bytes between offsets %d and %d in %s", gap, t.start(prev), t.start(u), name)
		}
		out = append(out, u)
	}
	return out, nil
}

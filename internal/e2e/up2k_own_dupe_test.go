package e2e

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// A write-only account gets no copy of content someone else uploaded (a
// copy would tell it the content is there), but does get one of its own
// upload (same account, same address): u2c sends a tree's duplicates only
// as a last handshake and drops what that asks for, so without the copy a
// write-only account's duplicate was never stored while u2c said it was.
func TestUp2kOwnDuplicateWriteOnly(t *testing.T) {
	t.Parallel()
	vol := t.TempDir()
	s := start(t, "-a", "u:pw", "-a", "w:wpw", "-a", "w2:wpw2", "-v", vol+":up:rw,u:w,w,w2")
	u, w, w2 := basicAuth("u:pw"), basicAuth("w:wpw"), basicAuth("w2:wpw2")

	// Someone else's content: uploaded again, not copied.
	f := newUp2kFile(seededBytes(71, 2<<20+5))
	up2kUpload(t, s, "/up/a/", "orig.bin", f, 1600000000, 2, u)
	if rep := up2kHandshake(t, s, "/up/w/", "theirs.bin", f, 1600000000, nil, w); len(rep.Hash) == 0 {
		t.Fatal("a write-only account got a copy of another account's upload")
	}
	// Its own: copied, nothing asked for, the file in place.
	g := newUp2kFile(seededBytes(72, 2<<20+7))
	up2kUpload(t, s, "/up/w/", "own.bin", g, 1600000000, 2, w)
	rep := up2kHandshake(t, s, "/up/w/", "own-again.bin", g, 1600000000, nil, w)
	if len(rep.Hash) != 0 || rep.Name != "own-again.bin" {
		t.Fatalf("a write-only account's own duplicate: need %d, name %q; want a copy", len(rep.Hash), rep.Name)
	}
	if b, err := os.ReadFile(filepath.Join(vol, "w", "own-again.bin")); err != nil || !bytes.Equal(b, g.data) {
		t.Fatalf("the copy on disk: %d bytes, %v", len(b), err)
	}
	// Another write-only account at the same address: uploads it.
	if rep := up2kHandshake(t, s, "/up/w/", "w2.bin", g, 1600000000, nil, w2); len(rep.Hash) == 0 {
		t.Fatal("a write-only account got a copy of another write-only account's upload")
	}
}

// TestUp2kOwnDuplicateAnonymous: with no account, "own upload" means the
// same client address: a second upload of the same content from that
// address is copied; from another address it is uploaded, so a stranger
// can never learn that a write-only folder holds some content.
func TestUp2kOwnDuplicateAnonymous(t *testing.T) {
	t.Parallel()
	vol := t.TempDir()
	s := start(t, "-v", vol+":up:w")
	from := func(ip string) string { return "X-Forwarded-For: " + ip }

	f := newUp2kFile(seededBytes(73, 2<<20+3))
	up2kUpload(t, s, "/up/", "first.bin", f, 1600000000, 2, from("10.9.8.7"))
	rep := up2kHandshake(t, s, "/up/", "again.bin", f, 1600000000, nil, from("10.9.8.7"))
	if len(rep.Hash) != 0 || rep.Name != "again.bin" {
		t.Fatalf("the same address's duplicate: need %d, name %q; want a copy", len(rep.Hash), rep.Name)
	}
	if b, err := os.ReadFile(filepath.Join(vol, "again.bin")); err != nil || !bytes.Equal(b, f.data) {
		t.Fatalf("the copy on disk: %d bytes, %v", len(b), err)
	}
	if rep := up2kHandshake(t, s, "/up/", "stranger.bin", f, 1600000000, nil, from("10.9.8.6")); len(rep.Hash) == 0 {
		t.Fatal("an anonymous client at another address got a copy of someone else's upload")
	}
	if _, err := os.Stat(filepath.Join(vol, "stranger.bin")); err == nil {
		t.Fatal("stranger.bin is complete before any chunk was sent")
	}
}

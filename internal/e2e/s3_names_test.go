package e2e

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// s3HoldKey is the key of the hold object of the file key in a bucket
// (store/objname.go): PREFIX/.hist/up2k-name/ + the file key's SHA-256.
func s3HoldKey(pre, fileKey string) string {
	sum := sha256.Sum256([]byte(fileKey))
	return pre + ".hist/up2k-name/" + base64.RawURLEncoding.EncodeToString(sum[:])
}

// The name of an up2k session on an S3 volume is held in the bucket
// (up2k/remotename.go): a second upload of other content to it gets its
// collision name at its handshake, through any node, and after the node
// that made the session dies; the holds of published uploads go; a hold
// object that is not one is taken over at once; a hold a node left
// without its session (killed between the two) holds the name for
// its grace (up2k's moments: here --snap-drop's 18 s), then the expiry
// drops it.
func TestS3Up2kNameHeld(t *testing.T) {
	m := startMinio(t, "vol")
	auth := basicAuth("u:pw")
	args := func() []string {
		return []string{"-a", "u:pw", "--snap-drop", "0.3", "-v", t.TempDir() + ":s3:r:rw,u:c,s3=vol/pre"}
	}
	a, b := start(t, args()...), start(t, args()...)
	holds := func() (out []string) {
		for _, k := range m.Keys(t, "vol") {
			if strings.HasPrefix(k, "pre/.hist/up2k-name/") {
				out = append(out, k)
			}
		}
		return out
	}
	collided := func(name, base string) bool { return name != base && strings.HasPrefix(name, base+"-") }

	g, h := newUp2kFile(seededBytes(61, 2000)), newUp2kFile(seededBytes(62, 3000))
	r1 := up2kHandshake(t, a, "/s3/", "y.bin", g, 1600000000, nil, auth)
	r2 := up2kHandshake(t, b, "/s3/", "y.bin", h, 1600000000, nil, auth)
	if r1.Name != "y.bin" || !collided(r2.Name, "y.bin") {
		t.Fatalf("two uploads to one name through two nodes: names %q and %q", r1.Name, r2.Name)
	}
	if hs := holds(); len(hs) != 2 || !strings.Contains(strings.Join(hs, " "), s3HoldKey("pre/", "pre/y.bin")) {
		t.Fatalf("holds %q, want y.bin's and the collision name's", hs)
	}
	// One chunk posted to both nodes at the same moment: no claim spans
	// nodes, so both may store it (the same verified bytes; the last
	// PUT wins), or one finds it stored; the file is whole either way.
	sc := newUp2kFile(seededBytes(67, 3<<20))
	rs := up2kHandshake(t, a, "/s3/", "same.bin", sc, 1600000000, nil, auth)
	var wg sync.WaitGroup
	codes := make([]string, 2)
	for i, s := range []*server{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, rb := postChunksNoFail(s, rs.Purl, rs.Wark, sc.hashes[1], sc.chunk(1), auth)
			codes[i] = fmt.Sprintf("%d %s", c, rb)
		}()
	}
	wg.Wait()
	for _, c := range codes {
		if !strings.HasPrefix(c, "200 ") && !strings.Contains(c, "already got") {
			t.Fatalf("one chunk posted to two nodes at once: %q", codes)
		}
	}
	postChunk(t, b, rs, sc, 0, auth)
	postChunk(t, a, rs, sc, 2, auth)
	if got, _ := m.Object(t, "vol", "pre/same.bin"); !bytes.Equal(got, sc.data) {
		t.Fatalf("same.bin: %d bytes, not the file", len(got))
	}

	// The node that made the first session dies: its session, and so the
	// name, stay in the bucket; a third upload to the name gets a
	// collision name through the other node, and the first upload
	// finishes through it at its name.
	a.kill(t)
	k := newUp2kFile(seededBytes(63, 1000))
	if r3 := up2kHandshake(t, b, "/s3/", "y.bin", k, 1600000000, nil, auth); !collided(r3.Name, "y.bin") || r3.Name == r2.Name {
		t.Fatalf("a third upload to the name of a dead node's session: %q", r3.Name)
	}
	postChunk(t, b, r2, h, 0, auth)
	postChunk(t, b, r1, g, 0, auth)
	if got, _ := m.Object(t, "vol", "pre/y.bin"); string(got) != string(g.data) {
		t.Fatal("y.bin is not the first upload's")
	}
	if got, _ := m.Object(t, "vol", "pre/"+r2.Name); string(got) != string(h.data) {
		t.Fatalf("%s is not the second upload's", r2.Name)
	}
	if hs := holds(); len(hs) != 1 || strings.Contains(hs[0], s3HoldKey("pre/", "pre/y.bin")) {
		t.Fatalf("holds %q, want only the third (unfinished) upload's", hs)
	}

	// Bad input: an object where a hold would be that is not one
	// (another S3 client's): the name is free.
	m.Put(t, "vol", s3HoldKey("pre/", "pre/junk.bin"), []byte("not a hold"))
	j := newUp2kFile(seededBytes(64, 500))
	if r := up2kHandshake(t, b, "/s3/", "junk.bin", j, 1600000000, nil, auth); r.Name != "junk.bin" {
		t.Fatalf("a name under a foreign object in the hold area: %q", r.Name)
	}
	// A node killed between writing its hold and its session: the hold
	// names a session that never came. For its grace (a minute, or the
	// idle time when shorter: 18 s) it holds the name, as the session
	// may be on its way ...
	dead := "#" + strings.Repeat("D", 43)
	held := time.Now()
	m.Put(t, "vol", s3HoldKey("pre/", "pre/dead.bin"), []byte("hoard-hold 1\n"+dead+"\ndead.bin\n"))
	d1 := newUp2kFile(seededBytes(65, 700))
	if r := up2kHandshake(t, b, "/s3/", "dead.bin", d1, 1600000000, nil, auth); !collided(r.Name, "dead.bin") {
		t.Fatalf("a young hold without its session: name %q", r.Name)
	}
	// ... then the expiry (every 2.25 s with --snap-drop 0.3) drops it.
	for deadline := time.Now().Add(3 * time.Minute); ; time.Sleep(2 * time.Second) {
		if _, ok := m.Object(t, "vol", s3HoldKey("pre/", "pre/dead.bin")); !ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the dead node's hold was not dropped; holds %q", holds())
		}
	}
	if time.Since(held) < 15*time.Second {
		t.Fatalf("the hold was dropped after %v, before its grace", time.Since(held))
	}
	d2 := newUp2kFile(seededBytes(66, 800))
	r := up2kHandshake(t, b, "/s3/", "dead.bin", d2, 1600000000, nil, auth)
	if r.Name != "dead.bin" {
		t.Fatalf("after the stale hold was dropped: name %q", r.Name)
	}
	postChunk(t, b, r, d2, 0, auth)
	if got, _ := m.Object(t, "vol", "pre/dead.bin"); string(got) != string(d2.data) {
		t.Fatal("dead.bin is not the upload's")
	}
	resp, body := b.do(t, "GET", "/s3/dead.bin", nil, auth)
	wantStatus(t, resp, body, http.StatusOK)
}

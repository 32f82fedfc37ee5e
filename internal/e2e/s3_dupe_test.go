package e2e

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"hoard/internal/miniotest"
)

// Content already published elsewhere in an S3 volume is copied
// server-side at the handshake, as on disk: nothing is asked for. u2c
// relies on it: it sends a file's duplicates within one run only as a
// last handshake and drops whatever that asks for, so before, the
// duplicate was never stored while u2c said all was well. Someone who
// may not read gets no copy (it would tell that the content is there):
// they upload it.
func TestS3Up2kSameContentElsewhere(t *testing.T) {
	t.Parallel()
	m := miniotest.Start(t, "vol")
	setHoardEnv(t, m.Endpoint())
	s := start(t, "-a", "u:pw", "-a", "w:wpw", "-v", t.TempDir()+":s3:rw,u:w,w:c,s3=vol/pre")
	u := basicAuth("u:pw")
	f := newUp2kFile(seededBytes(98, 3<<20+11))
	up2kUpload(t, s, "/s3/a/", "orig.bin", f, 1600000000, 2, u)

	rep := up2kHandshake(t, s, "/s3/b/", "again.bin", f, 1700000000, nil, u)
	if len(rep.Hash) != 0 || rep.Name != "again.bin" || rep.Purl != "/s3/b/" {
		t.Fatalf("handshake for content published elsewhere: need %d chunks, name %q in %q; want a copy, nothing needed", len(rep.Hash), rep.Name, rep.Purl)
	}
	wantObject(t, m, "vol", "pre/b/again.bin", f.data)
	oi, err := m.Client.StatObject(context.Background(), "vol", "pre/b/again.bin", minio.StatObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := oi.UserMetadata["Hoard-Lmod"]; got != "1700000000" {
		t.Errorf("the copy's hoard-lmod = %q, want the second client's 1700000000 (metadata %v)", got, oi.UserMetadata)
	}
	// The listing and a GET show each file's uploader's mtime, as on
	// disk (where the upload sets it), not the object's LastModified.
	for _, c := range []struct {
		dir, name string
		lmod      int64
	}{{"/s3/a/", "orig.bin", 1600000000}, {"/s3/b/", "again.bin", 1700000000}} {
		l := getListing(t, s, c.dir+"?ls", u)
		if len(l.Files) != 1 || l.Files[0].Name != c.name || l.Files[0].Ts != c.lmod {
			t.Errorf("listing of %s: %+v, want %s with ts %d", c.dir, l.Files, c.name, c.lmod)
		}
		resp, body := s.do(t, "HEAD", c.dir+c.name, nil, u)
		wantStatus(t, resp, body, http.StatusOK)
		if lm := resp.Header.Get("Last-Modified"); lm != time.Unix(c.lmod, 0).UTC().Format(http.TimeFormat) {
			t.Errorf("%s%s: Last-Modified %q, want the uploader's mtime %d", c.dir, c.name, lm, c.lmod)
		}
	}
	// Its final handshake agrees; the original is untouched.
	if fin := up2kHandshake(t, s, "/s3/b/", "again.bin", f, 1700000000, nil, u); len(fin.Hash) != 0 || fin.Name != "again.bin" {
		t.Errorf("final handshake of the copy: need %d chunks, name %q; want the copy itself, not another", len(fin.Hash), fin.Name)
	}
	var names []string
	for oi := range m.Client.ListObjects(context.Background(), "vol", minio.ListObjectsOptions{Prefix: "pre/b/", Recursive: true}) {
		names = append(names, strings.TrimPrefix(oi.Key, "pre/b/"))
	}
	if !slices.Equal(names, []string{"again.bin"}) {
		t.Errorf("the folder holds %q after the final handshake, want only again.bin", names)
	}
	wantObject(t, m, "vol", "pre/a/orig.bin", f.data)
	// A third name, taken by another file: the copy gets a collision name.
	resp, body := s.do(t, "PUT", "/s3/c/taken.bin", []byte("other"), u)
	wantStatus(t, resp, body, http.StatusCreated)
	rep = up2kHandshake(t, s, "/s3/c/", "taken.bin", f, 1700000000, nil, u)
	if len(rep.Hash) != 0 || rep.Name == "taken.bin" || !strings.HasPrefix(rep.Name, "taken.bin-") {
		t.Fatalf("copy to a taken name: %q, need %d", rep.Name, len(rep.Hash))
	}
	wantObject(t, m, "vol", "pre/c/"+rep.Name, f.data)
	wantObject(t, m, "vol", "pre/c/taken.bin", []byte("other"))

	// Write-only: no copy of someone else's upload, an upload.
	w := basicAuth("w:wpw")
	rep = up2kHandshake(t, s, "/s3/w/", "mine.bin", f, 1700000000, nil, w)
	if len(rep.Hash) == 0 {
		t.Fatal("a write-only uploader got a copy of content it may not read")
	}
	// But of its own: u2c run by a write-only account sends a tree's
	// duplicates the same way.
	g := newUp2kFile(seededBytes(99, 2<<20+3))
	up2kUpload(t, s, "/s3/w/", "own.bin", g, 1600000000, 2, w)
	rep = up2kHandshake(t, s, "/s3/w/", "own-again.bin", g, 1600000000, nil, w)
	if len(rep.Hash) != 0 || rep.Name != "own-again.bin" {
		t.Fatalf("a write-only uploader's own duplicate: need %d, name %q; want a copy", len(rep.Hash), rep.Name)
	}
	wantObject(t, m, "vol", "pre/w/own-again.bin", g.data)
}

// nodupe, dedup and --touch (umod) on an S3 volume served by two nodes:
// where a content lies is read from the bucket, so node B refuses or
// copies what node A stored a moment before, also once the upload's
// session record no longer says where the file is (it was moved, or its
// first copy deleted). A user without d cannot touch; a write-only user
// learns no path; with the store down the handshake is 503 and nothing
// changed.
func TestS3Up2kDupesTwoNodes(t *testing.T) {
	t.Parallel()
	m := miniotest.Start(t, "vol")
	setHoardEnv(t, m.Endpoint())
	args := func() []string {
		return []string{"-a", "u:pw", "-a", "w:wpw", "-a", "r:rpw",
			"-v", t.TempDir() + ":cp:rwmd,u:rw,r:c,s3=vol/cp",
			"-v", t.TempDir() + ":nd:rwmd,u:w,w:c,s3=vol/nd,nodupe",
			"-v", t.TempDir() + ":dd:rwmd,u:c,s3=vol/dd,dedup"}
	}
	a, b := start(t, args()...), start(t, args()...)
	u, w, r := basicAuth("u:pw"), basicAuth("w:wpw"), basicAuth("r:rpw")
	lmodOf := func(key string) string {
		t.Helper()
		oi, err := m.Client.StatObject(context.Background(), "vol", key, minio.StatObjectOptions{})
		if err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		return oi.UserMetadata["Hoard-Lmod"]
	}

	// Copy (and dedup): uploaded through A, then moved through A, so the
	// session record names a path that is gone; B copies from where it
	// went.
	f := newUp2kFile(seededBytes(121, 3<<20+77))
	for _, vol := range []string{"cp", "dd"} {
		up2kUpload(t, a, "/"+vol+"/a/", "orig.bin", f, 1600000000, 2, u)
		resp, body := a.do(t, "POST", "/"+vol+"/a/orig.bin?move=/"+vol+"/m/moved.bin", nil, u)
		wantStatus(t, resp, body, http.StatusCreated)
		rep := up2kHandshake(t, b, "/"+vol+"/b/", "again.bin", f, 1700000000, nil, u)
		if len(rep.Hash) != 0 || rep.Name != "again.bin" {
			t.Fatalf("%s: B's handshake for content A moved: need %d, name %q; want a copy", vol, len(rep.Hash), rep.Name)
		}
		wantObject(t, m, "vol", vol+"/b/again.bin", f.data)
		wantObject(t, m, "vol", vol+"/m/moved.bin", f.data)
		if got := lmodOf(vol + "/b/again.bin"); got != "1700000000" {
			t.Errorf("%s: the copy's hoard-lmod %q, want 1700000000", vol, got)
		}
	}

	// --touch (umod) through A for the copy B made: the mtime is set, the
	// bytes stay. Without d (r may read and write, not delete) it is not.
	umod := map[string]any{"umod": true}
	rep := up2kHandshake(t, a, "/cp/b/", "again.bin", f, 1800000000, umod, r)
	if len(rep.Hash) != 0 || rep.Name != "again.bin" {
		t.Fatalf("umod without d: need %d, name %q", len(rep.Hash), rep.Name)
	}
	if got := lmodOf("cp/b/again.bin"); got != "1700000000" {
		t.Errorf("umod without d set hoard-lmod to %q", got)
	}
	rep = up2kHandshake(t, a, "/cp/b/", "again.bin", f, 1800000000, umod, u)
	if len(rep.Hash) != 0 || rep.Name != "again.bin" || rep.Lmod != 1800000000 {
		t.Fatalf("umod: need %d, name %q, lmod %d", len(rep.Hash), rep.Name, rep.Lmod)
	}
	if got := lmodOf("cp/b/again.bin"); got != "1800000000" {
		t.Errorf("umod: hoard-lmod %q, want 1800000000", got)
	}
	wantObject(t, m, "vol", "cp/b/again.bin", f.data)

	// nodupe: stored through A, copied, the first deleted: B refuses the
	// same content at a third path, naming where it is; a write-only
	// user learns no path. Nothing is written.
	g := newUp2kFile(seededBytes(122, 2<<20+5))
	up2kUpload(t, a, "/nd/a/", "g.bin", g, 1600000000, 2, u)
	resp, body := a.do(t, "POST", "/nd/a/g.bin?copy=/nd/c/g.bin", nil, u)
	wantStatus(t, resp, body, http.StatusCreated)
	resp, body = a.do(t, "DELETE", "/nd/a/g.bin", nil, u)
	wantStatus(t, resp, body, http.StatusNoContent)
	hs := map[string]any{"name": "g.bin", "size": len(g.data), "lmod": 1600000000, "hash": g.hashes}
	resp, body = postHandshake(t, b, "/nd/b/", hs, u)
	wantStatus(t, resp, body, http.StatusConflict)
	if !strings.Contains(string(body), "upload rejected, file already exists") || !strings.Contains(string(body), "/nd/c/g.bin") {
		t.Fatalf("nodupe on B: %s", body)
	}
	resp, body = postHandshake(t, b, "/nd/b/", hs, w)
	wantStatus(t, resp, body, http.StatusConflict)
	if !strings.Contains(string(body), "(elsewhere in this volume)") || strings.Contains(string(body), "g.bin") {
		t.Fatalf("nodupe for a write-only user: %s", body)
	}
	// Its own path again is no dupe: done.
	if rep := up2kHandshake(t, b, "/nd/c/", "g.bin", g, 1600000000, nil, u); len(rep.Hash) != 0 || rep.Name != "g.bin" {
		t.Fatalf("nodupe, the file's own path: need %d, name %q", len(rep.Hash), rep.Name)
	}
	if _, ok := m.Object(t, "vol", "nd/b/g.bin"); ok {
		t.Fatal("nodupe stored the file")
	}

	// The store down: a duplicate's handshake is 503 with Retry-After,
	// nothing in the bucket changed; then it is copied.
	before := m.Keys(t, "vol")
	m.Halt()
	hs = map[string]any{"name": "third.bin", "size": len(f.data), "lmod": 1600000000, "hash": f.hashes}
	resp, body = postHandshake(t, b, "/cp/d/", hs, u)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Errorf("with the store down: %d, Retry-After %q: %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	m.Run(t)
	if after := m.Keys(t, "vol"); !slices.Equal(before, after) {
		t.Errorf("the bucket changed while the store was down:\nbefore %q\nafter  %q", before, after)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, body = postHandshake(t, b, "/cp/d/", hs, u)
		if resp.StatusCode == http.StatusOK || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	wantStatus(t, resp, body, http.StatusOK)
	wantObject(t, m, "vol", "cp/d/third.bin", f.data)
}

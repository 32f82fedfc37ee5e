package e2e

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"

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

package e2e

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
)

// A node that dies between beginning the multipart upload of a session's
// file and recording its id in the session object leaves an upload no
// session names (up2k/remoteorphan.go). The sweep aborts it once it is
// idle for --snap-drop (12 s here), while the session goes on; the upload the
// session names, idle as long, is never aborted and the file publishes
// byte-identical; another key's young upload no session names is left.
func TestS3Up2kOrphanUpload(t *testing.T) {
	m := startMinio(t, "vol")
	auth := basicAuth("u:pw")
	s := start(t, "-a", "u:pw", "--snap-drop", "0.2", "-v", t.TempDir()+":s3:r:rw,u:c,s3=vol/pre")
	f := newUp2kFile(seededBytes(91, 15<<20))
	if f.cs != 1<<20 || len(f.hashes) != 15 {
		t.Fatalf("chunk size %d, %d chunks", f.cs, len(f.hashes))
	}
	rep := up2kHandshake(t, s, "/s3/", "live.bin", f, 1600000000, nil, auth)
	postRun(t, s, rep, f, 0, 5, auth) // group 0: part 1 of the session's own upload
	live := m.Incomplete(t, "vol")
	if len(live) != 1 || !strings.HasPrefix(live[0], "pre/live.bin ") {
		t.Fatalf("unfinished uploads %q, want the session's", live)
	}

	// What the dead node left: an upload of the same file, with a part,
	// whose id never reached the session object.
	ctx := context.Background()
	core := minio.Core{Client: m.Client}
	orphan, err := core.NewMultipartUpload(ctx, "vol", "pre/live.bin", minio.PutObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := core.PutObjectPart(ctx, "vol", "pre/live.bin", orphan, 1, bytes.NewReader([]byte("left")), 4, minio.PutObjectPartOptions{}); err != nil {
		t.Fatal(err)
	}
	other, err := core.NewMultipartUpload(ctx, "vol", "pre/other.bin", minio.PutObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	has := func(id string) bool {
		return slices.ContainsFunc(m.Incomplete(t, "vol"), func(u string) bool { return strings.Contains(u, "("+id+")") })
	}

	// The session stays busy (a staged chunk every 4 s, never a whole
	// second group, which would be part 2) while the orphan ages past
	// --snap-drop, and for a few sweeps (every 1.5 s) after it is gone:
	// the named upload and the young stranger stay.
	next, last := 5, time.Now()
	deadline := time.Now().Add(3 * time.Minute)
	busy := func() {
		if time.Since(last) > 4*time.Second && next < 9 {
			postChunk(t, s, rep, f, next, auth)
			next, last = next+1, time.Now()
		}
		time.Sleep(500 * time.Millisecond)
	}
	for has(orphan) {
		if time.Now().After(deadline) {
			t.Fatalf("the orphaned upload was not aborted: %q", m.Incomplete(t, "vol"))
		}
		busy()
	}
	for gone := time.Now(); time.Since(gone) < 5*time.Second; {
		busy()
	}
	if !has(other) {
		t.Fatalf("a young upload no session names was aborted: %q", m.Incomplete(t, "vol"))
	}
	if p := s3Parts(t, m, "vol", "pre/live.bin"); len(p) != 1 || p[1] != 5<<20 {
		t.Fatalf("the session's upload: parts %v, want part 1 of 5 MiB", p)
	}
	for ; next < len(f.hashes); next++ {
		postChunk(t, s, rep, f, next, auth)
	}
	if again := up2kHandshake(t, s, "/s3/", "live.bin", f, 1600000000, nil, auth); len(again.Need) != 0 {
		t.Fatalf("the final handshake needs %d chunks", len(again.Need))
	}
	wantObject(t, m, "vol", "pre/live.bin", f.data)
}

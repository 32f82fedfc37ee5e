package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"hoard/internal/miniotest"
)

// Stitched up2k posts on an S3 volume go straight into parts of the
// file's multipart upload (docs/s3.md, "Parts"): runs of whole groups of
// chunks (G·cs ≥ 5 MiB) are written to the store once, never staged and
// read back; the chunks outside whole groups are staged and composed at
// the end.

// run is X-Up2k-Hash and the body of chunks [from, to) of f.
func (f *up2kFile) run(from, to int) (string, []byte) {
	return strings.Join(f.hashes[from:to], ","), f.data[int64(from)*f.cs : min(int64(to)*f.cs, int64(len(f.data)))]
}

// postRun posts chunks [from, to) of f to s as one stitched post and
// wants 200 "thank".
func postRun(t *testing.T, s *server, rep handshakeReply, f *up2kFile, from, to int, hdr ...string) {
	t.Helper()
	h, body := f.run(from, to)
	resp, b := postChunks(t, s, rep.Purl, rep.Wark, h, body, hdr...)
	wantStatus(t, resp, b, 200)
	if string(b) != "thank" {
		t.Fatalf("chunks %d–%d: reply %q, want thank", from, to, b)
	}
}

// s3Parts lists the parts of the unfinished multipart uploads of key:
// part number → size.
func s3Parts(t *testing.T, m *miniotest.Server, bucket, key string) map[int]int64 {
	t.Helper()
	out := map[int]int64{}
	core := minio.Core{Client: m.Client}
	for u := range m.Client.ListIncompleteUploads(context.Background(), bucket, key, false) {
		if u.Err != nil {
			t.Fatal(u.Err)
		}
		if u.Key != key {
			continue
		}
		res, err := core.ListObjectParts(context.Background(), bucket, key, u.UploadID, 0, 1000)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range res.ObjectParts {
			out[p.PartNumber] = p.Size
		}
	}
	return out
}

// s3Staged lists the chunk keys staged for the volume at pre.
func s3Staged(t *testing.T, m *miniotest.Server, bucket, pre string) []string {
	t.Helper()
	var out []string
	for _, k := range s3Sessions(t, m, bucket, pre) {
		if i := strings.Index(k, "/c/"); i >= 0 {
			out = append(out, k[i+3:])
		}
	}
	slices.Sort(out)
	return out
}

func TestS3Up2kParts(t *testing.T) {
	m := startMinio(t, "vol")
	auth := basicAuth("u:pw")
	args := func() []string {
		return []string{"-a", "u:pw", "-v", t.TempDir() + ":s3:r:rw,u:c,s3=vol/pre"}
	}
	a, b := start(t, args()...), start(t, args()...)
	// 24 chunks of 1 MiB (the last shorter): groups of 5 chunks, the
	// last group of 4.
	f := newUp2kFile(seededBytes(77, 23<<20+4321))
	if f.cs != 1<<20 || len(f.hashes) != 24 {
		t.Fatalf("chunk size %d, %d chunks", f.cs, len(f.hashes))
	}
	rep := up2kHandshake(t, a, "/s3/", "parts.bin", f, 1600000000, nil, auth)
	key := "pre/parts.bin"

	// Chunks 2–12 through A: 2–4 and 10–12 are outside whole groups and
	// staged; group 1 (chunks 5–9) is one part, number 2, never staged.
	postRun(t, a, rep, f, 2, 13, auth)
	staged := s3Staged(t, m, "vol", "pre/")
	want := []string{}
	for _, i := range []int{2, 3, 4, 10, 11, 12} {
		want = append(want, f.hashes[i])
	}
	slices.Sort(want)
	if !slices.Equal(staged, want) {
		t.Fatalf("staged %d chunks, want chunks 2–4 and 10–12 (%d)", len(staged), len(want))
	}
	if p := s3Parts(t, m, "vol", key); len(p) != 1 || p[2] != 5<<20 {
		t.Fatalf("parts %v, want part 2 of 5 MiB", p)
	}
	// Nothing is visible at the name yet.
	if _, ok := m.Object(t, "vol", key); ok {
		t.Fatal("the file is visible before its upload finished")
	}

	// A wrong-hash chunk inside a run through B: refused, nothing of the
	// run stored (neither part nor chunk objects).
	h, body := f.run(15, 24)
	bad := bytes.Clone(body)
	bad[2<<20+17] ^= 1 // chunk 17
	resp, rb := postChunks(t, b, rep.Purl, rep.Wark, h, bad, auth)
	if resp.StatusCode != 400 || !bytes.Contains(rb, []byte("corrupted")) {
		t.Fatalf("a corrupted chunk in a run: %d %s", resp.StatusCode, rb)
	}
	if p := s3Parts(t, m, "vol", key); len(p) != 1 {
		t.Fatalf("a corrupted run left parts: %v", p)
	}
	if got := s3Staged(t, m, "vol", "pre/"); !slices.Equal(got, want) {
		t.Fatalf("a corrupted run left %d staged chunks, want %d", len(got), len(want))
	}
	// A chunk already in a part is "already got" on any node.
	h, body = f.run(5, 10)
	resp, rb = postChunks(t, b, rep.Purl, rep.Wark, h, body, auth)
	if resp.StatusCode != 400 || !bytes.Contains(rb, []byte("already got")) {
		t.Fatalf("a chunk stored in a part, again: %d %s", resp.StatusCode, rb)
	}
	// B's handshake needs exactly what is not in.
	mid := up2kHandshake(t, b, "/s3/", "parts.bin", f, 1600000000, nil, auth)
	var wantNeed []string
	for _, i := range []int{0, 1, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23} {
		wantNeed = append(wantNeed, f.hashes[i])
	}
	if !slices.Equal(mid.Need, wantNeed) {
		t.Fatalf("B needs %d chunks, want %d", len(mid.Need), len(wantNeed))
	}

	// The same run to both nodes at once (a client's retry racing its
	// first try): each stores it or says it has it; nothing is lost.
	var wg sync.WaitGroup
	codes := make([]string, 2)
	for i, s := range []*server{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h, body := f.run(15, 24)
			c, rb := postChunksNoFail(s, rep.Purl, rep.Wark, h, body, auth)
			codes[i] = fmt.Sprintf("%d %s", c, rb)
		}()
	}
	wg.Wait()
	for _, c := range codes {
		if c != "200 thank" && !strings.Contains(c, "already got") {
			t.Fatalf("a run posted twice at once: %q", codes)
		}
	}
	if p := s3Parts(t, m, "vol", key); p[4] != 23<<20+4321-15<<20 {
		t.Fatalf("parts %v: want part 4 with chunks 15–23", p)
	}
	postRun(t, b, rep, f, 0, 2, auth)
	postRun(t, a, rep, f, 13, 15, auth) // the last chunks: the file is published now
	fin := up2kHandshake(t, a, "/s3/", "parts.bin", f, 1600000000, nil, auth)
	if len(fin.Need) != 0 || fin.Name != "parts.bin" {
		t.Fatalf("final handshake: need %d, name %q", len(fin.Need), fin.Name)
	}
	got, ok := m.Object(t, "vol", key)
	if !ok || !bytes.Equal(got, f.data) {
		t.Fatalf("the object is not the file (%d bytes)", len(got))
	}
	wantS3Settled(t, m, "vol", "pre/")
	oi, err := m.Client.StatObject(context.Background(), "vol", key, minio.StatObjectOptions{})
	if err != nil || oi.UserMetadata["Hoard-Wark"] != rep.Wark || oi.UserMetadata["Hoard-Uploader"] != "u" {
		t.Fatalf("the file's metadata: %v %v", oi.UserMetadata, err)
	}
	// Found again as the same content through the other node.
	if again := up2kHandshake(t, b, "/s3/", "parts.bin", f, 1600000000, nil, auth); len(again.Need) != 0 {
		t.Fatalf("the same upload again needs %d chunks", len(again.Need))
	}
}

// A node killed while a run streams into a part: the part never exists,
// the other node asks for those chunks and finishes the file.
func TestS3Up2kPartsNodeKilled(t *testing.T) {
	m := startMinio(t, "vol")
	auth := basicAuth("u:pw")
	args := func() []string {
		return []string{"-a", "u:pw", "-v", t.TempDir() + ":s3:r:rw,u:c,s3=vol/pre"}
	}
	a, b := start(t, args()...), start(t, args()...)
	f := newUp2kFile(seededBytes(78, 19<<20+99)) // 20 chunks: 4 groups of 5
	rep := up2kHandshake(t, a, "/s3/", "k.bin", f, 1600000000, nil, auth)
	postRun(t, b, rep, f, 0, 5, auth) // part 1
	// A dies with chunks 5–14 (part 2) on the wire.
	h, body := f.run(5, 15)
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := newSlowBody(body, 6<<20)
	req, _ := http.NewRequestWithContext(ctx, "POST", a.URL+escapePurl(rep.Purl), pr)
	req.ContentLength = int64(len(body))
	req.Header.Set("Authorization", strings.TrimPrefix(auth, "Authorization: "))
	req.Header.Set("Content-Type", "application/octet-stream")
	req.Header.Set("X-Up2k-Wark", rep.Wark)
	req.Header.Set("X-Up2k-Hash", h)
	errc := make(chan string, 1)
	go func() {
		resp, err := (&http.Client{Transport: &http.Transport{}}).Do(req)
		if err != nil {
			errc <- err.Error()
			return
		}
		rb, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		errc <- fmt.Sprintf("%d %s", resp.StatusCode, rb)
	}()
	select {
	case <-pw:
	case r := <-errc:
		t.Fatalf("A answered the run before its body was sent: %s", r)
	case <-time.After(2 * time.Minute):
		t.Fatal("the run's first bytes were never read")
	}
	time.Sleep(300 * time.Millisecond)
	a.kill(t)
	cancel()
	close(pr.stop)
	select {
	case <-errc:
	case <-time.After(30 * time.Second):
		t.Fatal("the request to the killed node never ended")
	}
	if p := s3Parts(t, m, "vol", "pre/k.bin"); len(p) != 1 || p[1] != 5<<20 {
		t.Fatalf("after A died mid-part the parts are %v, want part 1 only", p)
	}
	mid := up2kHandshake(t, b, "/s3/", "k.bin", f, 1600000000, nil, auth)
	if !slices.Equal(mid.Need, f.hashes[5:]) {
		t.Fatalf("after A died B needs %d chunks, want the %d from chunk 5 on", len(mid.Need), len(f.hashes)-5)
	}
	postRun(t, b, rep, f, 5, 20, auth)
	fin := up2kHandshake(t, b, "/s3/", "k.bin", f, 1600000000, nil, auth)
	if len(fin.Need) != 0 || fin.Name != "k.bin" {
		t.Fatalf("final handshake: need %d, name %q", len(fin.Need), fin.Name)
	}
	if got, ok := m.Object(t, "vol", "pre/k.bin"); !ok || !bytes.Equal(got, f.data) {
		t.Fatalf("the object is not the file (%d bytes)", len(got))
	}
	wantS3Settled(t, m, "vol", "pre/")
}

// The name an upload's parts are bound to, taken by another file before
// the upload finished: nothing is overwritten; the upload moves to a
// collision name and asks again for the chunks that were only in parts.
func TestS3Up2kPartsNameTaken(t *testing.T) {
	s, m, auth := startS3(t)
	f := newUp2kFile(seededBytes(79, 12<<20+5)) // 13 chunks: groups 0–1 and 2 (3 chunks)
	rep := up2kHandshake(t, s, "/s3/", "taken.bin", f, 1600000000, nil, auth)
	postRun(t, s, rep, f, 0, 5, auth) // part 1
	postRun(t, s, rep, f, 7, 13, auth)
	m.Put(t, "vol", "pre/taken.bin", []byte("another client's file"))
	postRun(t, s, rep, f, 5, 7, auth) // every chunk in: the publish finds the name taken
	if got, _ := m.Object(t, "vol", "pre/taken.bin"); string(got) != "another client's file" {
		t.Fatal("the other file was overwritten")
	}
	again := up2kHandshake(t, s, "/s3/", "taken.bin", f, 1600000000, nil, auth)
	if again.Name == "taken.bin" || !strings.HasPrefix(again.Name, "taken.bin-") {
		t.Fatalf("the upload's name is %q, want a collision name", again.Name)
	}
	// Parts 1 (chunks 0–4) and 3 (10–12) were bound to the name; 5–9
	// were staged and are kept.
	if !slices.Equal(again.Need, append(slices.Clone(f.hashes[:5]), f.hashes[10:]...)) {
		t.Fatalf("after its name was taken the upload needs %d chunks, want the 8 of its parts", len(again.Need))
	}
	postRun(t, s, again, f, 0, 5, auth)
	postRun(t, s, again, f, 10, 13, auth)
	fin := up2kHandshake(t, s, "/s3/", "taken.bin", f, 1600000000, nil, auth)
	if len(fin.Need) != 0 || fin.Name != again.Name {
		t.Fatalf("final handshake: need %d, name %q", len(fin.Need), fin.Name)
	}
	if got, ok := m.Object(t, "vol", "pre/"+again.Name); !ok || !bytes.Equal(got, f.data) {
		t.Fatalf("the object is not the file (%d bytes)", len(got))
	}
	wantS3Settled(t, m, "vol", "pre/")
}

// A whole file in one stitched post: its one part is the file, published
// before the answer; nothing was staged.
func TestS3Up2kPartsOnePost(t *testing.T) {
	s, m, auth := startS3(t)
	f := newUp2kFile(seededBytes(80, 6<<20+3))
	rep := up2kHandshake(t, s, "/s3/", "one.bin", f, 1600000000, nil, auth)
	resp, b := postChunks(t, s, rep.Purl, rep.Wark, stitchHashes(f.hashes), f.data, auth)
	wantStatus(t, resp, b, 200)
	if got, ok := m.Object(t, "vol", "pre/one.bin"); !ok || !bytes.Equal(got, f.data) {
		t.Fatalf("the object is not the file (%d bytes)", len(got))
	}
	wantS3Settled(t, m, "vol", "pre/")
	if fin := up2kHandshake(t, s, "/s3/", "one.bin", f, 1600000000, nil, auth); len(fin.Need) != 0 || fin.Name != "one.bin" {
		t.Fatalf("final handshake: need %d, name %q", len(fin.Need), fin.Name)
	}
}

// The upload behind a session lost in the store (aborted by another S3
// client or a lifecycle rule): its chunks are asked again, the post that
// finds it gone is 503 and forgets it, the next begins another upload.
func TestS3Up2kPartsUploadLost(t *testing.T) {
	s, m, auth := startS3(t)
	f := newUp2kFile(seededBytes(81, 14<<20+9)) // 15 chunks: 3 groups
	rep := up2kHandshake(t, s, "/s3/", "lost.bin", f, 1600000000, nil, auth)
	postRun(t, s, rep, f, 0, 5, auth)
	core := minio.Core{Client: m.Client}
	for u := range m.Client.ListIncompleteUploads(context.Background(), "vol", "pre/lost.bin", false) {
		if err := core.AbortMultipartUpload(context.Background(), "vol", u.Key, u.UploadID); err != nil {
			t.Fatal(err)
		}
	}
	again := up2kHandshake(t, s, "/s3/", "lost.bin", f, 1600000000, nil, auth)
	if !slices.Equal(again.Need, f.hashes) {
		t.Fatalf("after its upload was lost the session needs %d chunks, want all %d", len(again.Need), len(f.hashes))
	}
	h, body := f.run(5, 10)
	resp, b := postChunks(t, s, rep.Purl, rep.Wark, h, body, auth)
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("a post into a lost upload: %d %s", resp.StatusCode, b)
	}
	postRun(t, s, rep, f, 5, 10, auth)
	postRun(t, s, rep, f, 0, 5, auth)
	postRun(t, s, rep, f, 10, 15, auth)
	fin := up2kHandshake(t, s, "/s3/", "lost.bin", f, 1600000000, nil, auth)
	if len(fin.Need) != 0 || fin.Name != "lost.bin" {
		t.Fatalf("final handshake: need %d, name %q", len(fin.Need), fin.Name)
	}
	if got, ok := m.Object(t, "vol", "pre/lost.bin"); !ok || !bytes.Equal(got, f.data) {
		t.Fatalf("the object is not the file (%d bytes)", len(got))
	}
	wantS3Settled(t, m, "vol", "pre/")
}

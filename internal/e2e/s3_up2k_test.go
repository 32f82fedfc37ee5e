package e2e

// up2k on a volume on S3-compatible object storage (docs/s3.md, "up2k on
// S3"), against a real MinIO: the session lives in the bucket, so two
// hoard nodes on one bucket share it, and one may die mid-upload.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"hoard/internal/miniotest"
)

// s3Sessions lists the keys of the up2k session area of the volume at
// prefix pre (not the chunk-hash lists in .hist/hashes/, which stay with
// the files for the index).
func s3Sessions(t *testing.T, m *miniotest.Server, bucket, pre string) []string {
	t.Helper()
	var out []string
	for _, k := range m.Keys(t, bucket) {
		if strings.HasPrefix(k, pre+".hist/up2k/") {
			out = append(out, strings.TrimPrefix(k, pre))
		}
	}
	return out
}

// wantS3Settled checks that an up2k upload left nothing staged: no chunk
// objects, no unfinished multipart uploads, no caps' marks and no name
// holds (its session object, which says where the file went, may stay
// until it expires).
func wantS3Settled(t *testing.T, m *miniotest.Server, bucket, pre string) {
	t.Helper()
	for _, k := range s3Sessions(t, m, bucket, pre) {
		if !strings.HasSuffix(k, "/session.json") {
			t.Errorf("left staged in the bucket: %s", k)
		}
	}
	if inc := m.Incomplete(t, bucket); len(inc) != 0 {
		t.Errorf("unfinished multipart uploads left: %q", inc)
	}
	for _, k := range m.Keys(t, bucket) {
		if strings.HasPrefix(k, pre+".hist/up2k-ip/") {
			t.Errorf("the caps' mark of a finished upload left: %s", k)
		}
		if strings.HasPrefix(k, pre+".hist/up2k-name/") {
			t.Errorf("the name hold of a finished upload left: %s", k)
		}
	}
}

func TestS3Up2k(t *testing.T) {
	s, m, auth := startS3(t)
	// 3 MiB + a bit: 1 MiB chunks, joined through hoard (below S3's 5 MiB
	// part minimum); chunk 1 repeats chunk 0.
	data := seededBytes(21, 3<<20+777)
	copy(data[1<<20:2<<20], data[:1<<20])
	f := newUp2kFile(data)
	if f.hashes[0] != f.hashes[1] {
		t.Fatal("the test file should repeat its first chunk")
	}
	fin := up2kUpload(t, s, "/s3/sub/", "a b.bin", f, 1600000000, 3, auth)
	if fin.Name != "a b.bin" {
		t.Fatalf("final name %q", fin.Name)
	}
	got, ok := m.Object(t, "vol", "pre/sub/a b.bin")
	if !ok || !bytes.Equal(got, data) {
		t.Fatalf("the object is not the file: %d bytes, ok %v", len(got), ok)
	}
	wantS3Settled(t, m, "vol", "pre/")
	resp, body := s.do(t, "GET", "/s3/sub/a%20b.bin", nil)
	wantStatus(t, resp, body, 200)
	if !bytes.Equal(body, data) {
		t.Fatal("GET gives other bytes")
	}
	// The listing shows the file, never the session area.
	resp, body = s.do(t, "GET", "/s3/?ls&dots", nil)
	wantStatus(t, resp, body, 200)
	if bytes.Contains(body, []byte(".hist")) {
		t.Fatalf("the listing shows the session area: %s", body)
	}
	resp, body = s.do(t, "GET", "/s3/.hist/up2k/", nil)
	if resp.StatusCode < 400 {
		t.Fatalf("the session area is served: %d %s", resp.StatusCode, body)
	}

	// The same content under the same name again: found, nothing needed.
	again := up2kHandshake(t, s, "/s3/sub/", "a b.bin", f, 1600000000, nil, auth)
	if len(again.Need) != 0 || again.Name != "a b.bin" {
		t.Fatalf("the same upload again needs %d chunks, name %q", len(again.Need), again.Name)
	}
	// A session object that does not know its file was published (the
	// publisher died between the two, or a slower publisher overwrote
	// it): the handshake finds the file, asks for nothing, and settles it.
	var sess string
	for _, k := range s3Sessions(t, m, "vol", "pre/") {
		sess = k
	}
	raw, _ := m.Object(t, "vol", "pre/"+sess)
	var rec map[string]any
	if err := json.Unmarshal(raw, &rec); err != nil || rec["final"] != "sub/a b.bin" {
		t.Fatalf("session object %s: %s (%v)", sess, raw, err)
	}
	delete(rec, "final")
	raw, _ = json.Marshal(rec)
	m.Put(t, "vol", "pre/"+sess, raw)
	m.Put(t, "vol", strings.Replace("pre/"+sess, "session.json", "c/"+f.hashes[2], 1), f.chunk(2))
	again = up2kHandshake(t, s, "/s3/sub/", "a b.bin", f, 1600000000, nil, auth)
	if len(again.Need) != 0 || again.Name != "a b.bin" {
		t.Fatalf("a published upload whose record lost it needs %d chunks, name %q", len(again.Need), again.Name)
	}
	wantS3Settled(t, m, "vol", "pre/")
	// Other content under a taken name gets a collision name, as on disk.
	g := newUp2kFile(seededBytes(22, 200_000))
	other := up2kUpload(t, s, "/s3/sub/", "a b.bin", g, 1600000000, 1, auth)
	if other.Name == "a b.bin" || !strings.HasPrefix(other.Name, "a b.bin-") {
		t.Fatalf("a taken name gave %q", other.Name)
	}
	if got, _ := m.Object(t, "vol", "pre/sub/"+other.Name); !bytes.Equal(got, g.data) {
		t.Fatal("the renamed upload is not intact")
	}
	if got, _ := m.Object(t, "vol", "pre/sub/a b.bin"); !bytes.Equal(got, data) {
		t.Fatal("the first file was overwritten")
	}
	// An empty file is published at once.
	e := &up2kFile{data: nil, cs: 1 << 20, hashes: []string{}}
	er := up2kHandshake(t, s, "/s3/", "empty.txt", e, 1600000000, nil, auth)
	if len(er.Need) != 0 {
		t.Fatalf("an empty file needs %v", er.Need)
	}
	if got, ok := m.Object(t, "vol", "pre/empty.txt"); !ok || len(got) != 0 {
		t.Fatalf("empty file: %q %v", got, ok)
	}
	wantS3Settled(t, m, "vol", "pre/")
}

// Bad input on an S3 volume: the same answers as on disk, and nothing
// left in the bucket.
func TestS3Up2kBadInput(t *testing.T) {
	m := startMinio(t, "vol")
	auth := basicAuth("u:pw")
	ro := basicAuth("r:pr")
	s := start(t, "-a", "u:pw", "-a", "r:pr", "-v", t.TempDir()+":s3:r:rw,u:c,s3=vol/pre")
	local := start(t, "-a", "u:pw", "-a", "r:pr", "-v", t.TempDir()+":s3:r:rw,u")
	f := newUp2kFile(seededBytes(31, 2<<20+5))

	// The same request to both servers answers alike.
	same := func(what string, do func(s *server) (*http.Response, []byte)) {
		t.Helper()
		r1, b1 := do(s)
		r2, b2 := do(local)
		if r1.StatusCode != r2.StatusCode || r1.StatusCode < 400 {
			t.Errorf("%s: S3 %d %q, disk %d %q", what, r1.StatusCode, b1, r2.StatusCode, b2)
		}
		if what != "" && !bytes.Equal(firstLine(b1), firstLine(b2)) {
			t.Errorf("%s: S3 says %q, disk %q", what, firstLine(b1), firstLine(b2))
		}
	}
	for _, name := range []string{"..", "a\x01b", "x.PARTIAL", ".hist", "", "a/b"} {
		same("name "+name, func(s *server) (*http.Response, []byte) {
			return postHandshake(t, s, "/s3/", map[string]any{"name": name, "size": len(f.data), "hash": f.hashes}, auth)
		})
	}
	same("bad folder", func(s *server) (*http.Response, []byte) {
		return postHandshake(t, s, "/s3/.hist/", map[string]any{"name": "ok.bin", "size": len(f.data), "hash": f.hashes}, auth)
	})
	same("wrong chunk count", func(s *server) (*http.Response, []byte) {
		return postHandshake(t, s, "/s3/", map[string]any{"name": "ok.bin", "size": len(f.data), "hash": f.hashes[:1]}, auth)
	})
	same("anonymous", func(s *server) (*http.Response, []byte) {
		return postHandshake(t, s, "/s3/", map[string]any{"name": "ok.bin", "size": len(f.data), "hash": f.hashes})
	})
	same("read-only user", func(s *server) (*http.Response, []byte) {
		return postHandshake(t, s, "/s3/", map[string]any{"name": "ok.bin", "size": len(f.data), "hash": f.hashes}, ro)
	})
	same("unknown wark", func(s *server) (*http.Response, []byte) {
		return postChunks(t, s, "/s3/", strings.Repeat("A", 44), f.hashes[0], f.chunk(0), auth)
	})
	if keys := m.Keys(t, "vol"); len(keys) != 0 {
		t.Fatalf("refused handshakes left keys: %q", keys)
	}

	reps := map[*server]handshakeReply{}
	for _, x := range []*server{s, local} {
		reps[x] = up2kHandshake(t, x, "/s3/", "ok.bin", f, 1600000000, nil, auth)
	}
	chunk := func(what string, hash string, body []byte, hdr ...string) {
		t.Helper()
		same(what, func(x *server) (*http.Response, []byte) {
			return postChunks(t, x, reps[x].Purl, reps[x].Wark, hash, body, append([]string{auth}, hdr...)...)
		})
	}
	bad := slices.Clone(f.chunk(0))
	bad[777] ^= 1
	chunk("wrong bytes for the hash", f.hashes[0], bad)
	chunk("oversized chunk", f.hashes[0], append(slices.Clone(f.chunk(0)), 'x'))
	chunk("short chunk", f.hashes[0], f.chunk(0)[:1000])
	chunk("unknown chunk", up2kChunkHash([]byte("nope")), f.chunk(0))
	chunk("read-only user's chunk", f.hashes[0], f.chunk(0), ro)
	same("anonymous chunk", func(x *server) (*http.Response, []byte) {
		return postChunks(t, x, reps[x].Purl, reps[x].Wark, f.hashes[0], f.chunk(0))
	})
	for _, k := range s3Sessions(t, m, "vol", "pre/") {
		if !strings.HasSuffix(k, "/session.json") {
			t.Errorf("a refused chunk left %s", k)
		}
	}
	// A chunk stored already, alone and stitched with the next.
	for _, x := range []*server{s, local} {
		postChunk(t, x, reps[x], f, 0, auth)
	}
	chunk("a stored chunk again", f.hashes[0], f.chunk(0))
	chunk("a stored chunk stitched", f.hashes[0]+","+f.hashes[1]+","+f.hashes[2], f.data)
	if inc := m.Incomplete(t, "vol"); len(inc) != 0 {
		t.Errorf("unfinished multipart uploads left: %q", inc)
	}
	// The session is intact: every chunk is still needed, and the upload
	// completes.
	again := up2kHandshake(t, s, "/s3/", "ok.bin", f, 1600000000, nil, auth)
	if !slices.Equal(again.Need, f.hashes[1:]) {
		t.Fatalf("after refused chunks the session needs %d of %d", len(again.Need), len(f.hashes)-1)
	}
	for i := 1; i < len(f.hashes); i++ {
		postChunk(t, s, again, f, i, auth)
	}
	if got, _ := m.Object(t, "vol", "pre/ok.bin"); !bytes.Equal(got, f.data) {
		t.Fatal("the upload after refused chunks is not intact")
	}
	wantS3Settled(t, m, "vol", "pre/")
}

func firstLine(b []byte) []byte {
	l, _, _ := bytes.Cut(b, []byte("\n"))
	return l
}

// Two hoard nodes on one bucket, each with its own state folder: a
// handshake on A, chunks alternating between A and B, A killed
// mid-upload, the rest and the final handshake through B.
func TestS3Up2kTwoNodes(t *testing.T) {
	m := startMinio(t, "vol")
	auth := basicAuth("u:pw")
	args := func() []string {
		return []string{"-a", "u:pw", "-v", t.TempDir() + ":s3:r:rw,u:c,s3=vol/pre"}
	}
	a, b := start(t, args()...), start(t, args()...)
	f := newUp2kFile(seededBytes(41, 9<<20+12345)) // 10 chunks of 1 MiB
	rep := up2kHandshake(t, a, "/s3/", "two.bin", f, 1600000000, nil, auth)
	if len(rep.Need) != len(f.hashes) {
		t.Fatalf("need %d of %d", len(rep.Need), len(f.hashes))
	}
	// The session is B's too: its handshake resumes it.
	if rb := up2kHandshake(t, b, "/s3/", "two.bin", f, 1600000000, nil, auth); rb.Wark != rep.Wark || len(rb.Need) != len(f.hashes) || rb.Name != rep.Name {
		t.Fatalf("B's handshake: %+v", rb)
	}
	node := []*server{a, b}
	for i := range 5 {
		postChunk(t, node[i%2], rep, f, i, auth)
	}
	// A dies with a chunk on the wire: its first 64 KiB sent (what fits
	// in the sockets' buffers, however busy A is), then SIGKILL.
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := newSlowBody(f.chunk(5), 64<<10)
	req, _ := http.NewRequestWithContext(ctx, "POST", a.URL+escapePurl(rep.Purl), pr)
	req.ContentLength = int64(len(f.chunk(5)))
	req.Header.Set("Authorization", strings.TrimPrefix(auth, "Authorization: "))
	req.Header.Set("Content-Type", "application/octet-stream")
	req.Header.Set("X-Up2k-Wark", rep.Wark)
	req.Header.Set("X-Up2k-Hash", f.hashes[5])
	errc := make(chan string, 1)
	go func() {
		resp, err := (&http.Client{Transport: &http.Transport{}}).Do(req)
		if err != nil {
			errc <- err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		errc <- fmt.Sprintf("%d %s", resp.StatusCode, b)
	}()
	select {
	case <-pw:
	case r := <-errc:
		t.Fatalf("A answered the chunk before its body was sent: %s", r)
	case <-time.After(2 * time.Minute):
		t.Fatal("the chunk's first bytes were never read")
	}
	time.Sleep(200 * time.Millisecond)
	a.kill(t)
	cancel()
	close(pr.stop)
	select {
	case <-errc:
	case <-time.After(30 * time.Second):
		t.Fatal("the request to the killed node never ended")
	}

	// B says what is missing: chunk 5 onwards, nothing acknowledged.
	mid := up2kHandshake(t, b, "/s3/", "two.bin", f, 1600000000, nil, auth)
	if !slices.Equal(mid.Need, f.hashes[5:]) {
		t.Fatalf("after A died B needs %d chunks, want the %d from chunk 5 on", len(mid.Need), len(f.hashes)-5)
	}
	for i := 5; i < len(f.hashes); i++ {
		postChunk(t, b, mid, f, i, auth)
	}
	fin := up2kHandshake(t, b, "/s3/", "two.bin", f, 1600000000, nil, auth)
	if len(fin.Need) != 0 || fin.Name != "two.bin" {
		t.Fatalf("final handshake: need %d, name %q", len(fin.Need), fin.Name)
	}
	got, ok := m.Object(t, "vol", "pre/two.bin")
	if !ok || !bytes.Equal(got, f.data) {
		t.Fatalf("the object is not the file (%d bytes)", len(got))
	}
	wantS3Settled(t, m, "vol", "pre/")
	// A comes back (same state folder is not needed): it serves the file.
	c := start(t, args()...)
	resp, body := c.do(t, "GET", "/s3/two.bin", nil)
	wantStatus(t, resp, body, 200)
	if !bytes.Equal(body, f.data) {
		t.Fatal("a third node serves other bytes")
	}
}

// newSlowBody is a request body that sends the first n bytes of data,
// then signals on the channel and blocks until its stop is closed.
func newSlowBody(data []byte, n int) (*slowBody, chan struct{}) {
	sent := make(chan struct{})
	return &slowBody{data: data, n: n, sent: sent, stop: make(chan struct{})}, sent
}

type slowBody struct {
	data []byte
	n    int
	off  int
	sent chan struct{}
	stop chan struct{} // closed by the test: the body fails
	once bool
}

func (s *slowBody) Read(p []byte) (int, error) {
	if s.off < s.n {
		k := copy(p, s.data[s.off:s.n])
		s.off += k
		return k, nil
	}
	if !s.once {
		s.once = true
		close(s.sent)
	}
	<-s.stop
	return 0, io.ErrUnexpectedEOF
}

// copyparty's u2c.py uploads a tree into an S3 volume.
func TestS3Up2kU2C(t *testing.T) {
	u2cNeed(t)
	m := startMinio(t, "vol")
	s := start(t, "-a", "u:pw", "-v", t.TempDir()+":s3:r:rw,u:c,s3=vol/pre")
	src := t.TempDir()
	tree := filepath.Join(src, "tree")
	writeFile(t, tree, "big.bin", randomBytes(12<<20+333))
	writeFile(t, tree, "a.txt", []byte("hello\n"))
	writeFile(t, tree, "empty", nil)
	writeFile(t, tree, "sub/b b.txt", randomBytes(5000))
	writeFile(t, tree, "sub/deeper/c.bin", randomBytes(3<<20+1))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := u2cRun(t, ctx, "-a", "pw", s.URL+"/s3/", tree)
	if err != nil {
		t.Fatalf("u2c: %v\n%s\nserver log:\n%s", err, out, s.logs)
	}
	n := 0
	filepath.WalkDir(tree, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		want, _ := os.ReadFile(p)
		got, ok := m.Object(t, "vol", "pre/"+filepath.ToSlash(rel))
		if !ok || !bytes.Equal(got, want) {
			t.Errorf("%s: not in the bucket intact (%d bytes, %v)", rel, len(got), ok)
		}
		n++
		return nil
	})
	if n != 5 {
		t.Fatalf("%d files compared", n)
	}
	wantS3Settled(t, m, "vol", "pre/")
	out, err = u2cRun(t, ctx, "-a", "pw", s.URL+"/s3/", tree)
	if err != nil {
		t.Fatalf("u2c re-run: %v\n%s", err, out)
	}
	if strings.Contains(out, "uploaded ") {
		t.Fatalf("the re-run uploaded again:\n%s", out)
	}
}

// An abandoned session on an S3 volume is cleaned after --snap-drop (12 s) by
// any node: its chunk objects and session object deleted, the multipart
// upload a node left while it published aborted; other uploads are left.
func TestS3Up2kExpire(t *testing.T) {
	m := startMinio(t, "vol")
	auth := basicAuth("u:pw")
	s := start(t, "-a", "u:pw", "--snap-drop", "0.2", "-v", t.TempDir()+":s3:r:rw,u:c,s3=vol/pre")
	f := newUp2kFile(seededBytes(51, 3<<20))
	rep := up2kHandshake(t, s, "/s3/", "gone.bin", f, 1600000000, nil, auth)
	postChunk(t, s, rep, f, 0, auth)
	// What a node that died while publishing leaves, and another
	// client's upload of another key.
	core := minio.Core{Client: m.Client}
	if _, err := core.NewMultipartUpload(context.Background(), "vol", "pre/gone.bin", minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := core.NewMultipartUpload(context.Background(), "vol", "pre/other.bin", minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	if n := len(s3Sessions(t, m, "vol", "pre/")); n != 2 {
		t.Fatalf("%d session objects, want the session and one chunk", n)
	}
	deadline := time.Now().Add(3 * time.Minute)
	marks := func() (out []string) {
		for _, k := range m.Keys(t, "vol") {
			if strings.HasPrefix(k, "pre/.hist/up2k-ip/") {
				out = append(out, k)
			}
		}
		return out
	}
	if len(marks()) != 1 {
		t.Fatalf("marks of unfinished uploads: %q, want one", marks())
	}
	for len(s3Sessions(t, m, "vol", "pre/")) > 0 || len(m.Incomplete(t, "vol")) > 1 || len(marks()) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("not cleaned: %q, unfinished %q, marks %q", s3Sessions(t, m, "vol", "pre/"), m.Incomplete(t, "vol"), marks())
		}
		time.Sleep(2 * time.Second)
	}
	if inc := m.Incomplete(t, "vol"); len(inc) != 1 || !strings.HasPrefix(inc[0], "pre/other.bin ") {
		t.Fatalf("unfinished uploads after the expiry: %q", inc)
	}
	// The wark is unknown now, and a new handshake starts over.
	resp, body := postChunks(t, s, rep.Purl, rep.Wark, f.hashes[1], f.chunk(1), auth)
	wantStatus(t, resp, body, http.StatusBadRequest)
	if again := up2kHandshake(t, s, "/s3/", "gone.bin", f, 1600000000, nil, auth); len(again.Need) != len(f.hashes) {
		t.Fatalf("a new handshake needs %d of %d", len(again.Need), len(f.hashes))
	}
}

// Two hoard nodes on one bucket behind a real nginx (round robin): u2c.py
// uploads a tree whose chunks alternate between the nodes, node A is
// killed mid-upload, and u2c finishes through B; every file is
// byte-identical in the bucket, nothing is left staged, and a file sent
// through A is served by B.
func TestS3Up2kNginxTwoNodes(t *testing.T) {
	u2cNeed(t)
	ngx, err := exec.LookPath("nginx")
	if err != nil {
		t.Skip("nginx is not installed; skipping the real-proxy test")
	}
	m := startMinio(t, "vol")
	args := func() []string {
		// Indexed, with a short rescan: B finds what went through A.
		return []string{"-a", "u:pw", "--re-maxage", "2", "-v", t.TempDir() + ":s3:r:rw,u:c,s3=vol/pre:c,e2dsa"}
	}
	a, b := start(t, args()...), start(t, args()...)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	pfx := t.TempDir()
	conf := fmt.Sprintf(`pid %[1]s/nginx.pid;
error_log %[1]s/error.log;
events {}
http {
  log_format up '$request_method $uri $upstream_addr $status';
  access_log %[1]s/access.log up;
  client_body_temp_path %[1]s; proxy_temp_path %[1]s; fastcgi_temp_path %[1]s; uwsgi_temp_path %[1]s; scgi_temp_path %[1]s;
  upstream hoard { server %[3]s max_fails=0; server %[4]s max_fails=0; }
  server {
    listen 127.0.0.1:%[2]d;
    location / {
      proxy_pass http://hoard;
      proxy_next_upstream error timeout non_idempotent;
      proxy_set_header Host $http_host;
      proxy_request_buffering off;
      proxy_http_version 1.1;
      client_max_body_size 0;
    }
  }
}
`, pfx, port, strings.TrimPrefix(a.URL, "http://"), strings.TrimPrefix(b.URL, "http://"))
	os.WriteFile(filepath.Join(pfx, "nginx.conf"), []byte(conf), 0o644)
	cmd := exec.Command(ngx, "-p", pfx, "-c", filepath.Join(pfx, "nginx.conf"), "-g", "daemon off;")
	var nout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &nout, &nout
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); cmd.Wait() })
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	for i := 0; ; i++ {
		if c, err := net.Dial("tcp", base[len("http://"):]); err == nil {
			c.Close()
			break
		}
		if i > 100 {
			t.Fatalf("nginx did not listen: %s", nout.String())
		}
		time.Sleep(50 * time.Millisecond)
	}

	src := t.TempDir()
	tree := filepath.Join(src, "tree")
	writeFile(t, tree, "small.txt", []byte("through the proxy\n"))
	writeFile(t, tree, "sub/mid.bin", randomBytes(3<<20+5))
	writeFile(t, tree, "sub/big.bin", randomBytes(150<<20+99))
	py := os.Getenv("HOARD_PYTHON")
	if py == "" {
		py = "python3"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	u2c := exec.CommandContext(ctx, py, os.Getenv("HOARD_U2C"), "-ns", "-j", "2", "--sz", "1", "-a", "pw", base+"/s3/", tree)
	var uout bytes.Buffer
	u2c.Stdout, u2c.Stderr = &uout, &uout
	if err := u2c.Start(); err != nil {
		t.Fatal(err)
	}
	// Kill A once a good part of big.bin is in the bucket.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		n := 0
		for _, k := range s3Sessions(t, m, "vol", "pre/") {
			if strings.Contains(k, "/c/") {
				n++
			}
		}
		if n >= 30 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the upload never got going:\n%s", uout.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	a.kill(t)
	if _, ok := m.Object(t, "vol", "pre/tree/sub/big.bin"); ok {
		t.Fatal("big.bin was complete before A died; the test proves nothing")
	}
	if err := u2c.Wait(); err != nil {
		t.Fatalf("u2c: %v\n%s\nB's log:\n%s", err, uout.String(), b.logs)
	}
	n := 0
	filepath.WalkDir(tree, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		want, _ := os.ReadFile(p)
		got, ok := m.Object(t, "vol", "pre/"+filepath.ToSlash(rel))
		if !ok || !bytes.Equal(got, want) {
			t.Errorf("%s: not in the bucket intact (%d bytes, %v)", rel, len(got), ok)
		}
		n++
		return nil
	})
	if n != 3 {
		t.Fatalf("%d files compared", n)
	}
	wantS3Settled(t, m, "vol", "pre/")
	// The chunks went to both nodes, as nginx dealt them.
	logb, _ := os.ReadFile(filepath.Join(pfx, "access.log"))
	per := map[string]int{}
	for _, l := range strings.Split(string(logb), "\n") {
		if f := strings.Fields(l); len(f) == 4 && f[0] == "POST" && f[3] == "200" {
			per[f[2]]++
		}
	}
	if aa, bb := per[strings.TrimPrefix(a.URL, "http://")], per[strings.TrimPrefix(b.URL, "http://")]; aa < 10 || bb < 10 {
		t.Fatalf("POSTs answered by A %d, by B %d; want both to have taken chunks (%v)", aa, bb, per)
	}
	// The files A took part in are B's to serve.
	resp, body := b.do(t, "GET", "/s3/tree/small.txt", nil)
	wantStatus(t, resp, body, 200)
	if string(body) != "through the proxy\n" {
		t.Fatalf("B serves %q", body)
	}
	// And B's search finds every file, by name and by chunk hash.
	waitHits(t, b, "tree", []string{"/s3/tree/small.txt", "/s3/tree/sub/big.bin", "/s3/tree/sub/mid.bin"})
	mid, _ := os.ReadFile(filepath.Join(tree, "sub", "mid.bin"))
	if code, r := postSearch(t, b, map[string]any{"srch": true, "hash": newUp2kFile(mid).hashes[2:3]}); code != 200 || !slices.Equal(r.hrefs(), []string{"/s3/tree/sub/mid.bin"}) {
		t.Errorf("B's hash search for mid.bin: %d %q %q", code, r.Error, r.hrefs())
	}
}

// Deleting a folder of an S3 volume never deletes the up2k sessions of
// another volume whose prefix lies inside it (they are below a state
// folder name, which is no user's file), also on a node that does not
// serve that volume (one that does refuses the delete:
// TestS3NestedPrefixVolumeKept).
func TestS3Up2kNestedPrefixDelete(t *testing.T) {
	m := startMinio(t, "vol")
	auth := basicAuth("u:pw")
	s := start(t, "-a", "u:pw", "-v", t.TempDir()+":x:r:rwd,u:c,s3=vol/pre")
	sy := start(t, "-a", "u:pw", "-v", t.TempDir()+":y:r:rwd,u:c,s3=vol/pre/sub")
	f := newUp2kFile(seededBytes(61, 2<<20+3))
	rep := up2kHandshake(t, sy, "/y/", "keep.bin", f, 1600000000, nil, auth)
	postChunk(t, sy, rep, f, 0, auth)
	m.Put(t, "vol", "pre/sub/mine.txt", []byte("x's file"))
	resp, body := s.do(t, "POST", "/x/sub/?delete", nil, auth)
	wantStatus(t, resp, body, 200)
	if _, ok := m.Object(t, "vol", "pre/sub/mine.txt"); ok {
		t.Fatal("the folder's file was not deleted")
	}
	if n := len(s3Sessions(t, m, "vol", "pre/sub/")); n != 2 {
		t.Fatalf("the nested volume's session has %d objects left, want 2", n)
	}
	again := up2kHandshake(t, sy, "/y/", "keep.bin", f, 1600000000, nil, auth)
	if len(again.Need) != len(f.hashes)-1 {
		t.Fatalf("the session needs %d of %d", len(again.Need), len(f.hashes))
	}
	for i := 1; i < len(f.hashes); i++ {
		postChunk(t, sy, again, f, i, auth)
	}
	if got, _ := m.Object(t, "vol", "pre/sub/keep.bin"); !bytes.Equal(got, f.data) {
		t.Fatal("the nested volume's upload is not intact")
	}
}

// The store down mid-upload: handshakes and chunks are 503 with
// Retry-After, and once it is back the session resumes where it was,
// without a restart of hoard.
func TestS3Up2kStoreDown(t *testing.T) {
	s, m, auth := startS3(t)
	f := newUp2kFile(seededBytes(71, 3<<20+1))
	rep := up2kHandshake(t, s, "/s3/", "down.bin", f, 1600000000, nil, auth)
	postChunk(t, s, rep, f, 0, auth)
	m.Halt()
	unavailable := func(what string, resp *http.Response, body []byte) {
		t.Helper()
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
			t.Errorf("%s with the store down: %d, Retry-After %q: %s", what, resp.StatusCode, resp.Header.Get("Retry-After"), body)
		}
	}
	resp, body := postHandshake(t, s, "/s3/", map[string]any{"name": "down.bin", "size": len(f.data), "lmod": 1600000000, "hash": f.hashes}, auth)
	unavailable("handshake", resp, body)
	resp, body = postChunks(t, s, rep.Purl, rep.Wark, f.hashes[1], f.chunk(1), auth)
	unavailable("chunk", resp, body)
	m.Run(t)
	var again handshakeReply
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, body = postHandshake(t, s, "/s3/", map[string]any{"name": "down.bin", "size": len(f.data), "lmod": 1600000000, "hash": f.hashes}, auth)
		if resp.StatusCode == http.StatusOK || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	wantStatus(t, resp, body, http.StatusOK)
	json.Unmarshal(body, &again)
	if !slices.Equal(again.Need, f.hashes[1:]) {
		t.Fatalf("after the outage the session needs %d chunks, want %d", len(again.Need), len(f.hashes)-1)
	}
	for i := 1; i < len(f.hashes); i++ {
		postChunk(t, s, again, f, i, auth)
	}
	if got, _ := m.Object(t, "vol", "pre/down.bin"); !bytes.Equal(got, f.data) {
		t.Fatal("the upload is not intact after the outage")
	}
	wantS3Settled(t, m, "vol", "pre/")
}

// Sub-chunks (X-Up2k-Subc) on an S3 volume, the pieces of one chunk
// spread over two nodes: the hash continues from the state the previous
// piece left in the bucket; the answers are those on disk.
func TestS3Up2kSubchunks(t *testing.T) {
	m := startMinio(t, "vol")
	args := func() []string { return []string{"-v", t.TempDir() + ":s3:rw:c,s3=vol/pre"} }
	a, b := start(t, args()...), start(t, args()...)
	local := start(t, "-v", t.TempDir()+":s3:rw")
	f := newUp2kFile(seededBytes(81, 3<<20+777)) // 4 chunks
	rep := up2kHandshake(t, a, "/s3/", "sub.bin", f, 1600000000, nil)
	lrep := up2kHandshake(t, local, "/s3/", "sub.bin", f, 1600000000, nil)
	piece := func(x *server, r handshakeReply, i, from, to int) (*http.Response, []byte) {
		t.Helper()
		return postChunks(t, x, r.Purl, r.Wark, f.hashes[i], f.chunk(i)[from:to], fmt.Sprintf("X-Up2k-Subc: %d", from))
	}
	// Chunk 1 in three pieces: A, B, A.
	c1 := len(f.chunk(1))
	for k, x := range []*server{a, b, a} {
		from, to := k*400000, min((k+1)*400000, c1)
		if k == 2 {
			to = c1
		}
		resp, body := piece(x, rep, 1, from, to)
		wantStatus(t, resp, body, 200)
		if string(body) != "thank" {
			t.Fatalf("piece %d: %q", k, body)
		}
		need := up2kHandshake(t, b, "/s3/", "sub.bin", f, 1600000000, nil).Need
		if k < 2 && !slices.Contains(need, f.hashes[1]) {
			t.Fatal("a chunk was confirmed before its last piece")
		}
		if k == 2 && slices.Contains(need, f.hashes[1]) {
			t.Fatal("the chunk is still needed after its last piece")
		}
	}
	postChunk(t, local, lrep, f, 1)
	// The same refusals as on disk: skipping ahead, too long, twice.
	same := func(what string, do func(x *server, r handshakeReply) (*http.Response, []byte)) {
		t.Helper()
		r1, b1 := do(b, rep)
		r2, b2 := do(local, lrep)
		if r1.StatusCode != r2.StatusCode || !bytes.Equal(firstLine(b1), firstLine(b2)) {
			t.Errorf("%s: S3 %d %q, disk %d %q", what, r1.StatusCode, b1, r2.StatusCode, b2)
		}
	}
	same("first piece", func(x *server, r handshakeReply) (*http.Response, []byte) { return piece(x, r, 2, 0, 100) })
	same("skipping ahead", func(x *server, r handshakeReply) (*http.Response, []byte) { return piece(x, r, 2, 200, 300) })
	same("too long", func(x *server, r handshakeReply) (*http.Response, []byte) {
		return postChunks(t, x, r.Purl, r.Wark, f.hashes[2], make([]byte, 100), fmt.Sprintf("X-Up2k-Subc: %d", len(f.chunk(2))-50))
	})
	same("two chunks", func(x *server, r handshakeReply) (*http.Response, []byte) {
		return postChunks(t, x, r.Purl, r.Wark, f.hashes[2]+","+f.hashes[3], append(slices.Clone(f.chunk(2)), f.chunk(3)...), "X-Up2k-Subc: 0")
	})
	// A last piece with other bytes: refused, the chunk still needed.
	same("restart", func(x *server, r handshakeReply) (*http.Response, []byte) { return piece(x, r, 2, 0, 500) })
	bad := slices.Clone(f.chunk(2)[500:])
	bad[10] ^= 1
	same("corrupted last piece", func(x *server, r handshakeReply) (*http.Response, []byte) {
		return postChunks(t, x, r.Purl, r.Wark, f.hashes[2], bad, "X-Up2k-Subc: 500")
	})
	if need := up2kHandshake(t, a, "/s3/", "sub.bin", f, 1600000000, nil).Need; !slices.Contains(need, f.hashes[2]) {
		t.Fatal("a corrupted chunk was taken")
	}
	same("stored already", func(x *server, r handshakeReply) (*http.Response, []byte) { return piece(x, r, 1, 0, 100) })
	// The rest, and the file is whole.
	resp, body := piece(b, rep, 2, 0, 700000)
	wantStatus(t, resp, body, 200)
	resp, body = piece(a, rep, 2, 700000, len(f.chunk(2)))
	wantStatus(t, resp, body, 200)
	for _, i := range []int{0, 3} {
		postChunk(t, b, rep, f, i)
	}
	if got, _ := m.Object(t, "vol", "pre/sub.bin"); !bytes.Equal(got, f.data) {
		t.Fatal("the upload in pieces is not intact")
	}
	wantS3Settled(t, m, "vol", "pre/")
}

// The caps on unfinished uploads (--reg-cap-ip, --reg-cap) count an
// address's uploads into an S3 volume on every node alike (the marks in
// the bucket): two through A and one through B fill a cap of 3 on both;
// a finished upload gives its place back on the other node; the store
// down is 503 with Retry-After and leaves no mark.
func TestS3Up2kCapsTwoNodes(t *testing.T) {
	t.Parallel()
	m := miniotest.Start(t, "vol")
	setHoardEnv(t, m.Endpoint())
	args := func() []string {
		return []string{"--reg-cap-ip", "3", "--reg-cap", "5", "-v", t.TempDir() + ":s3:rw:c,s3=vol/pre"}
	}
	a, b := start(t, args()...), start(t, args()...)
	files := make([]*up2kFile, 7)
	for i := range files {
		files[i] = newUp2kFile(seededBytes(uint64(300+i), 1<<20+i))
	}
	hs := func(s *server, f *up2kFile, name string, hdr ...string) (*http.Response, []byte) {
		return postHandshake(t, s, "/s3/", map[string]any{"name": name, "size": len(f.data), "lmod": 1600000000, "hash": f.hashes}, hdr...)
	}
	r0 := up2kHandshake(t, a, "/s3/", "f0.bin", files[0], 1600000000, nil)
	up2kHandshake(t, a, "/s3/", "f1.bin", files[1], 1600000000, nil)
	up2kHandshake(t, b, "/s3/", "f2.bin", files[2], 1600000000, nil)
	for _, s := range []*server{a, b} {
		resp, body := hs(s, files[3], "f3.bin")
		wantStatus(t, resp, body, http.StatusTooManyRequests)
		if !strings.Contains(string(body), "too many unfinished uploads from your address") {
			t.Fatalf("the fourth from one address through %s: %s", s.URL, body)
		}
	}
	// The same upload again is no new one: it resumes.
	if again := up2kHandshake(t, b, "/s3/", "f0.bin", files[0], 1600000000, nil); again.Wark != r0.Wark {
		t.Fatalf("resuming an upload under the cap: %+v", again)
	}
	// Finished through A, its place is free through B.
	postChunk(t, a, r0, files[0], 0)
	wantObject(t, m, "vol", "pre/f0.bin", files[0].data)
	up2kHandshake(t, b, "/s3/", "f3.bin", files[3], 1600000000, nil)
	// ?ups through A lists the address's unfinished uploads of both nodes.
	resp, body := a.do(t, "GET", "/?ups", nil)
	wantStatus(t, resp, body, http.StatusOK)
	var ub upsBody
	json.Unmarshal(body, &ub)
	var unf []string
	for _, f := range ub.F[:min(ub.Nu, len(ub.F))] {
		unf = append(unf, f.Vp)
	}
	slices.Sort(unf)
	if !slices.Equal(unf, []string{"/s3/f1.bin", "/s3/f2.bin", "/s3/f3.bin"}) {
		t.Errorf("?ups through A: unfinished %q, want f1 (through A), f2 and f3 (through B): %s", unf, body)
	}
	// The server's cap (5) over addresses: two more from another
	// address. (Each node reads the count of all at most every 2 s, and
	// keeps its own starts and finishes in between; the upload finished
	// through A reaches B's count at its next read.)
	time.Sleep(2100 * time.Millisecond)
	other := clientFromAddr("127.0.0.9")
	for i, want := range []int{200, 200, 503} {
		body, _ := json.Marshal(map[string]any{"name": fmt.Sprintf("o%d.bin", i), "size": len(files[4+i].data), "lmod": 1600000000, "hash": files[4+i].hashes})
		resp, err := other.Post(b.URL+"/s3/", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		rb, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want || want == 503 && resp.Header.Get("Retry-After") == "" {
			t.Fatalf("handshake %d from another address: %d (Retry-After %q) %s, want %d", i, resp.StatusCode, resp.Header.Get("Retry-After"), rb, want)
		}
	}
	// The store down: 503, and no mark is left for the upload refused.
	before := m.Keys(t, "vol")
	m.Halt()
	resp, body = hs(a, files[6], "down.bin")
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Errorf("with the store down: %d, Retry-After %q: %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	m.Run(t)
	if after := m.Keys(t, "vol"); !slices.Equal(before, after) {
		t.Errorf("the bucket changed while the store was down:\nbefore %q\nafter  %q", before, after)
	}
}

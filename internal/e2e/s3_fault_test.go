package e2e

// Faults of the object store under a volume on S3 (issue 21, "Faults"),
// against a real MinIO: a drive of a 4-drive erasure set made unusable
// mid-upload, one process of a distributed set of 4 killed mid-upload,
// the whole store down and back; and clients that half-close their
// connection once their body is sent.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"hoard/internal/miniotest"
)

// pipedPut is a PUT of size bytes whose body the test writes through w,
// so that a fault can come at a chosen point of it; done gives the answer.
type pipedPut struct {
	w    *io.PipeWriter
	done chan pipedResult
}

type pipedResult struct {
	code int
	body []byte
	err  error
}

func startPipedPut(t *testing.T, s *server, path string, size int, hdr ...string) *pipedPut {
	t.Helper()
	pr, pw := io.Pipe()
	req, err := http.NewRequest("PUT", s.URL+path, pr)
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = int64(size)
	for _, h := range hdr {
		k, v, _ := strings.Cut(h, ":")
		req.Header.Set(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	p := &pipedPut{w: pw, done: make(chan pipedResult, 1)}
	go func() {
		resp, err := slowClient.Do(req)
		if err != nil {
			pr.CloseWithError(err)
			p.done <- pipedResult{err: err}
			return
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		p.done <- pipedResult{code: resp.StatusCode, body: b, err: err}
	}()
	return p
}

// end sends the rest of the body and returns the answer. A server may
// answer before the body has ended (a refusal: the store went away under
// the upload); the transport then closes the body, the write fails, and
// that answer is the result.
func (p *pipedPut) end(t *testing.T, rest []byte) pipedResult {
	t.Helper()
	if _, err := p.w.Write(rest); err != nil {
		select {
		case r := <-p.done:
			t.Logf("the server answered before the body ended (%v): %d %v %.200s", err, r.code, r.err, r.body)
			return r
		case <-time.After(time.Minute):
			t.Fatalf("writing the rest of the body: %v, and no answer", err)
		}
	}
	p.w.Close()
	return <-p.done
}

// retry503 repeats do while it answers 503 with Retry-After, as a client
// does, for up to a minute: a distributed MinIO set that just lost a
// process refuses some writes for a while on a loaded machine ("Resource
// requested is unwritable"), which hoard passes on as exactly that.
func retry503(t *testing.T, what string, do func() (int, http.Header, []byte)) (int, []byte) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(500 * time.Millisecond) {
		code, h, body := do()
		if code != http.StatusServiceUnavailable || time.Now().After(deadline) {
			return code, body
		}
		if h.Get("Retry-After") == "" {
			t.Fatalf("%s: 503 without Retry-After: %.200s", what, body)
		}
		t.Logf("%s: 503 (%.100s), again", what, body)
	}
}

// wantObject fails unless key in bucket holds exactly data (read
// straight from MinIO, not through hoard).
func wantObject(t *testing.T, m *miniotest.Server, bucket, key string, data []byte) {
	t.Helper()
	got, ok := m.Object(t, bucket, key)
	if !ok || !bytes.Equal(got, data) {
		t.Fatalf("object %s: present %v, %d bytes; want the %d bytes sent", key, ok, len(got), len(data))
	}
}

// faultUploads runs a large PUT and an up2k upload through s and calls
// fault when both are half way: the PUT has sent 24 MiB of 40 (its first
// 16 MiB part is in the store), the up2k upload 6 of its 12 chunks. Both
// must complete; then each object is checked through the S3 API of
// check and by a GET through hoard.
func faultUploads(t *testing.T, s *server, check *miniotest.Server, fault func()) {
	t.Helper()
	big := seededBytes(91, 40<<20+321)
	f := newUp2kFile(seededBytes(92, 12<<20+5)) // 13 chunks of 1 MiB: joined through hoard
	put := startPipedPut(t, s, "/s3/big.bin", len(big))
	if _, err := put.w.Write(big[:24<<20]); err != nil {
		t.Fatal(err)
	}
	rep := up2kHandshake(t, s, "/s3/", "u.bin", f, 1600000000, nil)
	for i := range 6 {
		postChunk(t, s, rep, f, i)
	}
	fault()
	// After the fault what the store refuses for a while is a 503 with
	// Retry-After, and the client tries again (the whole PUT: its body
	// was streamed, and replacing needs the volume's d); what it answers
	// 200 or 201 must be whole.
	if r := put.end(t, big[24<<20:]); r.err != nil || r.code != http.StatusCreated {
		if r.code != http.StatusServiceUnavailable {
			t.Fatalf("piped PUT after the fault: %d %v %.200s\nserver log:\n%s", r.code, r.err, r.body, tail(s.logs.String(), 3000))
		}
		code, body := retry503(t, "PUT again", func() (int, http.Header, []byte) {
			resp, body := s.do(t, "PUT", "/s3/big.bin?replace", big)
			return resp.StatusCode, resp.Header, body
		})
		if code != http.StatusCreated {
			t.Fatalf("PUT after the fault: %d %.200s", code, body)
		}
	}
	for i := 6; i < len(f.hashes); i++ {
		code, body := retry503(t, fmt.Sprintf("chunk %d", i), func() (int, http.Header, []byte) {
			resp, body := postChunks(t, s, rep.Purl, rep.Wark, f.hashes[i], f.chunk(i))
			return resp.StatusCode, resp.Header, body
		})
		if code != http.StatusOK || string(body) != "thank" {
			t.Fatalf("chunk %d after the fault: %d %.200s", i, code, body)
		}
	}
	hs := map[string]any{"name": "u.bin", "size": len(f.data), "lmod": 1600000000, "hash": f.hashes}
	code, body := retry503(t, "final handshake", func() (int, http.Header, []byte) {
		resp, body := postHandshake(t, s, "/s3/", hs)
		return resp.StatusCode, resp.Header, body
	})
	var fin handshakeReply
	if code != http.StatusOK || json.Unmarshal(body, &fin) != nil || len(fin.Hash) != 0 {
		t.Fatalf("final handshake: %d %.300s", code, body)
	}
	wantObject(t, check, "vol", "big.bin", big)
	wantObject(t, check, "vol", "u.bin", f.data)
	for name, data := range map[string][]byte{"big.bin": big, "u.bin": f.data} {
		resp, body := s.do(t, "GET", "/s3/"+name, nil)
		wantStatus(t, resp, body, http.StatusOK)
		if !bytes.Equal(body, data) {
			t.Fatalf("GET /s3/%s: %d bytes differ from the %d sent", name, len(body), len(data))
		}
	}
	if inc := check.Incomplete(t, "vol"); len(inc) != 0 {
		t.Errorf("unfinished multipart uploads left: %q", inc)
	}
}

// One drive of the 4-drive erasure set goes bad while a PUT and an up2k
// upload are half way: both complete, byte-identical (EC:2 keeps the
// write quorum with 3 drives).
func TestS3FaultDriveLost(t *testing.T) {
	t.Parallel()
	m := miniotest.Start(t, "vol")
	setHoardEnv(t, m.Endpoint())
	s := start(t, "-v", t.TempDir()+":s3:rwd:c,s3=vol")
	faultUploads(t, s, m, func() { m.BreakDrive(t, 2) })
	// The drive really is gone: what was written after holds no part on it.
	resp, body := s.do(t, "PUT", "/s3/after.txt", []byte("after the drive went"))
	wantStatus(t, resp, body, http.StatusCreated)
	wantObject(t, m, "vol", "after.txt", []byte("after the drive went"))
}

// One process of a distributed set of 4 (one drive each) is killed with
// SIGKILL while a PUT and an up2k upload are half way: the set carries
// on and both complete, read back through another process.
func TestS3FaultNodeKilled(t *testing.T) {
	t.Parallel()
	set := miniotest.StartDistributed(t, 4, "vol")
	setHoardEnv(t, set.Endpoint())
	s := start(t, "-v", t.TempDir()+":s3:rwd:c,s3=vol")
	faultUploads(t, s, set.Nodes[1], func() { set.Nodes[2].Kill() })
	resp, body := s.do(t, "GET", "/s3/?ls", nil)
	wantStatus(t, resp, body, http.StatusOK)
	if !strings.Contains(string(body), "big.bin") || !strings.Contains(string(body), "u.bin") {
		t.Errorf("listing after the kill: %.300s", body)
	}
}

// The whole distributed set down: PUT, GET, listing, up2k handshake and
// chunk are 503 with Retry-After and change nothing; the set restarted on
// the same ports, hoard (not restarted) serves again and the up2k session
// resumes needing exactly the chunks it never acknowledged.
func TestS3FaultStoreDown(t *testing.T) {
	t.Parallel()
	set := miniotest.StartDistributed(t, 4, "vol")
	setHoardEnv(t, set.Endpoint())
	m := set.Nodes[0]
	s := start(t, "-v", t.TempDir()+":s3:rw:c,s3=vol/pre")
	before := seededBytes(93, 100_000)
	resp, body := s.do(t, "PUT", "/s3/before.bin", before)
	wantStatus(t, resp, body, http.StatusCreated)
	f := newUp2kFile(seededBytes(94, 6<<20+7)) // 7 chunks
	rep := up2kHandshake(t, s, "/s3/", "up.bin", f, 1600000000, nil)
	sent := []int{0, 2, 5}
	for _, i := range sent {
		postChunk(t, s, rep, f, i)
	}
	keys := m.Keys(t, "vol")

	set.Halt()
	unavailable := func(what string, resp *http.Response, body []byte) {
		t.Helper()
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
			t.Errorf("%s with the store down: %d, Retry-After %q: %.200s", what, resp.StatusCode, resp.Header.Get("Retry-After"), body)
		}
	}
	resp, body = s.do(t, "PUT", "/s3/during.bin", []byte("during the outage"))
	unavailable("PUT", resp, body)
	resp, body = doChunked(t, s, "PUT", "/s3/during2.bin", seededBytes(95, 1<<20))
	unavailable("PUT, chunked", resp, body)
	resp, body = s.do(t, "GET", "/s3/before.bin", nil)
	unavailable("GET", resp, body)
	resp, body = s.do(t, "GET", "/s3/?ls", nil)
	unavailable("listing", resp, body)
	hs := map[string]any{"name": "up.bin", "size": len(f.data), "lmod": 1600000000, "hash": f.hashes}
	resp, body = postHandshake(t, s, "/s3/", hs)
	unavailable("up2k handshake", resp, body)
	resp, body = postChunks(t, s, rep.Purl, rep.Wark, f.hashes[1], f.chunk(1))
	unavailable("up2k chunk", resp, body)

	set.Run(t) // the same ports and drives
	_, body = waitServed(t, s, "/s3/before.bin", 60*time.Second)
	if !bytes.Equal(body, before) {
		t.Fatal("the object stored before the outage changed")
	}
	if after := m.Keys(t, "vol"); !slices.Equal(after, keys) {
		t.Errorf("the refused requests changed the bucket: %q, then %q", keys, after)
	}
	// The set may still be settling (MinIO answers some requests with
	// "server not initialized" for a while after a restart, which hoard
	// passes on as 503 + Retry-After): like any client, retry those.
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(250 * time.Millisecond) {
		resp, body = postHandshake(t, s, "/s3/", hs)
		if resp.StatusCode != http.StatusServiceUnavailable || time.Now().After(deadline) {
			break
		}
	}
	wantStatus(t, resp, body, http.StatusOK)
	again := up2kHandshake(t, s, "/s3/", "up.bin", f, 1600000000, nil)
	var want []string
	for i, h := range f.hashes {
		if !slices.Contains(sent, i) {
			want = append(want, h)
		}
	}
	if again.Wark != rep.Wark || !slices.Equal(again.Hash, want) {
		t.Fatalf("after the outage the session needs %d chunks, want exactly the %d never acknowledged", len(again.Hash), len(want))
	}
	for _, h := range again.Hash {
		for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(250 * time.Millisecond) {
			resp, body = postChunks(t, s, again.Purl, again.Wark, h, f.chunk(f.index(h)))
			if resp.StatusCode != http.StatusServiceUnavailable || time.Now().After(deadline) {
				break
			}
			if resp.Header.Get("Retry-After") == "" {
				t.Errorf("a 503 without Retry-After: %s", body)
			}
		}
		wantStatus(t, resp, body, http.StatusOK)
		if string(body) != "thank" {
			t.Fatalf("chunk: %q", body)
		}
	}
	wantObject(t, m, "vol", "pre/up.bin", f.data)
	wantS3Settled(t, m, "vol", "pre/")
	resp, body = s.do(t, "PUT", "/s3/during.bin", []byte("after the outage"))
	wantStatus(t, resp, body, http.StatusCreated)
}

// Clients that half-close their connection as soon as their request is
// sent (shutdown(SHUT_WR), as `nc -N` and some scripts do) get their
// answer and their upload: net/http cancels such a request's context
// once the body is read, and the store's work must not depend on it from
// there on. Before, a PUT got "200" with an empty body and nothing was
// stored; the last chunk of an up2k upload was stored but not published.
func TestS3HalfClosed(t *testing.T) {
	t.Parallel()
	m := miniotest.Start(t, "vol")
	setHoardEnv(t, m.Endpoint())
	s := start(t, "-v", t.TempDir()+":s3:rw:c,s3=vol")
	host := strings.TrimPrefix(s.URL, "http://")

	data := seededBytes(96, 300_000)
	raw := fmt.Sprintf("PUT /s3/half.bin HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n\r\n", host, len(data))
	resp, body := sendRaw(t, s, append([]byte(raw), data...))
	wantStatus(t, resp, body, http.StatusCreated)
	wantObject(t, m, "vol", "half.bin", data)

	f := newUp2kFile(seededBytes(97, 2<<20+9)) // 3 chunks
	rep := up2kHandshake(t, s, "/s3/", "halfk.bin", f, 1600000000, nil)
	post := func(i int, extra string, b []byte) {
		t.Helper()
		raw := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/octet-stream\r\nX-Up2k-Wark: %s\r\nX-Up2k-Hash: %s\r\n%sContent-Length: %d\r\n\r\n",
			escapePurl(rep.Purl), host, rep.Wark, f.hashes[i], extra, len(b))
		resp, body := sendRaw(t, s, append([]byte(raw), b...))
		wantStatus(t, resp, body, http.StatusOK)
		if string(body) != "thank" {
			t.Fatalf("chunk %d: %q, want thank", i, body)
		}
	}
	// Chunk 1 in two sub-chunk pieces, each half-closed: the first's hash
	// state is stored for the second.
	c1 := f.chunk(1)
	post(1, "X-Up2k-Subc: 0\r\n", c1[:600_000])
	post(1, "X-Up2k-Subc: 600000\r\n", c1[600_000:])
	post(0, "", f.chunk(0))
	post(2, "", f.chunk(2)) // the last: it publishes the file
	wantObject(t, m, "vol", "halfk.bin", f.data)
	wantS3Settled(t, m, "vol", "")

	// A half-closed GET or listing is cut short by net/http the same way
	// (the object store's read is cancelled): then no answer at all, never
	// a "200" with an empty body, which a client would take for an empty
	// file (it did before).
	for _, target := range []string{"/s3/half.bin", "/s3/?ls"} {
		c, err := net.DialTimeout("tcp", host, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(20 * time.Second))
		fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, host)
		c.(*net.TCPConn).CloseWrite()
		got, _ := io.ReadAll(c)
		c.Close()
		if len(got) == 0 {
			continue // cut: the client knows it got nothing
		}
		resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(got)), nil)
		if err != nil {
			t.Fatalf("GET %s half-closed: %v: %.200q", target, err, got)
		}
		b, err := io.ReadAll(resp.Body)
		if resp.StatusCode == http.StatusOK && errors.Is(err, io.ErrUnexpectedEOF) {
			// Cut after the head: the body is shorter than its
			// Content-Length (or lacks chunked's last chunk), which
			// every client sees as a failed download, not a file.
			continue
		}
		if err != nil || resp.StatusCode != http.StatusOK || (target == "/s3/half.bin" && !bytes.Equal(b, data)) || (target == "/s3/?ls" && !bytes.Contains(b, []byte("halfk.bin"))) {
			t.Errorf("GET %s half-closed: %d, %d bytes (%v): a wrong answer", target, resp.StatusCode, len(b), err)
		}
	}
}

// A store that takes connections and never answers (its process stopped:
// SIGSTOP) is a 503 + Retry-After within --s3-timeout, for every kind of
// request — an up2k handshake, a chunk, a PUT, a GET, a listing — never
// a request held for ever (an up2k handshake once waited 5 minutes for a
// session object's PUT: minio-go's transport waits a minute for an
// answer, then retries twice). Let go, the same hoard serves again.
func TestS3FaultStoreHung(t *testing.T) {
	t.Parallel()
	m := miniotest.Start(t, "vol")
	setHoardEnv(t, m.Endpoint())
	s := start(t, "--s3-timeout", "2", "-v", t.TempDir()+":s3:rw:c,s3=vol/pre")
	before := seededBytes(96, 100_000)
	resp, body := s.do(t, "PUT", "/s3/before.bin", before)
	wantStatus(t, resp, body, http.StatusCreated)
	f := newUp2kFile(seededBytes(97, 3<<20+5))
	rep := up2kHandshake(t, s, "/s3/", "up.bin", f, 1600000000, nil)
	postChunk(t, s, rep, f, 0)

	m.Freeze()
	thawed := false
	thaw := func() {
		if !thawed {
			m.Thaw()
			thawed = true
		}
	}
	defer thaw()
	unavailable := func(what string, took time.Duration, resp *http.Response, body []byte) {
		t.Helper()
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
			t.Errorf("%s with the store hung: %d, Retry-After %q: %.200s", what, resp.StatusCode, resp.Header.Get("Retry-After"), body)
		}
		// 2 s of cap; a request may make two calls in turn (a stat, then
		// the write), so allow a few caps but never minio-go's minutes.
		if took > 15*time.Second {
			t.Errorf("%s with the store hung took %v (cap 2 s)", what, took)
		}
	}
	type req struct {
		what string
		run  func() (*http.Response, []byte)
	}
	hs := map[string]any{"name": "new.bin", "size": len(f.data), "lmod": 1600000000, "hash": f.hashes}
	for _, r := range []req{
		{"up2k handshake", func() (*http.Response, []byte) { return postHandshake(t, s, "/s3/", hs) }},
		{"up2k chunk", func() (*http.Response, []byte) {
			return postChunks(t, s, rep.Purl, rep.Wark, f.hashes[1], f.chunk(1))
		}},
		{"PUT", func() (*http.Response, []byte) { return s.do(t, "PUT", "/s3/during.bin", []byte("during")) }},
		{"GET", func() (*http.Response, []byte) { return s.do(t, "GET", "/s3/before.bin", nil) }},
		{"listing", func() (*http.Response, []byte) { return s.do(t, "GET", "/s3/?ls", nil) }},
	} {
		done := make(chan struct{})
		var resp *http.Response
		var body []byte
		t0 := time.Now()
		go func() {
			defer close(done)
			resp, body = r.run()
		}()
		select {
		case <-done:
		case <-time.After(40 * time.Second):
			thaw() // let the request end, so the test does
			<-done
			t.Fatalf("%s with the store hung: no answer in 40 s", r.what)
		}
		unavailable(r.what, time.Since(t0), resp, body)
	}

	thaw()
	_, body = waitServed(t, s, "/s3/before.bin", 60*time.Second)
	if !bytes.Equal(body, before) {
		t.Fatal("the object stored before changed")
	}
	up2kUpload(t, s, "/s3/", "up.bin", f, 1600000000, 2)
	wantObject(t, m, "vol", "pre/up.bin", f.data)
}

// waitServed polls GET path on s until it is answered 200 (the store back
// after an outage), and fails the test if it is not within the time.
func waitServed(t *testing.T, s *server, path string, within time.Duration) (*http.Response, []byte) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		resp, body := s.do(t, "GET", path, nil)
		if resp.StatusCode == http.StatusOK || time.Now().After(deadline) {
			wantStatus(t, resp, body, http.StatusOK)
			return resp, body
		}
		time.Sleep(200 * time.Millisecond)
	}
}

package e2e

// End-to-end tests of up2k, copyparty's resumable upload protocol, over
// real HTTP against the built binary: handshakes, chunks in any order over
// parallel connections, stitched and sub-chunk posts, corrupt and repeated
// chunks, two clients at once, identical content elsewhere (copy, links),
// collision renames, a server killed mid-upload, empty files and chunk
// size boundaries. Refused input is in up2k_bad_test.go; the run with
// copyparty's own client u2c.py is in up2k_u2c_test.go. Helpers here are
// prefixed "u2".

import (
	"bytes"
	"context"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// ---- helpers -------------------------------------------------------------

// ---- tests ---------------------------------------------------------------

func TestUp2kShuffledParallel(t *testing.T) {
	t.Parallel()
	vol := t.TempDir()
	s := start(t, "-v", vol+"::rw")
	f := newUp2kFile(randomBytes(24<<20 + 12345)) // 25 chunks of 1 MiB, the last short
	rep := up2kHandshake(t, s, "/dir/sub/", "a b.bin", f, 1600000000, nil)
	if rep.Name != "a b.bin" || rep.Purl != "/dir/sub/" || rep.Size != int64(len(f.data)) || !rep.Sprs || rep.Lmod != 1600000000 || len(rep.Hash) != 25 {
		t.Fatalf("first handshake: %+v", rep)
	}
	if rep.Wark != rep.Dwrk || len(rep.Wark) != 44 {
		t.Fatalf("wark %q dwrk %q", rep.Wark, rep.Dwrk)
	}
	// The work file exists at full size, sparse, and is not listed (on
	// S3 there is none: chunks are objects of their own).
	if !onS3(t) {
		fi, err := os.Stat(filepath.Join(vol, "dir/sub/a b.bin.PARTIAL"))
		if err != nil || fi.Size() != int64(len(f.data)) {
			t.Fatalf("work file: %v %v", fi, err)
		}
		if st := fi.Sys().(*syscall.Stat_t); st.Blocks*512 > 1<<20 {
			t.Errorf("work file is not sparse: %d bytes allocated", st.Blocks*512)
		}
		resp, b := s.do(t, "GET", "/dir/sub/?ls", nil)
		wantStatus(t, resp, b, 200)
		if bytes.Contains(b, []byte("PARTIAL")) {
			t.Fatalf("listing shows the work file: %s", b)
		}
	}
	// Half the chunks, shuffled, 6 at a time; the need list shrinks.
	order := mrand.Perm(25)
	var half []string
	for _, i := range order[:12] {
		half = append(half, f.hashes[i])
	}
	runParallel(t, 6, half, func(h string) {
		if code, b := postChunksNoFail(s, rep.Purl, rep.Wark, h, f.chunk(f.index(h))); code != 200 || string(b) != "thank" {
			t.Errorf("chunk: %d %s", code, b)
		}
	})
	mid := up2kHandshake(t, s, "/dir/sub/", "a b.bin", f, 1600000000, nil)
	if len(mid.Hash) != 13 {
		t.Fatalf("after 12 chunks the server needs %d, want 13", len(mid.Hash))
	}
	for _, h := range half {
		if slices.Contains(mid.Hash, h) {
			t.Fatalf("chunk %s was acknowledged but is still needed", h)
		}
	}
	var rest []string
	for _, i := range order[12:] {
		rest = append(rest, f.hashes[i])
	}
	runParallel(t, 6, rest, func(h string) {
		if code, b := postChunksNoFail(s, rep.Purl, rep.Wark, h, f.chunk(f.index(h))); code != 200 || string(b) != "thank" {
			t.Errorf("chunk: %d %s", code, b)
		}
	})
	// Complete as soon as the last chunk was acknowledged.
	wantUploaded(t, filepath.Join(vol, "dir/sub/a b.bin"), f.data, 1600000000)
	fin := up2kHandshake(t, s, "/dir/sub/", "a b.bin", f, 1600000000, nil)
	if len(fin.Hash) != 0 || fin.Name != "a b.bin" || fin.Wark != rep.Wark {
		t.Fatalf("final handshake: %+v", fin)
	}
	resp, b := s.do(t, "GET", "/dir/sub/a%20b.bin", nil)
	wantStatus(t, resp, b, 200)
	if !bytes.Equal(b, f.data) {
		t.Fatal("download differs")
	}
	// The browser's text/plain handshake and the spec's padded full
	// hashes work too.
	g := newUp2kFile(randomBytes(3 << 20))
	full := make([]string, len(g.hashes))
	for i := range full {
		sum := sha512.Sum512(g.chunk(i))
		full[i] = base64.URLEncoding.EncodeToString(sum[:])
	}
	body, _ := json.Marshal(map[string]any{"name": "g.bin", "size": len(g.data), "lmod": 1.5e9, "hash": full})
	resp, b = s.do(t, "POST", "/dir/", body, "Content-Type: text/plain;charset=UTF-8")
	wantStatus(t, resp, b, 200)
	var gr handshakeReply
	json.Unmarshal(b, &gr)
	if !slices.Equal(gr.Need, full) {
		t.Fatalf("need %v, want the hashes as sent", gr.Need)
	}
	for i, h := range full {
		resp, b := postChunks(t, s, gr.Purl, gr.Wark, h, g.chunk(i))
		wantStatus(t, resp, b, 200)
	}
	wantUploaded(t, filepath.Join(vol, "dir/g.bin"), g.data, 1500000000)
}

func TestUp2kStitchedAndSubchunks(t *testing.T) {
	vol := t.TempDir()
	s := start(t, "-v", vol+"::rw")
	f := newUp2kFile(randomBytes(10<<20 + 777)) // 11 chunks
	rep := up2kHandshake(t, s, "/", "st.bin", f, 1600000000, nil)
	if rep.Purl != "/" {
		t.Fatalf("purl %q for the root", rep.Purl)
	}
	cat := func(i, j int) []byte {
		var b []byte
		for k := i; k < j; k++ {
			b = append(b, f.chunk(k)...)
		}
		return b
	}
	// The spec's comma list of full hashes: chunks 0-2.
	resp, b := postChunks(t, s, rep.Purl, rep.Wark, strings.Join(f.hashes[0:3], ","), cat(0, 3))
	wantStatus(t, resp, b, 200)
	// copyparty's compact form: chunks 3-6.
	resp, b = postChunks(t, s, rep.Purl, rep.Wark, stitchHashes(f.hashes[3:7]), cat(3, 7))
	wantStatus(t, resp, b, 200)
	// First hash, then bare prefixes: chunks 7-8.
	resp, b = postChunks(t, s, rep.Purl, rep.Wark, f.hashes[7]+","+f.hashes[8][:6], cat(7, 9))
	wantStatus(t, resp, b, 200)
	mid := up2kHandshake(t, s, "/", "st.bin", f, 1600000000, nil)
	if !slices.Equal(mid.Hash, f.hashes[9:]) {
		t.Fatalf("after stitched posts the server needs %v", mid.Hash)
	}
	// Chunk 9 in sub-chunks (X-Up2k-Subc), the way u2c sends them.
	c9 := f.chunk(9)
	for _, off := range []int{0, 300000, 600000} {
		end := min(off+300000, len(c9))
		if off == 600000 {
			end = len(c9)
		}
		resp, b := postChunks(t, s, rep.Purl, rep.Wark, f.hashes[9], c9[off:end], fmt.Sprintf("X-Up2k-Subc: %d", off))
		wantStatus(t, resp, b, 200)
		if string(b) != "thank" {
			t.Fatalf("sub-chunk reply %q", b)
		}
		if off < 600000 {
			mid := up2kHandshake(t, s, "/", "st.bin", f, 1600000000, nil)
			if !slices.Contains(mid.Hash, f.hashes[9]) {
				t.Fatal("a chunk was confirmed before its last sub-chunk")
			}
		}
	}
	// A sub-chunk that skips ahead is refused; starting over at 0 works.
	c10 := f.chunk(10)
	resp, b = postChunks(t, s, rep.Purl, rep.Wark, f.hashes[10], c10[:100], "X-Up2k-Subc: 0")
	wantStatus(t, resp, b, 200)
	resp, b = postChunks(t, s, rep.Purl, rep.Wark, f.hashes[10], c10[200:300], "X-Up2k-Subc: 200")
	wantStatus(t, resp, b, 400)
	if !strings.Contains(string(b), "expected resume-point was 100") {
		t.Fatalf("skipping ahead: %s", b)
	}
	resp, b = postChunks(t, s, rep.Purl, rep.Wark, f.hashes[10], c10[:500], "X-Up2k-Subc: 0")
	wantStatus(t, resp, b, 200)
	resp, b = postChunks(t, s, rep.Purl, rep.Wark, f.hashes[10], c10[500:], "X-Up2k-Subc: 500")
	wantStatus(t, resp, b, 200)
	wantUploaded(t, filepath.Join(vol, "st.bin"), f.data, 1600000000)
}

func TestUp2kCorruptAndDuplicateChunks(t *testing.T) {
	t.Parallel()
	vol := t.TempDir()
	s := start(t, "-v", vol+"::rw")
	f := newUp2kFile(randomBytes(3<<20 + 5))
	rep := up2kHandshake(t, s, "/c/", "c.bin", f, 1600000000, nil)
	bad := bytes.Clone(f.chunk(1))
	bad[12345] ^= 0x40
	resp, b := postChunks(t, s, rep.Purl, rep.Wark, f.hashes[1], bad)
	wantStatus(t, resp, b, 400)
	if !strings.Contains(string(b), "your chunk got corrupted somehow") || !strings.Contains(string(b), f.hashes[1]) {
		t.Fatalf("corrupt chunk: %s", b)
	}
	mid := up2kHandshake(t, s, "/c/", "c.bin", f, 1600000000, nil)
	if len(mid.Hash) != 4 {
		t.Fatalf("after a corrupt chunk the server needs %d chunks, want all 4", len(mid.Hash))
	}
	// A stitched post whose second chunk is corrupt keeps the first.
	both := append(bytes.Clone(f.chunk(0)), bad...)
	resp, b = postChunks(t, s, rep.Purl, rep.Wark, stitchHashes(f.hashes[0:2]), both)
	wantStatus(t, resp, b, 400)
	mid = up2kHandshake(t, s, "/c/", "c.bin", f, 1600000000, nil)
	if !slices.Equal(mid.Hash, f.hashes[1:]) {
		t.Fatalf("after a half-corrupt stitched post the server needs %v", mid.Hash)
	}
	postChunk(t, s, rep, f, 1)
	// The same chunk again: copyparty's phrase.
	resp, b = postChunks(t, s, rep.Purl, rep.Wark, f.hashes[1], f.chunk(1))
	wantStatus(t, resp, b, 400)
	if !strings.Contains(string(b), "already got that ("+f.hashes[1]+") but thanks??") {
		t.Fatalf("duplicate chunk: %s", b)
	}
	postChunk(t, s, rep, f, 2)
	postChunk(t, s, rep, f, 3)
	wantUploaded(t, filepath.Join(vol, "c/c.bin"), f.data, 1600000000)
	// After completion, a chunk of the finished upload is unknown.
	resp, b = postChunks(t, s, rep.Purl, rep.Wark, f.hashes[1], f.chunk(1))
	wantStatus(t, resp, b, 400)
}

func TestUp2kBusyChunk(t *testing.T) {
	vol := t.TempDir()
	s := start(t, "-v", vol+"::rw")
	f := newUp2kFile(randomBytes(2 << 20))
	rep := up2kHandshake(t, s, "/", "busy.bin", f, 1600000000, nil)
	// A slow body holds chunk 0; another writer is told it is busy.
	pr, pw := io.Pipe()
	req, _ := http.NewRequest("POST", s.URL+"/", pr)
	req.ContentLength = int64(len(f.chunk(0)))
	req.Header.Set("Content-Type", "application/octet-stream")
	req.Header.Set("X-Up2k-Wark", rep.Wark)
	req.Header.Set("X-Up2k-Hash", f.hashes[0])
	done := make(chan int, 1)
	go func() {
		resp, err := smallSendBuffer.Do(req)
		if err != nil {
			done <- 0
			return
		}
		resp.Body.Close()
		done <- resp.StatusCode
	}()
	// More than the connection's buffers hold (a small send buffer, the
	// server's receive window), so the write returns only once the server
	// has read most of it: it reads a chunk's body only after claiming
	// the chunk, so then it certainly holds it — on disk and on S3 alike.
	pw.Write(f.chunk(0)[:600000])
	if !onS3(t) { // and on disk the bytes are in the work file
		partial := filepath.Join(vol, "busy.bin.PARTIAL")
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			if fi, err := os.Stat(partial); err == nil && fi.Sys().(*syscall.Stat_t).Blocks > 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the first writer's bytes never reached the work file")
			}
		}
	}
	code, b := postChunksNoFail(s, rep.Purl, rep.Wark, f.hashes[0], f.chunk(0))
	if code != 400 || !strings.Contains(string(b), "that chunk is already being written to") {
		t.Fatalf("second writer: %d %s", code, b)
	}
	pw.Write(f.chunk(0)[600000:])
	pw.Close()
	if c := <-done; c != 200 {
		t.Fatalf("first writer: %d", c)
	}
	postChunk(t, s, rep, f, 1)
	wantUploaded(t, filepath.Join(vol, "busy.bin"), f.data, 1600000000)
}

// smallSendBuffer is a client whose connections have a small socket
// send buffer (no autotuning), so a body's write blocks until the server
// reads it: a test knows then that the server's handler is consuming it.
var smallSendBuffer = &http.Client{Transport: &http.Transport{
	DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if tc, ok := c.(*net.TCPConn); ok {
			tc.SetWriteBuffer(8 << 10)
		}
		return c, err
	},
}}

func TestUp2kTwoClients(t *testing.T) {
	t.Parallel()
	vol := t.TempDir()
	s := start(t, "-v", vol+"::rw")
	f := newUp2kFile(randomBytes(16<<20 + 3))
	// Two clients upload the same file to the same path at once; each
	// sends every chunk it is told it needs. Both must finish with nothing
	// needed, and the server must have refused double writes politely.
	var wg sync.WaitGroup
	errs := make(chan string, 100)
	for c := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for round := 0; round < 10; round++ {
				// The other client's last chunk may take a moment (it can
				// wait for a lane): refusals are instant, so wait between
				// rounds rather than burn them.
				time.Sleep(time.Duration(round*round) * 10 * time.Millisecond)
				body, _ := json.Marshal(map[string]any{"name": "same.bin", "size": len(f.data), "lmod": 1600000000, "hash": f.hashes})
				code, b := postJSON(s, "/two/", body)
				if code != 200 {
					errs <- fmt.Sprintf("client %d handshake: %d %s", c, code, b)
					return
				}
				var rep handshakeReply
				json.Unmarshal(b, &rep)
				if len(rep.Hash) == 0 {
					return
				}
				need := slices.Clone(rep.Hash)
				mrand.Shuffle(len(need), func(i, j int) { need[i], need[j] = need[j], need[i] })
				for _, h := range need {
					code, b := postChunksNoFail(s, rep.Purl, rep.Wark, h, f.chunk(f.index(h)))
					if code != 200 && !(code == 400 && (strings.Contains(string(b), "already got that") || strings.Contains(string(b), "already being written") || strings.Contains(string(b), "unknown wark"))) {
						errs <- fmt.Sprintf("client %d chunk: %d %s", c, code, b)
					}
				}
				// The other client may still be writing the chunks this
				// one was refused (slow under load): give it time before
				// asking again, longer each round.
				time.Sleep(time.Duration(round+1) * 25 * time.Millisecond)
			}
			errs <- fmt.Sprintf("client %d never finished", c)
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	wantUploaded(t, filepath.Join(vol, "two/same.bin"), f.data, 1600000000)
	if names := tree(t, filepath.Join(vol, "two")); !slices.Equal(names, []string{"same.bin"}) {
		t.Fatalf("folder holds %v", names)
	}
}

// postJSON posts a JSON body from any goroutine.
func postJSON(s *server, path string, body []byte) (int, []byte) {
	c := up2kClients.Get().(*http.Client)
	defer up2kClients.Put(c)
	resp, err := c.Post(s.URL+path, "application/json", bytes.NewReader(body))
	if err != nil {
		return 0, []byte(err.Error())
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	b.ReadFrom(resp.Body)
	return resp.StatusCode, b.Bytes()
}

func TestUp2kSameContentElsewhere(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"copy", "dedup", "nodupe"} {
		t.Run(mode, func(t *testing.T) {
			vol := t.TempDir()
			args := []string{"-v", vol + "::rw"}
			switch mode {
			case "dedup":
				args = append(args, "--dedup")
			case "nodupe":
				args = []string{"-v", vol + "::rw:c,nodupe"}
			}
			s := start(t, args...)
			f := newUp2kFile(randomBytes(5<<20 + 99))
			up2kUpload(t, s, "/a/", "orig.bin", f, 1600000000, 4)
			// The same content to another folder: no chunk is asked for.
			body := map[string]any{"name": "again.bin", "size": len(f.data), "lmod": 1700000000, "hash": f.hashes}
			resp, b := postHandshake(t, s, "/b/", body)
			if mode == "nodupe" {
				wantStatus(t, resp, b, 409)
				if !strings.Contains(string(b), "upload rejected, file already exists") || !strings.Contains(string(b), "/a/orig.bin") {
					t.Fatalf("nodupe: %s", b)
				}
				if pathExists(vol, "b/again.bin") {
					t.Fatal("nodupe made the file anyway")
				}
				return
			}
			wantStatus(t, resp, b, 200)
			var rep handshakeReply
			json.Unmarshal(b, &rep)
			if len(rep.Hash) != 0 || rep.Name != "again.bin" || rep.Purl != "/b/" {
				t.Fatalf("dupe handshake: %s", b)
			}
			if onS3(t) {
				// No hard links in a bucket: dedup is a server-side
				// copy, with the second upload's own mtime.
				wantUploaded(t, filepath.Join(vol, "b/again.bin"), f.data, 1700000000)
				wantUploaded(t, filepath.Join(vol, "a/orig.bin"), f.data, 1600000000)
			} else {
				wantUploaded(t, filepath.Join(vol, "b/again.bin"), f.data, 0)
				a, _ := os.Stat(filepath.Join(vol, "a/orig.bin"))
				c, _ := os.Stat(filepath.Join(vol, "b/again.bin"))
				linked := os.SameFile(a, c)
				if linked != (mode == "dedup") {
					t.Fatalf("mode %s: hard-linked = %v", mode, linked)
				}
				if mode == "copy" && c.ModTime().Unix() != 1700000000 {
					t.Fatalf("the copy has mtime %d, want its own lmod", c.ModTime().Unix())
				}
			}
			// Same content, same path again: complete, same name, no copy.
			fin := up2kHandshake(t, s, "/b/", "again.bin", f, 1700000000, nil)
			if len(fin.Hash) != 0 || fin.Name != "again.bin" {
				t.Fatalf("repeat: %+v", fin)
			}
			if names := tree(t, filepath.Join(vol, "b")); !slices.Equal(names, []string{"again.bin"}) {
				t.Fatalf("folder holds %v", names)
			}
			// A changed source is not trusted: it is re-hashed, and the
			// content is uploaded again.
			writeFile(t, vol, "a/orig.bin", randomBytes(len(f.data)))
			removeFile(t, vol, "b/again.bin")
			again := up2kHandshake(t, s, "/c/", "third.bin", f, 1600000000, nil)
			if len(again.Hash) != len(f.hashes) {
				t.Fatalf("with the source changed, the server needs %d chunks, want all %d", len(again.Hash), len(f.hashes))
			}
		})
	}
}

var collisionNameRE = regexp.MustCompile(`^x\.txt-\d+\.\d{6}-[A-Za-z0-9_-]{8}\.txt$`)

func TestUp2kCollisionAndReplace(t *testing.T) {
	vol := t.TempDir()
	s := start(t, "-a", "ed:pw", "-v", vol+"::rw:rwd,ed")
	writeFile(t, vol, "x.txt", []byte("old content"))
	f := newUp2kFile(randomBytes(1500))
	rep := up2kUpload(t, s, "/", "x.txt", f, 1600000000, 1)
	if !collisionNameRE.MatchString(rep.Name) {
		t.Fatalf("renamed to %q, want copyparty's collision name", rep.Name)
	}
	if b, _ := volReadFile(filepath.Join(vol, "x.txt")); string(b) != "old content" {
		t.Fatal("the existing file changed")
	}
	wantUploaded(t, filepath.Join(vol, rep.Name), f.data, 1600000000)
	// Two different uploads to one new name at once: the second is renamed.
	g, h := newUp2kFile(randomBytes(2000)), newUp2kFile(randomBytes(3000))
	r1 := up2kHandshake(t, s, "/", "y.bin", g, 1600000000, nil)
	r2 := up2kHandshake(t, s, "/", "y.bin", h, 1600000000, nil)
	if r1.Name != "y.bin" || r2.Name == "y.bin" || !strings.HasPrefix(r2.Name, "y.bin-") {
		t.Fatalf("names %q and %q", r1.Name, r2.Name)
	}
	postChunk(t, s, r2, h, 0)
	postChunk(t, s, r1, g, 0)
	wantUploaded(t, filepath.Join(vol, "y.bin"), g.data, 1600000000)
	wantUploaded(t, filepath.Join(vol, r2.Name), h.data, 1600000000)
	// replace: anonymous users lack d, so it is ignored (renamed).
	k := newUp2kFile(randomBytes(1000))
	r3 := up2kHandshake(t, s, "/", "y.bin", k, 1600000000, map[string]any{"replace": true})
	if r3.Name == "y.bin" {
		t.Fatal("replace without the delete permission kept the name")
	}
	// With d it overwrites, at publication.
	k2 := newUp2kFile(randomBytes(1001))
	r4 := up2kHandshake(t, s, "/", "y.bin", k2, 1600000000, map[string]any{"replace": true}, "PW: pw")
	if r4.Name != "y.bin" {
		t.Fatalf("replace with d: name %q", r4.Name)
	}
	if b, _ := volReadFile(filepath.Join(vol, "y.bin")); !bytes.Equal(b, g.data) {
		t.Fatal("the file was replaced before the upload was complete")
	}
	postChunk(t, s, r4, k2, 0, "PW: pw")
	wantUploaded(t, filepath.Join(vol, "y.bin"), k2.data, 1600000000)
	// replace "skip" refuses a taken name.
	resp, b := postHandshake(t, s, "/", map[string]any{"name": "y.bin", "size": 5, "hash": []string{up2kChunkHash([]byte("skip!"))}, "replace": "skip"})
	wantStatus(t, resp, b, 409)
	if !strings.Contains(string(b), "upload rejected, a file with that name already exists") {
		t.Fatalf("skip: %s", b)
	}
	// rand gives a random name with the extension (the browser's "a\n" prefix is fine).
	m := newUp2kFile(randomBytes(10))
	r5 := up2kHandshake(t, s, "/", "a\nphoto.jpg", m, 1600000000, map[string]any{"rand": true})
	if !regexp.MustCompile(`^[A-Za-z0-9_-]{9}\.jpg$`).MatchString(r5.Name) {
		t.Fatalf("rand name %q", r5.Name)
	}
	postChunk(t, s, r5, m, 0)
	wantUploaded(t, filepath.Join(vol, r5.Name), m.data, 1600000000)
}

func TestUp2kKillAndResume(t *testing.T) {
	t.Parallel()
	vol := t.TempDir()
	args := []string{"-a", "u:pw", "-v", vol + "::rw,u"}
	s := start(t, args...)
	f := newUp2kFile(randomBytes(20<<20 + 4321)) // 21 chunks
	rep := up2kHandshake(t, s, "/k/", "kill.bin", f, 1600000000, nil, "PW: pw")
	sent := []int{0, 3, 4, 5, 11, 19, 20}
	for _, i := range sent {
		postChunk(t, s, rep, f, i, "PW: pw")
	}
	// A chunk in flight when the server dies: half its body arrived.
	pr, pw := io.Pipe()
	req, _ := http.NewRequest("POST", s.URL+"/k/", pr)
	req.ContentLength = int64(len(f.chunk(7)))
	req.Header.Set("Content-Type", "application/octet-stream")
	req.Header.Set("X-Up2k-Wark", rep.Wark)
	req.Header.Set("X-Up2k-Hash", f.hashes[7])
	req.Header.Set("PW", "pw")
	go func() {
		if resp, err := (&http.Client{}).Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	pw.Write(f.chunk(7)[:600000])
	time.Sleep(200 * time.Millisecond)
	s.kill(t)
	pw.Close()

	s2 := start(t, args...)
	again := up2kHandshake(t, s2, "/k/", "kill.bin", f, 1600000000, nil, "PW: pw")
	var want []string
	for i, h := range f.hashes {
		if !slices.Contains(sent, i) {
			want = append(want, h)
		}
	}
	if again.Wark != rep.Wark || !slices.Equal(again.Hash, want) {
		t.Fatalf("after SIGKILL and restart the server needs %d chunks %v, want exactly the %d never acknowledged", len(again.Hash), again.Hash, len(want))
	}
	for _, h := range again.Hash {
		postChunk(t, s2, again, f, f.index(h), "PW: pw")
	}
	wantUploaded(t, filepath.Join(vol, "k/kill.bin"), f.data, 1600000000)
	fin := up2kHandshake(t, s2, "/k/", "kill.bin", f, 1600000000, nil, "PW: pw")
	if len(fin.Hash) != 0 {
		t.Fatal("not complete after resuming")
	}
	// A damaged chunk of an unfinished upload is found at restart (a work
	// file on disk; on S3 a chunk object is its own receipt).
	if onS3(t) {
		return
	}
	g := newUp2kFile(randomBytes(4 << 20))
	r := up2kHandshake(t, s2, "/k/", "dmg.bin", g, 1600000000, nil, "PW: pw")
	postChunk(t, s2, r, g, 0, "PW: pw")
	postChunk(t, s2, r, g, 2, "PW: pw")
	s2.stop()
	fh, err := os.OpenFile(filepath.Join(vol, "k/dmg.bin.PARTIAL"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	fh.WriteAt([]byte("rot"), 2*g.cs+5)
	fh.Close()
	s3 := start(t, args...)
	r = up2kHandshake(t, s3, "/k/", "dmg.bin", g, 1600000000, nil, "PW: pw")
	if !slices.Equal(r.Hash, []string{g.hashes[1], g.hashes[2], g.hashes[3]}) {
		t.Fatalf("after damage and restart the server needs %v", r.Hash)
	}
}

func TestUp2kEmptyFile(t *testing.T) {
	vol := t.TempDir()
	s := start(t, "-v", vol+"::rw")
	f := newUp2kFile(nil)
	rep := up2kHandshake(t, s, "/e/", "empty.txt", f, 1700000000, nil)
	if len(rep.Hash) != 0 || len(rep.Wark) != 44 || !strings.HasPrefix(rep.Wark, "#") {
		t.Fatalf("empty file: %+v", rep)
	}
	wantUploaded(t, filepath.Join(vol, "e/empty.txt"), nil, 1700000000)
	// copyparty's metadata wark for sub/empty.txt at lmod 1700000000.
	rep = up2kHandshake(t, s, "/sub/", "empty.txt", f, 1700000000, nil)
	if rep.Wark != "#DvfD87DM-IqQ4KtOymzrYNQj5UgD3MaJdN_494u_3jn" {
		t.Fatalf("metadata wark %q", rep.Wark)
	}
	again := up2kHandshake(t, s, "/e/", "empty.txt", f, 1700000000, nil)
	if len(again.Hash) != 0 || again.Name != "empty.txt" {
		t.Fatalf("empty again: %+v", again)
	}
	if names := tree(t, filepath.Join(vol, "e")); !slices.Equal(names, []string{"empty.txt"}) {
		t.Fatalf("folder holds %v", names)
	}
}

// TestUp2kChunkSizeBoundaries: the handshake accepts exactly the hash count
// of copyparty's chunk size (or the spec's table) at the edge of every
// chunk-size step, and real uploads across the first steps arrive intact.
func TestUp2kChunkSizeBoundaries(t *testing.T) {
	t.Parallel()
	vol := t.TempDir()
	s := start(t, "-v", vol+"::rw")
	// The huge handshakes come from another address than the real
	// uploads below: one address's unfinished uploads may hold only half
	// of the free space.
	other := clientFromAddr("127.0.0.3")
	postHandshake := func(t *testing.T, s *server, folder string, body any) (*http.Response, []byte) {
		t.Helper()
		b, _ := json.Marshal(body)
		req, _ := http.NewRequest("POST", s.URL+folder, bytes.NewReader(b))
		req.Header.Set("Content-Type", "application/json")
		resp, err := other.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out bytes.Buffer
		out.ReadFrom(resp.Body)
		return resp, out.Bytes()
	}
	const mi, gi, ti = int64(1 << 20), int64(1 << 30), int64(1 << 40)
	dummy := up2kChunkHash([]byte("x"))
	for i, size := range []int64{mi, 256 * mi, 256*mi + 1, 384 * mi, 384*mi + 1, 512*mi + 1, gi, gi + 1, 4 * gi, 4*gi + 1, 6*gi + 1, 128 * gi, 128*gi + 1, ti, ti + 1, 2*ti + 1} {
		cs := copypartyChunkSize(size)
		n := int((size + cs - 1) / cs)
		for _, d := range []int{-1, 1} {
			hs := make([]string, n+d)
			for j := range hs {
				hs[j] = dummy
			}
			resp, b := postHandshake(t, s, "/sz/", map[string]any{"name": fmt.Sprintf("f%d", i), "size": size, "hash": hs})
			wantStatus(t, resp, b, 400)
		}
		hs := make([]string, n)
		for j := range hs {
			hs[j] = up2kChunkHash([]byte(fmt.Sprint(j))) // distinct
		}
		resp, b := postHandshake(t, s, "/sz/", map[string]any{"name": fmt.Sprintf("f%d", i), "size": size, "hash": hs})
		// Accepted (200), or refused for lack of disk (413: larger than the
		// free space; 503: the free space is promised to the unfinished
		// uploads before; 429: half of it to this address's), naming the
		// free space.
		if resp.StatusCode != 200 && !((resp.StatusCode == 413 || resp.StatusCode == 503 || resp.StatusCode == 429) && strings.Contains(string(b), "free space")) {
			t.Fatalf("size %d with %d chunks of %d: %d %s", size, n, cs, resp.StatusCode, b)
		}
		if resp.StatusCode == 200 && !onS3(t) { // on S3 no work file
			fi, err := os.Stat(filepath.Join(vol, "sz", fmt.Sprintf("f%d.PARTIAL", i)))
			if err != nil || fi.Size() != size || fi.Sys().(*syscall.Stat_t).Blocks > 64 {
				t.Fatalf("size %d: work file %v %v (must be sparse)", size, fi, err)
			}
		}
	}
	// The spec's table read literally: 16 MiB chunks for a 2 GiB file.
	hs := make([]string, 128)
	for j := range hs {
		hs[j] = up2kChunkHash([]byte(fmt.Sprint(j)))
	}
	resp, b := postHandshake(t, s, "/sz/", map[string]any{"name": "spec.bin", "size": 2 * gi, "hash": hs})
	if resp.StatusCode != 200 && resp.StatusCode != 413 && resp.StatusCode != 503 && resp.StatusCode != 429 {
		t.Fatalf("spec table: %d %s", resp.StatusCode, b)
	}
	// Real uploads at the edges of the first steps. Mostly zeros, so most
	// chunks are identical: the server copies one to every offset.
	sizes := []int64{1, mi - 1, mi, mi + 1, 256 * mi, 256*mi + 1}
	if testing.Short() {
		sizes = sizes[:4]
	}
	for _, size := range sizes {
		data := make([]byte, size)
		for _, off := range []int64{0, size / 3, size / 2, size - 1} {
			data[off] = byte(off) | 1
		}
		copy(data[size/2:], randomBytes(int(min(size/2, 3000))))
		f := newUp2kFile(data)
		name := fmt.Sprintf("real-%d.bin", size)
		up2kUpload(t, s, "/real/", name, f, 1600000000, 4)
		wantUploaded(t, filepath.Join(vol, "real", name), data, 1600000000)
	}
}

func TestUp2kFileKeyAndSearch(t *testing.T) {
	vol := t.TempDir()
	s := start(t, "-v", vol+"::rw:c,fk=10")
	f := newUp2kFile(randomBytes(100))
	rep := up2kHandshake(t, s, "/", "k.bin", f, 1600000000, nil)
	if rep.FK != "" {
		t.Fatal("a file key before the upload is complete")
	}
	postChunk(t, s, rep, f, 0)
	fin := up2kHandshake(t, s, "/", "k.bin", f, 1600000000, nil)
	if len(fin.FK) != 10 {
		t.Fatalf("file key %q, want 10 characters", fin.FK)
	}
	// Search is a JSON POST with q or srch; not built yet: a JSON error.
	for _, body := range []string{`{"q": "x"}`, `{"srch": 1, "hash": []}`} {
		resp, b := s.do(t, "POST", "/", []byte(body), "Content-Type: application/json")
		if resp.StatusCode < 500 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
			t.Fatalf("search %s: %d %s", body, resp.StatusCode, b)
		}
		var e struct{ Error string }
		if json.Unmarshal(b, &e) != nil || e.Error == "" {
			t.Fatalf("search error body %s", b)
		}
	}
}

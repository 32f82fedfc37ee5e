//go:build linux

package e2e

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// readSyscalls is the read(2)-type system calls process pid made so far
// (syscr of /proc/PID/io).
func readSyscalls(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		t.Skipf("no /proc/PID/io: %v", err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "syscr: "); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	t.Skip("no syscr in /proc/PID/io")
	return 0
}

// TestUp2kTrickledBodyFewReads sends a 16 MiB stitched chunk post the
// way a browser does, in 16 KiB writes at its own pace, over a
// keep-alive connection: the server reads the body in large reads (its
// socket's low-water mark), not one read (and one wake-up) per piece
// that arrived, and the connection's next requests are answered at once
// (the mark is back to 1 after each body, whole or cut short).
func TestUp2kTrickledBodyFewReads(t *testing.T) {
	vol := t.TempDir()
	s := start(t, "-v", vol+"::rw")
	f := newUp2kFile(randomBytes(24 << 20)) // 24 chunks of 1 MiB
	rep := up2kHandshake(t, s, "/", "tr.bin", f, 1600000000, nil)
	cat := func(i, j int) []byte {
		var b []byte
		for k := i; k < j; k++ {
			b = append(b, f.chunk(k)...)
		}
		return b
	}
	c, err := net.Dial("tcp", strings.TrimPrefix(s.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	head := func(hashes string, n int) string {
		return fmt.Sprintf("POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\nX-Up2k-Wark: %s\r\nX-Up2k-Hash: %s\r\nContent-Length: %d\r\n\r\n", escapePurl(rep.Purl), rep.Wark, hashes, n)
	}
	answer := func(what string) (int, string) {
		t.Helper()
		c.SetReadDeadline(time.Now().Add(20 * time.Second))
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		b := make([]byte, 4096)
		n, _ := resp.Body.Read(b)
		resp.Body.Close()
		return resp.StatusCode, string(b[:n])
	}
	pid := s.cmd.Process.Pid

	body := cat(0, 16)
	if _, err := c.Write([]byte(head(stitchHashes(f.hashes[0:16]), len(body)))); err != nil {
		t.Fatal(err)
	}
	r0 := readSyscalls(t, pid)
	for off := 0; off < len(body); off += 16 << 10 {
		if _, err := c.Write(body[off : off+16<<10]); err != nil {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Microsecond) // a sender slower than the server
	}
	if code, b := answer("trickled post"); code != 200 {
		t.Fatalf("trickled post: %d %s", code, b)
	}
	reads := readSyscalls(t, pid) - r0
	t.Logf("16 MiB in 1024 writes of 16 KiB: %d read calls by the server", reads)
	// One read per piece would be over 1024 (and as many again that find
	// nothing); 16 MiB in reads of 256 KiB is 64, the first MiB (read
	// as it comes) up to 128 more, reading the chunks back to hash them
	// 64.
	if reads > 600 {
		t.Errorf("the server made %d read calls for a 16 MiB body sent in 16 KiB pieces; want it read in large reads", reads)
	}

	// The same connection at once: a listing, then a post cut short by
	// a wrong hash (its body is refused midway), then the rest.
	start := time.Now()
	if _, err := c.Write([]byte("GET /?ls HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	if code, _ := answer("listing after the post"); code != 200 || time.Since(start) > 5*time.Second {
		t.Fatalf("listing after the post: %d after %v", code, time.Since(start))
	}
	bad := cat(16, 18)
	bad[len(bad)/4] ^= 1 // chunk 16 corrupted: the post fails after its first chunk
	if _, err := c.Write(append([]byte(head(stitchHashes(f.hashes[16:18]), len(bad))), bad...)); err != nil {
		t.Fatal(err)
	}
	if code, b := answer("corrupted post"); code != 400 || !strings.Contains(b, "corrupted") {
		t.Fatalf("corrupted post: %d %s", code, b)
	}
	// net/http may close a connection whose body it did not read to the
	// end: the rest goes over a new one if so.
	rest := cat(16, 24)
	resp, b := postChunks(t, s, rep.Purl, rep.Wark, stitchHashes(f.hashes[16:24]), rest)
	wantStatus(t, resp, b, 200)
	wantUploaded(t, filepath.Join(vol, "tr.bin"), f.data, 1600000000)

	// A plain PUT of 16 MiB, trickled the same way, then a listing on
	// the same connection: a PUT is not resumable, so it keeps the
	// socket's default mark (a sender that slowed down after a fast start
	// would wait for 256 KiB per read and could meet the idle deadline);
	// it must still arrive whole and leave the connection usable.
	c2, err := net.Dial("tcp", strings.TrimPrefix(s.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	c, br = c2, bufio.NewReader(c2)
	put := randomBytes(16 << 20)
	if _, err := fmt.Fprintf(c, "PUT /put.bin HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", len(put)); err != nil {
		t.Fatal(err)
	}
	r0 = readSyscalls(t, pid)
	for off := 0; off < len(put); off += 16 << 10 {
		if _, err := c.Write(put[off : off+16<<10]); err != nil {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Microsecond)
	}
	if code, b := answer("trickled PUT"); code != 201 && code != 200 {
		t.Fatalf("trickled PUT: %d %s", code, b)
	}
	reads = readSyscalls(t, pid) - r0
	t.Logf("PUT of 16 MiB in 1024 writes of 16 KiB: %d read calls by the server (no low-water mark)", reads)
	if _, err := c.Write([]byte("GET /?ls HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	if code, _ := answer("listing after the PUT"); code != 200 {
		t.Fatalf("listing after the PUT: %d", code)
	}
	wantFile(t, vol, "put.bin", put)
}

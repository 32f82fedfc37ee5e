package e2e

// Request smuggling shapes over raw TCP: a request whose framing a proxy
// could read differently is refused with 400 and the connection closed,
// so the request hidden in its body never runs.

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// rawExchange sends payload on a new connection and reads every response
// until the server closes it (closed) or goes quiet for a second.
func rawExchange(t *testing.T, s *server, payload string) (resps []*http.Response, bodies []string, closed bool) {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(s.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, payload); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(time.Second))
	var all bytes.Buffer
	_, err = io.Copy(&all, c)
	closed = err == nil // EOF: the server closed; a timeout: still open
	br := bufio.NewReader(&all)
	for {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			break
		}
		b, _ := io.ReadAll(resp.Body)
		resps, bodies = append(resps, resp), append(bodies, string(b))
	}
	return resps, bodies, closed
}

func TestSmuggleRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := start(t, "-v", dir+"::rw")
	// The request a proxy framing by Content-Length would not see: it
	// would create smuggled.txt.
	const hidden = "PUT /smuggled.txt HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nbad"
	for _, c := range []struct {
		name, payload string
		status        int
		msg           string
	}{
		{name: "chunked and content-length", payload: "POST /a/ HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n" + hidden, status: 400, msg: "both Transfer-Encoding and Content-Length"},
		{name: "content-length before chunked", payload: "PUT /b.txt HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + hidden, status: 400, msg: "both Transfer-Encoding and Content-Length"},
		{name: "folded transfer-encoding", payload: "PUT /c.txt HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding:\r\n chunked\r\n\r\n0\r\n\r\n" + hidden, status: 400, msg: "obsolete line folding"},
		{name: "folded other header", payload: "GET / HTTP/1.1\r\nHost: x\r\nX-Note: a\r\n\tb\r\n\r\n" + hidden, status: 400, msg: "obsolete line folding"},
		{name: "HTTP/1.0 with transfer-encoding", payload: "PUT /d.txt HTTP/1.0\r\nHost: x\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + hidden, status: 400, msg: "HTTP/1.0"},
		{name: "two different content-lengths", payload: "PUT /e.txt HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 0\r\n\r\n" + hidden, status: 400, msg: ""},
		{name: "unknown transfer coding", payload: "PUT /f.txt HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n" + hidden, status: 501, msg: ""},
		{name: "identity transfer coding", payload: "PUT /g.txt HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: identity\r\nContent-Length: 5\r\n\r\n0\r\n\r\n" + hidden, status: 501, msg: ""},
		{name: "after a good request", payload: "GET / HTTP/1.1\r\nHost: x\r\n\r\nPUT /h.txt HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n" + hidden, status: 400, msg: "both"},
	} {
		t.Run(c.name, func(t *testing.T) {
			resps, bodies, closed := rawExchange(t, s, c.payload)
			if len(resps) == 0 {
				t.Fatal("no response")
			}
			last := resps[len(resps)-1]
			if last.StatusCode != c.status || !strings.Contains(bodies[len(bodies)-1], c.msg) {
				t.Errorf("last of %d responses: %d %q, want %d naming %q", len(resps), last.StatusCode, bodies[len(bodies)-1], c.status, c.msg)
			}
			if !closed {
				t.Errorf("the connection stayed open after the refusal")
			}
			for _, r := range resps[:len(resps)-1] {
				if r.StatusCode != 200 {
					t.Errorf("an earlier response is %d", r.StatusCode)
				}
			}
		})
	}
	for _, p := range tree(t, dir) {
		if !strings.HasPrefix(p, ".hist") {
			t.Errorf("refused requests left %q (the hidden request ran?)", p)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "smuggled.txt")); err == nil {
		t.Fatal("the smuggled request ran")
	}
}

// TestSmuggleCleanPipeline: well-framed requests (chunked, by length,
// bare-LF heads, trailers) still share one connection.
func TestSmuggleCleanPipeline(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, dir, "big.bin", bytes.Repeat([]byte("0123456789abcdef"), 1<<16))
	s := start(t, "-v", dir+"::rw")
	payload := "PUT /a.txt HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3;ext=1\r\nabc\r\n2\r\nde\r\n0\r\nX-Trailer: t\r\n\r\n" +
		"PUT /b.txt HTTP/1.1\nHost: x\nContent-Length: 3\n\nxyz" +
		"GET /a.txt HTTP/1.1\r\nHost: x\r\n\r\n" +
		"OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n" +
		"GET /big.bin HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
	resps, bodies, closed := rawExchange(t, s, payload)
	if len(resps) != 5 || !closed {
		t.Fatalf("%d responses (closed %v), want 5", len(resps), closed)
	}
	for i, want := range []int{201, 201, 200, 204, 200} {
		if resps[i].StatusCode != want {
			t.Errorf("response %d: %d %q, want %d", i, resps[i].StatusCode, bodies[i], want)
		}
	}
	if bodies[2] != "abcde" || len(bodies[4]) != 1<<20 {
		t.Errorf("bodies %q, %d bytes", bodies[2], len(bodies[4]))
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "b.txt")); string(b) != "xyz" {
		t.Errorf("b.txt = %q", b)
	}
}

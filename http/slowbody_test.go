package http

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestWholeBodyDeadline: a body read whole before anything is done (a
// handshake or search, an archive selection as JSON or a form, a WebDAV
// XML body, a list of paths to delete, a mkdir form, a share's JSON) must
// arrive within bodyIdle of its head: one that stops, or trickles a byte
// now and then, is answered 408 and no longer holds its connection and
// what was read of it for ever.
func TestWholeBodyDeadline(t *testing.T) {
	defer func(d time.Duration) { bodyIdle = d }(bodyIdle)
	bodyIdle = 300 * time.Millisecond
	s, _ := newUp2kServer(t)
	ts := httptest.NewUnstartedServer(s)
	ts.Listener = FramingListener(ts.Listener) // as the real server's
	ts.Config.ConnContext = FramingContext
	ts.Start()
	defer ts.Close()
	const form = "multipart/form-data; boundary=XX"
	for _, tc := range []struct {
		name, head, ctype, start string
		code                     int // 408, or the answer of a handler that does not read the body
	}{
		{"handshake", "POST /", "application/json", `{"name": `, 408},
		{"search", "POST /?srch", "application/json", `{"q": `, 408},
		{"selection JSON", "POST /?zip", "application/json", `["a`, 408},
		{"selection form", "POST /?zip", form, "--XX\r\nContent-Disposition: form-data; name=\"act\"\r\n\r\nzip\r\n--XX\r\nContent-Disposition: form-data; name=\"files\"\r\n\r\na", 408},
		{"PROPFIND", "PROPFIND /\r\nDepth: 1", "application/xml", `<?xml version="1.0"?><propfind xmlns="DAV:">`, 408},
		{"delete list", "POST /?delete", "application/json", `["/a`, 408},
		{"mkdir form", "POST /", "application/x-www-form-urlencoded", "act=mkdir&name=a", 408},
		{"share", "POST /?share", "application/json", `{"k": `, 408},
		// Refused before its body is read (no Depth: infinity without
		// --dav-inf): net/http discards the body before it answers.
		{"unread body", "PROPFIND /\r\nDepth: infinity", "application/xml", `<?xml`, http.StatusForbidden},
	} {
		for _, trickle := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/trickle=%v", tc.name, trickle), func(t *testing.T) {
				c, err := net.Dial("tcp", ts.Listener.Addr().String())
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				head, extra, _ := strings.Cut(tc.head, "\r\n")
				if extra != "" {
					extra += "\r\n"
				}
				fmt.Fprintf(c, "%s HTTP/1.1\r\n%sHost: x\r\nContent-Type: %s\r\nContent-Length: 1000\r\n\r\n%s", head, extra, tc.ctype, tc.start)
				got := make(chan *http.Response, 1)
				go func() {
					resp, err := http.ReadResponse(bufio.NewReader(c), nil)
					if err != nil {
						resp = nil
					}
					got <- resp
				}()
				stop := time.After(10 * time.Second)
				for {
					select {
					case resp := <-got:
						if resp == nil {
							t.Fatal("the connection closed without an answer")
						}
						b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
						if resp.StatusCode != tc.code {
							t.Fatalf("%d %q, want %d", resp.StatusCode, b, tc.code)
						}
						return
					case <-stop:
						t.Fatal("the server still holds a body that stopped coming")
					case <-time.After(100 * time.Millisecond):
						if trickle {
							c.Write([]byte(" "))
						}
					}
				}
			})
		}
	}
}

// TestSelectionFormBounded: a selection form is bounded as a whole, not
// only field by field: a form of many small "files" fields is 413 once
// it passes the selection's limit.
func TestSelectionFormBounded(t *testing.T) {
	s, _ := newTestServer(t, "r")
	var b strings.Builder
	b.WriteString("--XX\r\nContent-Disposition: form-data; name=\"act\"\r\n\r\nzip\r\n")
	field := "--XX\r\nContent-Disposition: form-data; name=\"files\"\r\n\r\n" + strings.Repeat("a\n", 32<<10) + "\r\n"
	for b.Len() < 4*maxSelection {
		b.WriteString(field)
	}
	b.WriteString("--XX--\r\n")
	r := httptest.NewRequest("POST", "/?zip", strings.NewReader(b.String()))
	r.Header.Set("Content-Type", "multipart/form-data; boundary=XX")
	w := httptest.NewRecorder()
	s.ServeHTTP(w, r)
	if w.Code != http.StatusRequestEntityTooLarge {
		t.Fatalf("%d %q, want 413", w.Code, w.Body.String())
	}
}

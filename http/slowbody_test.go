package http

import (
	"io"
	"net"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestHandshakeBodyDeadline: a handshake's JSON body (up to 1 MiB, read
// whole before anything is done) must arrive within bodyIdle of its
// head: one that stops, or trickles a byte now and then, no longer holds
// its connection and what was read of it forever.
func TestHandshakeBodyDeadline(t *testing.T) {
	defer func(d time.Duration) { bodyIdle = d }(bodyIdle)
	bodyIdle = 300 * time.Millisecond
	s, _ := newUp2kServer(t)
	ts := httptest.NewUnstartedServer(s)
	ts.Listener = FramingListener(ts.Listener) // as the real server's
	ts.Config.ConnContext = FramingContext
	ts.Start()
	defer ts.Close()
	for _, trickle := range []bool{false, true} {
		c, err := net.Dial("tcp", ts.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"name\": ")
		ended := make(chan struct{})
		go func() {
			io.Copy(io.Discard, c) // until the server closes it
			close(ended)
		}()
		stop := time.After(10 * time.Second)
	wait:
		for {
			select {
			case <-ended:
				break wait
			case <-stop:
				c.Close()
				t.Fatalf("trickle %v: the server still holds a handshake body that stopped coming", trickle)
			case <-time.After(100 * time.Millisecond):
				if trickle {
					c.Write([]byte(strings.Repeat(" ", 1)))
				}
			}
		}
		c.Close()
	}
}

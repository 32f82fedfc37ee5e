package client

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestHostileStalls: a server that stops reading a post's body, or that
// sends a reply's head and then never the rest of its body, does not hold
// the client forever: the try fails once nothing moves for a while (and
// is retried as a dropped connection would be).
func TestHostileStalls(t *testing.T) {
	defer func(s, b time.Duration) { sendStall, replyBodyTime = s, b }(sendStall, replyBodyTime)
	sendStall, replyBodyTime = 300*time.Millisecond, 300*time.Millisecond

	tr, err := newTransport(&Options{}, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}

	// A server that reads the request's head, then nothing more, and
	// never answers: the body (bigger than any socket buffer) stalls.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var mu sync.Mutex
	var held []net.Conn // kept open, never read again
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			br := bufio.NewReader(c)
			for {
				l, err := br.ReadString('\n')
				if err != nil || l == "\r\n" {
					break
				}
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
		}
	}()
	defer func() {
		ln.Close()
		mu.Lock()
		for _, c := range held {
			c.Close()
		}
		mu.Unlock()
	}()
	name := filepath.Join(t.TempDir(), "big")
	if err := os.WriteFile(name, make([]byte, 64<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := &wire{base: "http://" + ln.Addr().String(), hc: hc, retries: 1}
	done := make(chan error, 1)
	go func() {
		_, err := w.do(context.Background(), func() (*http.Request, error) {
			q, err := http.NewRequest(http.MethodPost, w.base+"/up/", chunkBody(f, 0, 64<<20))
			if err == nil {
				q.ContentLength = 64 << 20
			}
			return q, err
		}, false)
		done <- err
	}()
	select {
	case err := <-done:
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			t.Fatalf("a post whose body the server never read: %v, want a timeout", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("a post whose body the server stopped reading hangs")
	}

	// A server that sends the head of its reply and then stalls.
	stop := make(chan struct{})
	defer close(stop)
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Length", "100")
		rw.WriteHeader(http.StatusOK)
		io.WriteString(rw, "th")
		rw.(http.Flusher).Flush()
		select {
		case <-stop:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	w = &wire{base: srv.URL, hc: hc, retries: 1}
	go func() {
		_, err := w.do(context.Background(), func() (*http.Request, error) {
			return http.NewRequest(http.MethodPost, srv.URL+"/up/", strings.NewReader("x"))
		}, false)
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, errReplyTime) {
			t.Fatalf("a reply that never ended: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("a reply whose body never ends hangs the client")
	}
}

// TestHostileHugeReply: a reply bigger than any answer of its kind is an
// error, read no further than the limit.
func TestHostileHugeReply(t *testing.T) {
	var sent int64
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", "application/json")
		buf := make([]byte, 1<<20)
		for range 256 {
			n, err := rw.Write(buf)
			sent += int64(n)
			if err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	w := &wire{base: srv.URL, hc: srv.Client(), retries: 0}
	_, err := w.do(context.Background(), func() (*http.Request, error) {
		return http.NewRequest(http.MethodPost, srv.URL+"/up/", strings.NewReader("{}"))
	}, false)
	if err == nil || !strings.Contains(err.Error(), "larger") {
		t.Fatalf("a 256 MiB handshake reply: %v", err)
	}
}

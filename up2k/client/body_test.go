package client

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

// TestChunkBody: a post's body is exactly its range of the file, read
// directly or sent by net/http's transport (which, on Linux, sendfiles
// it and then reads on to check for extra bytes), several at once from
// one open file, and whatever the file holds after the range.
func TestChunkBody(t *testing.T) {
	const size = 3<<20 + 12345
	data, f := randomFile(t, size)

	ranges := [][2]int64{{0, 1 << 20}, {1 << 20, 1 << 20}, {2 << 20, size - 2<<20}, {5, 100}, {size - 1, 1}, {123, minSendfile}}
	for _, r := range ranges {
		b := chunkBody(f, r[0], r[1])
		_, own := b.(*fileRange)
		if want := r[1] >= minSendfile && runtime.GOOS == "linux"; own != want {
			t.Errorf("range %v: own description %v, want %v", r, own, want)
		}
		got, err := io.ReadAll(b)
		if c, ok := b.(io.Closer); ok {
			c.Close()
		}
		if err != nil || !bytes.Equal(got, data[r[0]:r[0]+r[1]]) {
			t.Fatalf("range %v: read %d bytes, err %v, equal %v", r, len(got), err, bytes.Equal(got, data[r[0]:r[0]+r[1]]))
		}
	}

	var mu sync.Mutex
	got := map[string][]byte{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, q *http.Request) {
		b, err := io.ReadAll(q.Body)
		if err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		mu.Lock()
		got[q.URL.Path] = b
		mu.Unlock()
	}))
	defer srv.Close()
	var wg sync.WaitGroup
	errs := make(chan error, len(ranges))
	for i, r := range ranges {
		wg.Go(func() {
			q, err := http.NewRequest(http.MethodPost, fmt.Sprintf("%s/%d", srv.URL, i), chunkBody(f, r[0], r[1]))
			if err != nil {
				errs <- err
				return
			}
			q.ContentLength = r[1]
			resp, err := srv.Client().Do(q)
			if err != nil {
				errs <- fmt.Errorf("range %v: %w", r, err)
				return
			}
			resp.Body.Close()
			if resp.StatusCode != 200 {
				errs <- fmt.Errorf("range %v: %s", r, resp.Status)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for i, r := range ranges {
		if b := got[fmt.Sprintf("/%d", i)]; !bytes.Equal(b, data[r[0]:r[0]+r[1]]) {
			t.Errorf("range %v: the server got %d bytes, not the range", r, len(b))
		}
	}
}

// TestReopenChecksTheFile: reopen gives a description of the same file
// with an offset of its own, and nothing for a closed file.
func TestReopenChecksTheFile(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reopen uses /proc/self/fd")
	}
	p := filepath.Join(t.TempDir(), "f")
	os.WriteFile(p, []byte("0123456789"), 0o644)
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	g := reopen(f)
	if g == nil {
		t.Fatal("reopen failed")
	}
	g.Seek(5, io.SeekStart)
	b := make([]byte, 3)
	f.Read(b)
	if string(b) != "012" {
		t.Errorf("f read %q after g's seek", b)
	}
	g.Read(b)
	if string(b) != "567" {
		t.Errorf("g read %q", b)
	}
	g.Close()
	// Removed and replaced by name: the description is still the file
	// that was opened (and hashed).
	os.Remove(p)
	os.WriteFile(p, []byte("abcdefghij"), 0o644)
	if g = reopen(f); g == nil {
		t.Fatal("reopen of an unlinked file failed")
	}
	all, _ := io.ReadAll(g)
	g.Close()
	if string(all) != "0123456789" {
		t.Errorf("reopen read %q, not the opened file", all)
	}
	f.Close()
	if g := reopen(f); g != nil {
		g.Close()
		t.Error("reopen of a closed file gave a file")
	}
}

// randomFile writes size random bytes to a file of the test's and opens
// it (closed when the test ends).
func randomFile(tb testing.TB, size int) ([]byte, *os.File) {
	tb.Helper()
	data := make([]byte, size)
	rand.Read(data)
	return data, dataFile(tb, data)
}

// dataFile writes data to a new file of the test's and opens it (closed
// when the test ends; f.Name() is its path).
func dataFile(tb testing.TB, data []byte) *os.File {
	tb.Helper()
	p := filepath.Join(tb.TempDir(), "f")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		tb.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { f.Close() })
	return f
}

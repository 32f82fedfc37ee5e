package media

import (
	"bytes"
	"context"
	"image/jpeg"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// An output evicted between its publish and the waiter's lookup (a small
// cache under a burst) is still served from the job's own handle, and no
// descriptor is left open afterwards.
func TestGetSurvivesEvictionBeforeLookup(t *testing.T) {
	dir := t.TempDir()
	var jb bytes.Buffer
	jpeg.Encode(&jb, twoTone(640, 480), nil)
	src := filepath.Join(dir, "c.jpg")
	os.WriteFile(src, jb.Bytes(), 0o644)
	s := New(Config{Workers: 1})
	defer s.Close()
	evicted := 0
	s.afterPublish = func(c *cache, name string) {
		if err := c.root.Remove(name); err == nil {
			evicted++
		}
	}
	fds := func() int {
		ents, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Fatal(err)
		}
		return len(ents)
	}
	before := -1
	p, err := ParseTh("")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		if i == 1 {
			before = fds() // after the cache's own handles are open
		}
		f, err := os.Open(src)
		if err != nil {
			t.Fatal(err)
		}
		fi, _ := f.Stat()
		r, err := s.Get(context.Background(), Request{Rel: "c.jpg", File: f, Info: fi, Params: p})
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		if r.Icon || r.File == nil {
			t.Fatalf("got icon=%v (%s), want the thumbnail", r.Icon, r.Reason)
		}
		body, _ := io.ReadAll(r.File)
		r.Close()
		if int64(len(body)) != r.Size || !bytes.HasPrefix(body, []byte("\xff\xd8")) {
			t.Fatalf("%d bytes (said %d), starts %q", len(body), r.Size, body[:min(4, len(body))])
		}
	}
	if evicted != 4 {
		t.Fatalf("evicted %d outputs, want 4 (the hook did not run)", evicted)
	}
	if after := fds(); after != before {
		t.Errorf("%d descriptors open before, %d after", before, after)
	}
}

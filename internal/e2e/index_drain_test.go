package e2e

import (
	"bytes"
	"fmt"
	"sync"
	"testing"
)

// Uploads answered just before a clean stop are indexed before the server
// exits: a plain -e2d volume has no scan at start that would find them.
func TestIndexDrainsQueueAtStop(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := start(t, "-v", dir+"::rw", "-e2d")
	// Files uploaded by PUT are hashed by the indexer (up2k chunk
	// hashes), so a burst of big ones leaves changes queued at the stop.
	const n = 12
	var wg sync.WaitGroup
	sem := make(chan struct{}, 6)
	for i := range n {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			body := bytes.Repeat([]byte{byte(i + 1)}, 8<<20)
			resp, rb := s.do(t, "PUT", fmt.Sprintf("/drainme%02d.bin", i), body)
			wantStatus(t, resp, rb, 201)
		})
	}
	wg.Wait()
	if err := s.stop(); err != nil {
		t.Fatal(err)
	}
	s = start(t, "-v", dir+"::rw", "-e2d")
	code, r := postSearch(t, s, map[string]any{"q": "drainme", "n": 100})
	if code != 200 || len(r.Hits) != n {
		t.Fatalf("after a clean restart: %d, %d hits %v; want all %d uploads indexed", code, len(r.Hits), r.hrefs(), n)
	}
}

package e2e

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"
)

// TestParallelGuessesGainNothing: the wrong-password slowdown must hold
// against a client that guesses many passwords at once and gives up on
// any answer that is slow (a wrong one is slowed down, so a fast answer
// would be the right one). Once an address has used its free failures,
// its passwords are tried one at a time, spaced by its penalty; a
// password that already worked from that address is not held back.
func TestParallelGuessesGainNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, dir, "f.txt", []byte("PRIVATE"))
	s := start(t, "-a", "u:pw-right", "-v", dir+"::r,u")
	for i := range 5 { // the free failures, then two slowed ones
		resp, body := s.do(t, "GET", "/f.txt", nil, "PW: wrong-"+string(rune('a'+i)))
		wantStatus(t, resp, body, 401)
	}
	guess := func(pw string, wait time.Duration) (int, error) {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "GET", s.URL+"/f.txt", nil)
		req.Header.Set("PW", pw)
		resp, err := (&http.Client{Transport: &http.Transport{}}).Do(req)
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Go(func() { guess("parallel-"+string(rune('a'+i)), 300*time.Millisecond) })
	}
	time.Sleep(100 * time.Millisecond) // those are in
	if code, err := guess("pw-right", 300*time.Millisecond); err == nil {
		t.Errorf("among parallel guesses the right password was answered (%d) at once: guessing in parallel beats the slowdown", code)
	}
	wg.Wait()
	// Its turn comes; from then on it is not held back.
	if code, err := guess("pw-right", time.Minute); err != nil || code != 200 {
		t.Fatalf("the right password, waiting its turn: %d %v", code, err)
	}
	t0 := time.Now()
	if code, err := guess("pw-right", time.Minute); err != nil || code != 200 || time.Since(t0) > 400*time.Millisecond {
		t.Errorf("a password that worked from this address again: %d %v after %v, want 200 at once", code, err, time.Since(t0))
	}
}

package e2e

import (
	"strings"
	"testing"
	"time"
)

// TestCookieGuessesSlowed: a password sent in the cppwd cookie is a
// password like any other. A wrong one is not simply dropped (the request
// going on as anonymous) without a cost, or the cookie would be a way to
// guess passwords at full speed: the right one answers differently (here
// 200 instead of 401). Wrong cookies are slowed down and logged like
// wrong PW headers.
func TestCookieGuessesSlowed(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, dir, "f.txt", []byte("PRIVATE"))
	s := start(t, "-a", "u:pw-user", "-v", dir+"::r,u")
	var last time.Duration
	for i := range 6 {
		t0 := time.Now()
		resp, body := s.do(t, "GET", "/f.txt", nil, "Cookie: cppwd=guess-"+string(rune('a'+i)))
		last = time.Since(t0)
		wantStatus(t, resp, body, 401)
		if strings.Contains(string(body), "PRIVATE") {
			t.Fatalf("a wrong cookie read the file")
		}
	}
	// The sixth failure in a row earns (6-3) × 500 ms.
	if last < time.Second {
		t.Errorf("the sixth wrong cookie was answered in %v: guessing through the cookie is not slowed down", last)
	}
	if !strings.Contains(s.logs.String(), "wrong password") {
		t.Errorf("a wrong cookie was not logged as a wrong password (fail2ban matches that):\n%s", s.logs)
	}
	if strings.Contains(s.logs.String(), "guess-") {
		t.Errorf("the log holds a guessed password")
	}
	// The right password still works at once.
	resp, body := s.do(t, "GET", "/f.txt", nil, "Cookie: cppwd=pw-user")
	wantStatus(t, resp, body, 200)

	// Behind --rp-loc the stale cookie is cleared where the login form
	// set it; cleared elsewhere, the browser would keep sending it (and
	// keep being slowed down).
	dir2 := t.TempDir()
	writeFile(t, dir2, "f.txt", []byte("PUBLIC"))
	p := start(t, "-a", "u:pw-user", "-v", dir2+"::r", "--rp-loc", "/files")
	resp, body = p.do(t, "GET", "/files/f.txt", nil, "Cookie: cppwd=stale")
	wantStatus(t, resp, body, 200)
	if c := resp.Cookies(); len(c) != 1 || c[0].Name != "cppwd" || c[0].Path != "/files/" || c[0].MaxAge >= 0 && !c[0].Expires.Before(time.Now()) {
		t.Errorf("stale cookie cleared with %q, want cppwd expired at Path=/files/", resp.Header["Set-Cookie"])
	}
}

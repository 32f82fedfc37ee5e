package http

import (
	"encoding/base64"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"hoard/store"
)

// credentials returns the passwords the request carries, in copyparty's
// order: ?pw=, the PW header, HTTP Basic auth (the whole "user:pass", then
// the part after the colon, then the part before), and the cppwd cookie.
// fromCookie reports that only the cookie carried one. Under a password
// share's path a browser sends two cppwd cookies, the share's (its path)
// first and the account's (the login's, at the top) last: account is
// true for an account's password (the last), false for a share's (the
// first).
func credentials(r *http.Request, query url.Values, account bool) (pws []string, fromCookie bool) {
	if pw := query.Get("pw"); pw != "" {
		return []string{pw}, false
	}
	if pw := r.Header.Get("PW"); pw != "" {
		return []string{pw}, false
	}
	if h := r.Header.Get("Authorization"); h != "" {
		if scheme, val, ok := strings.Cut(h, " "); ok && strings.EqualFold(scheme, "Basic") {
			if raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(val)); err == nil {
				s := string(raw)
				pws = append(pws, s)
				if user, pass, ok := strings.Cut(s, ":"); ok {
					pws = append(pws, pass, user)
				}
				return pws, false
			}
		}
	}
	if v := cookiePW(r, account); v != "" {
		pws = []string{v}
		// The login form escapes a password a cookie cannot carry as is
		// (cookieValue); copyparty's clients set it raw.
		if pw, err := url.QueryUnescape(v); err == nil && pw != v {
			pws = append(pws, pw)
		}
		return pws, true
	}
	return nil, false
}

// cookiePW is the value of the first (or, last, the last) cppwd cookie
// that has one; "" for none. One either way: more cookies are not more
// guesses.
func cookiePW(r *http.Request, last bool) string {
	v := ""
	for _, c := range r.CookiesNamed("cppwd") {
		if c.Value == "" {
			continue
		}
		v = c.Value
		if !last {
			break
		}
	}
	return v
}

// authenticate sets q.user from the request's credentials. A password that
// matches no account is refused with 401 (copyparty would fall back to
// anonymous; hoard does not), after a delay that grows with the address's
// recent failures. A stale cookie is cleared and the request goes on as
// anonymous, after the same delay.
func (s *Server) authenticate(q *req) error {
	pws, fromCookie := credentials(q.r, q.query, true)
	if len(pws) == 0 {
		return nil
	}
	if err := s.guessTurn(q, pws); err != nil {
		return err
	}
	for _, pw := range pws {
		if pw == "" {
			continue
		}
		if user, ok := s.st.AuthenticateContext(q.r.Context(), pw); ok {
			s.fails.worked(q.ip, pw)
			if fromCookie || viaBasic(q) {
				// A browser sends the cookie, and Basic credentials it
				// has cached, on cross-site requests too; refuse those
				// that change things (CSRF). Requests with their own PW
				// header or ?pw= are not at risk (a foreign page cannot
				// know them), nor are clients other than browsers (they
				// send no Sec-Fetch-Site or Origin).
				if err := s.cop.Check(q.r); err != nil {
					return errorf(http.StatusForbidden, "rejected by the cross-origin check: %v", err)
				}
			}
			q.user = user
			return nil
		}
	}
	s.log.Warn("wrong password", "id", q.id, "ip", q.ip, "method", q.r.Method, "path", logPath(q.r.URL))
	// A wrong cookie is a guess like any other: the right one answers
	// differently, so it must not be free to try.
	s.slowGuess(q)
	if fromCookie {
		// Cleared where the login form set it (under --rp-loc too).
		http.SetCookie(q.w, &http.Cookie{Name: "cppwd", Value: "x", Path: q.loc + "/", Expires: time.Unix(0, 0), HttpOnly: true, Secure: q.scheme == "https", SameSite: http.SameSiteStrictMode})
		return nil
	}
	return &httpError{code: http.StatusUnauthorized, msg: "wrong password"}
}

// viaBasic reports that the request's credentials come from HTTP Basic
// auth (no ?pw= or PW header goes before them).
func viaBasic(q *req) bool {
	return q.query.Get("pw") == "" && q.r.Header.Get("PW") == "" && q.r.Header.Get("Authorization") != ""
}

// failTracker counts wrong passwords per client address so that guessing
// gets slower, never faster.
type failTracker struct {
	mu     sync.Mutex
	byIP   map[string]*failRec
	limit  int                      // addresses remembered at once (failCap)
	digest func(pw string) [32]byte // how failRec.good remembers a password (store.Store.PasswordKey)
}

type failRec struct {
	n     int
	first time.Time
	// next is when the address's next password may be tried, once it
	// has used its free failures (turn).
	next time.Time
	// good are digests of passwords that worked from the address since
	// its first failure (at most failGood): they wait for no turn.
	good [][32]byte
}

const (
	failWindow = 10 * time.Minute
	failFree   = 3 // failures allowed in a window before answers slow down
	failStep   = 500 * time.Millisecond
	failMax    = 5 * time.Second
	failCap    = 8192 // addresses remembered at once
	failGood   = 4    // passwords remembered as good per address
	// failQueue bounds the wait for a turn: a client with more tries in
	// flight than that covers is refused at once, its passwords untried.
	failQueue = 30 * time.Second
)

// newFailTracker returns an empty tracker that remembers the passwords
// that worked by digest (a keyed one: store.Store.PasswordKey).
func newFailTracker(digest func(pw string) [32]byte) *failTracker {
	return &failTracker{byIP: map[string]*failRec{}, limit: failCap, digest: digest}
}

// turn returns how long the client at ip must wait before its passwords
// pws are tried, and takes that turn. An address that has used its free
// failures has one password tried at a time, each turn a penalty after
// the last: the answer to a wrong password is slowed down, and a client
// that sends many at once and gives up on slow answers must not learn the
// right one sooner than one that waits. A password that already worked
// from the address waits for nothing (its user is not held back by
// someone guessing from the same address). ok is false when the turn is
// more than failQueue away: the passwords are not to be tried at all.
func (f *failTracker) turn(ip string, pws []string) (wait time.Duration, ok bool) {
	key := store.ClientKey(ip)
	now := time.Now()
	f.mu.Lock()
	defer f.mu.Unlock()
	rec := f.byIP[key]
	if rec == nil || now.Sub(rec.first) > failWindow || rec.n < failFree {
		return 0, true
	}
	for _, pw := range pws {
		if pw != "" && slices.Contains(rec.good, f.digest(pw)) {
			return 0, true
		}
	}
	at := rec.next
	if at.Before(now) {
		at = now
	}
	if at.Sub(now) > failQueue {
		return 0, false
	}
	rec.next = at.Add(min(time.Duration(rec.n+1-failFree)*failStep, failMax))
	return at.Sub(now), true
}

// worked notes that pw was right from ip, when the address is remembered
// for its failures: it then takes no turn (turn).
func (f *failTracker) worked(ip, pw string) {
	key := store.ClientKey(ip)
	f.mu.Lock()
	defer f.mu.Unlock()
	rec := f.byIP[key]
	if rec == nil {
		return
	}
	d := f.digest(pw)
	if slices.Contains(rec.good, d) {
		return
	}
	if len(rec.good) >= failGood {
		rec.good = rec.good[1:]
	}
	rec.good = append(rec.good, d)
}

// add records a failure from ip (counted under its store.ClientKey: an
// IPv6 client's /64 is one client) and returns how long to wait before
// answering. When the table is full of addresses still being slowed down,
// nothing is forgotten: the new address is not remembered and waits the
// longest penalty, so many addresses cannot wipe the table clean.
func (f *failTracker) add(ip string) time.Duration {
	key := store.ClientKey(ip)
	now := time.Now()
	f.mu.Lock()
	defer f.mu.Unlock()
	rec := f.byIP[key]
	if rec == nil || now.Sub(rec.first) > failWindow {
		if rec == nil && len(f.byIP) >= f.limit {
			// forget what has expired, then those not slowed down yet
			for k, r := range f.byIP {
				if now.Sub(r.first) > failWindow {
					delete(f.byIP, k)
				}
			}
			for k, r := range f.byIP {
				if len(f.byIP) < f.limit {
					break
				}
				if r.n <= failFree {
					delete(f.byIP, k)
				}
			}
			if len(f.byIP) >= f.limit {
				return failMax
			}
		}
		rec = &failRec{first: now}
		f.byIP[key] = rec
	}
	rec.n++
	if rec.n <= failFree {
		return 0
	}
	return min(time.Duration(rec.n-failFree)*failStep, failMax)
}

// guessTurn waits q's address's turn to have its passwords tried
// (failTracker.turn). It fails when the client left meanwhile, or when the
// turn is too far away (429: nothing is tried).
func (s *Server) guessTurn(q *req, pws []string) error {
	d, ok := s.fails.turn(q.ip, pws)
	if !ok {
		q.w.Header().Set("Retry-After", strconv.Itoa(int(failMax/time.Second)))
		return errorf(http.StatusTooManyRequests, "too many wrong passwords from your address; try again later")
	}
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-q.r.Context().Done():
		return q.r.Context().Err()
	}
}

// slowGuess records a wrong password from q's address and waits the
// penalty it has earned (or until the client leaves), so guessing slows
// down with every failure.
func (s *Server) slowGuess(q *req) {
	if d := s.fails.add(q.ip); d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-q.r.Context().Done():
			t.Stop()
		}
	}
}

package client

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"hoard/up2k"
)

// A reply is a handshake answer: copyparty's keys (need is the list of
// chunk hashes still needed, "hash" on the wire).
type reply struct {
	Name string
	Purl string
	Wark string
	Need []string
	Sprs bool
}

// parseReply reads a handshake answer for a file whose chunk hashes are
// sent. Every needed hash must be one of them, the wark must look like
// one, and purl must be a path: a reply that does not fit is an error,
// never a reason to send a file somewhere else or to send made-up chunks.
func parseReply(body []byte, sent []string) (reply, error) {
	var raw struct {
		Name *string   `json:"name"`
		Purl *string   `json:"purl"`
		Wark *string   `json:"wark"`
		Hash *[]string `json:"hash"`
		Sprs *bool     `json:"sprs"`
	}
	if err := json.Unmarshal(body, &raw); err != nil {
		return reply{}, fmt.Errorf("the handshake reply is not the JSON object expected: %v", err)
	}
	if raw.Name == nil || raw.Purl == nil || raw.Wark == nil || raw.Hash == nil {
		return reply{}, errors.New("the handshake reply lacks name, purl, wark or hash")
	}
	r := reply{Name: *raw.Name, Purl: *raw.Purl, Wark: *raw.Wark, Need: *raw.Hash, Sprs: raw.Sprs == nil || *raw.Sprs}
	if r.Name == "" || strings.ContainsAny(r.Name, "/\\\x00") {
		return reply{}, fmt.Errorf("the handshake reply names the file %q", r.Name)
	}
	if !strings.HasPrefix(r.Purl, "/") || strings.ContainsAny(r.Purl, "?#\x00\r\n") {
		return reply{}, fmt.Errorf("the handshake reply's purl %q is not a folder path", r.Purl)
	}
	if !validWark(r.Wark) {
		return reply{}, fmt.Errorf("the handshake reply's wark %q is not a wark", r.Wark)
	}
	known := make(map[string]struct{}, len(sent))
	for _, h := range sent {
		known[h] = struct{}{}
	}
	seen := make(map[string]struct{}, len(r.Need))
	for _, h := range r.Need {
		if _, ok := known[h]; !ok {
			return reply{}, fmt.Errorf("the server asks for chunk %.50q, which this file does not have", h)
		}
		if _, dup := seen[h]; dup {
			return reply{}, fmt.Errorf("the server asks for chunk %.50q twice", h)
		}
		seen[h] = struct{}{}
	}
	return r, nil
}

func validWark(s string) bool {
	if len(s) != 44 {
		return false
	}
	if s[0] == '#' {
		s = s[1:]
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// escapePath escapes each segment of a slash-separated path.
func escapePath(p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return strings.Join(segs, "/")
}

// HTTPError is a reply with a status the client does not retry.
type HTTPError struct {
	Status int
	Msg    string // the first line of the body
}

func (e *HTTPError) Error() string {
	if e.Msg == "" {
		return fmt.Sprintf("HTTP %d", e.Status)
	}
	return fmt.Sprintf("HTTP %d: %s", e.Status, e.Msg)
}

// ErrAuth is a server refusing the password (or asking for one).
var ErrAuth = errors.New("login required, or wrong password (-a PASSWORD or HOARD_PW)")

// ErrTLS is a server certificate that does not verify; no retry helps.
var ErrTLS = errors.New("the server's certificate is not trusted (--cacert FILE, or -td to skip the check)")

// wire sends requests with retries.
type wire struct {
	base    string // scheme://host
	pw      string
	hc      *http.Client
	retries int
	onRetry func(error)
}

func newTransport(o *Options, conns int) (*http.Transport, error) {
	tc := &tls.Config{InsecureSkipVerify: o.Insecure}
	if o.CACert != "" {
		pem, err := os.ReadFile(o.CACert)
		if err != nil {
			return nil, fmt.Errorf("--cacert: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--cacert %s: no PEM certificate in it", o.CACert)
		}
		tc.RootCAs = pool
	}
	d := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	return &http.Transport{
		Proxy: http.ProxyFromEnvironment,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := d.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return &stallConn{Conn: c}, nil
		},
		TLSClientConfig:       tc,
		TLSHandshakeTimeout:   10 * time.Second,
		MaxIdleConns:          conns,
		MaxIdleConnsPerHost:   conns,
		IdleConnTimeout:       60 * time.Second,
		ResponseHeaderTimeout: 10 * time.Minute, // the server syncs a big post before it answers
		ForceAttemptHTTP2:     false,
	}, nil
}

// maxReply is the most of a reply body read: a handshake's reply (4096
// hashes at most), a search's, a chunk post's "thank". maxListing is a
// folder listing's (--dr). Anything more is a broken or hostile server,
// and an error: a few dozen files handshake at once.
const (
	maxReply   = 8 << 20
	maxListing = 64 << 20
)

// A server that stops reading a request's body, or sends the head of its
// reply and never all of its body, would hold a try (and its file, and
// in the end the run) forever: TCP keeps such a connection alive. So a
// body being sent fails once sendStep bytes take longer than sendStall
// to go out (a write deadline on the connection, per step), and a
// reply's body once it takes longer than replyBodyTime after its head;
// the try is then retried as a dropped connection is. Waiting for the
// head is the transport's ResponseHeaderTimeout.
var (
	sendStall     = 2 * time.Minute
	replyBodyTime = 5 * time.Minute
)

// sendStep is how much of a body (sent by sendfile) one write deadline
// covers: 1 MiB in sendStall is about 8.7 kB/s.
const sendStep = 1 << 20

// stallConn is a connection whose writes fail when they stall (sendStall).
// It keeps net's sendfile for bodies that are files (ReadFrom).
type stallConn struct {
	net.Conn
}

func (c *stallConn) Write(p []byte) (int, error) {
	c.Conn.SetWriteDeadline(time.Now().Add(sendStall))
	return c.Conn.Write(p)
}

// writerOnly hides a writer's ReadFrom (for io.Copy's fallback).
type writerOnly struct{ io.Writer }

// ReadFrom sends r in steps of sendStep, each with its own deadline,
// through the connection's own ReadFrom (sendfile when r is a file's
// range, as the transport gives it: an *io.LimitedReader).
func (c *stallConn) ReadFrom(r io.Reader) (int64, error) {
	rf, ok := c.Conn.(io.ReaderFrom)
	lr, lok := r.(*io.LimitedReader)
	if !ok || !lok {
		return io.Copy(writerOnly{c}, r)
	}
	var total int64
	for lr.N > 0 {
		step := &io.LimitedReader{R: lr.R, N: min(lr.N, sendStep)}
		want := step.N
		c.Conn.SetWriteDeadline(time.Now().Add(sendStall))
		n, err := rf.ReadFrom(step)
		total += n
		lr.N -= n
		if err != nil || n < want {
			return total, err // an error, or the end of r
		}
	}
	return total, nil
}

// transient reports whether a status is worth another try.
func transient(code int) bool {
	return code == http.StatusTooManyRequests || code >= 500 && code != http.StatusNotImplemented
}

// do sends the request mk builds (again on each try) and returns the
// status and body of a reply below 400, retrying connection errors, 5xx
// and 429 with exponential backoff and jitter (honouring Retry-After).
// retry422 also retries 422, copyparty's "try again later". Other
// statuses are an *HTTPError; 401 and 403 are ErrAuth.
func (w *wire) do(ctx context.Context, mk func() (*http.Request, error), retry422 bool) ([]byte, error) {
	body, _, err := w.doH(ctx, mk, retry422)
	return body, err
}

// doH is do that also returns the reply's header (nil on error).
func (w *wire) doH(ctx context.Context, mk func() (*http.Request, error), retry422 bool) ([]byte, http.Header, error) {
	return w.doLimit(ctx, mk, retry422, maxReply)
}

// errReplyTime is a reply whose body did not arrive in replyBodyTime.
var errReplyTime = errors.New("the reply's body did not arrive in time")

// doLimit is doH for replies of at most limit bytes (a longer one is an
// error).
func (w *wire) doLimit(ctx context.Context, mk func() (*http.Request, error), retry422 bool, limit int64) ([]byte, http.Header, error) {
	var (
		last    error
		wait422 time.Time // when the first 422 came
	)
	for attempt := 0; ; attempt++ {
		req, err := mk()
		if err != nil {
			return nil, nil, err
		}
		tctx, cancel := context.WithCancelCause(ctx)
		req = req.WithContext(tctx)
		if w.pw != "" {
			req.Header.Set("PW", w.pw)
		}
		var wait time.Duration
		resp, err := w.hc.Do(req)
		if err == nil {
			late := time.AfterFunc(replyBodyTime, func() { cancel(errReplyTime) })
			body, rerr := io.ReadAll(io.LimitReader(resp.Body, limit+1))
			late.Stop()
			resp.Body.Close()
			if rerr != nil && context.Cause(tctx) == errReplyTime {
				rerr = errReplyTime
			}
			cancel(nil) // the body is read: the try's context is done with
			switch {
			case rerr != nil:
				err = rerr
			case int64(len(body)) > limit:
				return nil, nil, fmt.Errorf("HTTP %d: the reply is larger than the %d bytes expected at most", resp.StatusCode, limit)
			case resp.StatusCode >= 200 && resp.StatusCode < 300:
				return body, resp.Header, nil
			case resp.StatusCode < 400:
				// Redirects are not followed (they would carry the
				// password elsewhere) and are no acknowledgement.
				return nil, nil, &HTTPError{resp.StatusCode, "unexpected redirect to " + clean(resp.Header.Get("Location"))}
			case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
				return nil, nil, fmt.Errorf("%w: %w", ErrAuth, &HTTPError{resp.StatusCode, firstLine(body)})
			case resp.StatusCode == http.StatusInternalServerError && attempt >= 2:
				// A plain 500 is more often a lasting failure (a full
				// disk, a refusal) than a passing one: a few tries only.
				return nil, nil, &HTTPError{resp.StatusCode, firstLine(body)}
			case retry422 && resp.StatusCode == http.StatusUnprocessableEntity:
				// The same content is being uploaded to another path
				// (often by this run: a duplicate file), or its source is
				// busy: wait for it, however many tries that takes, up
				// to patience422.
				if wait422.IsZero() {
					wait422 = time.Now()
				}
				he := &HTTPError{resp.StatusCode, firstLine(body)}
				if time.Since(wait422) > patience422 {
					return nil, nil, he
				}
				attempt-- // not counted against the retries
				if !sleepCtx(ctx, min(backoff(3+attempt/4), 5*time.Second)) {
					return nil, nil, ctx.Err()
				}
				continue
			case transient(resp.StatusCode):
				err = &HTTPError{resp.StatusCode, firstLine(body)}
				wait = retryAfter(resp.Header.Get("Retry-After"))
			default:
				return nil, nil, &HTTPError{resp.StatusCode, firstLine(body)}
			}
		}
		cancel(nil)
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		if errors.Is(err, errChanged) {
			return nil, nil, errChanged
		}
		var cve *tls.CertificateVerificationError
		if errors.As(err, &cve) {
			return nil, nil, fmt.Errorf("%w: %v", ErrTLS, cve.Err)
		}
		last = err
		if attempt >= w.retries {
			return nil, nil, fmt.Errorf("gave up after %d tries: %w", attempt+1, last)
		}
		if w.onRetry != nil {
			w.onRetry(last)
		}
		if wait == 0 {
			wait = backoff(attempt)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, nil, ctx.Err()
		case <-t.C:
		}
	}
}

// patience422 is how long a handshake waits out 422 (the same content
// being uploaded elsewhere).
var patience422 = 30 * time.Minute

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// backoff is the wait before try attempt+2: exponential from 100 ms,
// capped at 10 s, with full jitter in its upper half.
func backoff(attempt int) time.Duration {
	d := 100 * time.Millisecond << min(attempt, 7)
	d = min(d, 10*time.Second)
	return d/2 + rand.N(d/2+1)
}

// retryAfter reads a Retry-After header (seconds or an HTTP date), capped
// at a minute; 0 when absent or unreadable.
func retryAfter(v string) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	var d time.Duration
	if n, err := strconv.Atoi(v); err == nil {
		d = time.Duration(n) * time.Second
	} else if t, err := http.ParseTime(v); err == nil {
		d = time.Until(t)
	}
	if d <= 0 {
		return 0
	}
	// A little jitter, so that many clients told the same do not return
	// in one burst.
	return min(d, time.Minute) + rand.N(100*time.Millisecond)
}

func firstLine(b []byte) string {
	b = bytes.TrimSpace(b)
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		b = b[:i]
	}
	if len(b) > 300 {
		b = b[:300]
	}
	return clean(string(b))
}

// parseDone reads a chunk post's up2k.DoneHeader: the URL path of the
// file the post completed, unescaped, or ok false when there is none or
// it is not a plain path (the file is then finished by a handshake).
func parseDone(h http.Header) (where string, ok bool) {
	v := h.Get(up2k.DoneHeader)
	if v == "" {
		return "", false
	}
	p, err := url.PathUnescape(v)
	if err != nil || !strings.HasPrefix(p, "/") || strings.HasSuffix(p, "/") || strings.ContainsAny(p, "?#\x00\r\n") {
		return "", false
	}
	return p, true
}

// clean makes text from a server safe to print on a terminal: valid
// UTF-8, control characters (escape sequences) replaced.
func clean(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || 0x80 <= r && r < 0xa0 {
			return '?'
		}
		return r
	}, strings.ToValidUTF8(s, "?"))
}

// isHTTP reports whether err is an *HTTPError with status code (any
// status when code is 0).
func isHTTP(err error, code int) (*HTTPError, bool) {
	var he *HTTPError
	if errors.As(err, &he) && (code == 0 || he.Status == code) {
		return he, true
	}
	return nil, false
}

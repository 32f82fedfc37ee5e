package http

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"strconv"
	"time"

	"hoard/idx"
	"hoard/store"
)

// httpError is an error that already knows its status. Its message is safe
// to show the client.
type httpError struct {
	code int
	msg  string
	err  error // cause, for the log
}

func (e *httpError) Error() string {
	if e.err != nil {
		return e.msg + ": " + e.err.Error()
	}
	return e.msg
}

func (e *httpError) Unwrap() error { return e.err }

func errorf(code int, format string, args ...any) error {
	return &httpError{code: code, msg: fmt.Sprintf(format, args...)}
}

// errUnauthorized asks the client for credentials (401 + WWW-Authenticate).
var errUnauthorized = &httpError{code: http.StatusUnauthorized, msg: "this needs a password (PW header, ?pw=, or basic auth)"}

// statusCanceled is logged (never sent) when the client went away.
const statusCanceled = 499

// statusOf is the one table from errors to HTTP statuses and the message
// the client sees. Domain errors carry a store.Kind and a client-safe
// message (store.Classify); this maps the kind. 5xx messages never carry
// internal detail: a KindNoSpace message names sizes only, the others are
// written to be shown.
func statusOf(err error) (int, string) {
	var he *httpError
	var mb *http.MaxBytesError
	if errors.As(err, &he) {
		return he.code, he.msg
	}
	if k, msg, _, ok := store.Classify(err); ok && k > 0 && k < store.KindCount {
		for _, h := range cliHints {
			if errors.Is(err, h.err) {
				msg = h.msg
			}
		}
		return kindStatus[k], msg
	}
	switch {
	case errors.As(err, &mb):
		return http.StatusRequestEntityTooLarge, fmt.Sprintf("request body larger than %d bytes", mb.Limit)
	case errors.Is(err, fs.ErrNotExist):
		return http.StatusNotFound, "not found"
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return statusCanceled, "request canceled"
	case errors.Is(err, fs.ErrPermission):
		return http.StatusInternalServerError, "the server's OS denied access to that file"
	}
	return http.StatusInternalServerError, "internal server error"
}

// retryAfter is the Retry-After header for err, "" for none.
func retryAfter(err error) string {
	if _, _, d, ok := store.Classify(err); ok && d > 0 {
		return strconv.Itoa(int((d + time.Second - 1) / time.Second))
	}
	return ""
}

// kindStatus is the status of each kind of domain error. Copyparty answers
// most refusals 400; these say more, and its clients only look at the
// message. A handler answers an anonymous user's KindForbidden with 401
// first, and WebDAV's Overwrite: F with 412 for KindExists.
var kindStatus = [store.KindCount]int{
	store.KindInvalid:        http.StatusBadRequest,
	store.KindNotFound:       http.StatusNotFound,
	store.KindForbidden:      http.StatusForbidden,
	store.KindExists:         http.StatusConflict,
	store.KindConflict:       http.StatusConflict,
	store.KindTooLarge:       http.StatusRequestEntityTooLarge,
	store.KindRetry:          http.StatusUnprocessableEntity,
	store.KindUnavailable:    http.StatusServiceUnavailable,
	store.KindRateLimited:    http.StatusTooManyRequests,
	store.KindNoSpace:        http.StatusInternalServerError,
	store.KindStateFull:      http.StatusInsufficientStorage,
	store.KindUnsupported:    http.StatusUnsupportedMediaType,
	store.KindDisabled:       http.StatusInternalServerError,
	store.KindInternal:       http.StatusInternalServerError,
	store.KindLocked:         http.StatusLocked,
	store.KindNotImplemented: http.StatusNotImplemented,
}

// WebDAV's exceptions to kindStatus (RFC 4918), by method; davErr
// applies one.
var (
	// MKCOL of something that exists is 405, under a missing folder 409
	// (section 9.3.1).
	davMkcolStatus = map[store.Kind]int{store.KindExists: http.StatusMethodNotAllowed, store.KindNotFound: http.StatusConflict}
	// DELETE, COPY and MOVE of what can never be (a volume's top folder,
	// a folder into itself) are 403 (sections 9.6, 9.8.5, 9.9.4).
	davDeleteStatus   = map[store.Kind]int{store.KindInvalid: http.StatusForbidden}
	davTransferStatus = map[store.Kind]int{store.KindInvalid: http.StatusForbidden}
	// COPY and MOVE with Overwrite: F onto something that exists: 412.
	davNoOverwriteStatus = map[store.Kind]int{store.KindInvalid: http.StatusForbidden, store.KindExists: http.StatusPreconditionFailed}
	// A lock refresh with a token that covers nothing there: 412.
	davRefreshStatus = map[store.Kind]int{store.KindConflict: http.StatusPreconditionFailed}
)

// davErr maps a domain error to its status with one of WebDAV's
// exception tables above (nil: none), keeping the message; anonymous
// refusals become 401.
func (q *req) davErr(err error, over map[store.Kind]int) error {
	err = q.domain(err)
	if k := store.KindOf(err); k != 0 {
		if code, ok := over[k]; ok {
			_, msg := statusOf(err)
			return &httpError{code: code, msg: msg, err: err}
		}
	}
	return err
}

// propPatchStatus is the status a PROPPATCH's multistatus gives each
// property the store refused to set (RFC 4918 section 9.2): 507 for a
// full disk or state, 403 for a missing permission, 409 for a value it
// cannot take; 0 for an error that fails the whole request instead.
func propPatchStatus(err error) int {
	switch store.KindOf(err) {
	case store.KindStateFull, store.KindNoSpace:
		return http.StatusInsufficientStorage
	case store.KindForbidden:
		return http.StatusForbidden
	case store.KindInvalid:
		return http.StatusConflict
	}
	return 0
}

// cliHints replace the message of a domain error with one that names the
// server option that would help: the domain names no flags.
var cliHints = []struct {
	err error
	msg string
}{
	{idx.ErrOff, "search is disabled: no volume you may read is indexed; start hoard with -e2d (or -e2dsa to also index files already there)"},
	{idx.ErrNoTags, "tag search needs tag indexing: start hoard with -e2ts, and install ffprobe (FFmpeg) on the server"},
}

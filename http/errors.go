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

// cliHints replace the message of a domain error with one that names the
// server option that would help: the domain names no flags.
var cliHints = []struct {
	err error
	msg string
}{
	{idx.ErrOff, "search is disabled: no volume you may read is indexed; start hoard with -e2d (or -e2dsa to also index files already there)"},
	{idx.ErrNoTags, "tag search needs tag indexing: start hoard with -e2ts, and install ffprobe (FFmpeg) on the server"},
}

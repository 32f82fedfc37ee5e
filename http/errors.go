package http

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"

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
// the client sees. 5xx messages never carry internal detail, except the
// disk-full message, which names sizes only.
func statusOf(err error) (int, string) {
	var he *httpError
	var se *store.SizeError
	var df *store.DiskFullError
	var sf *store.StateFullError
	var nr *store.NoRoomError
	var mb *http.MaxBytesError
	var oe *store.OpError
	switch {
	case errors.As(err, &he):
		return he.code, he.msg
	case errors.As(err, &nr):
		if nr.Temporary() {
			return http.StatusServiceUnavailable, trimPkg(nr.Error())
		}
		return http.StatusRequestEntityTooLarge, trimPkg(nr.Error())
	case errors.As(err, &sf):
		if sf.Opening {
			return http.StatusServiceUnavailable, trimPkg(sf.Error())
		}
		return http.StatusInsufficientStorage, trimPkg(sf.Error())
	case errors.As(err, &df):
		return http.StatusInternalServerError, trimPkg(df.Error())
	case errors.As(err, &oe) && oe.Kind != 0:
		// File management (store.Delete, Move, Copy, Mkdir). A handler
		// answers an anonymous user's KindForbidden with 401 first, and
		// WebDAV's Overwrite: F with 412 for KindExists.
		return opStatus[oe.Kind], oe.Msg
	case errors.As(err, &se):
		if se.Size < se.Min {
			return http.StatusBadRequest, trimPkg(se.Error()) // too small is bad input, not "too large"
		}
		return http.StatusRequestEntityTooLarge, trimPkg(se.Error())
	case errors.As(err, &mb):
		return http.StatusRequestEntityTooLarge, fmt.Sprintf("request body larger than %d bytes", mb.Limit)
	case errors.Is(err, store.ErrNotFound), errors.Is(err, fs.ErrNotExist):
		return http.StatusNotFound, "not found"
	case errors.Is(err, store.ErrExists):
		return http.StatusConflict, trimPkg(store.ErrExists.Error())
	case errors.Is(err, store.ErrReserved):
		return http.StatusForbidden, trimPkg(store.ErrReserved.Error())
	case errors.Is(err, store.ErrNoSub):
		return http.StatusForbidden, trimPkg(store.ErrNoSub.Error())
	case errors.Is(err, store.ErrReadOnly):
		return http.StatusForbidden, trimPkg(store.ErrReadOnly.Error())
	case errors.Is(err, store.ErrBadName), errors.Is(err, store.ErrNotDir),
		errors.Is(err, store.ErrShortBody), errors.Is(err, store.ErrNoLifetime),
		errors.Is(err, store.ErrOutside), errors.Is(err, store.ErrIsDir), errors.Is(err, store.ErrNotRegular):
		for _, e := range []error{store.ErrPartialName, store.ErrBadName, store.ErrNotDir, store.ErrShortBody, store.ErrNoLifetime, store.ErrOutside, store.ErrIsDir, store.ErrNotRegular} {
			if errors.Is(err, e) {
				return http.StatusBadRequest, trimPkg(e.Error())
			}
		}
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return statusCanceled, "request canceled"
	case errors.Is(err, fs.ErrPermission):
		return http.StatusInternalServerError, "the server's OS denied access to that file"
	}
	return http.StatusInternalServerError, "internal server error"
}

// opStatus is the status of each kind of refused file-management
// operation (copyparty answers all of them 400; these say more, and its
// clients only look at the message).
var opStatus = map[store.Kind]int{
	store.KindInvalid:   http.StatusBadRequest,
	store.KindNotFound:  http.StatusNotFound,
	store.KindForbidden: http.StatusForbidden,
	store.KindExists:    http.StatusConflict,
	store.KindConflict:  http.StatusConflict,
}

func trimPkg(s string) string {
	if len(s) > 7 && s[:7] == "store: " {
		return s[7:]
	}
	return s
}

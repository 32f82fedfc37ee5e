package http

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"hoard/arch"
	"hoard/idx"
	"hoard/media"
	"hoard/store"
	"hoard/up2k"
)

// TestStatusOfOpError maps each kind of refused file-management operation
// to its status, with the store's client-safe message.
func TestStatusOfOpError(t *testing.T) {
	for k, want := range map[store.Kind]int{
		store.KindInvalid: 400, store.KindNotFound: 404, store.KindForbidden: 403, store.KindExists: 409, store.KindConflict: 409,
	} {
		err := fmt.Errorf("wrapped: %w", &store.OpError{Op: "move", Kind: k, Msg: "the message", Err: fmt.Errorf("/srv/secret/path: boom")})
		code, msg := statusOf(err)
		if code != want || msg != "the message" {
			t.Errorf("%v: %d %q, want %d", k, code, msg, want)
		}
	}
	if code, _ := statusOf(&store.OpError{Op: "copy", Kind: store.KindConflict, Err: &store.DiskFullError{Free: 1, Need: 2}}); code != http.StatusInternalServerError {
		t.Errorf("disk full inside an OpError: %d", code)
	}
}

// TestStatusOfEveryKind walks every domain error kind through statusOf:
// a kind added without a status fails here.
func TestStatusOfEveryKind(t *testing.T) {
	for k := store.Kind(1); k < store.KindCount; k++ {
		if k.String() == "unknown" {
			t.Errorf("kind %d has no name", k)
		}
		err := fmt.Errorf("wrapped: %w", &store.Error{Kind: k, Msg: "safe " + k.String(), Err: errors.New("/srv/secret")})
		code, msg := statusOf(err)
		if code < 400 || code > 599 || kindStatus[k] == 0 {
			t.Errorf("kind %v: status %d: no mapping in kindStatus", k, code)
		}
		if msg != "safe "+k.String() {
			t.Errorf("kind %v: message %q, want the domain's", k, msg)
		}
	}
}

// TestStatusOfDomainErrors checks each exported sentinel and error type of
// the domain rooms: status, client message, Retry-After.
func TestStatusOfDomainErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		err   error
		code  int
		msg   string
		retry string
	}{
		{name: "not found", err: fmt.Errorf("%w: open x", store.ErrNotFound), code: 404, msg: "not found"},
		{name: "exists", err: store.ErrExists, code: 409, msg: "a file with that name already exists"},
		{name: "is dir", err: store.ErrIsDir, code: 400, msg: "is a folder"},
		{name: "not dir", err: store.ErrNotDir, code: 400, msg: "some file got your folder name"},
		{name: "reserved", err: store.ErrReserved, code: 403, msg: "that name is reserved for the server's state"},
		{name: "bad name", err: store.ErrBadName, code: 400, msg: "invalid file name"},
		{name: "partial name", err: fmt.Errorf("x: %w", store.ErrPartialName), code: 400, msg: "invalid file name: names ending in " + store.PartialSuffix + " are reserved for uploads in progress"},
		{name: "outside", err: store.ErrOutside, code: 400, msg: "path leads outside the volume"},
		{name: "short body", err: store.ErrShortBody, code: 400, msg: "upload ended before the announced size"},
		{name: "no lifetime", err: store.ErrNoLifetime, code: 400, msg: store.ErrNoLifetime.Msg},
		{name: "no sub", err: store.ErrNoSub, code: 403, msg: "this volume accepts uploads only into its top folder"},
		{name: "forbidden", err: store.ErrForbidden, code: 403, msg: "you do not have the permission for that"},
		{name: "read only", err: store.ErrReadOnly, code: 403, msg: "nothing can be uploaded here"},
		{name: "share key", err: store.CheckShareKey("a b"), code: 400, msg: `share key "a b": ` + store.ErrShareKey.Msg},
		{name: "too big", err: &store.SizeError{Size: 9, Min: 1, Max: 5}, code: 413, msg: "file too big: 9 bytes or more, this volume takes 1 to 5"},
		{name: "too small", err: &store.SizeError{Size: 0, Min: 1, Max: 5}, code: 400, msg: "file too small: 0 bytes, this volume takes 1 to 5"},
		{name: "disk full", err: &store.DiskFullError{Free: 1024, Need: 2048}, code: 500, msg: "server disk is full; 1.0 KiB free, need 2.0 KiB"},
		{name: "no room now", err: fmt.Errorf("x: %w", &store.NoRoomError{Free: 100, Claimed: 90, Need: 50}), code: 503, msg: (&store.NoRoomError{Free: 100, Claimed: 90, Need: 50}).Error()},
		{name: "no room", err: &store.NoRoomError{Free: 10, Need: 50}, code: 413, msg: (&store.NoRoomError{Free: 10, Need: 50}).Error()},
		{name: "state full", err: &store.Error{Op: "copy", Kind: store.KindConflict, Msg: "x", Err: &store.StateFullError{Free: 1, Keep: 2}}, code: 507, msg: (&store.StateFullError{Free: 1, Keep: 2}).Error()},
		{name: "state opening", err: &store.StateFullError{Opening: true}, code: 503, msg: (&store.StateFullError{Opening: true}).Error()},
		{name: "not regular", err: store.ErrNotRegular, code: 400, msg: "that name belongs to a pipe, socket or device, not a file"},
		{name: "up2k limited", err: &up2k.Error{Kind: up2k.Limited, Msg: "too many"}, code: 429, msg: "too many"},
		{name: "up2k closed", err: up2k.ErrClosed, code: 503, msg: up2k.ErrClosed.Msg},
		{name: "up2k retry", err: &up2k.Error{Kind: up2k.Retry, Msg: "please try again later"}, code: 422, msg: "please try again later"},
		{name: "up2k conflict", err: &up2k.Error{Kind: up2k.Conflict, Msg: "dupe"}, code: 409, msg: "dupe"},
		{name: "search off", err: idx.ErrOff, code: 500, msg: "search is disabled: no volume you may read is indexed; start hoard with -e2d (or -e2dsa to also index files already there)"},
		{name: "no tags", err: idx.ErrNoTags, code: 500, msg: "tag search needs tag indexing: start hoard with -e2ts, and install ffprobe (FFmpeg) on the server"},
		{name: "bad hash", err: idx.ErrBadHash, code: 400, msg: idx.ErrBadHash.Msg},
		{name: "syntax", err: &idx.SyntaxError{Pos: 3, Msg: "oops"}, code: 400, msg: (&idx.SyntaxError{Pos: 3, Msg: "oops"}).Error()},
		{name: "scan busy", err: &idx.BusyError{RetryAfter: 3 * time.Second}, code: 503, msg: "indexing in progress; the files are being scanned, please retry shortly", retry: "3"},
		{name: "rate", err: &idx.RateError{Penalty: time.Second}, code: 429, msg: (&idx.RateError{Penalty: time.Second}).Error()},
		{name: "ffmpeg", err: media.ErrNoFFmpeg, code: 500, msg: media.ErrNoFFmpeg.Msg},
		{name: "thumb busy", err: fmt.Errorf("%w: waited", media.ErrBusy), code: 503, msg: "the thumbnailer is busy; try again later", retry: "5"},
		{name: "bad th", err: func() error { _, err := media.ParseTh("zz"); return err }(), code: 400, msg: `bad thumbnail parameters "zz": want empty, w<N>, h<N>, letters of j/w/f/3, p, opus, caf or mp3`},
		{name: "bad tar", err: func() error { _, err := arch.ParseTar("zz"); return err }(), code: 400, msg: `unknown tar format "zz" (want pax, gz[:0-9], xz[:0-9] or bz2[:1-9])`},
		{name: "bad level", err: arch.CheckLevel(arch.Gzip, 12), code: 400, msg: "gz level 12 out of range 0-9"},
		{name: "canceled", err: context.Canceled, code: statusCanceled, msg: "request canceled"},
		{name: "plain I/O", err: errors.New("/srv/x: input/output error"), code: 500, msg: "internal server error"},
	} {
		code, msg := statusOf(tc.err)
		if code != tc.code || msg != tc.msg {
			t.Errorf("%s: %d %q, want %d %q", tc.name, code, msg, tc.code, tc.msg)
		}
		if got := retryAfter(tc.err); got != tc.retry {
			t.Errorf("%s: Retry-After %q, want %q", tc.name, got, tc.retry)
		}
		if _, _, _, ok := store.Classify(tc.err); ok && strings.Contains(tc.msg, "store:") {
			t.Errorf("%s: message names the package", tc.name)
		}
	}
}

// TestDAVStatusEveryKind walks every kind through WebDAV's exception
// tables and PROPPATCH's per-property status (all in errors.go): each
// answer is the RFC 4918 status named for it, or kindStatus's, with the
// domain's message; an anonymous refusal that names a permission is 401.
func TestDAVStatusEveryKind(t *testing.T) {
	tables := []struct {
		name string
		over map[store.Kind]int
		want map[store.Kind]int // the exceptions; every other kind: kindStatus
	}{
		{name: "none", over: nil},
		{name: "MKCOL", over: davMkcolStatus, want: map[store.Kind]int{store.KindExists: 405, store.KindNotFound: 409}},
		{name: "DELETE", over: davDeleteStatus, want: map[store.Kind]int{store.KindInvalid: 403}},
		{name: "COPY/MOVE", over: davTransferStatus, want: map[store.Kind]int{store.KindInvalid: 403}},
		{name: "COPY/MOVE Overwrite: F", over: davNoOverwriteStatus, want: map[store.Kind]int{store.KindInvalid: 403, store.KindExists: 412}},
		{name: "LOCK refresh", over: davRefreshStatus, want: map[store.Kind]int{store.KindConflict: 412}},
	}
	q := &req{user: "alice"}
	for _, tb := range tables {
		for k := store.Kind(1); k < store.KindCount; k++ {
			want, ok := tb.want[k]
			if !ok {
				want = kindStatus[k]
			}
			code, msg := statusOf(q.davErr(&store.Error{Kind: k, Msg: "safe", Err: errors.New("/srv/secret")}, tb.over))
			if code != want || msg != "safe" {
				t.Errorf("%s, kind %v: %d %q, want %d \"safe\"", tb.name, k, code, msg, want)
			}
		}
	}
	anon := &req{}
	if code, _ := statusOf(anon.davErr(&store.Error{Kind: store.KindForbidden, Need: store.PermDelete, Msg: "no"}, davDeleteStatus)); code != 401 {
		t.Errorf("anonymous refusal naming a permission: %d, want 401", code)
	}
	prop := map[store.Kind]int{store.KindStateFull: 507, store.KindNoSpace: 507, store.KindForbidden: 403, store.KindInvalid: 409}
	for k := store.Kind(1); k < store.KindCount; k++ {
		if got := propPatchStatus(&store.Error{Kind: k}); got != prop[k] {
			t.Errorf("PROPPATCH property refused with kind %v: %d, want %d", k, got, prop[k])
		}
	}
	if got := propPatchStatus(errors.New("an I/O error")); got != 0 {
		t.Errorf("an unclassified error fails the whole PROPPATCH: %d, want 0", got)
	}
}

// TestFailContextEnded: a context error is the client gone only when the
// request's own context ended. One that ended inside the server (its own
// deadline, its shutdown) while the client waits is answered 503 with
// Retry-After, never a connection dropped without an answer.
func TestFailContextEnded(t *testing.T) {
	s, _ := newTestServer(t, "r")
	for _, tc := range []struct {
		name    string
		err     error
		gone    bool // the request's context is cancelled: the client left
		dropped bool
	}{
		{name: "own deadline, client waits", err: fmt.Errorf("waiting on the store: %w", context.DeadlineExceeded)},
		{name: "own cancel, client waits", err: context.Canceled},
		{name: "client gone", err: context.Canceled, gone: true, dropped: true},
		{name: "client gone, deadline error", err: context.DeadlineExceeded, gone: true, dropped: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("PUT", "/x", strings.NewReader("abc"))
			if tc.gone {
				ctx, cancel := context.WithCancel(r.Context())
				cancel()
				r = r.WithContext(ctx)
			}
			rec := httptest.NewRecorder()
			q := &req{r: r}
			q.rw.ResponseWriter = rec
			q.w = &q.rw
			if dropped := s.fail(q, tc.err); dropped != tc.dropped {
				t.Fatalf("fail reported the client gone = %v, want %v", dropped, tc.dropped)
			}
			if tc.dropped {
				if q.w.wrote {
					t.Errorf("an answer (%d) was written to a client that left", rec.Code)
				}
				return
			}
			if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" {
				t.Errorf("status %d, Retry-After %q; want 503 with Retry-After", rec.Code, rec.Header().Get("Retry-After"))
			}
			if !strings.Contains(rec.Body.String(), "try again") {
				t.Errorf("body %q does not say to try again", rec.Body.String())
			}
		})
	}
}

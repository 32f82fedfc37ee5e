package up2k

import "errors"

// Kind classifies an *Error for the HTTP layer.
type Kind uint8

const (
	// Invalid is bad input: a malformed handshake or chunk post, an
	// unknown wark or chunk, a chunk that does not match its hash (400).
	Invalid Kind = iota + 1
	// Conflict is content or a name the volume refuses to take again:
	// volume flag nodupe, or replace "skip" on a taken name (409).
	Conflict
	// Retry asks the client to come back later: the same content is being
	// uploaded to another path, or a source file is busy (422).
	Retry
	// Unavailable is a server that cannot take uploads right now, e.g.
	// while it shuts down, or with too many unfinished uploads (503).
	Unavailable
	// Limited is a client over its share: too many unfinished uploads
	// from its address (429).
	Limited
)

// Error is an up2k failure the client is told about. Msg is safe to show
// and keeps copyparty's wording where its clients look for it.
type Error struct {
	Kind Kind
	Msg  string
	Err  error // cause, for the log; may be nil
}

func (e *Error) Error() string {
	if e.Err != nil {
		return "up2k: " + e.Msg + ": " + e.Err.Error()
	}
	return "up2k: " + e.Msg
}

func (e *Error) Unwrap() error { return e.Err }

// ErrClosed is returned once the manager is shutting down.
var ErrClosed = &Error{Kind: Unavailable, Msg: "cannot receive uploads right now;\nserver busy with shutting down.\nPlease wait; the client will retry..."}

// KindOf returns the kind of err's *Error, or 0 when it has none.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return 0
}

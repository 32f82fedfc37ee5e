package up2k

import "hoard/store"

// Kind is store's error kind; up2k's errors are *store.Error.
type Kind = store.Kind

// The kinds up2k uses.
const (
	// Invalid is bad input: a malformed handshake or chunk post, an
	// unknown wark or chunk, a chunk that does not match its hash (400).
	Invalid = store.KindInvalid
	// Conflict is content or a name the volume refuses to take again:
	// volume flag nodupe, or replace "skip" on a taken name (409).
	Conflict = store.KindConflict
	// Retry asks the client to come back later: the same content is being
	// uploaded to another path, or a source file is busy (422).
	Retry = store.KindRetry
	// Unavailable is a server that cannot take uploads right now, e.g.
	// while it shuts down, or with too many unfinished uploads (503).
	Unavailable = store.KindUnavailable
	// Limited is a client over its share: too many unfinished uploads
	// from its address (429).
	Limited = store.KindRateLimited
)

// Error is an up2k failure the client is told about: a *store.Error. Msg
// is safe to show and keeps copyparty's wording where its clients look
// for it.
type Error = store.Error

// ErrClosed is returned once the manager is shutting down.
var ErrClosed = &Error{Kind: Unavailable, Msg: "cannot receive uploads right now;\nserver busy with shutting down.\nPlease wait; the client will retry..."}

// KindOf returns the kind of err, or 0 when it has none.
func KindOf(err error) Kind { return store.KindOf(err) }

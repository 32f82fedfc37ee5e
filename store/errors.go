package store

import (
	"errors"
	"fmt"
	"io/fs"
	"syscall"
	"time"
)

// Sentinel errors. Callers test them with errors.Is; each carries a Kind
// and a message safe to show a client.
var (
	ErrNotFound   = &Error{Kind: KindNotFound, Msg: "not found"}
	ErrExists     = &Error{Kind: KindExists, Msg: "a file with that name already exists"}
	ErrIsDir      = &Error{Kind: KindInvalid, Msg: "is a folder"}
	ErrNotDir     = &Error{Kind: KindInvalid, Msg: "some file got your folder name"}
	ErrReserved   = &Error{Kind: KindForbidden, Msg: "that name is reserved for the server's state"}
	ErrBadName    = &Error{Kind: KindInvalid, Msg: "invalid file name"}
	ErrOutside    = &Error{Kind: KindInvalid, Msg: "path leads outside the volume"}
	ErrShortBody  = &Error{Kind: KindInvalid, Msg: "upload ended before the announced size"}
	ErrNoLifetime = &Error{Kind: KindInvalid, Msg: "this volume has no lifetime setting, so a lifetime cannot be asked for"}
	ErrNoSub      = &Error{Kind: KindForbidden, Msg: "this volume accepts uploads only into its top folder"}
	// ErrForbidden is a change the user lacks the permission for. It is
	// what an *Error of KindForbidden matches with errors.Is.
	ErrForbidden = &Error{Kind: KindForbidden, Msg: "you do not have the permission for that"}
)

// ErrPartialName is an ErrBadName whose message says why the name is refused.
var ErrPartialName = &Error{Kind: KindInvalid, Msg: "invalid file name: names ending in " + PartialSuffix + " are reserved for uploads in progress", is: ErrBadName}

// ErrKeyTooLong is an ErrBadName on an object-store volume: the path,
// with the volume's key prefix, is longer than S3 takes a key (MaxObjectKey).
var ErrKeyTooLong = &Error{Kind: KindInvalid, Msg: "invalid file name: the path is too long for object storage (at most 1024 bytes with the volume's prefix)", is: ErrBadName}

// ErrStoreName is an ErrBadName on an object-store volume: a name the
// object store keeps for itself (MinIO's folder markers, "*__XLDIR__").
var ErrStoreName = &Error{Kind: KindInvalid, Msg: "invalid file name: names ending in " + storeDirSuffix + " are reserved by the object store", is: ErrBadName}

// SizeError is an upload outside the volume's size bounds.
type SizeError struct {
	Size, Min, Max int64
}

func (e *SizeError) Error() string {
	if e.Size < e.Min {
		return fmt.Sprintf("file too small: %d bytes, this volume takes %d to %d", e.Size, e.Min, e.Max)
	}
	return fmt.Sprintf("file too big: %d bytes or more, this volume takes %d to %d", e.Size, e.Min, e.Max)
}

// Class is KindInvalid for a file too small (bad input, not "too large"),
// else KindTooLarge.
func (e *SizeError) Class() (Kind, string) {
	if e.Size < e.Min {
		return KindInvalid, e.Error()
	}
	return KindTooLarge, e.Error()
}

// DiskFullError is a write refused or failed for lack of space.
type DiskFullError struct {
	Free, Need uint64
}

func (e *DiskFullError) Error() string {
	return fmt.Sprintf("server disk is full; %s free, need %s", HumanSize(int64(e.Free)), HumanSize(int64(e.Need)))
}

// Class is KindNoSpace; the message names sizes only.
func (e *DiskFullError) Class() (Kind, string) { return KindNoSpace, e.Error() }

// HumanSize formats n bytes with a binary unit, e.g. "1.5 GiB".
func HumanSize(n int64) string {
	const units = "KMGTPE"
	if n < 1024 {
		return fmt.Sprintf("%d B", n)
	}
	f := float64(n)
	i := -1
	for f >= 1024 && i < len(units)-1 {
		f /= 1024
		i++
	}
	return fmt.Sprintf("%.1f %ciB", f, units[i])
}

// mapErr turns an os error into the package's sentinels where one fits,
// keeping the original for logs.
func mapErr(err error) error {
	if err == nil {
		return nil
	}
	for e := err; e != nil; e = errors.Unwrap(e) {
		// os.Root's error for a path leading out of it (unexported; from
		// Open, Stat and the like as *fs.PathError, from Link and Rename
		// as *os.LinkError).
		if e.Error() == "path escapes from parent" {
			return fmt.Errorf("%w: %v", ErrOutside, err)
		}
	}
	var le *fs.PathError
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%w: %v", ErrNotFound, err)
	case errors.Is(err, syscall.ENOTDIR):
		return fmt.Errorf("%w: %v", ErrNotDir, err)
	case errors.Is(err, syscall.ELOOP):
		return fmt.Errorf("%w: %v", ErrOutside, err)
	case errors.Is(err, syscall.ENAMETOOLONG), errors.Is(err, syscall.EINVAL) && errors.As(err, &le):
		return fmt.Errorf("%w: %v", ErrBadName, err)
	}
	return err
}

// Kind classifies a refused or failed domain operation, for the one table
// in http (statusOf) that maps it to a status. Every room's errors carry
// one: as an *Error, or through a Class method (see Classed).
type Kind uint8

const (
	// KindInvalid is a request that can never succeed as asked: a bad
	// name, a malformed handshake or query, a volume's top folder, a
	// folder into itself (400).
	KindInvalid Kind = iota + 1
	// KindNotFound is a source that does not exist (404).
	KindNotFound
	// KindForbidden is a missing permission or a path the server never
	// hands out, such as the state folder (403; 401 for an anonymous
	// user, which the caller decides).
	KindForbidden
	// KindExists is a destination that exists and may not be replaced
	// (409; 412 for WebDAV's Overwrite: F).
	KindExists
	// KindConflict is a state that stands in the way: a missing folder, a
	// file with a folder's name, content the volume refuses to take again
	// (409).
	KindConflict
	// KindTooLarge is an upload or request larger than allowed (413).
	KindTooLarge
	// KindRetry asks the client to come back later: copyparty's "please
	// try again later" (422).
	KindRetry
	// KindUnavailable is a server that cannot do it right now: shutting
	// down, a first scan in progress, a busy worker pool (503, with
	// Retry-After when the error has one).
	KindUnavailable
	// KindRateLimited is a client asking too often (429).
	KindRateLimited
	// KindNoSpace is a write refused or failed for lack of disk space
	// (500, as copyparty).
	KindNoSpace
	// KindStateFull is a server whose state (sessions, index) is at its
	// cap (507).
	KindStateFull
	// KindUnsupported is content the operation cannot handle, such as a
	// transcode of a file without audio (415).
	KindUnsupported
	// KindDisabled is a feature this server was not set up for (search
	// without an index, thumbnails off, FFmpeg missing) (500).
	KindDisabled
	// KindInternal is a server-side failure with a client-safe message
	// (500).
	KindInternal
	// KindLocked is a resource under a WebDAV lock the request does not
	// hold, or a lock token that belongs to another user (423).
	KindLocked
	// KindNotImplemented is an operation this server does not do yet for
	// that kind of volume, such as up2k on an object-store volume (501).
	KindNotImplemented

	kindCount // first unused value; tests walk 1..kindCount-1
)

// KindCount is one more than the largest Kind, for tests that walk them.
const KindCount = kindCount

var kindNames = [...]string{
	KindInvalid: "invalid", KindNotFound: "not found", KindForbidden: "forbidden",
	KindExists: "exists", KindConflict: "conflict", KindTooLarge: "too large",
	KindRetry: "retry", KindUnavailable: "unavailable", KindRateLimited: "rate limited",
	KindNoSpace: "no space", KindStateFull: "state full", KindUnsupported: "unsupported",
	KindDisabled: "disabled", KindInternal: "internal", KindLocked: "locked",
	KindNotImplemented: "not implemented",
}

func (k Kind) String() string {
	if k > 0 && int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return "unknown"
}

// Error is a refused or failed domain operation. Msg is safe to show a
// client (no server paths, no HTTP or CLI details); Err is the cause, for
// the log. It is the one error type of the domain rooms (up2k.Error is
// this type).
type Error struct {
	Op         string // "delete", "move", "copy", "mkdir"; may be empty
	Kind       Kind
	Msg        string
	Need       Perm          // for KindForbidden: the permission that is missing
	RetryAfter time.Duration // for KindUnavailable/KindRateLimited: when to come back; 0 if unknown
	Err        error
	is         error // a broader sentinel this one refines
}

// OpError is the name file management grew up with.
type OpError = Error

func (e *Error) Error() string {
	s := e.Msg
	if e.Op != "" {
		s = e.Op + ": " + s
	}
	if e.Err != nil {
		s += " (" + e.Err.Error() + ")"
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// Class reports the kind and the client-safe message.
func (e *Error) Class() (Kind, string) { return e.Kind, e.Msg }

// Is lets errors.Is(err, ErrNotFound / ErrExists / ErrForbidden) hold for
// the matching kinds of file-management errors, so callers that know only
// the sentinels keep working.
func (e *Error) Is(target error) bool {
	if e.is != nil && target == e.is {
		return true
	}
	if e.Op == "" {
		return false
	}
	switch target {
	case ErrNotFound:
		return e.Kind == KindNotFound
	case ErrExists:
		return e.Kind == KindExists
	case ErrForbidden:
		return e.Kind == KindForbidden
	}
	return false
}

// Classed is an error that knows its Kind and the message a client may
// see. *Error, *SizeError, *DiskFullError and the other rooms' error
// types implement it.
type Classed interface {
	error
	Class() (Kind, string)
}

// Classify finds err's kind, client-safe message and retry hint. A lack
// of space (NoRoomError, StateFullError, DiskFullError) anywhere in the
// chain wins, it is the cause the client can act on; else the outermost
// Classed error decides. ok is false for an error
// of no kind (an I/O error).
func Classify(err error) (k Kind, msg string, retryAfter time.Duration, ok bool) {
	if err == nil {
		return 0, "", 0, false
	}
	var c Classed
	var nr *NoRoomError
	var sf *StateFullError
	var df *DiskFullError
	switch {
	case errors.As(err, &nr):
		c = nr
	case errors.As(err, &sf):
		c = sf
	case errors.As(err, &df):
		c = df
	case !errors.As(err, &c):
		return 0, "", 0, false
	}
	k, msg = c.Class()
	if r, ok := c.(interface{ Retry() time.Duration }); ok {
		retryAfter = r.Retry()
	} else if e, ok := c.(*Error); ok {
		retryAfter = e.RetryAfter
	}
	return k, msg, retryAfter, true
}

// KindOf classifies err; 0 for an error of no kind.
func KindOf(err error) Kind {
	k, _, _, _ := Classify(err)
	return k
}

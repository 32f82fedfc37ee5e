package store

import (
	"errors"
	"fmt"
	"io/fs"
	"syscall"
)

// Sentinel errors. Callers test them with errors.Is.
var (
	ErrNotFound   = errors.New("store: not found")
	ErrExists     = errors.New("store: a file with that name already exists")
	ErrIsDir      = errors.New("store: is a folder")
	ErrNotDir     = errors.New("store: some file got your folder name")
	ErrReserved   = errors.New("store: that name is reserved for the server's state")
	ErrBadName    = errors.New("store: invalid file name")
	ErrOutside    = errors.New("store: path leads outside the volume")
	ErrShortBody  = errors.New("store: upload ended before the announced size")
	ErrNoLifetime = errors.New("store: this volume has no lifetime setting, so life= cannot be used")
	ErrNoSub      = errors.New("store: this volume accepts uploads only into its top folder")
)

// ErrPartialName is an ErrBadName whose message says why the name is refused.
var ErrPartialName = fmt.Errorf("%w: names ending in %s are reserved for uploads in progress", ErrBadName, PartialSuffix)

// SizeError is an upload outside the volume's sz= bounds.
type SizeError struct {
	Size, Min, Max int64
}

func (e *SizeError) Error() string {
	if e.Size < e.Min {
		return fmt.Sprintf("store: file too small: %d bytes, this volume takes %d to %d", e.Size, e.Min, e.Max)
	}
	return fmt.Sprintf("store: file too big: %d bytes or more, this volume takes %d to %d", e.Size, e.Min, e.Max)
}

// DiskFullError is a write refused or failed for lack of space.
type DiskFullError struct {
	Free, Need uint64
}

func (e *DiskFullError) Error() string {
	return fmt.Sprintf("store: server disk is full; %s free, need %s", HumanSize(int64(e.Free)), HumanSize(int64(e.Need)))
}

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

// ErrForbidden is a change the user lacks the permission for. It is what
// an *OpError of KindForbidden matches with errors.Is.
var ErrForbidden = errors.New("store: you do not have the permission for that")

// Kind classifies why a file-management operation (Delete, Move, Copy,
// Mkdir) was refused, for the one table in http that maps it to a status.
type Kind uint8

const (
	// KindInvalid is a request that can never succeed as asked: a volume's
	// top folder, a folder into itself, a bad name, source and
	// destination the same, unpost of a folder (400).
	KindInvalid Kind = iota + 1
	// KindNotFound is a source that does not exist (404).
	KindNotFound
	// KindForbidden is a missing permission (d, m, w, r) or a path the
	// server never hands out, such as the state folder (403; 401 for an
	// anonymous user, which the caller decides).
	KindForbidden
	// KindExists is a destination that exists and may not be replaced:
	// overwrite was not asked for, or the d permission is missing there
	// (409 in copyparty's API; 412 for WebDAV's Overwrite: F).
	KindExists
	// KindConflict is a state of the file system that stands in the way:
	// the destination's folder is missing, a file has a folder's name,
	// other volumes lie inside the folder, or the folder changed while it
	// was being deleted (409).
	KindConflict
)

func (k Kind) String() string {
	switch k {
	case KindInvalid:
		return "invalid"
	case KindNotFound:
		return "not found"
	case KindForbidden:
		return "forbidden"
	case KindExists:
		return "exists"
	case KindConflict:
		return "conflict"
	}
	return "unknown"
}

// OpError is a refused or failed file-management operation. Msg is safe
// to show a client (no server paths); Err is the cause, for the log.
type OpError struct {
	Op   string // "delete", "move", "copy", "mkdir"
	Kind Kind
	Msg  string
	Need Perm // for KindForbidden: the permission that is missing
	Err  error
}

func (e *OpError) Error() string {
	s := "store: " + e.Op + ": " + e.Msg
	if e.Err != nil {
		s += " (" + e.Err.Error() + ")"
	}
	return s
}

func (e *OpError) Unwrap() error { return e.Err }

// Is lets errors.Is(err, ErrNotFound / ErrExists / ErrForbidden) hold for
// the matching kinds, so callers that know only the sentinels keep working.
func (e *OpError) Is(target error) bool {
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

// KindOf classifies err: an *OpError's kind, or the kind of the package's
// sentinel it wraps; 0 for anything else (an I/O error, a full disk).
func KindOf(err error) Kind {
	var oe *OpError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &oe):
		return oe.Kind
	case errors.Is(err, ErrNotFound):
		return KindNotFound
	case errors.Is(err, ErrExists):
		return KindExists
	case errors.Is(err, ErrForbidden), errors.Is(err, ErrReserved), errors.Is(err, ErrNoSub):
		return KindForbidden
	case errors.Is(err, ErrNotDir), errors.Is(err, ErrIsDir):
		return KindConflict
	case errors.Is(err, ErrBadName), errors.Is(err, ErrOutside):
		return KindInvalid
	}
	return 0
}

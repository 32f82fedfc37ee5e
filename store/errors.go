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

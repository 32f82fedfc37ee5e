//go:build !linux

package store

import (
	"errors"
	"os"
	"sync/atomic"
)

// noTmpfile is always set here: there are no unnamed files.
var noTmpfile = func() *atomic.Bool { var b atomic.Bool; b.Store(true); return &b }()

// openAnon: only Linux has unnamed files (O_TMPFILE); elsewhere work
// files are named.
func openAnon(dir *os.File, perm uint32) (*os.File, error, bool) { return nil, nil, false }

func linkAnon(f *os.File, ndir *os.File, nname string) error {
	return errors.New("store: no unnamed files here")
}

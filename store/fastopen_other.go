//go:build !linux

package store

import "os"

// volDir is the descriptor for the fast open, which only Linux has
// (fastopen_linux.go).
func volDir(src string, root *os.Root) *os.File { return nil }

func (v *Volume) fastOpen(r string, flag int) (*os.File, bool) { return nil, false }

func (v *Volume) fastOpenOrMissing(r string, flag int) (*os.File, error, bool) {
	return nil, nil, false
}

func (d *Dir) fastOpen(name string, flag int) (*os.File, bool) { return nil, false }

//go:build !(linux || darwin || freebsd || dragonfly)

package store

import "errors"

// statfs is not implemented here: free space is unknown, so the df=
// reserve is not checked and a full disk is reported without a figure.
func statfs(path string) (avail, total uint64, err error) {
	return 0, 0, errors.ErrUnsupported
}

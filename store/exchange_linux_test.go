package store

import "golang.org/x/sys/unix"

// canExchange says whether exchange works here.
const canExchange = true

// exchange swaps the names a and b atomically (renameat2 RENAME_EXCHANGE).
func exchange(a, b string) error {
	return unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE)
}

//go:build linux || darwin || freebsd || dragonfly

package store

import "golang.org/x/sys/unix"

// statfs returns the bytes available to an unprivileged user and the
// size of the file system holding path. (The field types differ between
// systems, hence the conversions.)
func statfs(path string) (avail, total uint64, err error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return 0, 0, err
	}
	bs := uint64(st.Bsize)
	return uint64(st.Bavail) * bs, uint64(st.Blocks) * bs, nil
}

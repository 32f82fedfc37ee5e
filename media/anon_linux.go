package media

import (
	"os"

	"golang.org/x/sys/unix"
)

// anonFile is a file in memory with no name (memfd): sparse, seekable,
// gone with its last descriptor.
func anonFile() (*os.File, error) {
	fd, err := unix.MemfdCreate("hoard-probe", unix.MFD_CLOEXEC)
	if err != nil {
		return anonTemp()
	}
	return os.NewFile(uintptr(fd), "memfd:hoard-probe"), nil
}

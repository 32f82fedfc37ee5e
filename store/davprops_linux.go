package store

import (
	"errors"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// Extended attributes through an open descriptor.

func fgetxattr(f *os.File, name string, buf []byte) (int, error) {
	return unix.Fgetxattr(int(f.Fd()), name, buf)
}

func fsetxattr(f *os.File, name string, b []byte) error {
	return unix.Fsetxattr(int(f.Fd()), name, b, 0)
}

func fremovexattr(f *os.File, name string) error {
	return unix.Fremovexattr(int(f.Fd()), name)
}

// isNoAttr reports the error of a file without the attribute.
func isNoAttr(err error) bool { return errors.Is(err, unix.ENODATA) }

// procFDPath is the folder dir named through its descriptor
// ("/proc/self/fd/<n>/"), under which a member's name reaches the member
// of that very folder (however it was renamed or replaced meanwhile).
func procFDPath(dir *os.File) string {
	return procSelfFD + strconv.FormatUint(uint64(dir.Fd()), 10) + "/"
}

// procSelfFD is where the process' descriptors are named (a test points
// it elsewhere to see the fall back).
var procSelfFD = "/proc/self/fd/"

// lgetxattrPath reads the attribute name of the file at p itself (a last
// component that is a link is not followed).
func lgetxattrPath(p, name string, buf []byte) (int, error) {
	return unix.Lgetxattr(p, name, buf)
}

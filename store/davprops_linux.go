package store

import (
	"errors"
	"os"

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

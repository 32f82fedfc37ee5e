//go:build !linux

package store

import (
	"os"

	"golang.org/x/sys/unix"
)

// Elsewhere dead properties are not kept: no extended attributes.

func fgetxattr(*os.File, string, []byte) (int, error) { return 0, unix.ENOTSUP }

func fsetxattr(*os.File, string, []byte) error { return unix.ENOTSUP }

func fremovexattr(*os.File, string) error { return unix.ENOTSUP }

func isNoAttr(error) bool { return false }

// procFDPath: no /proc here; dead properties are read by opening (and
// are none).
func procFDPath(*os.File) string { return "" }

func lgetxattrPath(string, string, []byte) (int, error) { return 0, unix.ENOTSUP }

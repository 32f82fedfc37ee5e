//go:build !linux

package media

import "os"

func anonFile() (*os.File, error) { return anonTemp() }

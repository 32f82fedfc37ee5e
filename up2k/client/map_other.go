//go:build !linux

package client

import (
	"context"
	"errors"
	"os"
)

// Files are hashed by reads here: mappings are Linux-only (map_linux.go).
const (
	canMap = false
	mapMin = 0
)

var (
	mapWindow int64
	errNoMap  = errors.New("the file cannot be hashed from a mapping")
)

func (h *hasher) hashMapped(ctx context.Context, f *os.File, size, cs int64) ([]string, error) {
	return nil, errNoMap
}

//go:build !linux

package client

import (
	"context"
	"os"
)

const (
	canMap = false
	mapMin = 0
)

var (
	mapWindow int64
	errNoMap  error
)

func (h *hasher) hashMapped(ctx context.Context, f *os.File, size, cs int64) ([]string, error) {
	return nil, errNoMap
}

//go:build !linux

package store

import "sync/atomic"

// Only Linux takes the fast open (fastopen_linux.go); the shared tests
// read these counters, which stay zero and false elsewhere.
var (
	fastOpens atomic.Int64
	noOpenat2 atomic.Bool
)

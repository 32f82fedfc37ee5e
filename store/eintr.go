package store

import (
	"errors"
	"syscall"
)

// retryEINTR calls fn again while it is interrupted by a signal.
func retryEINTR(fn func() error) error {
	for {
		err := fn()
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}

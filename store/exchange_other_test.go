//go:build !linux

package store

import "errors"

// canExchange: no atomic exchange of two names outside Linux here.
const canExchange = false

func exchange(a, b string) error { return errors.ErrUnsupported }

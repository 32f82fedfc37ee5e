//go:build !linux

package main

import "net"

// recvLowat is nil where SO_RCVLOWAT does not hold back poll's
// readiness the way Linux's does: bodies are read as they come.
var recvLowat func(c net.Conn, n int) error

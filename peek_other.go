//go:build !unix

package main

import "net"

// peekFirst reads a connection's first byte and returns a connection that
// replays it.
func peekFirst(c net.Conn) (byte, net.Conn, error) { return peekFirstRead(c) }

func isTransientAccept(error) bool { return false }

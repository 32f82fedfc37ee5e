package main

import (
	"errors"
	"net"

	"golang.org/x/sys/unix"
)

// recvLowat sets SO_RCVLOWAT on c's socket (http.Config.RecvLowat): on
// Linux a TCP socket then reports readable, and wakes its reader, only
// once n bytes are queued (or its receive window is nearly full).
func recvLowat(c net.Conn, n int) error {
	tc, ok := c.(*net.TCPConn) // not TLS: its records are not the body's bytes
	if !ok {
		return errors.ErrUnsupported
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := raw.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVLOWAT, n)
	}); err != nil {
		return err
	}
	return serr
}

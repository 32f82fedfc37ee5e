//go:build unix

package main

import (
	"errors"
	"io"
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// peekFirst returns a connection's first byte without taking it off the
// socket (MSG_PEEK), so the connection goes on unwrapped; it waits at most
// until the connection's read deadline. Connections that are not sockets
// get their byte read and replayed.
func peekFirst(c net.Conn) (byte, net.Conn, error) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return peekFirstRead(c)
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return peekFirstRead(c)
	}
	var b [1]byte
	var n int
	var perr error
	err = raw.Read(func(fd uintptr) bool {
		for {
			n, _, perr = unix.Recvfrom(int(fd), b[:], unix.MSG_PEEK)
			if perr != unix.EINTR {
				break
			}
		}
		return perr != unix.EAGAIN // not yet readable: wait (honours the deadline)
	})
	switch {
	case err != nil:
		return 0, c, err
	case perr != nil:
		return 0, c, perr
	case n == 0:
		return 0, c, io.EOF
	}
	return b[0], c, nil
}

// isTransientAccept reports an accept error that passes: out of file
// descriptors or memory.
func isTransientAccept(err error) bool {
	return errors.Is(err, unix.EMFILE) || errors.Is(err, unix.ENFILE) || errors.Is(err, unix.ENOBUFS) || errors.Is(err, unix.ENOMEM) || errors.Is(err, unix.ECONNABORTED)
}

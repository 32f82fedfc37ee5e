package store

import (
	"context"
	"errors"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// notifier is an inotify descriptor watching one open file.
type notifier struct {
	fd  int
	buf []byte
}

// newNotifier watches f by its /proc/self/fd path, so the watch is on
// the inode the volume's root opened, not on whatever its name points to
// now. It is nil when inotify is not available (no kernel support, or
// the per-user watch limit reached); the Watch then polls.
func newNotifier(f *os.File) *notifier {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return nil
	}
	const mask = unix.IN_MODIFY | unix.IN_ATTRIB | unix.IN_CLOSE_WRITE | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF
	if _, err := unix.InotifyAddWatch(fd, "/proc/self/fd/"+strconv.Itoa(int(f.Fd())), mask); err != nil {
		unix.Close(fd)
		return nil
	}
	return &notifier{fd: fd, buf: make([]byte, 4096)}
}

// wait returns (true, ·) on events, (false, true) after every without
// one, and ok false when ctx ended.
func (n *notifier) wait(ctx context.Context, every time.Duration) (changed, ok bool) {
	for {
		if ctx.Err() != nil {
			return false, false
		}
		fds := []unix.PollFd{{Fd: int32(n.fd), Events: unix.POLLIN}}
		k, err := unix.Poll(fds, int(every/time.Millisecond))
		if err != nil && !errors.Is(err, unix.EINTR) {
			return false, ctx.Err() == nil
		}
		if k > 0 {
			for {
				if _, err := unix.Read(n.fd, n.buf); err != nil {
					break // EAGAIN: drained
				}
			}
			return true, ctx.Err() == nil
		}
		if k == 0 {
			return false, ctx.Err() == nil // periodic wake: re-read and re-check
		}
	}
}

func (n *notifier) close() { unix.Close(n.fd) }

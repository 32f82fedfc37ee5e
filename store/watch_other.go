//go:build !linux

package store

import (
	"context"
	"os"
	"time"
)

// notifier would be the system's change notification; here there is
// none (kqueue's EVFILT_VNODE could be one on the BSDs and macOS), so
// newNotifier returns nil and every Watch polls.
type notifier struct{}

func newNotifier(f *os.File) *notifier { return nil }

func (n *notifier) wait(ctx context.Context, every time.Duration) (changed, ok bool) {
	return false, ctx.Err() == nil
}

func (n *notifier) close() {}

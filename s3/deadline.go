package s3

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"hoard/store"
)

// Deadlines. Every request to the store runs under a context derived from
// the HTTP request's (so a client gone cancels it) and capped, so that a
// store that accepts a connection and never answers (a hung or stopped
// process, a half-dead proxy, a lost packet on a kept-alive connection)
// costs a request at most the cap, then answers 503 + Retry-After —
// never a request (and whoever waits on it) held for ever. Uploads that
// go on without their request's cancellation (context.WithoutCancel, so
// that a client half-closing its connection still gets its publish) keep
// the cap: it is set below that.
//
// Two kinds of cap:
//   - call: a request without a streamed body (stat, delete, a part
//     copied server-side, a completion) gets Bucket.cap plus the time its
//     bytes take at minRate (a server-side copy of 5 GiB answers only when
//     copied).
//   - watch: a request whose body or answer streams (a PUT of a client's
//     body, a GET read by a slow client, a listing read page by page)
//     gets a deadline that moves: it is cancelled only when the store made
//     no progress for Bucket.cap. The clock runs only while hoard waits on
//     the store — not while it waits on its own client for the body, nor
//     while the GET's reader is not being read — so a slow client is never
//     taken for a slow store.

// minRate is the slowest a server-side copy may go before its call is
// taken for hung (bytes per second).
const minRate = 8 << 20

// errSlow is the cause of a request cancelled by its cap.
var errSlow = errors.New("the object store did not answer in time")

// call returns ctx capped for one request that moves n bytes inside the
// store (0: none).
func (b *Bucket) call(ctx context.Context, n int64) (context.Context, context.CancelFunc) {
	return context.WithTimeoutCause(ctx, b.cap+time.Duration(n/minRate)*time.Second, errSlow)
}

// mapCtx is mapErr knowing the request's context: a request cancelled by
// its cap is the store down (503), not the client's cancellation.
func mapCtx(ctx context.Context, err error) error {
	if err != nil && errors.Is(context.Cause(ctx), errSlow) {
		return fmt.Errorf("%w: %w", store.ErrObjectStoreDown, errSlow)
	}
	return mapErr(err)
}

// watch is a moving deadline (above): wait starts its clock, done stops
// it; when the clock reaches the cap the context is cancelled with
// errSlow.
type watch struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	cap    time.Duration
	mu     sync.Mutex
	t      *time.Timer
	ended  bool
}

// watched returns a watch over ctx, its clock stopped. end releases it.
func (b *Bucket) watched(ctx context.Context) *watch {
	w := &watch{cap: b.cap}
	w.ctx, w.cancel = context.WithCancelCause(ctx)
	w.t = time.AfterFunc(time.Hour, func() { w.cancel(errSlow) })
	w.t.Stop()
	return w
}

// wait starts the clock: hoard waits on the store from now.
func (w *watch) wait() {
	w.mu.Lock()
	if !w.ended {
		w.t.Reset(w.cap)
	}
	w.mu.Unlock()
}

// done stops the clock: the store answered (or hoard waits on something
// else).
func (w *watch) done() {
	w.mu.Lock()
	w.t.Stop()
	w.mu.Unlock()
}

// end releases the watch and cancels its context.
func (w *watch) end() {
	w.mu.Lock()
	w.ended = true
	w.t.Stop()
	w.mu.Unlock()
	w.cancel(context.Canceled)
}

// body wraps a request's body for a watched call: the clock stops while
// the body is read (hoard waits on its client) and runs again after (the
// store has the bytes to take, then its answer to give).
func (w *watch) body(r io.Reader) io.Reader { return &watchedBody{r: r, w: w} }

type watchedBody struct {
	r io.Reader
	w *watch
}

func (b *watchedBody) Read(p []byte) (int, error) {
	b.w.done()
	n, err := b.r.Read(p)
	b.w.wait()
	return n, err
}

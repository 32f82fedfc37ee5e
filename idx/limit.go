package idx

import (
	"fmt"
	"hoard/store"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

func prefixOpts(prefix []byte) pebble.IterOptions {
	return pebble.IterOptions{LowerBound: prefix, UpperBound: prefixEnd(prefix)}
}

// Limiter is the search rate limit, per client address: a query slower
// than the threshold (0.7 s) earns a penalty of the same length, and a
// query from that address inside the penalty is refused.
type Limiter struct {
	slow time.Duration
	mu   sync.Mutex
	last map[string]penalty
}

type penalty struct {
	end  time.Time     // when the slow query ended
	cost time.Duration // how long it took
}

// RateError is a refused query; its text is copyparty's.
type RateError struct {
	Penalty, Cost, Idle time.Duration
}

func (e *RateError) Error() string {
	return fmt.Sprintf("rate-limit %.1f sec, cost %.2f, idle %.2f", e.Penalty.Seconds(), e.Cost.Seconds(), e.Idle.Seconds())
}

// Class is store.KindRateLimited.
func (e *RateError) Class() (store.Kind, string) { return store.KindRateLimited, e.Error() }

// NewLimiter makes a limiter with the given threshold (0: 0.7 s).
func NewLimiter(slow time.Duration) *Limiter {
	if slow <= 0 {
		slow = 700 * time.Millisecond
	}
	return &Limiter{slow: slow, last: map[string]penalty{}}
}

// penaltyDur is the spec's penalty.
const penaltyDur = 700 * time.Millisecond

// Allow refuses a query from addr (counted under its store.ClientKey, so
// an IPv6 client's /64 is one client) inside its penalty.
func (l *Limiter) Allow(addr string, now time.Time) error {
	addr = store.ClientKey(addr)
	l.mu.Lock()
	defer l.mu.Unlock()
	p, ok := l.last[addr]
	if !ok {
		return nil
	}
	if idle := now.Sub(p.end); idle < penaltyDur {
		return &RateError{Penalty: penaltyDur, Cost: p.cost, Idle: idle}
	}
	delete(l.last, addr)
	return nil
}

// Done records a finished query's cost.
func (l *Limiter) Done(addr string, cost time.Duration, now time.Time) {
	if cost <= l.slow {
		return
	}
	addr = store.ClientKey(addr)
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.last) > 4096 {
		for a, p := range l.last {
			if now.Sub(p.end) >= penaltyDur {
				delete(l.last, a)
			}
		}
	}
	l.last[addr] = penalty{end: now, cost: cost}
}

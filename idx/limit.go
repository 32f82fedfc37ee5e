package idx

import (
	"fmt"
	"hoard/store"
	"runtime"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

func prefixOpts(prefix []byte) pebble.IterOptions {
	return pebble.IterOptions{LowerBound: prefix, UpperBound: prefixEnd(prefix)}
}

// Limiter is the search rate limit, per client address: a query slower
// than the threshold (0.7 s) earns a penalty of the same length, and a
// query from that address inside the penalty is refused. A penalty is
// only known once a query ends, so a client also runs one query at a time
// (else it could start many slow ones at once, none yet penalised), and
// at most Max run at once in all.
type Limiter struct {
	slow time.Duration
	// Max is how many queries may run at once, all clients together
	// (more are refused as unavailable); NewLimiter sets the number of
	// cores, at least 4.
	Max     int
	mu      sync.Mutex
	last    map[string]penalty
	running map[string]int // queries under way, per client
	total   int            // queries under way
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
	return &Limiter{slow: slow, Max: max(4, runtime.NumCPU()), last: map[string]penalty{}, running: map[string]int{}}
}

// penaltyDur is the spec's penalty.
const penaltyDur = 700 * time.Millisecond

// Allow refuses a query from addr (counted under its store.ClientKey, so
// an IPv6 client's /64 is one client) inside its penalty, while another
// query of addr runs, or while Max queries run. A query allowed must be
// followed by Done.
func (l *Limiter) Allow(addr string, now time.Time) error {
	addr = store.ClientKey(addr)
	l.mu.Lock()
	defer l.mu.Unlock()
	if p, ok := l.last[addr]; ok {
		if idle := now.Sub(p.end); idle < penaltyDur {
			return &RateError{Penalty: penaltyDur, Cost: p.cost, Idle: idle}
		}
		delete(l.last, addr)
	}
	if l.running[addr] > 0 {
		return &store.Error{Kind: store.KindRateLimited, Msg: "one search at a time: your last one is still running", RetryAfter: time.Second}
	}
	if l.total >= l.Max {
		return &store.Error{Kind: store.KindUnavailable, Msg: fmt.Sprintf("the server is running %d searches already; retry shortly", l.total), RetryAfter: 2 * time.Second}
	}
	l.running[addr]++
	l.total++
	return nil
}

// Done records the end of a query Allow let through, and its cost.
func (l *Limiter) Done(addr string, cost time.Duration, now time.Time) {
	addr = store.ClientKey(addr)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.running[addr] > 0 {
		if l.running[addr]--; l.running[addr] == 0 {
			delete(l.running, addr)
		}
		l.total--
	}
	if cost <= l.slow {
		return
	}
	if len(l.last) > 4096 {
		for a, p := range l.last {
			if now.Sub(p.end) >= penaltyDur {
				delete(l.last, a)
			}
		}
	}
	l.last[addr] = penalty{end: now, cost: cost}
}

package http

import (
	"fmt"
	"testing"
	"time"
)

// testDigest stands for store.Store.PasswordKey.
func testDigest(pw string) (k [32]byte) {
	copy(k[:], pw)
	return k
}

// TestFailTrackerIPv6Prefix: the addresses of one IPv6 /64 are one client,
// so taking a fresh address for every guess earns no free tries.
func TestFailTrackerIPv6Prefix(t *testing.T) {
	f := newFailTracker(testDigest)
	var d time.Duration
	for i := range failFree + 2 {
		d = f.add(fmt.Sprintf("2001:db8:1:2::%x", i+1))
	}
	if d != 2*failStep {
		t.Errorf("after %d failures from one /64 the wait is %v, want %v", failFree+2, d, 2*failStep)
	}
	if d := f.add("2001:db8:1:3::1"); d != 0 {
		t.Errorf("another /64's first failure waits %v, want 0", d)
	}
	for range failFree + 1 {
		d = f.add("::ffff:192.0.2.7")
	}
	if d != failStep {
		t.Errorf("IPv4-mapped: wait %v after %d failures, want %v", d, failFree+1, failStep)
	}
}

// TestFailTrackerFullKeepsPenalties: filling the table from many addresses
// must not wipe the penalties of those already slowed down; while it is
// full of them, a new address waits the longest penalty.
func TestFailTrackerFullKeepsPenalties(t *testing.T) {
	f := newFailTracker(testDigest)
	f.limit = 64
	for i := range f.limit {
		for range failFree + 1 {
			f.add(fmt.Sprintf("198.51.100.%d", i))
		}
	}
	if d := f.add("203.0.113.1"); d != failMax {
		t.Errorf("a new address while the table is full of slowed clients waits %v, want %v", d, failMax)
	}
	if d := f.add("198.51.100.0"); d != 2*failStep {
		t.Errorf("a remembered client's next failure waits %v, want %v (its count was kept)", d, 2*failStep)
	}
	// Clients not slowed down yet make room.
	g := newFailTracker(testDigest)
	g.limit = 4
	for i := range g.limit {
		g.add(fmt.Sprintf("192.0.2.%d", i))
	}
	if d := g.add("192.0.2.200"); d != 0 {
		t.Errorf("a new address while the table holds only unslowed clients waits %v, want 0", d)
	}
	if len(g.byIP) > g.limit {
		t.Errorf("table holds %d addresses, limit %d", len(g.byIP), g.limit)
	}
}

// TestFailTrackerTurns: once an address has used its free failures, its
// passwords are tried one turn at a time, each a penalty after the last
// (so sending many at once gains nothing); a password that worked from it
// takes no turn; a turn too far away is refused.
func TestFailTrackerTurns(t *testing.T) {
	f := newFailTracker(testDigest)
	ip := "192.0.2.9"
	for range failFree {
		if d, ok := f.turn(ip, []string{"guess"}); d != 0 || !ok {
			t.Fatalf("a free try waits %v (ok %v), want none", d, ok)
		}
		f.add(ip)
	}
	// Three tries at once: 0, then one penalty (the 4th failure's), then
	// two of them.
	var waits []time.Duration
	for range 3 {
		d, ok := f.turn(ip, []string{"guess"})
		if !ok {
			t.Fatal("refused a near turn")
		}
		waits = append(waits, d)
	}
	if waits[0] > 10*time.Millisecond || waits[1] < failStep-10*time.Millisecond || waits[2] < 2*failStep-20*time.Millisecond {
		t.Errorf("turns of three tries at once: %v, want about 0, %v, %v", waits, failStep, 2*failStep)
	}
	f.worked(ip, "right")
	if d, ok := f.turn(ip, []string{"guess", "right"}); d != 0 || !ok {
		t.Errorf("a password that worked from the address waits %v (ok %v), want none", d, ok)
	}
	if d, ok := f.turn("192.0.2.10", []string{"x"}); d != 0 || !ok {
		t.Errorf("another address waits %v (ok %v)", d, ok)
	}
	for range int(failQueue/failStep) + 1 {
		if _, ok := f.turn(ip, []string{"guess"}); !ok {
			return // refused once the queue is full
		}
	}
	t.Errorf("turns were handed out past failQueue (%v)", failQueue)
}

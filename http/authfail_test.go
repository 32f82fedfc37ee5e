package http

import (
	"fmt"
	"testing"
	"time"
)

// TestFailTrackerIPv6Prefix: the addresses of one IPv6 /64 are one client,
// so taking a fresh address for every guess earns no free tries.
func TestFailTrackerIPv6Prefix(t *testing.T) {
	f := newFailTracker()
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
	f := newFailTracker()
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
	g := newFailTracker()
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

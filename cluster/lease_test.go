package cluster

import (
	"testing"
	"time"
)

// LOCK-14: the leader's lease on granting runs only while both of its
// clocks say so. The monotonic clock stops while a machine is suspended:
// a wall clock gone past the lease's end ends it, whatever the monotonic
// one says, and the other way round.
func TestLeaseRunsOnBothClocks_LOCK14(t *testing.T) {
	n := &Node{born: time.Now(), cfg: Config{ElectionTimeout: 300 * time.Millisecond}}
	if n.leaseHeld() {
		t.Fatal("a lease never confirmed runs")
	}
	n.extendLease(n.leaseNow())
	if !n.leaseHeld() {
		t.Fatal("a lease confirmed just now does not run")
	}
	mono := n.leaseUntil.Load()
	n.leaseUntilWall.Store(time.Now().UnixNano() - 1) // as after a suspend
	if n.leaseHeld() {
		t.Fatal("the lease runs with the wall clock past its end")
	}
	n.extendLease(n.leaseNow())
	if !n.leaseHeld() {
		t.Fatal("a new confirmation does not extend the lease")
	}
	n.leaseUntil.Store(int64(time.Since(n.born)) - 1)
	if n.leaseHeld() {
		t.Fatal("the lease runs with the monotonic clock past its end")
	}
	// Never moved back: an older confirmation leaves a later end alone.
	n.extendLease(n.leaseNow())
	end := n.leaseUntil.Load()
	n.extendLease(leaseStamp{mono: time.Duration(mono) - time.Second, wall: time.Now().Add(-time.Second).UnixNano()})
	if n.leaseUntil.Load() != end {
		t.Fatal("an older confirmation moved the lease's end back")
	}
}

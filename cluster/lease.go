package cluster

import (
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
)

// The leader's own lease on granting (LOCK-14). Raft steps a leader down
// within 2×LeaderLeaseTimeout of losing its majority, but only once its
// timers run: a leader frozen past the election timeout (SIGSTOP, a
// paused VM, a long stall) resumes still believing it leads, and would
// grant in its old epoch for the moments before Raft notices, while a new
// leader already grants in a newer one (the torture harness's stop-leader
// saw it, as fences out of grant order). So the lock module is ready only
// while a majority confirmed this node's leadership within the last
// LeaderLeaseTimeout, timed from before the confirmation was asked: no
// follower stands for election sooner than an election timeout after it
// last heard the leader, which is longer.
//
// The lease is timed on two clocks and runs only while both say so: the
// monotonic clock, which no one sets, and the wall clock, which goes on
// while the machine is suspended (the monotonic one stops: a leader
// suspended inside its lease would wake to a lease that seems to run).
//
// What confirms it: while it runs, VerifyLeader, a round of heartbeats.
// Once it has lapsed, only an entry appended after the asking and
// committed (a Barrier): VerifyLeader counts any success reply it reads
// after it was asked, and a leader thawed from a freeze may find in its
// sockets replies to requests it sent before the freeze, from followers
// that have since elected another leader. A committed entry needs a
// majority to have taken it in this term. (The epoch entry's commit is
// such a confirmation too.) While the lease runs the leader has run
// without a gap longer than the lease, and a reply older than that could
// not have let a newer leader be elected meanwhile.

// leaseEvery is how often the leader confirms its leadership, as a
// fraction of LeaderLeaseTimeout.
const leaseEvery = 4

// leaseTimeout is Raft's LeaderLeaseTimeout for an election timeout.
func leaseTimeout(election time.Duration) time.Duration { return election * 2 / 5 }

// leaseStamp is a moment on both of the lease's clocks.
type leaseStamp struct {
	mono time.Duration // since the node's birth
	wall int64         // Unix ns
}

// leaseNow is now on both clocks.
func (n *Node) leaseNow() leaseStamp {
	now := time.Now()
	return leaseStamp{mono: now.Sub(n.born), wall: now.UnixNano()}
}

// confirmLease asks a majority whether this node still leads and, if so,
// extends the lease from the moment it asked.
func (n *Node) confirmLease() {
	if n.raft.State() != raft.Leader || n.confirmHeld.Load() {
		return
	}
	asked := n.leaseNow()
	var err error
	if n.leaseHeld() {
		err = n.raft.VerifyLeader().Error()
	} else {
		err = n.raft.Barrier(applyTimeout).Error()
	}
	if err == nil {
		n.extendLease(asked)
	}
}

// extendLease moves the lease's end to LeaderLeaseTimeout after asked,
// never back.
func (n *Node) extendLease(asked leaseStamp) {
	d := leaseTimeout(n.cfg.ElectionTimeout)
	raiseTo(&n.leaseUntil, int64(asked.mono+d))
	raiseTo(&n.leaseUntilWall, asked.wall+int64(d))
}

// raiseTo moves v up to until, never back.
func raiseTo(v *atomic.Int64, until int64) {
	for {
		cur := v.Load()
		if cur >= until || v.CompareAndSwap(cur, until) {
			return
		}
	}
}

// leaseHeld says whether the lease runs now, on both clocks.
func (n *Node) leaseHeld() bool {
	now := n.leaseNow()
	return int64(now.mono) < n.leaseUntil.Load() && now.wall < n.leaseUntilWall.Load()
}

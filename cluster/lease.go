package cluster

import (
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
// LeaderLeaseTimeout, timed on this process's monotonic clock from before
// the confirmation was asked: no follower stands for election sooner
// than an election timeout after it last heard the leader, which is
// longer.

// leaseEvery is how often the leader confirms its leadership, as a
// fraction of LeaderLeaseTimeout.
const leaseEvery = 4

// leaseTimeout is Raft's LeaderLeaseTimeout for an election timeout.
func leaseTimeout(election time.Duration) time.Duration { return election * 2 / 5 }

// confirmLease asks a majority whether this node still leads and, if so,
// extends the lease from the moment it asked.
func (n *Node) confirmLease() {
	if n.raft.State() != raft.Leader {
		return
	}
	asked := time.Since(n.born)
	if n.raft.VerifyLeader().Error() == nil {
		n.extendLease(asked)
	}
}

// extendLease moves the lease's end to LeaderLeaseTimeout after asked (a
// time since n.born), never back.
func (n *Node) extendLease(asked time.Duration) {
	until := int64(asked + leaseTimeout(n.cfg.ElectionTimeout))
	for {
		cur := n.leaseUntil.Load()
		if cur >= until || n.leaseUntil.CompareAndSwap(cur, until) {
			return
		}
	}
}

// leaseHeld says whether the lease runs now.
func (n *Node) leaseHeld() bool { return int64(time.Since(n.born)) < n.leaseUntil.Load() }

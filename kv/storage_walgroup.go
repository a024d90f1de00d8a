package kv

import (
	"sync"
	"sync/atomic"
	"time"
)

// Group commit: the writers that settle at about the same time share one
// WAL sync, and with --fsync always one fsync (see Store.settle).
//
// Pebble groups the syncs asked for while one runs, but that alone splits
// a steady set of clients into halves that take turns: the writers whose
// sync just ended get their replies and send their next commands while the
// others' sync, started the moment the last one ended, is already under
// way; so each fsync covers half of them, and each write waits for one and
// a half. Redis's event loop has no such halves, as it fsyncs once at the
// end of each turn for everything the turn read.
//
// So the writer that syncs for the others (the leader) first waits, for
// at most half as long as the last sync took, until as many writers have
// joined its round as were in the last one: the writers the last sync
// answered are coming back. A lone writer has a round of one and never
// waits; nor does anyone where a sync is no fsync (everysec and no, whose
// syncs are a write(2)), or one too quick to be worth a timer: gathering
// pays only where a sync is dear.
//
// The rounds' count and the writers they answered are INFO's wal_syncs
// and wal_sync_writers.

// walGroup is the state of the rounds: at most one leader at a time.
type walGroup struct {
	mu      sync.Mutex
	round   *walRound     // the round writers join; nil when no leader
	last    int           // writers in the last round, its leader included
	took    time.Duration // how long the last round's sync took
	gathers *time.Timer   // the leader's bound on gathering, reused
	// longest bounds a leader's gathering; 0 means maxGather (tests
	// raise it).
	longest time.Duration
	// syncs counts the rounds' syncs, and writers the writers they
	// answered (INFO's wal_syncs and wal_sync_writers).
	syncs, writers atomic.Int64
}

// walRound is one leader's sync and the writers waiting on it.
type walRound struct {
	joined int           // writers in the round, its leader included
	want   int           // the leader syncs once joined reaches it (0: at once)
	full   chan struct{} // closed when joined reaches want
	done   chan struct{} // closed when the round's sync has ended
}

// minGather is the shortest gathering worth a timer: a bound shorter than
// it is not waited for (the runtime's timers are coarser than that when
// the process is idle).
const minGather = 50 * time.Microsecond

// maxGather bounds a leader's gathering whatever its last sync took.
const maxGather = 2 * time.Millisecond

// syncShared returns once a WAL sync that began after the caller's commit
// (counted in unsynced before mine) has ended: the caller's own, as the
// round's leader, or another leader's whose round it joined. The error is
// the caller's own sync's; a writer whose leader's sync failed leads the
// next round and so learns the failure itself.
func (s *Store) syncShared(mine int64) error {
	g := &s.walGroup
	for s.unsettled.syncedTo.Load() < mine {
		g.mu.Lock()
		if s.unsettled.syncedTo.Load() >= mine {
			g.mu.Unlock()
			return nil
		}
		if r := g.round; r != nil {
			r.joined++
			if r.joined == r.want {
				close(r.full)
			}
			g.mu.Unlock()
			<-r.done
			continue
		}
		if err := s.leadSync(g); err != nil {
			return err
		}
	}
	return nil
}

// leadSync opens a round, gathers the writers expected back for it, makes
// its sync and ends it. It is called with g.mu held and returns with it
// released.
func (s *Store) leadSync(g *walGroup) error {
	r := &walRound{joined: 1, done: make(chan struct{})}
	g.round = r
	longest := g.longest
	if longest == 0 {
		longest = maxGather
	}
	gather := min(g.took/2, longest)
	if g.last > 1 && gather >= minGather && s.fsync.syncIsFsync() {
		r.want, r.full = g.last, make(chan struct{})
		if g.gathers == nil {
			g.gathers = time.NewTimer(gather)
		} else {
			g.gathers.Reset(gather)
		}
		g.mu.Unlock()
		select {
		case <-r.full:
		case <-g.gathers.C:
		}
		g.gathers.Stop()
	} else {
		g.mu.Unlock()
	}

	start := time.Now()
	err := s.syncWAL()
	took := time.Since(start)

	g.mu.Lock()
	g.round, g.last, g.took = nil, r.joined, took
	g.mu.Unlock()
	g.syncs.Add(1)
	g.writers.Add(int64(r.joined))
	close(r.done)
	return err
}

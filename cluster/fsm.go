package cluster

import (
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/raft"

	"github.com/tenure-db/tenure/kv"
)

// fsm applies the log to the local keyspace. Raft calls Apply, Snapshot
// and Restore from one goroutine, in log order.
//
// Raft is run with NoSnapshotRestoreOnStart: the keyspace on disk is the
// state, with the index of the last entry it holds recorded in the same
// batch as that entry's effect, so at a restart Raft hands back the
// entries after its last snapshot and the fsm skips those the keyspace
// already has. Nothing is applied twice. Snapshot syncs the keyspace
// first, so that no entry a snapshot covers (and the log may then drop)
// is only in memory.
type fsm struct {
	store *kv.Store
	app   Applier // applies the commands entries (Node.Start)
	// skipTo is the applied index the keyspace had when the node started.
	skipTo uint64

	applied atomic.Uint64 // the last index applied
	applies atomic.Int64  // entries applied since the start, skipped ones not counted

	mu      sync.Mutex
	advance chan struct{} // closed and renewed at each apply
}

func newFSM(store *kv.Store) (*fsm, error) {
	idx, err := store.AppliedIndex()
	if err != nil {
		return nil, err
	}
	f := &fsm{store: store, skipTo: idx, advance: make(chan struct{})}
	f.applied.Store(idx)
	return f, nil
}

// epochApplied is an epoch entry's result.
type epochApplied struct{ epoch uint64 }

func (f *fsm) Apply(l *raft.Log) any {
	if l.Type != raft.LogCommand || l.Index <= f.skipTo {
		return nil
	}
	defer f.done(l.Index)
	e, err := decodeEntry(l.Data)
	if err != nil {
		return fmt.Errorf("entry %d: %w", l.Index, err)
	}
	f.applies.Add(1)
	switch e.kind {
	case kindEpoch:
		epoch, err := f.store.ApplyAt(l.Index, e.nowMs, true, nil)
		if err != nil {
			return err
		}
		return epochApplied{epoch}
	case kindSweep:
		n, err := f.store.SweepAt(l.Index, e.nowMs, e.limit)
		if err != nil {
			return err
		}
		return n
	}
	r, err := f.app.Apply(l.Index, e.cmd)
	if err != nil {
		return err
	}
	return r
}

// done marks index applied and wakes those waiting on it.
func (f *fsm) done(index uint64) {
	f.applied.Store(index)
	f.mu.Lock()
	close(f.advance)
	f.advance = make(chan struct{})
	f.mu.Unlock()
}

// changed is closed at the next apply.
func (f *fsm) changed() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.advance
}

func (f *fsm) Snapshot() (raft.FSMSnapshot, error) {
	if err := f.store.Sync(); err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	snap, err := f.store.Snapshot()
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	return fsmSnapshot{snap}, nil
}

// Restore replaces the keyspace with a snapshot the leader sent.
func (f *fsm) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	if err := f.store.Restore(rc); err != nil {
		return err
	}
	idx, err := f.store.AppliedIndex()
	if err != nil {
		return err
	}
	f.skipTo = idx
	f.done(idx)
	return nil
}

type fsmSnapshot struct{ snap *kv.Snapshot }

func (s fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	if _, err := s.snap.WriteTo(sink); err != nil {
		sink.Cancel()
		return err
	}
	return sink.Close()
}

func (s fsmSnapshot) Release() { s.snap.Close() }

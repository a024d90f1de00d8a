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

var _ raft.BatchingFSM = (*fsm)(nil)

// Apply applies one entry (Raft calls ApplyBatch instead).
func (f *fsm) Apply(l *raft.Log) any { return f.ApplyBatch([]*raft.Log{l})[0] }

// ApplyBatch applies the entries Raft committed together, in log order,
// and settles the keyspace once for all of them (kv.Store.Settle): the
// proposals of every connection that Raft took in one turn (BatchApplyCh)
// share a WAL write here as they share the log's fsync. Raft releases the
// proposers' replies when it returns.
func (f *fsm) ApplyBatch(logs []*raft.Log) []any {
	out := make([]any, len(logs))
	var last uint64
	for i, l := range logs {
		if l.Type != raft.LogCommand || l.Index <= f.skipTo {
			continue
		}
		out[i] = f.apply(l)
		last = l.Index
	}
	if last == 0 {
		return out
	}
	if err := f.store.Settle(); err != nil {
		for i, r := range out {
			if _, failed := r.(error); !failed && logs[i].Index > f.skipTo && logs[i].Type == raft.LogCommand {
				out[i] = err
			}
		}
	}
	f.done(last)
	return out
}

// apply applies one commands, epoch or sweep entry, settled by the
// caller.
func (f *fsm) apply(l *raft.Log) any {
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
	case kindGroup:
		rs, err := f.app.Apply(l.Index, e.group)
		if err != nil {
			return err
		}
		return groupApplied(rs)
	}
	rs, err := f.app.Apply(l.Index, []Entry{e.cmd})
	if err != nil {
		return err
	}
	return rs[0]
}

// groupApplied is a group entry's result: one for each of its proposals.
type groupApplied []any

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

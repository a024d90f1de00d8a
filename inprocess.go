package tenure

import (
	"context"
	"errors"

	"github.com/tenure-db/tenure/internal/inprocess"
	"github.com/tenure-db/tenure/lockmod"
)

var _ inprocess.Holder = (*DB)(nil)

// HoldInProcess is how the Go SDK holds a key on a *DB (sdk/locks'
// OpenLock given a *DB uses it): a lease with no ttl and no renewal, in
// the line and under the fence counter that connections use (LOCK-13). Its
// types are internal to this module: it is the SDK's alone.
func (db *DB) HoldInProcess(ctx context.Context, req inprocess.HoldRequest) (inprocess.Lease, error) {
	if db.node != nil && !db.node.LocksReady() {
		return nil, ErrNotLeading
	}
	t := db.locks.Hold(lockmod.HoldRequest{
		Lock: req.Lock, Key: req.Key, ReqID: req.ReqID,
		TTL: req.TTL, MaxHold: req.MaxHold, Wait: req.Wait, HasWait: req.HasWait,
		Limit: req.Limit, Shared: req.Shared, Owner: req.Owner,
		InProcess: true,
	})
	select {
	case <-t.Done():
	case <-ctx.Done():
		t.Abandon() // the place lingers, as a closed connection's (SPEC §3)
		<-t.Done()
	}
	g, err := t.Result()
	switch {
	case err == nil && ctx.Err() != nil:
		// Granted as ctx ended: nobody will hold it.
		db.locks.Release(g.LeaseID())
		return nil, context.Cause(ctx)
	case errors.Is(err, lockmod.ErrAbandoned):
		return nil, context.Cause(ctx)
	case err != nil:
		return nil, inProcessError(err)
	case db.node != nil && !db.node.LocksReady():
		// Granted while this node's lease on leadership ran out (as
		// resp answers a connection's HOLD then, LOCK-14): a lease held
		// in process has no ttl to end it, so it is released here.
		db.locks.Release(g.LeaseID())
		return nil, ErrNotLeading
	}
	return heldLease{db: db, g: g}, nil
}

// heldLease is a Grant held in process, as the SDK sees it.
type heldLease struct {
	db *DB
	g  lockmod.Grant
}

func (l heldLease) Fence() int64           { return int64(l.g.Fence) }
func (l heldLease) Ended() <-chan struct{} { return l.g.Ending.Done() }
func (l heldLease) Err() error             { return inProcessError(l.g.Ending.Err()) }

func (l heldLease) Release() error {
	if err := l.db.locks.Release(l.g.LeaseID()); err != nil {
		return inProcessError(err)
	}
	return nil
}

// inProcessError is err in the SDK's terms.
func inProcessError(err error) error {
	var lost *lockmod.LostError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &lost):
		return &inprocess.LostError{Reason: lost.Reason}
	case errors.Is(err, lockmod.ErrNotGranted):
		return inprocess.ErrNotGranted
	case errors.Is(err, lockmod.ErrNoEpoch):
		// The node stopped leading: its leases ended with its epoch, as a
		// holder over a connection learns at its next renewal (SPEC §10).
		return &inprocess.LostError{Reason: lockmod.ReasonUnknownLease}
	case errors.Is(err, lockmod.ErrPaused):
		return ErrNotLeading
	case errors.Is(err, lockmod.ErrClosed):
		return ErrClosed
	}
	return err
}

// ErrNotLeading answers a hold in process on a cluster node that does not
// lead, or leads before its new epoch is applied (SPEC §10: only the
// leader grants).
var ErrNotLeading = errors.New("tenure: this node does not lead the cluster now")

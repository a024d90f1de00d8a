package locks

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/tenure-db/tenure/internal/inprocess"
)

// Holding a key on a store in this process (a *tenure.DB, SPEC §11): the
// same Hold, with nothing to renew. The store tells the holder the moment
// the lease ends (MAXHOLD, LOCK.REVOKE, the store's closing), and fn's
// context is cancelled then, with the reason, as over a connection
// (LOCK-13).

// holdInProcess is hold on a store in this process. Its checks are done.
func (l *Lock) holdInProcess(ctx context.Context, key string, fn func(context.Context, *Lease) error, try, shared bool) error {
	req := inprocess.HoldRequest{Lock: l.name, Key: key, ReqID: newReqID(), TTL: l.ttl, MaxHold: l.maxHold,
		Limit: l.limit, Shared: shared, Owner: l.owner}
	if l.hasWait && !try {
		req.Wait, req.HasWait = l.wait, true
		try = l.wait < time.Millisecond // as over a connection: Wait(0) is TryHold
	}
	if try {
		req.Wait, req.HasWait = 0, true
	}
	held, err := l.inProcess.HoldInProcess(ctx, req)
	switch {
	case errors.Is(err, inprocess.ErrNotGranted) && try:
		return fmt.Errorf("%w: %s %q is held", ErrNotHeld, l.name, key)
	case errors.Is(err, inprocess.ErrNotGranted):
		return fmt.Errorf("%w: %s %q: waited %v", ErrNotHeld, l.name, key, l.wait)
	case err != nil && ctx.Err() != nil && errors.Is(err, context.Cause(ctx)):
		return fmt.Errorf("%w: %s %q: %w", ErrNotHeld, l.name, key, err)
	case err != nil:
		return fmt.Errorf("locks: hold %s %q: %w", l.name, key, err)
	}

	lease := &Lease{
		Key: key, Fence: held.Fence(),
		ttl: l.ttl, margin: l.margin,
		inProcess: true,
		done:      make(chan struct{}),
	}
	fnCtx, cancel := context.WithCancelCause(ctx)
	lease.cancel = cancel
	stop, watched := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(watched)
		select {
		case <-held.Ended():
			lease.lose(lostInProcess(held.Err()))
		case <-stop:
		}
	}()

	var lost *LostError
	fnErr := func() error {
		// Deferred, so that a panic in fn releases too, and then goes on.
		defer func() {
			close(stop)
			<-watched
			lost = letGoInProcess(lease, held)
			cancel(context.Canceled)
		}()
		return fn(leaseContext{fnCtx, lease}, lease)
	}()
	return holdResult(fnErr, lost)
}

// letGoInProcess releases a lease held in process when fn returns, unless
// it ended before; it returns why it was lost, if it was.
func letGoInProcess(le *Lease, held inprocess.Lease) *LostError {
	le.mu.Lock()
	le.over = true
	lost := le.lost
	le.mu.Unlock()
	if lost == nil {
		if err := held.Release(); err != nil {
			// It ended as fn returned, before the watcher saw it.
			lost = lostInProcess(err)
			le.lose(lost)
		}
	}
	le.mu.Lock()
	le.closeDone()
	le.mu.Unlock()
	return lost
}

// lostInProcess is the end of a lease held in process as a *LostError:
// the store's reason, or, when the store closed under it, "unknown lease"
// (the next open of the store is a new epoch that knows no lease, LOCK-10)
// with the store's error.
func lostInProcess(err error) *LostError {
	if lost, ok := errors.AsType[*inprocess.LostError](err); ok {
		return &LostError{Reason: lost.Reason, FromStore: true}
	}
	return &LostError{Reason: ReasonUnknownLease, FromStore: true, Err: err}
}

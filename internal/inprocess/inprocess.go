// Package inprocess is the seam between the Go SDK (sdk/locks) and a store
// opened in the same process (package tenure's *DB): how a Lock tells the
// two kinds of store apart, and what it asks of the one in process. A
// lease held there needs no renewal (LOCK-13): the store tells the holder
// the moment it ends.
//
// It is internal so that only the module's own packages can name its
// types: nothing outside can satisfy Holder by accident or on purpose, and
// *tenure.DB's method that satisfies it is of no use to anyone else. It is
// not where leases are kept (lockmod) nor where the SDK's rules live
// (sdk/locks).
package inprocess

import (
	"context"
	"errors"
	"time"
)

// Holder is a store in this process that holds leases for the SDK.
// *tenure.DB is the one Holder.
type Holder interface {
	// HoldInProcess waits in (lock, key)'s line, the one that requests over
	// connections wait in, until the key is granted, req's Wait runs out
	// (ErrNotGranted; at once for HasWait with Wait 0), or ctx ends (then
	// the place lingers as a closed connection's does, and the error is
	// ctx's). A grant that races with ctx's end is released.
	HoldInProcess(ctx context.Context, req HoldRequest) (Lease, error)
}

// HoldRequest is a LOCK.HOLD's arguments, as the SDK checked them.
type HoldRequest struct {
	Lock, Key, ReqID string
	TTL              time.Duration // sets how long the reqid is remembered after the lease ends
	MaxHold          time.Duration // 0: no cap (LOCK-07)
	Wait             time.Duration
	HasWait          bool // false: wait without limit
	Limit            int  // LIMIT n; 0 or 1: none (SPEC §12)
	Shared           bool // a SHARED lease; never with a Limit
	Owner            string
}

// ErrNotGranted: the key stayed held for the request's whole Wait.
var ErrNotGranted = errors.New("not granted within wait")

// Lease is a lease held in process. It has no deadline but its MAXHOLD's.
type Lease interface {
	Fence() int64
	// Ended is closed the moment the lease ends: released, revoked at
	// MAXHOLD or by an admin, or the store closed.
	Ended() <-chan struct{}
	// Err is nil while the lease lives; once Ended is closed, a
	// *LostError, or the store's error for its closing.
	Err() error
	// Release ends the lease and grants the next in line, in one step.
	// It returns nil if the lease was live; otherwise what Err returns.
	Release() error
}

// LostError says why a lease ended, in the words of SPEC §4.
type LostError struct{ Reason string }

func (e *LostError) Error() string { return "lost: " + e.Reason }

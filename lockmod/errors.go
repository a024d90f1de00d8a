package lockmod

import (
	"errors"
	"fmt"

	"github.com/tenure-db/tenure/internal/lockspec"
)

var (
	// ErrLost is what every *LostError is: errors.Is(err, ErrLost) holds for a
	// lease that ended or an id the store does not know (SPEC §4).
	ErrLost = errors.New("lost")

	// ErrNotGranted answers a HOLD whose WAIT ran out, or a try-once HOLD
	// (WAIT 0) on a held key. resp replies null.
	ErrNotGranted = errors.New("not granted within wait")

	// ErrSuperseded answers a request still waiting when a retry with the same
	// reqid took over its place in line (LOCK-03).
	ErrSuperseded = errors.New("superseded by a retry of the same request")

	// ErrReqIDInUse answers a HOLD whose reqid the Manager remembers for
	// another (lock, key) (LOCK-03).
	ErrReqIDInUse = errors.New("request id is already used for another lock or key")

	// ErrClosed answers every call after Close, and every request that was
	// waiting when Close was called.
	ErrClosed = errors.New("lock module closed")

	// ErrPaused answers Hold, Renew and Release while the Manager is paused
	// (Pause, until Resume): the node does not lead now, and a client may
	// try again, on the leader or later (SPEC §10). It is an ErrClosed too
	// (errors.Is), as the Manager refuses every call then as after Close.
	ErrPaused = fmt.Errorf("lock module paused: this node does not grant now: %w", ErrClosed)

	// ErrAbandoned is the Result of a ticket abandoned while it waited. Nobody
	// is meant to read it: the client that would have has gone.
	ErrAbandoned = errors.New("request abandoned")

	// ErrHeldInProcess answers a Renew of a lease held in process: it has
	// no ttl deadline to move (LOCK-13).
	ErrHeldInProcess = errors.New("lease is held in process and needs no renewal")

	// ErrNoEpochBumper fails a grant when the fence counter of the epoch is
	// used up and the Manager was given no EpochBumper (LOCK-02).
	ErrNoEpochBumper = errors.New("fence counter of this epoch used up and no epoch bumper configured")
)

// Reasons a lease is lost, as SPEC §4 spells them after "-LOST ".
const (
	ReasonExpired      = lockspec.ReasonExpired
	ReasonMaxHold      = lockspec.ReasonMaxHold
	ReasonAdmin        = lockspec.ReasonRevoked
	ReasonReleased     = lockspec.ReasonReleased
	ReasonUnknownLease = lockspec.ReasonUnknownLease
)

// LimitError refuses a request whose LIMIT (its absence included)
// disagrees with the one its key is in use with: while the key has a live
// lease or a place in line (LOCK-15). Its Error is what resp answers after
// "-ERR ".
type LimitError struct {
	Limit int // the key's; 1: in use without LIMIT
}

func (e *LimitError) Error() string {
	if e.Limit <= 1 {
		return "this key is in use without LIMIT"
	}
	return fmt.Sprintf("this key is in use with LIMIT %d", e.Limit)
}

// LostError says why a lease is lost. Its Error is the reason alone, so that
// resp can answer "-LOST " + err.Error().
type LostError struct {
	Reason string
	// Lock is the lock of the lease, "" when it is unknown: for metrics by
	// lock (SPEC §14); never part of the reply.
	Lock string
}

func (e *LostError) Error() string { return e.Reason }

// Is makes errors.Is(err, ErrLost) hold.
func (e *LostError) Is(target error) bool { return target == ErrLost }

// why a lease ended; kept as a byte in each ended-lease record.
type reason uint8

const (
	notEnded reason = iota
	expired
	revokedMaxHold
	revokedByAdmin
	released
)

var reasonText = [...]string{
	notEnded:       ReasonUnknownLease,
	expired:        ReasonExpired,
	revokedMaxHold: ReasonMaxHold,
	revokedByAdmin: ReasonAdmin,
	released:       ReasonReleased,
}

func (r reason) lost() *LostError { return &LostError{Reason: reasonText[r]} }

// lost is the *LostError of ended request r, naming its lock.
func (r *request) lost() *LostError {
	e := r.reason.lost()
	e.Lock, _ = splitName(r.name())
	return e
}

func unknownLease() *LostError { return &LostError{Reason: ReasonUnknownLease} }

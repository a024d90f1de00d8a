package locks

import (
	"errors"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/tenure-db/tenure/internal/lockspec"
)

var (
	// ErrLost means the lease was lost before fn returned, so another holder
	// may have held the key beside it: its renewal was answered -LOST, the
	// holder's deadline passed without one, or the final RELEASE found it
	// already ended. Hold returns it even when fn returned nil. The error is a
	// *LostError that says why.
	ErrLost = errors.New("locks: lease lost")

	// ErrNotHeld means fn did not run because the key was not held: TryHold
	// found it held, the Wait elapsed, the caller's context ended while
	// Hold waited in line (the error also wraps context.Cause), or the grant
	// ended before fn could start (its reply was lost and the lease ran out).
	// Trying again may succeed.
	ErrNotHeld = errors.New("locks: not held")
)

// Reasons a lease is lost, as the store spells them after "-LOST " (SPEC §4).
const (
	ReasonExpired      = lockspec.ReasonExpired
	ReasonMaxHold      = lockspec.ReasonMaxHold
	ReasonRevoked      = lockspec.ReasonRevoked
	ReasonReleased     = lockspec.ReasonReleased
	ReasonUnknownLease = lockspec.ReasonUnknownLease
)

// LostError says why a lease was lost. errors.Is(err, ErrLost) holds for it.
type LostError struct {
	// Reason is one of the Reason constants: the store's word when it
	// answered -LOST, else "expired" or "revoked maxhold" for the holder's
	// deadline (or its MaxHold cap) passing first.
	Reason string
	// FromStore reports whether the store said so. False when the holder's
	// own deadline passed first, which it does a margin before the store's.
	FromStore bool
	// Err is why the renewals failed, when the holder's deadline passed
	// after failed renewals; for a lease held in process, the store's
	// error when it closed under the lease (tenure.ErrClosed, with reason
	// "unknown lease"); nil otherwise.
	Err error
}

func (e *LostError) Error() string {
	var b strings.Builder
	b.WriteString("locks: lease lost: ")
	b.WriteString(e.Reason)
	if e.FromStore && e.Err != nil {
		b.WriteString(" (")
		b.WriteString(e.Err.Error())
		b.WriteString(")")
	}
	if !e.FromStore {
		b.WriteString(" (holder's deadline passed")
		if e.Err != nil {
			b.WriteString("; last renewal: ")
			b.WriteString(e.Err.Error())
		}
		b.WriteString(")")
	}
	return b.String()
}

// Is makes errors.Is(err, ErrLost) hold.
func (e *LostError) Is(target error) bool { return target == ErrLost }

// Unwrap returns the last renewal error, if any.
func (e *LostError) Unwrap() error { return e.Err }

// storeLost returns the store's -LOST reply as a *LostError, or nil.
func storeLost(err error) *LostError {
	var rerr redis.Error
	if !errors.As(err, &rerr) {
		return nil
	}
	reason, ok := strings.CutPrefix(rerr.Error(), "LOST ")
	if !ok {
		return nil
	}
	return &LostError{Reason: reason, FromStore: true}
}

// isSuperseded is the store's answer to a blocked HOLD that a later HOLD
// with the same reqid took the place over from.
func isSuperseded(err error) bool {
	var rerr redis.Error
	return errors.As(err, &rerr) && strings.HasPrefix(rerr.Error(), "ERR superseded")
}

// transient reports whether an error is worth a retry with the same request:
// the network failed (or the reply was lost), or the store answered an error
// that a later try can cure. Any other error reply is final.
func transient(err error) bool {
	var rerr redis.Error
	if !errors.As(err, &rerr) {
		return true
	}
	msg := rerr.Error()
	for _, p := range []string{
		"ERR superseded", // one of our own retries took the place over
		"ERR server is shutting down",
		"ERR max number of clients",
		"LOADING ", "TRYAGAIN ", "BUSY ",
		"CLUSTERDOWN ", // a cluster between leaders (SPEC §10): go-redis gave up redirecting
	} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

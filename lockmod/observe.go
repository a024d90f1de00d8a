package lockmod

import "time"

// Observer hears of every grant and every end of a lease, in the order they
// happen in store time: the server's metrics and its log of revocations use
// it. Its methods are called with the Manager's lock held, so they must be
// quick and must not call the Manager. The events carry no lease id (LOCK-04:
// the id is the holder's secret, not something to log).
type Observer interface {
	LeaseGranted(GrantEvent)
	LeaseEnded(EndEvent)
}

// A CountObserver is an Observer that also hears of what per-lock gauges
// and counters need besides grants and ends (SPEC §14): renewals, places
// joining and leaving lines, and everything dropped at once (Pause, Resume,
// Close: no lease and no waiter is left, and no end is told). Called as an
// Observer's methods are.
type CountObserver interface {
	Observer
	LeaseRenewed(lock string)
	// LineChanged is +1 when a place joins lock's line for a key, -1 when
	// one leaves it (granted, or forgotten after its linger).
	LineChanged(lock string, delta int)
	AllDropped()
}

// GrantEvent is a grant of (Lock, Key).
type GrantEvent struct {
	Lock, Key string
	Fence     uint64
	// Waited is the time from when the request's reqid first joined the
	// line to the grant; 0 for a key granted at once.
	Waited time.Duration
}

// EndEvent is the end of a lease of (Lock, Key).
type EndEvent struct {
	Lock, Key string
	Fence     uint64
	Reason    string        // ReasonExpired, ReasonMaxHold, ReasonAdmin or ReasonReleased
	Held      time.Duration // from the grant to the end
}

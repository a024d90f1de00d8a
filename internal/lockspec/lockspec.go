// Package lockspec holds the numbers and words of the lock contract (SPEC §3
// and §4) that more than one side must agree on: the ranges and defaults of
// LOCK.HOLD's options, the lengths of its names, and the reasons a lease is
// lost as they follow "-LOST ". The server (resp, lockmod), the Go SDK and
// the torture checker import them from here, so that each is spelled once.
//
// It is not where the rules are enforced, and has no behaviour: resp checks
// a request against these ranges, lockmod keeps the leases, the SDK checks
// its options before it sends them.
package lockspec

import "time"

// Ranges and defaults of LOCK.HOLD and LOCK.RENEW (SPEC §3).
const (
	MinTTL, MaxTTL         = time.Second, time.Hour
	DefaultTTL             = 10 * time.Second // a LOCK.HOLD without TTL
	MinMaxHold, MaxMaxHold = time.Second, 24 * time.Hour

	MaxLockLen  = 256  // bytes of a lock's name, at least 1
	MaxKeyLen   = 1024 // bytes of a key, at least 1
	MaxReqIDLen = 64   // bytes of a reqid, at least 1

	// LIMIT n (SPEC §12): 1 to MaxLimit; LIMIT 1 is the same as none.
	MaxLimit = 65536
	// OWNER text (SPEC §12): 1 to MaxOwnerLen bytes.
	MaxOwnerLen = 256
)

// Reasons a lease is lost, as the store spells them after "-LOST " (SPEC §4).
const (
	ReasonExpired      = "expired"
	ReasonMaxHold      = "revoked maxhold"
	ReasonRevoked      = "revoked by admin"
	ReasonReleased     = "released"
	ReasonUnknownLease = "unknown lease"
)

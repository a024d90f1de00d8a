package locks

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tenure-db/tenure/internal/inprocess"
	"github.com/tenure-db/tenure/internal/lockspec"
)

// Store is what a Lock needs of a go-redis client. *redis.Client,
// *redis.ClusterClient, *redis.Ring and every redis.UniversalClient have it.
// The Lock only sends commands through Do; it never changes the client.
//
// A *tenure.DB, the store opened in this process (SPEC §11), is a Store
// too, and more: OpenLock recognises it by a method whose types are
// internal to this module (so no other Store can pass for one), and its
// leases are then held in process, with no ttl and no renewal (LOCK-13);
// see "In the store's own process" in the package doc.
type Store interface {
	Do(ctx context.Context, args ...any) *redis.Cmd
}

// The ranges of SPEC §3 are lockspec's.
const (
	minTTL, maxTTL         = lockspec.MinTTL, lockspec.MaxTTL
	minMaxHold, maxMaxHold = lockspec.MinMaxHold, lockspec.MaxMaxHold
	maxLockLen, maxKeyLen  = lockspec.MaxLockLen, lockspec.MaxKeyLen
	defaultTTL             = lockspec.DefaultTTL
	maxLimit, maxOwnerLen  = lockspec.MaxLimit, lockspec.MaxOwnerLen

	maxMargin = 2 * time.Second // the default margin is min(ttl/10, maxMargin)
)

// assumedReadTimeout is the read timeout taken for a Store whose options
// the Lock cannot read: go-redis's documented default, shorter than the 5 s
// that v9.23 applies, so chunks stay short enough under either.
const assumedReadTimeout = 3 * time.Second

// unboundedChunk is the wait chunk for a client without a read timeout. Any
// length would do; this one keeps a long wait visible as a sequence of
// commands (and a dead connection bounded) without many round trips.
const unboundedChunk = 10 * time.Second

// maxInFlight bounds the RENEW or RELEASE attempts of one lease that are
// outstanding at once: a reply swallowed by the network can hold its attempt
// for up to the client's ReadTimeout, and the next one must not wait for it.
const maxInFlight = 3

// Option configures a Lock.
type Option func(*Lock)

// TTL sets how long a lease lasts without a renewal: from 1 s to 1 h,
// default 10 s. A frozen or crashed holder's key returns to the line within
// one ttl; a pause (garbage collection, a slow network) longer than about
// 2/3 of it loses a lease that is still working.
func TTL(d time.Duration) Option { return func(l *Lock) { l.ttl = d } }

// MaxHold caps every lease at d after its grant, renewals notwithstanding
// (LOCK-07): the store revokes it then, and the SDK gives it up a margin
// earlier, reporting it lost with reason "revoked maxhold". From 1 s to 24 h;
// default: no cap.
//
// The SDK counts d from when it sent the oldest HOLD of the request that
// may have been the one granted, which is no later than the grant. After
// waiting in line that may be up to one wait chunk early, until a
// renewal's reply, capped by the store at MAXHOLD, shows the store's own
// deadline; in the last ttl before the cap every renewal does.
func MaxHold(d time.Duration) Option { return func(l *Lock) { l.maxHold = d } }

// Wait bounds the time a Hold waits in line; once it has elapsed, Hold
// returns ErrNotHeld. Default: no bound but the caller's context. Wait(0)
// makes Hold behave like TryHold.
func Wait(d time.Duration) Option {
	return func(l *Lock) { l.wait, l.hasWait = d, true }
}

// Margin sets how long before the store's deadline the holder gives a lease
// up (SPEC §8): default min(ttl/10, 2 s). Raise it when the holder's clock
// may run slow against the store's, or when fn needs time to stop after its
// context is cancelled; it must stay under half the ttl and under MaxHold.
func Margin(d time.Duration) Option {
	return func(l *Lock) { l.margin, l.hasMargin = d, true }
}

// Limit makes the lock a semaphore (SPEC §12): each key admits up to n
// leases at once, n permits, each a lease of its own with its own fence,
// renewed, lost and let go as any. From 1 to 65536; 1, the default, is a
// plain lock. Every holder of a key must agree on n while the key is in
// use: a Hold with another limit fails, without running fn, with the
// store's "this key is in use with LIMIT n" (LOCK-15). A Lock with a Limit
// has no shared holds.
func Limit(n int) Option { return func(l *Lock) { l.limit = n } }

// Owner sets the text the store shows of this lock's leases to anyone who
// asks who holds a key (LOCK.INFO, LOCK.LIST, LOCK.HOLDERS): 1 to 256
// bytes. Default: this host's name and this process's id, "hostname:pid".
// It is information, not a credential (LOCK-16).
func Owner(text string) Option { return func(l *Lock) { l.owner, l.hasOwner = text, true } }

// defaultOwner is "hostname:pid", the hostname cut to fit 256 bytes.
func defaultOwner() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown"
	}
	pid := ":" + strconv.Itoa(os.Getpid())
	if len(host)+len(pid) > maxOwnerLen {
		host = host[:maxOwnerLen-len(pid)]
	}
	return host + pid
}

// Lock is one named lock of a tenure store, with the options its leases
// are held with. It is safe for concurrent use; it holds no connection and
// needs no closing.
type Lock struct {
	store     Store
	inProcess inprocess.Holder // the store is in this process (a *tenure.DB); nil over a connection
	name      string

	ttl       time.Duration
	maxHold   time.Duration // 0: no cap
	wait      time.Duration
	hasWait   bool
	margin    time.Duration
	hasMargin bool
	limit     int // 0 or 1: none
	owner     string
	hasOwner  bool

	chunk time.Duration // WAIT of each HOLD sent while waiting in line
}

// OpenLock returns the lock called name (1 to lockspec.MaxLockLen bytes) of the store behind
// client. It sends nothing: it checks the options and reads the client's read
// timeout, which sets how long each HOLD waits in line (half of it). An option
// out of range is an error.
func OpenLock(client Store, name string, opts ...Option) (*Lock, error) {
	if client == nil {
		return nil, fmt.Errorf("locks: open %q: nil client", name)
	}
	l := &Lock{store: client, name: name, ttl: defaultTTL}
	for _, o := range opts {
		o(l)
	}
	if err := l.check(); err != nil {
		return nil, fmt.Errorf("locks: open %q: %w", name, err)
	}
	l.chunk = waitChunk(client)
	l.inProcess, _ = client.(inprocess.Holder)
	return l, nil
}

func (l *Lock) check() error {
	if len(l.name) == 0 || len(l.name) > maxLockLen {
		return fmt.Errorf("lock name must be 1 to %d bytes", maxLockLen)
	}
	if l.ttl < minTTL || l.ttl > maxTTL {
		return fmt.Errorf("TTL %v: must be from %v to %v", l.ttl, minTTL, maxTTL)
	}
	if l.maxHold != 0 && (l.maxHold < minMaxHold || l.maxHold > maxMaxHold) {
		return fmt.Errorf("MaxHold %v: must be from %v to %v", l.maxHold, minMaxHold, maxMaxHold)
	}
	if l.hasWait && l.wait < 0 {
		return fmt.Errorf("Wait %v: must not be negative", l.wait)
	}
	if !l.hasMargin {
		l.margin = min(l.ttl/10, maxMargin)
	}
	if l.margin < 0 || l.margin >= l.ttl/2 {
		return fmt.Errorf("Margin %v: must be from 0 to under half the TTL (%v)", l.margin, l.ttl)
	}
	if l.maxHold != 0 && l.margin >= l.maxHold {
		return fmt.Errorf("Margin %v: must be under MaxHold (%v)", l.margin, l.maxHold)
	}
	if l.limit != 0 && (l.limit < 1 || l.limit > maxLimit) {
		return fmt.Errorf("Limit %d: must be from 1 to %d", l.limit, maxLimit)
	}
	if !l.hasOwner {
		l.owner = defaultOwner()
	}
	if len(l.owner) == 0 || len(l.owner) > maxOwnerLen {
		return fmt.Errorf("Owner %q: must be 1 to %d bytes", l.owner, maxOwnerLen)
	}
	return nil
}

// Name is the lock's name.
func (l *Lock) Name() string { return l.name }

// waitChunk is half the client's read timeout, so that the reply to a HOLD
// that waited its whole chunk arrives well before the client stops reading.
// go-redis normalizes the options of a *redis.Client and a *redis.ClusterClient
// when it makes them (ReadTimeout <= 0 then means none); a Ring's are as
// given (0 means the default).
func waitChunk(client Store) time.Duration {
	rt := assumedReadTimeout
	switch c := client.(type) {
	case interface{ Options() *redis.Options }:
		rt = c.Options().ReadTimeout
	case interface{ Options() *redis.ClusterOptions }:
		rt = c.Options().ReadTimeout
	case interface{ Options() *redis.RingOptions }:
		if rt = c.Options().ReadTimeout; rt == 0 {
			rt = assumedReadTimeout
		}
	}
	if rt <= 0 {
		return unboundedChunk
	}
	return max(rt/2, time.Millisecond)
}

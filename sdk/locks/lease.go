package locks

import (
	"context"
	"sync"
	"time"
)

// Lease is one grant of a key to this holder, handed to fn. Its fields are
// set once; its methods are safe for concurrent use, also after Hold has
// returned.
type Lease struct {
	Key   string // the key held, within the Lock
	Fence int64  // the fencing token: larger than every fence granted before (LOCK-02)

	id        string // the lease id: renews and releases, never leaves the SDK (LOCK-04)
	inProcess bool   // held on a store in this process: no deadline, no renewal (LOCK-13)
	ttl       time.Duration
	margin    time.Duration
	cancel    context.CancelCauseFunc // fn's context

	mu       sync.Mutex
	sent     time.Time // send time of the last HOLD or RENEW that succeeded
	deadline time.Time // the holder's deadline
	atMax    bool      // the deadline is the MaxHold cap (the store's or ours)
	maxCap   time.Time // grant + MaxHold - margin; zero without MaxHold
	lastErr  error     // the last renewal failure since the last success
	lost     *LostError
	done     chan struct{}
	closed   bool // done is closed
	over     bool // fn has returned: the lease can no longer be lost by the clock
}

// Deadline is the holder's deadline: the send time of the last HOLD or RENEW
// that succeeded, plus the ttl the store answered, less the margin, capped at
// the grant + MaxHold - margin. It is read on the local monotonic clock (the
// time.Time carries it); when it passes without a renewal the lease is lost.
// A lease held on a store in this process has none (LOCK-13): its Deadline
// is the zero time, and the store says when the lease ends.
func (l *Lease) Deadline() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.deadline
}

// Done is closed the moment the lease is lost (together with the
// cancellation of fn's context), or when Hold has let it go after fn
// returned, whichever comes first.
func (l *Lease) Done() <-chan struct{} { return l.done }

// Lost returns nil while the lease is held, and the *LostError (errors.Is
// ErrLost) once it is lost. It compares the holder's deadline with the clock
// itself, so a holder that wakes from a pause longer than its ttl learns of
// the loss from its first call, before any timer has run.
func (l *Lease) Lost() error {
	l.check(time.Now())
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lost == nil {
		return nil
	}
	return l.lost
}

func newLease(l *Lock, key string, g grant) *Lease {
	le := &Lease{
		Key: key, Fence: g.fence, id: g.id,
		ttl: l.ttl, margin: l.margin,
		done:   make(chan struct{}),
		cancel: func(error) {},
	}
	if l.maxHold > 0 {
		// The store granted no earlier than notBefore, so its MAXHOLD
		// deadline is no earlier than this (LOCK-07).
		le.maxCap = g.notBefore.Add(l.maxHold - l.margin)
	}
	le.sent = g.sent
	le.setDeadline(g.sent, g.left, false)
	return le
}

// setDeadline moves the deadline to sent + left - margin, capped; capped
// says the store capped left at MAXHOLD. Called under mu or before sharing.
func (l *Lease) setDeadline(sent time.Time, left time.Duration, capped bool) {
	d := sent.Add(left - l.margin)
	l.atMax = capped
	switch {
	case l.maxCap.IsZero():
	case capped:
		// sent + left and maxCap are two lower bounds of the same
		// MAXHOLD deadline (less the margin): the later is the closer.
		d = later(d, l.maxCap)
	case !d.Before(l.maxCap):
		d, l.atMax = l.maxCap, true
	}
	l.sent, l.deadline = sent, d
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// renewed records a RENEW sent at sent that answered left. A success that
// arrives after the holder's deadline does not revive the lease: it was lost
// when the deadline passed.
func (l *Lease) renewed(sent time.Time, left time.Duration) {
	if l.check(time.Now()) {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lost != nil || !sent.After(l.sent) {
		return
	}
	l.setDeadline(sent, left, left < l.ttl)
	l.lastErr = nil
}

// check loses the lease if its deadline has passed at now, and reports
// whether it is lost. A loss already recorded cancels fn's context again:
// the goroutine that recorded it cancels only after unlocking mu, and a
// caller that sees the loss in between must not go on to read a live
// context (cancelling twice keeps the first cause).
func (l *Lease) check(now time.Time) bool {
	l.mu.Lock()
	if le := l.lost; le != nil {
		l.mu.Unlock()
		l.cancel(le)
		return true
	}
	if l.over || l.inProcess || now.Before(l.deadline) {
		l.mu.Unlock()
		return false
	}
	reason := ReasonExpired
	if l.atMax {
		reason = ReasonMaxHold
	}
	le := &LostError{Reason: reason, Err: l.lastErr}
	l.loseLocked(le)
	l.mu.Unlock()
	l.cancel(le)
	return true
}

// lose marks the lease lost for le unless it already is, and cancels fn's
// context with le as its cause.
func (l *Lease) lose(le *LostError) {
	l.mu.Lock()
	if l.lost != nil {
		l.mu.Unlock()
		return
	}
	l.loseLocked(le)
	l.mu.Unlock()
	l.cancel(le)
}

func (l *Lease) loseLocked(le *LostError) {
	l.lost = le
	l.closeDone()
}

func (l *Lease) closeDone() {
	if !l.closed {
		l.closed = true
		close(l.done)
	}
}

// leaseContext is fn's context. Done and Err look at the holder's deadline
// first, like Lease.Lost, so that fn never sees a live context past it.
// Cause and Value are the embedded context's.
type leaseContext struct {
	context.Context
	lease *Lease
}

func (c leaseContext) Done() <-chan struct{} {
	c.lease.check(time.Now())
	return c.Context.Done()
}

func (c leaseContext) Err() error {
	c.lease.check(time.Now())
	return c.Context.Err()
}

func (c leaseContext) String() string { return "locks.leaseContext" }

// keeper renews one lease while fn runs, in its own goroutine (SPEC §8):
// a renewal at the latest ttl/3 after the last success; after a failure,
// another at least every ttl/10, until the holder's deadline. Its renewal
// attempts run in goroutines of their own, counted by wg.
type keeper struct {
	lock   *Lock
	lease  *Lease
	base   context.Context // values for the commands, not cancellation
	stop   chan struct{}
	exited chan struct{}
	wg     sync.WaitGroup
}

func (k *keeper) run() {
	defer close(k.exited)
	le := k.lease
	renewEvery, retryEvery := k.lock.ttl/3, k.lock.ttl/10
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		le.mu.Lock()
		renewAt, deadline := le.sent.Add(renewEvery), le.deadline
		le.mu.Unlock()
		next := renewAt
		if deadline.Before(next) {
			next = deadline // capped at MaxHold: nothing left to renew for
		}
		timer.Reset(time.Until(next))
		select {
		case <-k.stop:
			return
		case <-timer.C:
		}
		if le.check(time.Now()) {
			return
		}
		out, ok := attempts(k.base, &k.wg, k.stop, deadline, retryEvery, func(ctx context.Context) (any, error) {
			v, err := k.lock.sendRenew(ctx, le.id)
			if err != nil && !isLostReply(err) {
				le.mu.Lock()
				le.lastErr = err
				le.mu.Unlock()
			}
			return v, err
		}, isLostReply)
		select {
		case <-k.stop:
			return
		default:
		}
		switch {
		case !ok:
			if !le.check(time.Now()) {
				// attempts gave up at the deadline, which check sees as
				// passed; reaching here would mean a clock gone backwards.
				le.lose(&LostError{Reason: ReasonExpired, Err: out.err})
			}
			return
		case out.err != nil:
			le.lose(storeLost(out.err))
			return
		}
		le.renewed(out.sent, out.val.(renewed).left)
		if le.check(time.Now()) {
			return
		}
	}
}

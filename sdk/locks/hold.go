package locks

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Hold waits in line for key, then runs fn while holding it, renewing the
// lease in the background, and lets the key go when fn returns or panics.
//
// fn's context is a child of ctx. It is cancelled, with a *LostError as its
// context.Cause, the moment the lease is lost: a renewal is answered -LOST
// (restart: "unknown lease"; LOCK.REVOKE: "revoked by admin"), the holder's
// deadline passes without a renewal ("expired"), or MaxHold less the margin
// is reached ("revoked maxhold"). It is also cancelled when ctx is, with
// ctx's cause, and after fn returns.
//
// Hold returns:
//   - fn's error (nil included) if the lease was held until fn returned;
//   - a *LostError (errors.Is ErrLost) if it was lost before fn returned,
//     even if fn returned nil; errors.Join(fnErr, lostErr) if fn also
//     returned an error, so errors.Is finds both;
//   - ErrNotHeld, without running fn, if the Wait elapsed or ctx ended while
//     waiting in line (then wrapping context.Cause(ctx) as well);
//   - another error, without running fn, if the store refused the request
//     (a read-only user: NOPERM) or could not be reached for a whole ttl.
//
// A panic in fn is passed on after the key is let go.
//
// Hold returns once every command it sent has answered or failed; with a
// network that swallows replies that is bounded by the client's ReadTimeout.
func (l *Lock) Hold(ctx context.Context, key string, fn func(ctx context.Context, lease *Lease) error) error {
	return l.hold(ctx, key, fn, false)
}

// TryHold is Hold that does not wait in line: if key is held, it returns
// ErrNotHeld at once without running fn.
func (l *Lock) TryHold(ctx context.Context, key string, fn func(ctx context.Context, lease *Lease) error) error {
	return l.hold(ctx, key, fn, true)
}

func (l *Lock) hold(ctx context.Context, key string, fn func(context.Context, *Lease) error, try bool) error {
	if fn == nil {
		return fmt.Errorf("locks: hold %s %q: nil function", l.name, key)
	}
	if len(key) == 0 || len(key) > maxKeyLen {
		return fmt.Errorf("locks: hold %s %q: key must be 1 to %d bytes", l.name, key, maxKeyLen)
	}
	if ctx.Err() != nil {
		return fmt.Errorf("%w: %s %q: %w", ErrNotHeld, l.name, key, context.Cause(ctx))
	}
	// The commands carry ctx's values (for the client's hooks) but not its
	// cancellation: a command cut short would leave its answer unknown.
	base := context.WithoutCancel(ctx)
	var wg sync.WaitGroup // every goroutine this Hold starts
	defer wg.Wait()

	g, err := l.acquire(ctx, base, &wg, key, try)
	if err != nil {
		return err
	}
	lease := newLease(l, key, g)

	// A HOLD that waited in line was granted long after it was sent, which
	// is what its deadline counts from. Renew before fn starts rather than
	// start fn on a deadline that may already have passed.
	if time.Since(g.sent) >= l.ttl/3 {
		if err := l.renewBeforeUse(base, &wg, lease, g); err != nil {
			return fmt.Errorf("locks: hold %s %q: %w", l.name, key, err)
		}
	}
	if ctx.Err() != nil {
		l.release(base, &wg, g.id, lease.Deadline())
		return fmt.Errorf("%w: %s %q: %w", ErrNotHeld, l.name, key, context.Cause(ctx))
	}

	fnCtx, cancel := context.WithCancelCause(ctx)
	lease.cancel = cancel
	k := &keeper{lock: l, lease: lease, base: base, stop: make(chan struct{}), exited: make(chan struct{})}
	wg.Add(1)
	go func() {
		defer wg.Done()
		k.run()
	}()

	var lost *LostError
	fnErr := func() error {
		// Deferred, so that it runs on a panic too, which then goes on
		// with its own stack.
		defer func() {
			lost = l.letGo(base, k)
			cancel(context.Canceled)
		}()
		return fn(leaseContext{fnCtx, lease}, lease)
	}()
	switch {
	case lost == nil:
		return fnErr
	case fnErr != nil:
		return errors.Join(fnErr, lost)
	default:
		return lost
	}
}

// acquire gets key for one reqid (SPEC §8): HOLDs with the same reqid, each
// waiting one chunk, so that the place in line holds between them; a network
// error or lost reply is retried with the same reqid, on whatever connection
// the client hands out, and answered with the same lease (LOCK-03).
func (l *Lock) acquire(ctx, base context.Context, wg *sync.WaitGroup, key string, try bool) (grant, error) {
	reqid := newReqID()
	var waitUntil time.Time
	if l.hasWait && !try {
		waitUntil = time.Now().Add(l.wait)
		try = l.wait < time.Millisecond
	}
	retryEvery := l.ttl / 10
	var failingSince time.Time
	for {
		wait := l.chunk
		switch {
		case try:
			wait = 0
		case !waitUntil.IsZero():
			rem := time.Until(waitUntil)
			if rem <= 0 {
				if failingSince.IsZero() {
					return grant{}, fmt.Errorf("%w: %s %q: waited %v", ErrNotHeld, l.name, key, l.wait)
				}
				// The last HOLD failed: it may have been granted. A
				// last try with the same reqid says.
				rem, try = 0, true
			}
			wait = min(wait, rem)
		}

		ch := make(chan holdReply, 1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			ch <- l.sendHold(base, key, reqid, wait)
		}()
		var r holdReply
		select {
		case r = <-ch:
		case <-ctx.Done():
			return grant{}, l.abandon(ctx, base, wg, key, reqid, ch)
		}

		switch {
		case r.ok:
			return r.grant, nil
		case r.err == nil: // not granted within the WAIT; the place lingers
			failingSince = time.Time{}
			if try {
				return grant{}, fmt.Errorf("%w: %s %q is held", ErrNotHeld, l.name, key)
			}
			if !waitUntil.IsZero() && !time.Now().Before(waitUntil) {
				return grant{}, fmt.Errorf("%w: %s %q: waited %v", ErrNotHeld, l.name, key, l.wait)
			}
			continue
		case storeLost(r.err) != nil:
			// Granted, but the reply was lost and the lease ended before
			// this retry: fn never ran.
			return grant{}, fmt.Errorf("%w: %s %q: the grant's reply was lost and then the lease: %s",
				ErrNotHeld, l.name, key, storeLost(r.err).Reason)
		case !transient(r.err):
			return grant{}, fmt.Errorf("locks: hold %s %q: %w", l.name, key, r.err)
		}
		if failingSince.IsZero() {
			failingSince = r.sent
		}
		if time.Since(failingSince) > l.ttl {
			// Any lease granted on the way has run out by now.
			return grant{}, fmt.Errorf("locks: hold %s %q: no answer for %v: %w", l.name, key, l.ttl, r.err)
		}
		pause := time.NewTimer(time.Until(r.sent.Add(retryEvery)))
		select {
		case <-pause.C:
		case <-ctx.Done():
			pause.Stop()
			return grant{}, l.abandon(ctx, base, wg, key, reqid, nil)
		}
	}
}

// abandon stops waiting for reqid when ctx ends, and lets go of any grant
// that raced in. A HOLD with the same reqid and WAIT 0 answers the blocked
// HOLD at once (superseded), leaves the place to linger, passed over, and
// says whether a grant came first (then it is that grant, LOCK-03). inFlight,
// if not nil, is the blocked HOLD's answer; abandon waits for it.
func (l *Lock) abandon(ctx, base context.Context, wg *sync.WaitGroup, key, reqid string, inFlight <-chan holdReply) error {
	notHeld := fmt.Errorf("%w: %s %q: %w", ErrNotHeld, l.name, key, context.Cause(ctx))
	released := map[string]bool{}
	letGo := func(g grant) {
		if !released[g.id] {
			released[g.id] = true
			l.release(base, wg, g.id, g.received.Add(g.left))
		}
	}
	// A HOLD the store answered, whatever the answer, says where reqid
	// stands; one lost on the way (a network error) does not.
	decided := func(r holdReply) bool {
		var rerr redis.Error
		return r.err == nil || errors.As(r.err, &rerr)
	}

	probe := l.sendHold(base, key, reqid, 0)
	if probe.ok {
		letGo(probe.grant)
	}
	known := decided(probe)
	if inFlight != nil {
		r := <-inFlight
		if r.ok {
			letGo(r.grant)
		}
		// A blocked HOLD lost on the way may have been retried by the
		// client after the probe, and granted: only a probe sent after it
		// knows. Unless the probe found the grant already: a reqid has one
		// (LOCK-03), and it is released.
		if !decided(r) && !probe.ok && !r.ok {
			known = false
		}
	}
	for giveUp := time.Now().Add(l.ttl); !known && time.Now().Before(giveUp); {
		time.Sleep(l.ttl / 10)
		probe = l.sendHold(base, key, reqid, 0)
		if probe.ok {
			letGo(probe.grant)
		}
		known = decided(probe)
	}
	return notHeld
}

// renewBeforeUse renews a lease that was granted after waiting in line,
// before fn starts. The store's deadline is at most the reply's arrival plus
// the ttl it answered: renewals are tried until then.
func (l *Lock) renewBeforeUse(base context.Context, wg *sync.WaitGroup, lease *Lease, g grant) error {
	out, ok := attempts(base, wg, nil, g.received.Add(g.left), l.ttl/10, func(ctx context.Context) (any, error) {
		return l.sendRenew(ctx, g.id)
	}, isLostReply)
	switch {
	case !ok:
		l.release(base, wg, g.id, time.Now().Add(l.ttl/10))
		return fmt.Errorf("renew after the grant: %w", out.err)
	case out.err != nil:
		return fmt.Errorf("%w: the lease ended before fn started: %s", ErrNotHeld, storeLost(out.err).Reason)
	}
	left := out.val.(renewed).left
	lease.mu.Lock()
	lease.setDeadline(out.sent, left, left < l.ttl)
	lease.mu.Unlock()
	return nil
}

// letGo runs when fn returns or panics (SPEC §8): it stops the renewals and
// releases the lease with its id, retrying until the holder's deadline. It
// returns why the lease was lost, if it was before fn returned; a RELEASE
// answered -LOST (an admin revoked it, or the store restarted, since the last
// renewal) says so too.
func (l *Lock) letGo(base context.Context, k *keeper) *LostError {
	le := k.lease
	le.check(time.Now()) // lost at the deadline, whether or not a timer saw it
	close(k.stop)
	<-k.exited

	le.mu.Lock()
	le.over = true
	lost, deadline := le.lost, le.deadline
	le.mu.Unlock()

	switch {
	case lost == nil:
		if storeSays := l.release(base, &k.wg, le.id, deadline); storeSays != nil {
			le.lose(storeSays)
			lost = storeSays
		}
	case !lost.FromStore:
		// Given up by the holder's clock: the store may still hold it for a
		// margin. One try hands it to the next in line early, and may say
		// what the store knows (a restart: "unknown lease"), which Hold
		// then reports rather than its own guess.
		if storeSays := l.release(base, &k.wg, le.id, time.Now().Add(l.ttl/10)); storeSays != nil {
			lost = storeSays
		}
	}
	k.wg.Wait()
	le.mu.Lock()
	le.closeDone()
	le.mu.Unlock()
	return lost
}

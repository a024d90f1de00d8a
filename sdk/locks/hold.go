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
//
// On a Lock with a Limit, Hold holds one of the key's permits: it waits
// while all are held. Otherwise it holds the key alone (a writer): it waits
// while anyone holds it, readers included.
func (l *Lock) Hold(ctx context.Context, key string, fn func(ctx context.Context, lease *Lease) error) error {
	return l.hold(ctx, key, fn, false, false)
}

// TryHold is Hold that does not wait in line: if key is held, it returns
// ErrNotHeld at once without running fn.
func (l *Lock) TryHold(ctx context.Context, key string, fn func(ctx context.Context, lease *Lease) error) error {
	return l.hold(ctx, key, fn, true, false)
}

// HoldShared is Hold as a reader (SPEC §12, SHARED): the key is shared with
// other readers and never with a Hold (a writer). The line stays one: a
// reader that comes while a writer waits waits behind it (LOCK-08).
// Everything Hold says of a lease holds of a reader's: its own fence,
// renewal, loss and cancellation. A Lock with a Limit has no readers:
// HoldShared on one fails without sending anything.
func (l *Lock) HoldShared(ctx context.Context, key string, fn func(ctx context.Context, lease *Lease) error) error {
	return l.hold(ctx, key, fn, false, true)
}

// TryHoldShared is HoldShared that does not wait in line: if key is held
// by a writer, or a writer waits for it, it returns ErrNotHeld at once
// without running fn.
func (l *Lock) TryHoldShared(ctx context.Context, key string, fn func(ctx context.Context, lease *Lease) error) error {
	return l.hold(ctx, key, fn, true, true)
}

func (l *Lock) hold(ctx context.Context, key string, fn func(context.Context, *Lease) error, try, shared bool) error {
	if fn == nil {
		return fmt.Errorf("locks: hold %s %q: nil function", l.name, key)
	}
	if shared && l.limit > 1 {
		return fmt.Errorf("locks: hold %s %q: a lock with a Limit has no shared holds", l.name, key)
	}
	if len(key) == 0 || len(key) > maxKeyLen {
		return fmt.Errorf("locks: hold %s %q: key must be 1 to %d bytes", l.name, key, maxKeyLen)
	}
	if ctx.Err() != nil {
		return fmt.Errorf("%w: %s %q: %w", ErrNotHeld, l.name, key, context.Cause(ctx))
	}
	if l.inProcess != nil {
		return l.holdInProcess(ctx, key, fn, try, shared)
	}
	// The commands carry ctx's values (for the client's hooks) but not its
	// cancellation: a command cut short would leave its answer unknown.
	base := context.WithoutCancel(ctx)
	var wg sync.WaitGroup // every goroutine this Hold starts
	defer wg.Wait()

	g, err := l.acquire(ctx, base, &wg, key, try, shared)
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
	return holdResult(fnErr, lost)
}

// acquire gets key for one reqid (SPEC §8): HOLDs with the same reqid, each
// waiting one chunk; a network error or lost reply is retried with the same
// reqid, on whatever connection the client hands out, and answered with the
// same lease (LOCK-03).
//
// The chunks overlap, so that the place in line is never left open: once a
// quarter of a chunk has passed, the next HOLD goes out on another
// connection and supersedes the blocked one at the store (which answers
// that one "superseded", ignored here). Were the next HOLD sent only after the
// previous one's WAIT ran out, the place would linger in between, passed
// over, and a release then would grant a later waiter first (LOCK-08).
// Whichever reply carries the grant wins; a HOLD that reaches the store
// after the grant is answered the same lease (LOCK-03). The last chunk of a
// bounded Wait has no successor, nor has a chunk whose WAIT ran out before
// its successor went (this process paused): its answer comes first, as it
// may be a grant, and a HOLD sent long after a grant may reach a store that
// has forgotten the reqid. A pause between the send of a successor and its
// write to the network can still do that; the grant it gets is released.
//
// A reqid is kept only while the store surely remembers it (the reqid
// window, SPEC §8): a grant to it came no earlier than notBefore, the send
// time of the oldest HOLD not yet answered null or "superseded", and the
// store remembers the reqid for at least the lease's ttl after the lease
// ends, so until at least notBefore + ttl. A HOLD with the reqid is sent
// only while now < notBefore + ttl - margin (the holder's margin, for the
// time the HOLD takes to reach the store). Past that a lost reply is
// retried with a fresh reqid: the Hold joins the line anew, and a lease
// granted to the old reqid, if any, is never renewed and runs out; a reply
// that brings it after all is kept if it comes first, released if not.
func (l *Lock) acquire(ctx, base context.Context, wg *sync.WaitGroup, key string, try, shared bool) (g grant, err error) {
	var waitUntil time.Time
	if l.hasWait && !try {
		waitUntil = time.Now().Add(l.wait)
		try = l.wait < time.Millisecond
	}
	calls := &holdCalls{lock: l, base: base, wg: wg, key: key, reqid: newReqID(), shared: shared, replies: make(chan holdReply, maxInFlight)}
	defer func() { calls.settle(g.id) }()

	retryEvery := l.ttl / 10
	window := l.reqidWindow()
	var (
		failingSince time.Time   // the first of the failures since the last answer
		notBefore    time.Time   // no grant of the current reqid came before this
		oldNotBefore []time.Time // notBefore of each earlier reqid (by gen), for its grant's MaxHold
		cur          holdCall    // the newest HOLD sent
		nextAt       time.Time   // when to send the next HOLD; zero: when cur answers
		stalled      bool        // the next HOLD waits for one in flight to answer
		curOpen      bool        // cur has not answered: the next HOLD overlaps it
	)
	// send sends the next HOLD, waiting one chunk (or less, at the end of
	// a bounded Wait); false if the Wait is over.
	send := func() bool {
		wait := l.chunk
		switch {
		case try:
			wait = 0
		case !waitUntil.IsZero():
			rem := time.Until(waitUntil)
			if rem <= 0 {
				if failingSince.IsZero() {
					return false
				}
				// The last HOLD failed: it may have been granted. A
				// last try with the same reqid says.
				rem, try = 0, true
			}
			wait = min(wait, rem)
		}
		if !notBefore.IsZero() && !time.Now().Before(notBefore.Add(window)) {
			// The store may have forgotten the reqid (SPEC §8): a HOLD
			// with it could get a second lease (LOCK-03). Start over.
			oldNotBefore = append(oldNotBefore, notBefore)
			calls.restart()
			notBefore = time.Time{}
		}
		cur, stalled, curOpen = calls.send(wait), false, true
		if notBefore.IsZero() {
			notBefore = cur.sent
		}
		nextAt = time.Time{}
		last := try || (!waitUntil.IsZero() && !cur.sent.Add(wait).Before(waitUntil))
		if !last {
			// Within the window too, with room for an answer to move
			// notBefore on before the next successor.
			nextAt = cur.sent.Add(min(wait, window) / overlapAt)
		}
		return true
	}
	waited := func() error { return fmt.Errorf("%w: %s %q: waited %v", ErrNotHeld, l.name, key, l.wait) }

	send()
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		var wake <-chan time.Time
		if !nextAt.IsZero() {
			timer.Reset(time.Until(nextAt))
			wake = timer.C
		}
		var r holdReply
		select {
		case r = <-calls.replies:
		case <-wake:
			select {
			case r = <-calls.replies:
				// An answer came meanwhile (after a pause, say): it may
				// be the grant, and then no other HOLD may go.
			default:
				switch {
				case curOpen && !time.Now().Before(cur.sent.Add(cur.wait)):
					// cur's WAIT has run out: too late to overlap it
					// (this process paused, or is overloaded), and its
					// answer is due. A HOLD sent now could go out long
					// after a grant that came meanwhile, and after the
					// store forgot the reqid: a second lease (LOCK-03).
					nextAt = time.Time{}
				case curOpen && !time.Now().Before(notBefore.Add(window)):
					// Answers are late (replies lost, or this process
					// paused): cur may have been granted, and a successor
					// may reach a store that has forgotten the reqid.
					// cur's answer is due, within its WAIT plus the read
					// timeout.
					nextAt = time.Time{}
				case calls.inFlight >= maxInFlight:
					// Older HOLDs hang (their replies lost): the next
					// one goes when one of them answers.
					nextAt, stalled = time.Time{}, true
				case !send():
					nextAt = time.Time{} // the Wait is over: cur's answer ends it
				}
				continue
			}
		case <-ctx.Done():
			timer.Stop()
			return grant{}, l.abandon(ctx, calls, notBefore.Add(window))
		}
		timer.Stop()
		calls.inFlight--
		if r.gen != calls.gen {
			// A HOLD of an earlier reqid: its grant is a lease as good as
			// any; anything else it says is of no concern any more.
			if r.ok {
				r.notBefore = oldNotBefore[r.gen]
				return r.grant, nil
			}
			if stalled {
				nextAt, stalled = time.Now(), false
			}
			continue
		}
		newest := r.seq == cur.seq
		if newest {
			curOpen = false
		}
		if r.ok {
			r.notBefore = notBefore
			return r.grant, nil
		}
		if r.err == nil || isSuperseded(r.err) && !newest {
			// Not granted when the store answered, which was after this
			// HOLD was sent: neither was any earlier one (LOCK-03).
			notBefore = later(notBefore, r.sent)
		}
		switch {
		case !newest && (r.err == nil || transient(r.err)):
			// An older chunk: its WAIT ran out, it was superseded by
			// the newer one, or it failed; the newer one carries on.
			if stalled {
				nextAt, stalled = time.Now(), false
			}
			continue
		case r.err == nil: // not granted within the WAIT; the place lingers
			failingSince = time.Time{}
			if try {
				return grant{}, fmt.Errorf("%w: %s %q is held", ErrNotHeld, l.name, key)
			}
			if !send() {
				return grant{}, waited()
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
		nextAt = r.sent.Add(retryEvery) // retry the newest, after a pause
		if !waitUntil.IsZero() && !time.Now().Before(waitUntil) {
			nextAt = time.Now() // send makes it the last try
		}
	}
}

// overlapAt is when, in a chunk, the next one is sent: at wait/overlapAt.
// Early, so that the next HOLD has three quarters of the chunk to reach the
// store (a busy machine, a slow network, a pause of the collector) before
// the place would linger; a HOLD each quarter chunk per waiter is cheap.
const overlapAt = 4

// holdCall is one HOLD that acquire sent.
type holdCall struct {
	seq  int
	gen  int       // which reqid of the Hold: 0 for the first
	sent time.Time // when it was handed to the client: no later than its send
	wait time.Duration
}

// holdCalls are the HOLDs of one reqid, sent each in its own goroutine
// (counted by wg) so that chunks can overlap. While acquire runs, their
// replies go to replies, at most maxInFlight of them outstanding; once it
// has settled, a reply that carries a grant other than the one it kept (a
// HOLD that reached the store after the reqid was forgotten) is released
// by the goroutine that got it.
type holdCalls struct {
	lock       *Lock
	base       context.Context
	wg         *sync.WaitGroup
	key, reqid string // reqid: the current one, acquire's alone
	gen        int    // how many times acquire drew a fresh reqid (restart)
	shared     bool   // every HOLD of the reqid asks for the same kind of lease
	replies    chan holdReply
	seq        int // of the last HOLD sent
	inFlight   int // sent and not read from replies: acquire's alone

	mu      sync.Mutex
	settled bool
	kept    string // the lease id acquire returned; "" if none
}

// restart draws a fresh reqid for the HOLDs sent from now on.
func (c *holdCalls) restart() {
	c.reqid = newReqID()
	c.gen++
}

func (c *holdCalls) send(wait time.Duration) holdCall {
	c.seq++
	c.inFlight++
	call := holdCall{seq: c.seq, gen: c.gen, sent: time.Now(), wait: wait}
	reqid := c.reqid
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		r := c.lock.sendHold(c.base, c.key, reqid, wait, c.shared)
		r.seq, r.gen, r.sent = call.seq, call.gen, call.sent
		c.mu.Lock()
		if !c.settled {
			c.replies <- r // never blocks: room for every HOLD in flight
			c.mu.Unlock()
			return
		}
		kept := c.kept
		c.mu.Unlock()
		if r.ok && r.id != kept {
			c.lock.release(c.base, c.wg, r.id, r.received.Add(r.left))
		}
	}()
	return call
}

// settle ends acquire's part: replies still to come are handled by their
// goroutines. kept is the lease acquire returned, or "".
func (c *holdCalls) settle(kept string) {
	c.mu.Lock()
	c.settled, c.kept = true, kept
	c.mu.Unlock()
	for {
		select {
		case r := <-c.replies: // arrived before settled: let go of a grant not kept
			if r.ok && r.id != kept {
				c.lock.release(c.base, c.wg, r.id, r.received.Add(r.left))
			}
		default:
			return
		}
	}
}

// abandon stops waiting for calls' reqid when ctx ends, and lets go of any
// grant that raced in. A HOLD with the same reqid and WAIT 0 answers the
// blocked HOLD at once (superseded), leaves the place to linger, passed
// over, and says whether a grant came first (then it is that grant,
// LOCK-03). abandon waits for the HOLDs still in flight too. A probe goes
// only before sendBy, the end of the reqid's window (SPEC §8): later, the
// store may have forgotten the reqid and would grant the probe a second
// lease. A lease granted before, its reply lost, runs out unrenewed.
func (l *Lock) abandon(ctx context.Context, calls *holdCalls, sendBy time.Time) error {
	notHeld := fmt.Errorf("%w: %s %q: %w", ErrNotHeld, l.name, calls.key, context.Cause(ctx))
	base, wg, key, reqid := calls.base, calls.wg, calls.key, calls.reqid
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

	known, probe := false, holdReply{}
	if time.Now().Before(sendBy) {
		probe = l.sendHold(base, key, reqid, 0, calls.shared)
		if probe.ok {
			letGo(probe.grant)
		}
		known = decided(probe)
	}
	for ; calls.inFlight > 0; calls.inFlight-- {
		r := <-calls.replies
		if r.ok {
			letGo(r.grant)
		}
		// A HOLD lost on the way may have been retried by the client
		// after the probe, and granted: only a probe sent after it
		// knows. Unless the probe found the grant already: a reqid has
		// one (LOCK-03), and it is released.
		if !decided(r) && !probe.ok {
			known = false
		}
	}
	for giveUp := time.Now().Add(l.ttl); !known && time.Now().Before(giveUp); {
		time.Sleep(l.ttl / 10)
		if !time.Now().Before(sendBy) {
			break
		}
		probe = l.sendHold(base, key, reqid, 0, calls.shared)
		if probe.ok {
			letGo(probe.grant)
		}
		known = decided(probe)
	}
	return notHeld
}

// tellsMore says whether the store's -LOST answer to a RELEASE sent after
// the holder gave the lease up by its own clock replaces the holder's
// reason. That reason stands unless the store tells more than it:
//
//   - The holder's "expired" or "revoked maxhold" is how the store itself
//     ends the lease, a margin later: the store's "expired" or "revoked
//     maxhold" says nothing new.
//   - "revoked by admin" does: the store records one end per lease, so the
//     revoke came before the store's own expiry or cap, unseen by the holder
//     (its renewals failed, or had stopped at the MaxHold cap).
//   - "unknown lease" on its own says nothing: the store forgets an ended
//     lease a ttl after its end, so a function that overran its lease by
//     more than about a ttl gets it whatever happened. Nor can the time of
//     the answer tell a restart from forgetting: an end the holder did not
//     see (a revoke soon after the last renewal) is forgotten a ttl later,
//     which may be soon after the holder's own deadline. What does tell is
//     the epoch: each open of the store is a new one and forgets every
//     lease (LOCK-10), and a fence carries the epoch it was granted in
//     (fence >> 32, SPEC §2). A store whose epoch is newer than the
//     lease's restarted after the lease's last renewal, and "unknown lease"
//     is that restart, the reason SPEC §4 gives it. Whether the restart came
//     before the holder's deadline or during the overrun cannot be told;
//     the restart is what the holder could not have known, so it is
//     reported. (An epoch is also bumped after 2^32 grants in one; then a
//     forgotten lease would be reported as a restart.) If the epoch cannot
//     be read, the holder's reason stands.
func (l *Lock) tellsMore(base context.Context, le *Lease, storeSays *LostError) bool {
	switch storeSays.Reason {
	case ReasonRevoked:
		return true
	case ReasonUnknownLease:
		ctx, cancel := context.WithTimeout(base, l.ttl)
		defer cancel()
		epoch, err := l.storeEpoch(ctx)
		return err == nil && epoch > le.Fence>>32
	}
	return false
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
// returns why the lease was lost, if it was before fn returned.
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
		// Every -LOST here is news, "unknown lease" included: the lease
		// was live at a renewal sent less than a ttl before this answer
		// (the holder's deadline had not passed), and the store remembers
		// an ended lease for a ttl after its end, so it cannot have
		// forgotten it: it restarted.
		if storeSays := l.release(base, &k.wg, le.id, deadline); storeSays != nil {
			le.lose(storeSays)
			lost = storeSays
		}
	case !lost.FromStore:
		// Given up by the holder's clock: the store may still hold it for
		// a margin. One try hands it to the next in line early.
		if storeSays := l.release(base, &k.wg, le.id, time.Now().Add(l.ttl/10)); storeSays != nil &&
			l.tellsMore(base, le, storeSays) {
			lost = storeSays
		}
	}
	k.wg.Wait()
	le.mu.Lock()
	le.closeDone()
	le.mu.Unlock()
	return lost
}

// holdResult is what Hold returns: fn's error, the lease's loss (ErrLost
// even when fn succeeded), or both.
func holdResult(fnErr error, lost *LostError) error {
	switch {
	case lost == nil:
		return fnErr
	case fnErr != nil:
		return errors.Join(fnErr, lost)
	default:
		return lost
	}
}

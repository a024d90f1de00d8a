package locks

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// The commands of SPEC §3 as the SDK sends them, and the retry helper that
// renewals and releases share.

// grant is a HOLD's answer, with the local times around it.
type grant struct {
	id       string
	fence    int64
	left     time.Duration // ttl left when the store answered
	sent     time.Time     // when this HOLD was sent: the deadline counts from it
	received time.Time
	// notBefore is no later than the grant: the send time of the oldest
	// HOLD of the reqid that may have been the one granted. MaxHold counts
	// from it (LOCK-07). Set by acquire; sent for a lone HOLD.
	notBefore time.Time
}

// holdReply is one HOLD's outcome: granted (ok), not granted within its WAIT
// (!ok, err nil), or an error.
type holdReply struct {
	grant
	ok  bool
	err error
	seq int // which of its Hold's HOLDs (see holdCalls)
	gen int // which of its Hold's reqids
}

// newReqID draws a request id: 128 random bits as 32 hex characters.
func newReqID() string {
	var b [16]byte
	rand.Read(b[:]) // never fails (crypto/rand)
	return hex.EncodeToString(b[:])
}

func ms(d time.Duration) int64 { return d.Milliseconds() }

// reqidWindow is how long after notBefore (no grant to a reqid came
// earlier) a HOLD may still carry that reqid (SPEC §8). The store remembers
// a reqid for at least the lease's ttl after the lease ends, and the lease
// starts at the grant, so until at least notBefore + ttl by its clock; the
// holder's margin is for the time the HOLD takes to get there.
func (l *Lock) reqidWindow() time.Duration { return l.ttl - l.margin }

// sendHold sends LOCK.HOLD with WAIT wait, once: the client may retry on its
// own (same reqid, so harmless, LOCK-03).
// Every HOLD of one reqid carries the same LIMIT, SHARED and OWNER: a
// retry with another limit would be refused (LOCK-15).
func (l *Lock) sendHold(ctx context.Context, key, reqid string, wait time.Duration, shared bool) holdReply {
	// WAIT rounds up: a Wait is waited in full.
	waitMs := (wait + time.Millisecond - 1) / time.Millisecond
	args := []any{"LOCK.HOLD", l.name, key, reqid, "TTL", ms(l.ttl), "WAIT", int64(waitMs)}
	if l.maxHold > 0 {
		args = append(args, "MAXHOLD", ms(l.maxHold))
	}
	switch {
	case l.limit > 1:
		args = append(args, "LIMIT", l.limit)
	case shared:
		args = append(args, "SHARED")
	}
	args = append(args, "OWNER", l.owner)
	sent := time.Now()
	cmd := l.store.Do(ctx, args...)
	r := holdReply{grant: grant{sent: sent, received: time.Now(), notBefore: sent}}
	vals, err := cmd.Slice()
	switch {
	case errors.Is(err, redis.Nil):
		return r
	case err != nil:
		r.err = err
		return r
	}
	if len(vals) != 3 {
		r.err = fmt.Errorf("locks: LOCK.HOLD replied %d values, want 3", len(vals))
		return r
	}
	id, ok1 := vals[0].(string)
	fence, ok2 := vals[1].(int64)
	left, ok3 := vals[2].(int64)
	if !ok1 || !ok2 || !ok3 || len(id) != 32 || fence <= 0 {
		r.err = fmt.Errorf("locks: LOCK.HOLD replied %v, want [leaseid fence ttl]", vals)
		return r
	}
	r.id, r.fence, r.left, r.ok = id, fence, time.Duration(left)*time.Millisecond, true
	return r
}

// renewed is a RENEW's answer: the time to the new deadline.
type renewed struct {
	left time.Duration
}

func (l *Lock) sendRenew(ctx context.Context, id string) (any, error) {
	n, err := l.store.Do(ctx, "LOCK.RENEW", id).Int64()
	if err != nil {
		return nil, err
	}
	return renewed{time.Duration(n) * time.Millisecond}, nil
}

func (l *Lock) sendRelease(ctx context.Context, id string) (any, error) {
	_, err := l.store.Do(ctx, "LOCK.RELEASE", id).Int64()
	return nil, err
}

// storeEpoch reads the store's epoch from INFO locks (SPEC §2, §6).
func (l *Lock) storeEpoch(ctx context.Context) (int64, error) {
	info, err := l.store.Do(ctx, "INFO", "locks").Text()
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "epoch:"); ok {
			return strconv.ParseInt(v, 10, 64)
		}
	}
	return 0, errors.New("locks: INFO locks has no epoch")
}

// outcome is one attempt's result and when it was sent.
type outcome struct {
	sent time.Time
	val  any
	err  error
}

// isLostReply is the decisive error of RENEW and RELEASE: the store says the
// lease has ended. Anything else may be retried until the deadline.
func isLostReply(err error) bool { return storeLost(err) != nil }

// attempts runs op until an attempt succeeds or fails decisively. A new
// attempt starts every `every` while none has, on whatever connection the
// client hands out: one that hangs (its reply lost) does not delay the next,
// up to maxInFlight outstanding. It gives up when until passes or stop is
// closed, returning the last failure and false. Attempts still outstanding
// then keep running to their end; wg counts them, so that their owner can
// wait for them. base gives each attempt its values (not its cancellation);
// each attempt's context ends at until, which bounds the client's own
// retries, and its reads too if it has ContextTimeoutEnabled.
func attempts(base context.Context, wg *sync.WaitGroup, stop <-chan struct{}, until time.Time, every time.Duration,
	op func(context.Context) (any, error), decisive func(error) bool,
) (outcome, bool) {
	results := make(chan outcome, maxInFlight)
	inFlight := 0
	next := time.NewTimer(0)
	defer next.Stop()
	end := time.NewTimer(time.Until(until))
	defer end.Stop()
	last := outcome{err: errors.New("no attempt answered in time")}
	for {
		select {
		case <-stop:
			return last, false
		case <-end.C:
			return last, false
		case <-next.C:
			next.Reset(every)
			if inFlight == maxInFlight {
				continue
			}
			inFlight++
			wg.Add(1)
			go func() {
				defer wg.Done()
				ctx, cancel := context.WithDeadline(base, until)
				defer cancel()
				sent := time.Now()
				v, err := op(ctx)
				results <- outcome{sent: sent, val: v, err: err}
			}()
		case r := <-results:
			inFlight--
			if r.err == nil || decisive(r.err) {
				return r, true
			}
			last = r
		}
	}
}

// release lets lease id go: RELEASE, retried with the same id until one is
// answered or until passes. It returns the store's -LOST answer, if any.
func (l *Lock) release(base context.Context, wg *sync.WaitGroup, id string, until time.Time) *LostError {
	out, ok := attempts(base, wg, nil, until, l.ttl/10, func(ctx context.Context) (any, error) {
		return l.sendRelease(ctx, id)
	}, isLostReply)
	if !ok {
		return nil
	}
	if le := storeLost(out.err); le != nil && le.Reason != ReasonReleased {
		return le
	}
	return nil
}

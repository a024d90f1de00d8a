package locks_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tenure-db/tenure/sdk/locks"
)

// LOCK-03: a HOLD whose reply is lost is asked again with the same request
// id, on another connection, and answered with the lease already given. The
// store's grants_total proves that there was one grant. Once the SDK retries
// (the client's own retries are off), once the client does.
func TestLostHoldReplyIsRetriedWithTheSameReqID(t *testing.T) {
	for _, tc := range []struct {
		name       string
		maxRetries int
	}{
		{"retried by the SDK", -1},
		{"retried by go-redis", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startServer(t)
			admin := s.Client()
			p := startProxy(t, s.Addr)
			c := newClient(t, p.Addr(), func(o *redis.Options) {
				o.ReadTimeout = 300 * time.Millisecond
				o.MaxRetries = tc.maxRetries
			})
			lk := openLock(t, c, "reports", locks.TTL(time.Second))

			var once atomic.Bool
			p.swallowReplies(func(req []string, reply []byte) bool {
				return isCmd(req, "LOCK.HOLD") && reply[0] == '*' && once.CompareAndSwap(false, true)
			})
			before := lockStats(t, admin)["grants_total"]

			var fence int64
			err := lk.Hold(context.Background(), "q3", func(ctx context.Context, lease *locks.Lease) error {
				fence = lease.Fence
				if info := keyInfo(t, admin, "reports", "q3"); info["fence"] != lease.Fence {
					t.Errorf("the store holds q3 with fence %d, the lease says %d", info["fence"], lease.Fence)
				}
				return nil
			})
			if err != nil {
				t.Fatalf("Hold: %v", err)
			}
			recv(t, p.swallowed, time.Second, "a swallowed reply")

			holds := p.requests("LOCK.HOLD")
			if len(holds) < 2 {
				t.Fatalf("%d HOLDs reached the store, want the lost one and its retry", len(holds))
			}
			for _, h := range holds[1:] {
				if h[3] != holds[0][3] {
					t.Errorf("retry carries reqid %s, the first HOLD %s", h[3], holds[0][3])
				}
			}
			if len(holds[0][3]) != 32 {
				t.Errorf("reqid %q: want 32 hex characters", holds[0][3])
			}
			if got := lockStats(t, admin)["grants_total"] - before; got != 1 {
				t.Errorf("grants_total grew by %d over %d HOLDs, want 1", got, len(holds))
			}
			if fence == 0 {
				t.Error("fn never ran")
			}
			t.Logf("%d HOLDs with one reqid, one grant (fence %#x)", len(holds), fence)
			noLeaks(t)
		})
	}
}

// Renewals keep a 1 s ttl lease through a 5 s function, while the proxy cuts
// every connection every 300 ms (LOCK-11: the lease outlives its connection
// and is renewed from the next).
func TestRenewalsOutliveCutConnections(t *testing.T) {
	s := startServer(t)
	admin := s.Client()
	p := startProxy(t, s.Addr)
	c := newClient(t, p.Addr())
	lk := openLock(t, c, "reports", locks.TTL(time.Second))

	stop := make(chan struct{})
	cuts := make(chan int, 1)
	go func() {
		n := 0
		tick := time.NewTicker(300 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				cuts <- n
				return
			case <-tick.C:
				if p.cutAll() > 0 {
					n++
				}
			}
		}
	}()

	before := lockStats(t, admin)["renewals_total"]
	var firstDeadline, lastDeadline time.Time
	err := lk.Hold(context.Background(), "long", func(ctx context.Context, lease *locks.Lease) error {
		firstDeadline = lease.Deadline()
		select {
		case <-time.After(5 * time.Second):
		case <-ctx.Done():
			return context.Cause(ctx)
		}
		lastDeadline = lease.Deadline()
		if err := lease.Lost(); err != nil {
			t.Errorf("Lost() = %v after 5 s", err)
		}
		return nil
	})
	close(stop)
	n := <-cuts
	if err != nil {
		t.Fatalf("Hold: %v", err)
	}
	renewals := lockStats(t, admin)["renewals_total"] - before
	if n < 10 {
		t.Errorf("only %d cuts", n)
	}
	if renewals < 10 {
		t.Errorf("%d renewals in 5 s of a 1 s ttl, want about 15", renewals)
	}
	if !lastDeadline.After(firstDeadline.Add(4 * time.Second)) {
		t.Errorf("deadline moved from %v to %v", firstDeadline, lastDeadline)
	}
	t.Logf("%d cuts, %d renewals", n, renewals)
	noLeaks(t)
}

// The store restarts mid-hold: fn's context is cancelled, Hold returns
// ErrLost with reason "unknown lease" (LOCK-10), and the next holder's
// fence is larger, from a new epoch (LOCK-02).
func TestRestartLosesTheLease(t *testing.T) {
	s := startServer(t)
	c := s.Client()
	lk := openLock(t, c, "reports", locks.TTL(time.Second))

	held := make(chan int64, 1)
	var cause error
	err := lk.Hold(context.Background(), "k", func(ctx context.Context, lease *locks.Lease) error {
		held <- lease.Fence
		s.Restart()
		select {
		case <-ctx.Done():
			cause = context.Cause(ctx)
		case <-time.After(5 * time.Second):
			t.Error("fn's context outlived the restart by 5 s")
		}
		return nil // the function succeeded; the lease did not
	})
	first := <-held
	if !errors.Is(err, locks.ErrLost) || lostReason(err) != locks.ReasonUnknownLease {
		t.Fatalf("Hold = %v, want lost: unknown lease", err)
	}
	if !errors.Is(cause, locks.ErrLost) {
		t.Errorf("context.Cause = %v, want a *LostError", cause)
	}

	var second int64
	waitFor(t, 5*time.Second, "the restarted server", func() bool { return c.Ping(context.Background()).Err() == nil })
	if err := lk.Hold(context.Background(), "k", func(ctx context.Context, lease *locks.Lease) error {
		second = lease.Fence
		return nil
	}); err != nil {
		t.Fatalf("Hold after the restart: %v", err)
	}
	if second <= first || second>>32 <= first>>32 {
		t.Errorf("fence after the restart %#x, before %#x: want a larger one from a later epoch", second, first)
	}
	t.Logf("cause %v; fences %#x then %#x", cause, first, second)
	noLeaks(t)
}

// MaxHold: fn's context ends at MaxHold - margin after the grant, renewals
// notwithstanding, and Hold reports the lease lost, revoked maxhold (LOCK-07).
func TestMaxHoldEndsTheFunction(t *testing.T) {
	s := startServer(t)
	lk := openLock(t, s.Client(), "reports", locks.TTL(time.Second), locks.MaxHold(1500*time.Millisecond))
	const margin = 100 * time.Millisecond // min(ttl/10, 2 s)

	start := time.Now()
	var fnStart, ended time.Time
	var cause error
	err := lk.Hold(context.Background(), "k", func(ctx context.Context, lease *locks.Lease) error {
		fnStart = time.Now()
		select {
		case <-ctx.Done():
			ended, cause = time.Now(), context.Cause(ctx)
		case <-time.After(5 * time.Second):
			t.Error("fn's context outlived MaxHold")
		}
		return nil
	})
	if !errors.Is(err, locks.ErrLost) || lostReason(err) != locks.ReasonMaxHold {
		t.Fatalf("Hold = %v, want lost: revoked maxhold", err)
	}
	if lostReason(cause) != locks.ReasonMaxHold {
		t.Errorf("context.Cause = %v, want revoked maxhold", cause)
	}
	want := 1500*time.Millisecond - margin
	if got := ended.Sub(start); got < want {
		t.Errorf("fn's context ended %v after Hold was called, before MaxHold - margin = %v", got, want)
	}
	if late := ended.Sub(fnStart) - want; late > 400*time.Millisecond {
		t.Errorf("fn's context ended %v after MaxHold - margin", late)
	}
	t.Logf("fn's context ended %v after fn started (MaxHold - margin = %v): %v", ended.Sub(fnStart), want, cause)
	noLeaks(t)
}

// An admin's LOCK.REVOKE reaches the holder at its next renewal. fn fails
// too: Hold returns both errors (errors.Join).
func TestRevokedByAdmin(t *testing.T) {
	errFn := errors.New("fn failed")
	s := startServer(t)
	admin := s.Client()
	lk := openLock(t, s.Client(), "reports", locks.TTL(time.Second))

	var cause error
	var revokedAt, noticed time.Time
	err := lk.Hold(context.Background(), "k", func(ctx context.Context, lease *locks.Lease) error {
		revokedAt = time.Now()
		if n, err := admin.Do(ctx, "LOCK.REVOKE", "reports", "k").Int(); n != 1 || err != nil {
			t.Errorf("LOCK.REVOKE = %d, %v", n, err)
		}
		<-ctx.Done()
		noticed, cause = time.Now(), context.Cause(ctx)
		return errFn
	})
	if !errors.Is(err, locks.ErrLost) || lostReason(err) != locks.ReasonRevoked || !errors.Is(err, errFn) {
		t.Fatalf("Hold = %v, want fn's error and lost: revoked by admin", err)
	}
	var le *locks.LostError
	if !errors.As(cause, &le) || !le.FromStore {
		t.Errorf("context.Cause = %#v, want the store's -LOST", cause)
	}
	// By the next renewal, at ttl/3; "expired" would have come later.
	if d := noticed.Sub(revokedAt); d > time.Second {
		t.Errorf("revocation noticed after %v, want by the next renewal (ttl/3)", d)
	} else {
		t.Logf("revocation noticed after %v", d)
	}
	noLeaks(t)
}

// A holder whose store stops answering gives the lease up at its own
// deadline, before the store's: when fn's context ends, the store still
// shows the lease live.
func TestHolderGivesUpBeforeTheStore(t *testing.T) {
	s := startServer(t)
	admin := s.Client()
	p := startProxy(t, s.Addr)
	c := newClient(t, p.Addr(), func(o *redis.Options) {
		o.ReadTimeout = 200 * time.Millisecond // a renewal's failure is known well before the deadline
		o.MaxRetries = -1
	})
	lk := openLock(t, c, "reports", locks.TTL(time.Second))

	var cause error
	var storeTTL int64
	err := lk.Hold(context.Background(), "k", func(ctx context.Context, lease *locks.Lease) error {
		p.swallowReplies(func([]string, []byte) bool { return true }) // the store goes silent
		<-ctx.Done()
		cause = context.Cause(ctx)
		storeTTL = keyInfo(t, admin, "reports", "k")["ttl"]
		return nil
	})
	if !errors.Is(err, locks.ErrLost) || lostReason(err) != locks.ReasonExpired {
		t.Fatalf("Hold = %v, want lost: expired", err)
	}
	var le *locks.LostError
	if !errors.As(cause, &le) || le.FromStore || le.Err == nil {
		t.Errorf("context.Cause = %v, want the holder's own deadline with the renewal error", cause)
	}
	if storeTTL <= 0 {
		t.Errorf("when the holder gave up the store had %d ms left, want a live lease", storeTTL)
	}
	t.Logf("gave up with %d ms left at the store: %v", storeTTL, cause)
	noLeaks(t)
}

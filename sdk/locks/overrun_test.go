package locks_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tenure-db/tenure/resp/resptest"
	"github.com/tenure-db/tenure/sdk/locks"
)

// overrun runs one Hold on a 1 s ttl whose fn ignores its context: once the
// context ends it goes on for overrun more, then returns nil. at.start runs
// when fn starts, at.lost when its context has ended. The SDK's client goes
// through a proxy: when silent, the store's replies are swallowed from fn's
// start until the overrun is over, so that renewals fail. It returns Hold's
// error, the context's cause, and what the store answered to the final
// RELEASE ("" if none came back).
func overrun(t *testing.T, overrun time.Duration, silent bool, at overrunHooks, opts ...locks.Option) (err, cause error, released string) {
	t.Helper()
	s := startServer(t)
	p := startProxy(t, s.Addr)
	c := newClient(t, p.Addr(), func(o *redis.Options) {
		o.ReadTimeout = 200 * time.Millisecond // a renewal's failure is known well before the deadline
		o.MaxRetries = -1
	})
	lk := openLock(t, c, "overrun", append([]locks.Option{locks.TTL(time.Second)}, opts...)...)

	var mu sync.Mutex
	err = lk.Hold(context.Background(), "k", func(ctx context.Context, lease *locks.Lease) error {
		if silent {
			p.swallowReplies(func([]string, []byte) bool { return true })
		}
		if at.start != nil {
			at.start(s)
		}
		select {
		case <-ctx.Done():
			cause = context.Cause(ctx)
		case <-time.After(5 * time.Second):
			t.Error("fn's context outlived the lease by seconds")
		}
		if at.lost != nil {
			at.lost(s)
		}
		time.Sleep(overrun) // the function ignores its context
		p.swallowReplies(func(req []string, reply []byte) bool {
			if isCmd(req, "LOCK.RELEASE") {
				mu.Lock()
				released = strings.TrimSpace(string(reply))
				mu.Unlock()
			}
			return false
		})
		return nil
	})
	mu.Lock()
	defer mu.Unlock()
	return err, cause, released
}

type overrunHooks struct {
	start, lost func(s *resptest.Server)
}

// A lease lost by the holder's own clock keeps the reason the holder knew,
// whatever the store answers to the RELEASE sent when fn returns, for a
// function that overruns its lease by 0.2 s, 2 s or 5 s. With MaxHold (the
// store revokes at the cap, LOCK-07, and forgets the ended lease a ttl
// later) and with expiry (renewals fail, LOCK-06): the store's "unknown
// lease" for a lease it has forgotten is not what happened (SPEC §4 gives
// it to a restart).
func TestOverrunKeepsTheHoldersReason(t *testing.T) {
	t.Cleanup(func() { noLeaks(t) }) // once the parallel subtests are done
	for _, tc := range []struct {
		name   string
		reason string
		silent bool
		opts   []locks.Option
	}{
		{"maxhold", locks.ReasonMaxHold, false, []locks.Option{locks.MaxHold(time.Second)}},
		{"expired", locks.ReasonExpired, true, nil},
	} {
		for _, d := range []time.Duration{200 * time.Millisecond, 2 * time.Second, 5 * time.Second} {
			t.Run(fmt.Sprintf("%s by %v", tc.name, d), func(t *testing.T) {
				t.Parallel()
				err, cause, released := overrun(t, d, tc.silent, overrunHooks{}, tc.opts...)
				if !errors.Is(err, locks.ErrLost) || lostReason(err) != tc.reason {
					t.Errorf("Hold = %v, want lost: %s", err, tc.reason)
				}
				if lostReason(cause) != tc.reason {
					t.Errorf("context.Cause = %v, want %s", cause, tc.reason)
				}
				t.Logf("RELEASE answered %q; Hold: %v", released, err)
			})
		}
	}
}

// The store's answer replaces the holder's reason when it tells more: an
// admin revoked the lease before the store's own end, unseen by the holder
// whose renewals failed; or the store restarted (a new epoch, LOCK-10)
// while fn overran its MaxHold.
func TestOverrunReportsWhatTheStoreKnowsBetter(t *testing.T) {
	t.Cleanup(func() { noLeaks(t) }) // once the parallel subtests are done
	for _, tc := range []struct {
		name    string
		reason  string
		silent  bool
		overrun time.Duration
		at      overrunHooks
		opts    []locks.Option
	}{
		{
			name: "revoked by admin, unseen", reason: locks.ReasonRevoked, silent: true, overrun: 200 * time.Millisecond,
			at: overrunHooks{start: func(s *resptest.Server) {
				time.Sleep(400 * time.Millisecond) // after a renewal the store took and the holder never heard of
				if n, err := s.Client().Do(context.Background(), "LOCK.REVOKE", "overrun", "k").Int(); n != 1 || err != nil {
					t.Errorf("LOCK.REVOKE = %d, %v", n, err)
				}
			}},
		},
		{
			name: "restarted while fn overran its MaxHold", reason: locks.ReasonUnknownLease, overrun: 2 * time.Second,
			at:   overrunHooks{lost: func(s *resptest.Server) { s.Restart() }},
			opts: []locks.Option{locks.MaxHold(time.Second)},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err, _, released := overrun(t, tc.overrun, tc.silent, tc.at, tc.opts...)
			if !errors.Is(err, locks.ErrLost) || lostReason(err) != tc.reason {
				t.Errorf("Hold = %v, want lost: %s", err, tc.reason)
			}
			t.Logf("RELEASE answered %q; Hold: %v", released, err)
		})
	}
}

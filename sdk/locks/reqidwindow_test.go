package locks_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tenure-db/tenure/sdk/locks"
)

// The reqid window (SPEC §8, LOCK-03): the store remembers a reqid until at
// least a ttl after the earliest time a grant to it can have come, the send
// of the oldest HOLD not answered null or "superseded". The SDK sends a HOLD
// with that reqid only before that time less the holder's margin; past it, a
// lost reply is asked again with a fresh reqid.

// grantsByReqID records, from every HOLD reply the proxy forwards or
// swallows, the lease ids each reqid was answered with.
type grantsByReqID struct {
	mu     sync.Mutex
	leases map[string]map[string]bool
}

func (g *grantsByReqID) note(req []string, reply []byte) {
	if !isCmd(req, "LOCK.HOLD") || len(req) < 4 || reply[0] != '*' {
		return
	}
	// *3 $32 <leaseid> :fence :ttl
	parts := strings.Split(string(reply), "\r\n")
	if len(parts) < 3 {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.leases == nil {
		g.leases = map[string]map[string]bool{}
	}
	if g.leases[req[3]] == nil {
		g.leases[req[3]] = map[string]bool{}
	}
	g.leases[req[3]][parts[2]] = true
}

// oneEach fails the test if any reqid was answered with two leases.
func (g *grantsByReqID) oneEach(t *testing.T) {
	t.Helper()
	g.mu.Lock()
	defer g.mu.Unlock()
	for reqid, ls := range g.leases {
		if len(ls) != 1 {
			t.Errorf("LOCK-03: reqid %s was granted %d leases: %v", reqid, len(ls), ls)
		}
	}
}

// heldWithin checks that every HOLD of each reqid reached the store before
// that reqid's first HOLD + window (no HOLD of it was answered null or
// superseded in these tests, so the first HOLD's send starts the window),
// and returns the reqids in the order they were first used.
func heldWithin(t *testing.T, p *proxy, window time.Duration) []string {
	t.Helper()
	holds, at := p.requestsAt("LOCK.HOLD")
	first := map[string]time.Time{}
	var order []string
	for i, h := range holds {
		f, ok := first[h[3]]
		if !ok {
			first[h[3]], order = at[i], append(order, h[3])
			continue
		}
		if late := at[i].Sub(f); late >= window {
			t.Errorf("a HOLD with reqid %s reached the store %v after its first, past the window of %v", h[3], late, window)
		}
	}
	return order
}

// Every reply to the first reqid's HOLDs is lost (the first is granted at
// once, and the chunks after it are answered the same lease). The SDK
// retries with that reqid within its window only, then with a fresh one,
// which is granted once the orphan lease has run out: two grants, one per
// reqid, and fn runs under the second.
func TestLostRepliesPastTheReqIDWindowUseAFreshReqID(t *testing.T) {
	s := startServer(t)
	admin := s.Client()
	p := startProxy(t, s.Addr)
	c := newClient(t, p.Addr(), func(o *redis.Options) {
		o.ReadTimeout = 950 * time.Millisecond // chunks of 475 ms: replies lost past the window
		o.MaxRetries = -1
	})
	const ttl = time.Second
	lk := openLock(t, c, "reports", locks.TTL(ttl))
	window := ttl - ttl/10

	var (
		grants   grantsByReqID
		mu       sync.Mutex
		lostReq  string // the reqid whose replies are lost
		orphanAt time.Time
	)
	p.swallowReplies(func(req []string, reply []byte) bool {
		grants.note(req, reply)
		if !isCmd(req, "LOCK.HOLD") {
			return false
		}
		mu.Lock()
		defer mu.Unlock()
		if lostReq == "" {
			lostReq, orphanAt = req[3], time.Now()
		}
		return req[3] == lostReq
	})
	before := lockStats(t, admin)["grants_total"]

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var fence int64
	var ranAt time.Time
	err := lk.Hold(ctx, "q3", func(ctx context.Context, lease *locks.Lease) error {
		fence, ranAt = lease.Fence, time.Now()
		if info := keyInfo(t, admin, "reports", "q3"); info["fence"] != lease.Fence {
			t.Errorf("the store holds q3 with fence %d, the lease says %d", info["fence"], lease.Fence)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Hold: %v", err)
	}
	reqids := heldWithin(t, p, window)
	if len(reqids) != 2 {
		t.Fatalf("HOLDs carried %d reqids %v, want the lost one and a fresh one", len(reqids), reqids)
	}
	if reqids[0] != lostReq {
		t.Errorf("the first reqid is %s, the lost one %s", reqids[0], lostReq)
	}
	grants.oneEach(t)
	if got := lockStats(t, admin)["grants_total"] - before; got != 2 {
		t.Errorf("grants_total grew by %d, want 2: the orphan lease of the lost reqid, and fn's", got)
	}
	mu.Lock()
	if ranAt.Sub(orphanAt) < ttl-50*time.Millisecond {
		t.Errorf("fn ran %v after the orphan's grant, before the orphan lease (ttl %v) ran out", ranAt.Sub(orphanAt), ttl)
	}
	mu.Unlock()
	if fence == 0 {
		t.Error("fn never ran")
	}
	t.Logf("reqids %v, fn ran %v after the lost grant, fence %#x", reqids, ranAt.Sub(orphanAt), fence)
	noLeaks(t)
}

// A Hold whose context ends after its reqid's window, its grant's replies
// lost, sends no probe with that reqid: the store may have forgotten it and
// would grant the probe a second lease. The orphan lease runs out unrenewed.
func TestAbandonPastTheReqIDWindowSendsNoProbe(t *testing.T) {
	s := startServer(t)
	admin := s.Client()
	p := startProxy(t, s.Addr)
	c := newClient(t, p.Addr(), func(o *redis.Options) {
		o.ReadTimeout = 2 * time.Second // the lost replies hang 2 s
		o.MaxRetries = -1
	})
	const ttl = time.Second
	lk := openLock(t, c, "reports", locks.TTL(ttl))
	window := ttl - ttl/10

	var grants grantsByReqID
	p.swallowReplies(func(req []string, reply []byte) bool {
		grants.note(req, reply)
		return isCmd(req, "LOCK.HOLD")
	})
	before := lockStats(t, admin)["grants_total"]

	ctx, cancel := context.WithTimeout(context.Background(), 1200*time.Millisecond)
	defer cancel()
	err := lk.Hold(ctx, "q3", func(ctx context.Context, lease *locks.Lease) error {
		t.Error("fn ran on a grant whose every reply was lost")
		return nil
	})
	if !errors.Is(err, locks.ErrNotHeld) {
		t.Fatalf("Hold = %v, want ErrNotHeld", err)
	}
	if reqids := heldWithin(t, p, window); len(reqids) != 1 {
		t.Errorf("HOLDs carried reqids %v, want one", reqids)
	}
	grants.oneEach(t)
	if got := lockStats(t, admin)["grants_total"] - before; got != 1 {
		t.Errorf("grants_total grew by %d, want 1", got)
	}
	// Nobody renews the orphan: it runs out at its deadline.
	waitFor(t, 3*time.Second, "the orphan lease to run out", func() bool {
		return keyInfo(t, admin, "reports", "q3")["fence"] == 0
	})
	noLeaks(t)
}

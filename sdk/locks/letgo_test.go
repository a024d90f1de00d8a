package locks_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tenure-db/tenure"
	"github.com/tenure-db/tenure/resp"
	"github.com/tenure-db/tenure/resp/resptest"
	"github.com/tenure-db/tenure/sdk/locks"
)

// handoffLimit is "at once": well under the 1 s ttl that a key not let go
// would take to come back.
const handoffLimit = 400 * time.Millisecond

// holdInBackground runs Hold in a goroutine. fn's start is sent on started;
// Hold's error, or its panic, on the returned channel.
type holdResult struct {
	err       error
	recovered any
}

func holdInBackground(ctx context.Context, lk *locks.Lock, key string, fn func(context.Context, *locks.Lease) error) <-chan holdResult {
	out := make(chan holdResult, 1)
	go func() {
		var r holdResult
		defer func() {
			r.recovered = recover()
			out <- r
		}()
		r.err = lk.Hold(ctx, key, fn)
	}()
	return out
}

// The function returning an error, and panicking: the lease is released
// each time, and the next waiter gets the key at once.
func TestLetGoOnReturnAndPanic(t *testing.T) {
	errBoom := errors.New("boom")
	for _, tc := range []struct {
		name  string
		end   func() error
		check func(t *testing.T, r holdResult)
	}{
		{
			name: "fn returns an error",
			end:  func() error { return errBoom },
			check: func(t *testing.T, r holdResult) {
				if !errors.Is(r.err, errBoom) || errors.Is(r.err, locks.ErrLost) {
					t.Errorf("Hold = %v, want fn's error alone", r.err)
				}
			},
		},
		{
			name: "fn panics",
			end:  func() error { panic(errBoom) },
			check: func(t *testing.T, r holdResult) {
				if r.recovered != errBoom {
					t.Errorf("recovered %v, want fn's panic passed on", r.recovered)
				}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startServer(t)
			admin := s.Client()
			lk := openLock(t, s.Client(), "handoff", locks.TTL(time.Second))

			held, end := make(chan struct{}), make(chan struct{})
			var endedAt time.Time
			first := holdInBackground(context.Background(), lk, "k", func(ctx context.Context, lease *locks.Lease) error {
				close(held)
				<-end
				endedAt = time.Now()
				return tc.end()
			})
			recv(t, held, 5*time.Second, "the first holder")

			next := make(chan time.Time, 1)
			second := holdInBackground(context.Background(), lk, "k", func(ctx context.Context, lease *locks.Lease) error {
				next <- time.Now()
				return nil
			})
			waitersAre(t, admin, "handoff", "k", 1)

			close(end)
			r := recv(t, first, 5*time.Second, "the first Hold")
			handoff := recv(t, next, 5*time.Second, "the next waiter").Sub(endedAt)
			tc.check(t, r)
			if handoff > handoffLimit {
				t.Errorf("the next waiter got the key %v after fn ended, want at once", handoff)
			}
			if r := recv(t, second, 5*time.Second, "the second Hold"); r.err != nil {
				t.Errorf("second Hold: %v", r.err)
			}
			t.Logf("handoff %v", handoff)
			noLeaks(t)
		})
	}
}

// The caller's context ends while Hold waits in line: Hold returns ErrNotHeld
// (and the cause) at once, fn never runs, its place is passed over, and
// the next waiter gets the key as soon as the holder lets go.
func TestCancelWhileWaiting(t *testing.T) {
	s := startServer(t)
	admin := s.Client()
	lk := openLock(t, s.Client(), "handoff", locks.TTL(time.Second))

	held, end := make(chan struct{}), make(chan struct{})
	var endedAt time.Time
	first := holdInBackground(context.Background(), lk, "k", func(ctx context.Context, lease *locks.Lease) error {
		close(held)
		<-end
		endedAt = time.Now()
		return nil
	})
	recv(t, held, 5*time.Second, "the first holder")

	ctx, cancel := context.WithCancel(context.Background())
	var ranB atomic.Bool
	b := holdInBackground(ctx, lk, "k", func(context.Context, *locks.Lease) error { ranB.Store(true); return nil })
	waitersAre(t, admin, "handoff", "k", 1)
	next := make(chan time.Time, 1)
	c := holdInBackground(context.Background(), lk, "k", func(ctx context.Context, lease *locks.Lease) error {
		next <- time.Now()
		return nil
	})
	waitersAre(t, admin, "handoff", "k", 2)

	cancelled := time.Now()
	cancel()
	r := recv(t, b, 5*time.Second, "the cancelled Hold")
	if !errors.Is(r.err, locks.ErrNotHeld) || !errors.Is(r.err, context.Canceled) {
		t.Errorf("cancelled Hold = %v, want ErrNotHeld and context.Canceled", r.err)
	}
	if d := time.Since(cancelled); d > handoffLimit {
		t.Errorf("cancelled Hold returned %v after the cancel", d)
	}
	if ranB.Load() {
		t.Error("the cancelled Hold ran fn")
	}

	close(end)
	recv(t, first, 5*time.Second, "the first Hold")
	if handoff := recv(t, next, 5*time.Second, "the next waiter").Sub(endedAt); handoff > handoffLimit {
		t.Errorf("the waiter behind the cancelled one got the key %v after the holder let go", handoff)
	} else {
		t.Logf("handoff past the cancelled place %v", handoff)
	}
	if r := recv(t, c, 5*time.Second, "the last Hold"); r.err != nil {
		t.Errorf("last Hold: %v", r.err)
	}
	noLeaks(t)
}

// The caller's context ends just after the store granted the key to the
// waiting Hold, whose reply is lost on the way: Hold finds the grant (a HOLD
// with the same reqid answers it) and releases it, so the next waiter gets
// the key at once rather than after the ttl.
func TestCancelReleasesARacingGrant(t *testing.T) {
	s := startServer(t)
	admin := s.Client()
	direct := openLock(t, s.Client(), "handoff", locks.TTL(time.Second))
	p := startProxy(t, s.Addr)
	viaProxy := openLock(t, newClient(t, p.Addr(), func(o *redis.Options) {
		o.ReadTimeout = 2 * time.Second // waits in 1 s chunks
		o.MaxRetries = -1
	}), "handoff", locks.TTL(time.Second))

	held, end := make(chan struct{}), make(chan struct{})
	first := holdInBackground(context.Background(), direct, "k", func(ctx context.Context, lease *locks.Lease) error {
		close(held)
		<-end
		return nil
	})
	recv(t, held, 5*time.Second, "the first holder")

	var once atomic.Bool
	p.swallowReplies(func(req []string, reply []byte) bool {
		return isCmd(req, "LOCK.HOLD") && reply[0] == '*' && once.CompareAndSwap(false, true)
	})
	ctx, cancel := context.WithCancel(context.Background())
	var ranB atomic.Bool
	b := holdInBackground(ctx, viaProxy, "k", func(context.Context, *locks.Lease) error { ranB.Store(true); return nil })
	waitersAre(t, admin, "handoff", "k", 1)
	next := make(chan int64, 1)
	var nextAt time.Time
	c := holdInBackground(context.Background(), direct, "k", func(ctx context.Context, lease *locks.Lease) error {
		nextAt = time.Now()
		next <- lease.Fence
		return nil
	})
	waitersAre(t, admin, "handoff", "k", 2)
	before := lockStats(t, admin)["grants_total"]

	close(end) // the store grants the key to b; its reply is swallowed
	recv(t, first, 5*time.Second, "the first Hold")
	recv(t, p.swallowed, 5*time.Second, "the swallowed grant")
	grantedB := time.Now()
	bFence := keyInfo(t, admin, "handoff", "k")["fence"]
	cancel()

	fence := recv(t, next, 5*time.Second, "the next waiter")
	handoff := nextAt.Sub(grantedB)
	r := recv(t, b, 5*time.Second, "the cancelled Hold")
	if !errors.Is(r.err, locks.ErrNotHeld) || !errors.Is(r.err, context.Canceled) {
		t.Errorf("cancelled Hold = %v, want ErrNotHeld and context.Canceled", r.err)
	}
	if ranB.Load() {
		t.Error("the cancelled Hold ran fn")
	}
	if handoff > handoffLimit {
		t.Errorf("the next waiter got the key %v after the raced grant, want at once", handoff)
	}
	if fence != bFence+1 {
		t.Errorf("next fence %#x after the raced grant's %#x: want the grant after it", fence, bFence)
	}
	if got := lockStats(t, admin)["grants_total"] - before; got != 2 {
		t.Errorf("%d grants, want 2: the raced one, found again by its reqid, and the next waiter's", got)
	}
	if r := recv(t, c, 5*time.Second, "the last Hold"); r.err != nil {
		t.Errorf("last Hold: %v", r.err)
	}
	t.Logf("raced grant released; handoff %v", handoff)
	noLeaks(t)
}

// TryHold on a held key returns ErrNotHeld at once; Wait(d) returns it once
// d has elapsed. fn runs in neither.
func TestNotHeld(t *testing.T) {
	s := startServer(t)
	c := s.Client()
	lk := openLock(t, c, "busy", locks.TTL(time.Second))
	held, end := make(chan struct{}), make(chan struct{})
	first := holdInBackground(context.Background(), lk, "k", func(ctx context.Context, lease *locks.Lease) error {
		close(held)
		<-end
		return nil
	})
	recv(t, held, 5*time.Second, "the holder")
	never := func(context.Context, *locks.Lease) error {
		t.Error("fn ran on a key held by another")
		return nil
	}

	start := time.Now()
	err := lk.TryHold(context.Background(), "k", never)
	if took := time.Since(start); !errors.Is(err, locks.ErrNotHeld) || took > 100*time.Millisecond {
		t.Errorf("TryHold = %v after %v, want ErrNotHeld at once", err, took)
	}

	const wait = 300 * time.Millisecond
	start = time.Now()
	err = openLock(t, c, "busy", locks.TTL(time.Second), locks.Wait(wait)).Hold(context.Background(), "k", never)
	if took := time.Since(start); !errors.Is(err, locks.ErrNotHeld) || took < wait || took > wait+time.Second {
		t.Errorf("Hold with Wait(%v) = %v after %v, want ErrNotHeld after the wait", wait, err, took)
	}

	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	err = lk.Hold(ctx, "k", never)
	if !errors.Is(err, locks.ErrNotHeld) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Hold past ctx's deadline = %v, want ErrNotHeld and DeadlineExceeded", err)
	}

	close(end)
	recv(t, first, 5*time.Second, "the holder's Hold")
	ran := false
	if err := lk.TryHold(context.Background(), "k", func(context.Context, *locks.Lease) error { ran = true; return nil }); err != nil || !ran {
		t.Errorf("TryHold on a free key = %v, ran %v", err, ran)
	}
	noLeaks(t)
}

// Waiting is done in chunks of half the client's ReadTimeout, all with one
// reqid; a wait much longer than the read timeout and than the ttl ends in a
// grant, renewed before fn starts so that fn gets a whole lease.
func TestWaitingInChunks(t *testing.T) {
	s := startServer(t)
	admin := s.Client()
	p := startProxy(t, s.Addr)
	lk := openLock(t, newClient(t, p.Addr(), func(o *redis.Options) { o.ReadTimeout = 200 * time.Millisecond }),
		"chunks", locks.TTL(time.Second))
	holder := openLock(t, s.Client(), "chunks", locks.TTL(time.Second))

	held, end := make(chan struct{}), make(chan struct{})
	first := holdInBackground(context.Background(), holder, "k", func(ctx context.Context, lease *locks.Lease) error {
		close(held)
		<-end
		return nil
	})
	recv(t, held, 5*time.Second, "the holder")
	got := make(chan time.Duration, 1)
	waiter := holdInBackground(context.Background(), lk, "k", func(ctx context.Context, lease *locks.Lease) error {
		got <- time.Until(lease.Deadline())
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(500 * time.Millisecond):
			return nil
		}
	})
	waitersAre(t, admin, "chunks", "k", 1)
	time.Sleep(1500 * time.Millisecond) // the wait under test: several chunks, longer than the ttl
	close(end)
	recv(t, first, 5*time.Second, "the holder's Hold")
	left := recv(t, got, 5*time.Second, "the waiter's grant")
	if r := recv(t, waiter, 5*time.Second, "the waiter's Hold"); r.err != nil {
		t.Fatalf("waiter's Hold: %v", r.err)
	}
	holds := p.requests("LOCK.HOLD")
	if len(holds) < 3 { // about 15 on an idle machine
		t.Errorf("%d HOLDs in 1.5 s of 100 ms chunks", len(holds))
	}
	for _, h := range holds {
		if h[3] != holds[0][3] || h[7] != "100" {
			t.Errorf("HOLD %v: want reqid %s and WAIT 100", h, holds[0][3])
			break
		}
	}
	if left < 700*time.Millisecond {
		t.Errorf("fn started with %v to the holder's deadline, want most of the ttl", left)
	}
	t.Logf("%d HOLDs, one reqid; fn started with %v left", len(holds), left)
	noLeaks(t)
}

// 100 concurrent Holds on 10 keys: one holder per key at a time (LOCK-01),
// fences growing per key, fenced writes accepted, and no goroutine left.
// This test is about exclusion, not timing: its 5 s ttl keeps 100 holders
// connecting at once on a busy machine (-race, 2 cores) from losing leases.
// Should one be lost all the same, the overlap it allows must be reported:
// two holders may only overlap if one of their Holds returns ErrLost.
func TestManyHolders(t *testing.T) {
	s := startServer(t)
	// Each Hold waiting in line keeps a connection: the pool has room for all.
	c := newClient(t, s.Addr, func(o *redis.Options) { o.PoolSize = 128 })
	lk := openLock(t, c, "many", locks.TTL(5*time.Second))

	var (
		mu        sync.Mutex
		holding   = map[string][]int64{} // key -> fences of the fns running on it
		lastFence = map[string]int64{}
		overlaps  [][2]int64
		lost      = map[int64]bool{}
		wg        sync.WaitGroup
	)
	start := time.Now()
	for i := range 100 {
		key := fmt.Sprintf("k%d", i%10)
		wg.Add(1)
		go func() {
			defer wg.Done()
			var fence int64
			err := lk.Hold(context.Background(), key, func(ctx context.Context, lease *locks.Lease) error {
				fence = lease.Fence
				mu.Lock()
				for _, other := range holding[key] {
					overlaps = append(overlaps, [2]int64{other, fence})
				}
				holding[key] = append(holding[key], fence)
				if fence <= lastFence[key] {
					t.Errorf("%s: fence %#x after %#x", key, fence, lastFence[key])
				}
				lastFence[key] = fence
				mu.Unlock()
				err := c.Do(ctx, "SET", "data:"+key, i, "FENCE", fence).Err()
				mu.Lock()
				for j, f := range holding[key] {
					if f == fence {
						holding[key] = append(holding[key][:j], holding[key][j+1:]...)
						break
					}
				}
				mu.Unlock()
				return err
			})
			if errors.Is(err, locks.ErrLost) {
				mu.Lock()
				lost[fence] = true
				mu.Unlock()
			}
			if err != nil {
				t.Errorf("Hold %s: %v", key, err)
			}
		}()
	}
	wg.Wait()
	for _, o := range overlaps {
		if !lost[o[0]] && !lost[o[1]] {
			t.Errorf("fences %#x and %#x held one key at once, and neither Hold said ErrLost", o[0], o[1])
		}
	}
	t.Logf("100 Holds on 10 keys in %v", time.Since(start))
	noLeaks(t)
}

// A user that may only read cannot hold (LOCK-09): Hold returns the store's
// NOPERM at once, without retrying it for a ttl, and fn does not run.
func TestReadOnlyUserCannotHold(t *testing.T) {
	sum := func(pw string) string { h := sha256.Sum256([]byte(pw)); return hex.EncodeToString(h[:]) }
	users, err := resp.ParseUsers(strings.NewReader(
		"user reader read sha256:" + sum("r") + "\nuser worker write sha256:" + sum("w") + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	s := resptest.Start(t, tenure.Options{Users: users})
	reader := newClient(t, s.Addr, func(o *redis.Options) { o.Username, o.Password = "reader", "r" })
	worker := newClient(t, s.Addr, func(o *redis.Options) { o.Username, o.Password = "worker", "w" })

	start := time.Now()
	err = openLock(t, reader, "jobs", locks.TTL(time.Second)).Hold(context.Background(), "k", func(context.Context, *locks.Lease) error {
		t.Error("a read-only user ran fn")
		return nil
	})
	if err == nil || !strings.Contains(err.Error(), "NOPERM") || errors.Is(err, locks.ErrNotHeld) {
		t.Errorf("Hold as a reader = %v, want the store's NOPERM", err)
	}
	if took := time.Since(start); took > 500*time.Millisecond {
		t.Errorf("NOPERM took %v: retried?", took)
	}
	if err := openLock(t, worker, "jobs", locks.TTL(time.Second)).Hold(context.Background(), "k", func(context.Context, *locks.Lease) error {
		return nil
	}); err != nil {
		t.Errorf("Hold as a writer: %v", err)
	}
	noLeaks(t)
}

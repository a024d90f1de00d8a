package locks_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tenure-db/tenure/resp/resptest"
	"github.com/tenure-db/tenure/sdk/locks"
)

// Semaphores, readers and owners (SPEC §12) with the Go SDK, against the
// real server over a connection and against the same store in process
// (SPEC §11): a permit and a reader are leases as any, held, renewed, lost
// and let go by the rules of §8.

// eachStore runs f against the store over a connection and in process.
func eachStore(t *testing.T, f func(t *testing.T, s *resptest.Server, store locks.Store)) {
	t.Run("connection", func(t *testing.T) {
		s := startServer(t)
		f(t, s, s.Client())
	})
	t.Run("in process", func(t *testing.T) {
		s := startServer(t)
		f(t, s, s.DB)
	})
}

// LOCK-01: no more than Limit holders run at once, and they do overlap.
func TestLimitHonouredWithConcurrentHolders(t *testing.T) {
	eachStore(t, func(t *testing.T, s *resptest.Server, store locks.Store) {
		const limit, holders = 3, 12
		lk := openLock(t, store, "llm", locks.Limit(limit), locks.TTL(time.Second))
		var running, most atomic.Int64
		var mu sync.Mutex
		fences := map[int64]bool{}
		var wg sync.WaitGroup
		errs := make(chan error, holders)
		for range holders {
			wg.Go(func() {
				errs <- lk.Hold(context.Background(), "openai", func(ctx context.Context, lease *locks.Lease) error {
					n := running.Add(1)
					defer running.Add(-1)
					for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
					}
					mu.Lock()
					dup := fences[lease.Fence]
					fences[lease.Fence] = true
					mu.Unlock()
					if dup {
						return fmt.Errorf("fence %d granted twice", lease.Fence)
					}
					time.Sleep(30 * time.Millisecond)
					return nil
				})
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		if m := most.Load(); m > limit || m < 2 {
			t.Fatalf("at most %d holders ran at once, want 2..%d", m, limit)
		}
		t.Logf("up to %d of %d holders at once", most.Load(), holders)
		noLeaks(t)
	})
}

// A permit revoked by fence cancels its holder alone (LOCK.REVOKE … FENCE).
func TestRevokedPermitCancelsItsHolder(t *testing.T) {
	eachStore(t, func(t *testing.T, s *resptest.Server, store locks.Store) {
		admin := s.Client()
		lk := openLock(t, store, "llm", locks.Limit(2), locks.TTL(time.Second))
		ctx := context.Background()
		other := make(chan int64, 1)
		release := make(chan struct{})
		otherDone := holdInBackground(ctx, lk, "k", func(ctx context.Context, lease *locks.Lease) error {
			other <- lease.Fence
			select {
			case <-release:
				return nil
			case <-ctx.Done():
				return context.Cause(ctx)
			}
		})
		otherFence := recv(t, other, 5*time.Second, "the other permit")
		var cause error
		err := lk.Hold(ctx, "k", func(ctx context.Context, lease *locks.Lease) error {
			if n, err := admin.Do(ctx, "LOCK.REVOKE", "llm", "k", "FENCE", lease.Fence).Int(); n != 1 || err != nil {
				t.Errorf("LOCK.REVOKE … FENCE = %d, %v", n, err)
			}
			<-ctx.Done()
			cause = context.Cause(ctx)
			return nil
		})
		if !errors.Is(err, locks.ErrLost) || lostReason(err) != locks.ReasonRevoked {
			t.Fatalf("Hold = %v, want lost: revoked by admin, even though fn returned nil", err)
		}
		if lostReason(cause) != locks.ReasonRevoked {
			t.Fatalf("fn's context.Cause = %v", cause)
		}
		if info := keyInfo(t, admin, "llm", "k"); info["holders"] != 1 || info["fence"] != otherFence {
			t.Fatalf("after the revoke LOCK.INFO = %v, want the other permit alone", info)
		}
		close(release)
		if r := recv(t, otherDone, 5*time.Second, "the other Hold"); r.err != nil {
			t.Fatalf("the other permit: %v", r.err)
		}
		noLeaks(t)
	})
}

// LOCK-01: readers overlap; a writer never runs beside anyone.
func TestReadersOverlapAndAWriterNever(t *testing.T) {
	eachStore(t, func(t *testing.T, s *resptest.Server, store locks.Store) {
		lk := openLock(t, store, "reports", locks.TTL(time.Second))
		var mu sync.Mutex
		readers, writers, mostReaders := 0, 0, 0
		var bad atomic.Value
		enter := func(writer bool) {
			mu.Lock()
			defer mu.Unlock()
			if writer {
				writers++
			} else {
				readers++
				mostReaders = max(mostReaders, readers)
			}
			if writers > 1 || writers == 1 && readers > 0 {
				bad.Store(fmt.Sprintf("%d writers beside %d readers", writers, readers))
			}
		}
		leave := func(writer bool) {
			mu.Lock()
			defer mu.Unlock()
			if writer {
				writers--
			} else {
				readers--
			}
		}
		var wg sync.WaitGroup
		errs := make(chan error, 16)
		for i := range 16 {
			writer := i%5 == 2
			wg.Go(func() {
				fn := func(ctx context.Context, lease *locks.Lease) error {
					enter(writer)
					defer leave(writer)
					time.Sleep(20 * time.Millisecond)
					return nil
				}
				if writer {
					errs <- lk.Hold(context.Background(), "q3", fn)
				} else {
					errs <- lk.HoldShared(context.Background(), "q3", fn)
				}
			})
			time.Sleep(2 * time.Millisecond)
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		if b := bad.Load(); b != nil {
			t.Fatalf("LOCK-01: %s", b)
		}
		if mostReaders < 2 {
			t.Fatalf("readers never overlapped (at most %d at once)", mostReaders)
		}
		noLeaks(t)
	})
}

// LOCK-08: TryHoldShared does not pass a waiting writer; TryHold does not
// pass readers.
func TestTryHoldSharedBehindAWaitingWriter(t *testing.T) {
	eachStore(t, func(t *testing.T, s *resptest.Server, store locks.Store) {
		admin := s.Client()
		lk := openLock(t, store, "reports")
		ctx := context.Background()
		nop := func(context.Context, *locks.Lease) error { return nil }
		held, end := make(chan struct{}), make(chan struct{})
		reader := make(chan holdResult, 1)
		go func() {
			err := lk.HoldShared(ctx, "q3", func(context.Context, *locks.Lease) error {
				close(held)
				<-end
				return nil
			})
			reader <- holdResult{err: err}
		}()
		recv(t, held, 5*time.Second, "the first reader")
		if err := lk.TryHoldShared(ctx, "q3", nop); err != nil {
			t.Fatalf("a second reader beside the first: %v", err)
		}
		if err := lk.TryHold(ctx, "q3", nop); !errors.Is(err, locks.ErrNotHeld) {
			t.Fatalf("TryHold beside a reader = %v, want ErrNotHeld", err)
		}
		writer := holdInBackground(ctx, lk, "q3", nop)
		waitersAre(t, admin, "reports", "q3", 1)
		if err := lk.TryHoldShared(ctx, "q3", nop); !errors.Is(err, locks.ErrNotHeld) {
			t.Fatalf("TryHoldShared behind a waiting writer = %v, want ErrNotHeld", err)
		}
		close(end)
		for _, ch := range []<-chan holdResult{reader, writer} {
			if r := recv(t, ch, 5*time.Second, "a Hold"); r.err != nil {
				t.Fatal(r.err)
			}
		}
		noLeaks(t)
	})
}

// LOCK-16: the owner is what LOCK.INFO shows; hostname:pid by default.
func TestOwnerShownByInfo(t *testing.T) {
	eachStore(t, func(t *testing.T, s *resptest.Server, store locks.Store) {
		admin := s.Client()
		host, _ := os.Hostname()
		for _, c := range []struct {
			opts []locks.Option
			want string
		}{
			{[]locks.Option{locks.Owner("worker-7")}, "worker-7"},
			{nil, fmt.Sprintf("%s:%d", host, os.Getpid())},
			{[]locks.Option{locks.Limit(4), locks.Owner("permit-holder")}, "permit-holder"},
		} {
			lk := openLock(t, store, "summaries", c.opts...)
			err := lk.Hold(context.Background(), "chat-42", func(ctx context.Context, lease *locks.Lease) error {
				v, err := admin.Do(ctx, "LOCK.INFO", "summaries", "chat-42").Result()
				if err != nil {
					return err
				}
				info := v.(map[any]any)
				if info["owner"] != c.want || info["fence"] != lease.Fence {
					return fmt.Errorf("LOCK.INFO %v, want owner %q", info, c.want)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
	})
}

// LOCK-15: a Hold whose Limit disagrees with the key's fails without
// running fn, and leaves the holders be.
func TestLimitMismatchFailsWithoutRunningFn(t *testing.T) {
	eachStore(t, func(t *testing.T, s *resptest.Server, store locks.Store) {
		sem := openLock(t, store, "llm", locks.Limit(3))
		plain := openLock(t, store, "llm")
		other := openLock(t, store, "llm", locks.Limit(5))
		err := sem.Hold(context.Background(), "k", func(ctx context.Context, lease *locks.Lease) error {
			for _, lk := range []*locks.Lock{plain, other} {
				ran := false
				err := lk.Hold(ctx, "k", func(context.Context, *locks.Lease) error { ran = true; return nil })
				if err == nil || ran || !strings.Contains(err.Error(), "this key is in use with LIMIT 3") {
					return fmt.Errorf("a Hold with another limit: %v (fn ran: %v)", err, ran)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		noLeaks(t)
	})
}

func TestKindOptions(t *testing.T) {
	s := startServer(t)
	c := s.Client()
	for _, o := range []locks.Option{locks.Limit(-1), locks.Limit(65537), locks.Owner(""), locks.Owner(strings.Repeat("o", 257))} {
		if _, err := locks.OpenLock(c, "l", o); err == nil {
			t.Errorf("OpenLock with a bad option succeeded")
		}
	}
	for _, o := range []locks.Option{locks.Limit(1), locks.Limit(65536), locks.Owner(strings.Repeat("o", 256))} {
		if _, err := locks.OpenLock(c, "l", o); err != nil {
			t.Errorf("OpenLock: %v", err)
		}
	}
	lk := openLock(t, c, "l", locks.Limit(2))
	if err := lk.HoldShared(context.Background(), "k", func(context.Context, *locks.Lease) error { return nil }); err == nil {
		t.Fatal("HoldShared on a Lock with a Limit succeeded")
	}
}

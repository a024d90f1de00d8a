package locks_test

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tenure-db/tenure/sdk/locks"
)

// LOCK-08 across the SDK's wait chunks: 20 Holds join the line for one key,
// one after the other, on a client whose 200 ms ReadTimeout makes them wait
// in 100 ms chunks. Each holds the key for a random while (up to 1 s) when
// its turn comes, so the releases fall at random moments of the others'
// chunks, for about 10 s. They are granted in the order they joined.
// (With chunks sent one after the other, a release that falls between one
// chunk's WAIT running out and the next one's arrival passes over the
// lingering place and serves a later waiter first.)
func TestWaitersAreGrantedInJoinOrder(t *testing.T) {
	const waiters = 20
	s := startServer(t)
	admin := s.Client()
	c := newClient(t, s.Addr, func(o *redis.Options) {
		o.ReadTimeout = 200 * time.Millisecond
		o.PoolSize = 4 * waiters // a waiter overlaps its chunks on a second connection
	})
	lk := openLock(t, c, "fifo", locks.TTL(time.Second))
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 8))
	t.Logf("seed %d", seed)

	held, end := make(chan struct{}), make(chan struct{})
	first := holdInBackground(context.Background(), lk, "k", func(ctx context.Context, lease *locks.Lease) error {
		close(held)
		<-end
		return nil
	})
	recv(t, held, 5*time.Second, "the first holder")

	granted := make(chan int, waiters)
	var results []<-chan holdResult
	for i := range waiters {
		holdFor := time.Duration(rng.Int64N(int64(time.Second)))
		results = append(results, holdInBackground(context.Background(), lk, "k", func(ctx context.Context, lease *locks.Lease) error {
			granted <- i
			time.Sleep(holdFor) // the work; the release falls wherever it ends
			return nil
		}))
		waitersAre(t, admin, "fifo", "k", int64(i+1))
	}
	time.Sleep(time.Duration(rng.Int64N(int64(500 * time.Millisecond))))
	start := time.Now()
	close(end)
	recv(t, first, 5*time.Second, "the first Hold")

	var order []int
	for range waiters {
		order = append(order, recv(t, granted, 5*time.Second, "the next grant"))
	}
	for i, r := range results {
		if r := recv(t, r, 5*time.Second, "a waiter's Hold"); r.err != nil {
			t.Errorf("waiter %d: Hold = %v", i, r.err)
		}
	}
	for i, w := range order {
		if w != i {
			t.Errorf("grants in the order %v, want the join order 0…%d (LOCK-08)", order, waiters-1)
			break
		}
	}
	t.Logf("%d waiters granted in join order over %v", waiters, time.Since(start).Round(time.Millisecond))
	noLeaks(t)
}

package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tenure-db/tenure/sdk/locks"
)

// lockName is the lock every client holds keys of.
const lockName = "torture"

// counterKey is the resource a holder of key increments.
func counterKey(key string) string { return "counter:" + key }

// The locks of the key kinds beside the mutexes (SPEC §12).
const (
	semLockName = "torture-sem" // semaphore keys, every HOLD with LIMIT
	rwLockName  = "torture-rw"  // read-write keys: SHARED readers, exclusive writers
)

// keySet is every key the clients hold, by kind: the mutex keys of
// lockName; the semaphore keys of semLockName, each of Limit permits; the
// read-write keys of rwLockName; and the keys of the Redis lock recipe
// (SET NX PX, compare-and-delete and compare-and-pexpire scripts), which
// no LOCK.* command touches.
type keySet struct {
	Mutex  []string `json:"mutex"`
	Sem    []string `json:"sem,omitempty"`
	Limit  int      `json:"limit,omitempty"`
	RW     []string `json:"rw,omitempty"`
	Recipe []string `json:"recipe,omitempty"`
}

// counted are the keys whose counters are incremented under a lease: the
// mutexes' and the read-write keys' (by their writers).
func (ks keySet) counted() []string { return append(slices.Clone(ks.Mutex), ks.RW...) }

// The modes of a hold, in its events' Mode: what the checker allows of
// holds of one key at once.
const (
	modeMutex  = ""       // one at a time
	modeShared = "shared" // a reader: beside other readers only
	modeWriter = "writer" // a read-write key's writer: alone
	modeRecipe = "recipe" // the Redis recipe: one at a time, while its PX has not passed
)

// modeLimit is the mode of a semaphore's permit: up to n at once.
func modeLimit(n int) string { return "limit:" + strconv.Itoa(n) }

// worker is one lock client: it holds random keys with the SDK, one after
// the other, and under each lease increments the key's counter a few
// times, GET then SET … FENCE, as SPEC §8 tells users to; under a
// semaphore's permit it works a while, under a reader's lease it reads
// the counter, and the recipe's keys it holds as Redis lock libraries do
// (recipe.go). It records what it believes and what it does.
type worker struct {
	id      string
	keys    keySet
	ttl     time.Duration
	rng     *rand.Rand
	emit    func(Event)
	lock    *locks.Lock
	sem, rw *locks.Lock
	locker  locks.Store // the lock commands' client: the recipe's too
	data    locks.Store // for the counters: no retries, a write is sent once
	holds   int64
	stopped atomic.Bool
}

// newWorker makes a worker and its clients. retries is go-redis's
// MaxRetries for the SDK's client: -1, none, leaves every retry to the SDK,
// which bounds how late it retries a request id (SPEC §8). go-redis's own
// retries resend a LOCK.HOLD whenever they like: after a freeze, after the
// server has forgotten the request id, and so get a second lease for it
// (LOCK-03), which this harness reports.
//
// addrs are the proxies of the nodes of a cluster, or of the one server;
// with more than one, the worker's clients follow the leader (leaderStore),
// nodes being the nodes' advertised addresses, as -MOVED names them.
func newWorker(id string, addrs, nodes []string, keys keySet, ttl time.Duration, retries int, seed uint64, emit func(Event)) (*worker, func(), error) {
	var lockClient, data locks.Store
	var closeAll func()
	if len(addrs) > 1 {
		// Every lock command is sent once per try of the SDK: a
		// redirection is resent to the leader, nothing else.
		ls := newLeaderStore(addrs, nodes, 4, true)
		ds := newLeaderStore(addrs, nodes, 2, false)
		lockClient, data = ls, ds
		closeAll = func() { ls.Close(); ds.Close() }
	} else {
		// The SDK waits in line in chunks of half the read timeout.
		lc := redis.NewClient(&redis.Options{
			Addr: addrs[0], ReadTimeout: time.Second, WriteTimeout: time.Second, DialTimeout: time.Second,
			PoolSize: 4, MaxRetries: retries,
		})
		dc := redis.NewClient(&redis.Options{
			Addr: addrs[0], ReadTimeout: time.Second, WriteTimeout: time.Second, DialTimeout: time.Second,
			PoolSize: 2, MaxRetries: -1,
		})
		lockClient, data = lc, dc
		closeAll = func() { lc.Close(); dc.Close() }
	}
	w := &worker{id: id, keys: keys, ttl: ttl, rng: rand.New(rand.NewPCG(seed, 0x70727475)), emit: emit, locker: lockClient, data: data}
	var err error
	// The mutexes' holders name themselves, so that an observer's leader
	// names its holder (observer.go).
	w.lock, err = locks.OpenLock(lockClient, lockName, locks.TTL(ttl), locks.Owner(id))
	if err == nil && len(keys.Sem) > 0 {
		w.sem, err = locks.OpenLock(lockClient, semLockName, locks.TTL(ttl), locks.Limit(keys.Limit))
	}
	if err == nil && len(keys.RW) > 0 {
		w.rw, err = locks.OpenLock(lockClient, rwLockName, locks.TTL(ttl))
	}
	if err != nil {
		closeAll()
		return nil, nil, err
	}
	return w, closeAll, nil
}

// pick draws the next key to hold, every key of every kind alike, and how
// to hold it: mode, and hold (nil for the recipe's keys).
func (w *worker) pick() (key, mode string, hold func(ctx context.Context, key string, fn func(context.Context, *locks.Lease) error) error) {
	ks := w.keys
	i := w.rng.IntN(len(ks.Mutex) + len(ks.Sem) + len(ks.RW) + len(ks.Recipe))
	switch {
	case i < len(ks.Mutex):
		return ks.Mutex[i], modeMutex, w.lock.Hold
	case i < len(ks.Mutex)+len(ks.Sem):
		return ks.Sem[i-len(ks.Mutex)], modeLimit(ks.Limit), w.sem.Hold
	case i < len(ks.Mutex)+len(ks.Sem)+len(ks.RW):
		key := ks.RW[i-len(ks.Mutex)-len(ks.Sem)]
		// Three readers to a writer.
		if w.rng.IntN(4) == 0 {
			return key, modeWriter, w.rw.Hold
		}
		return key, modeShared, w.rw.HoldShared
	}
	return ks.Recipe[i-len(ks.Mutex)-len(ks.Sem)-len(ks.RW)], modeRecipe, nil
}

// run holds keys until ctx ends.
func (w *worker) run(ctx context.Context) {
	for ctx.Err() == nil {
		key, mode, hold := w.pick()
		w.holds++
		n := w.holds
		if hold == nil {
			w.recipeHold(ctx, n, key)
			continue
		}
		// A Hold gives up after a while: a server that is down for long
		// has forgotten the lease anyway.
		hctx, cancel := context.WithTimeout(ctx, 8*w.ttl)
		start := mono()
		err := hold(hctx, key, func(fctx context.Context, lease *locks.Lease) error {
			w.emit(Event{Kind: evHold, Client: w.id, Hold: n, Key: key, Mode: mode, Fence: lease.Fence, Start: mono(), Deadline: monoOf(lease.Deadline())})
			defer func() {
				w.emit(Event{Kind: evEnd, Client: w.id, Hold: n, Key: key, Mode: mode, Fence: lease.Fence, End: mono(), Deadline: monoOf(lease.Deadline())})
			}()
			switch mode {
			case modeMutex, modeWriter:
				return w.underLease(fctx, n, key, lease)
			case modeShared:
				return w.underRead(fctx, n, key, lease)
			}
			return w.underPermit(fctx, lease)
		})
		cancel()
		res := "ok"
		switch {
		case err == nil:
		case errors.Is(err, locks.ErrLost):
			res = "lost: " + err.Error()
		case errors.Is(err, locks.ErrNotHeld):
			res = "not held"
		default:
			res = "err: " + err.Error()
		}
		w.emit(Event{Kind: evHeld, Client: w.id, Hold: n, Key: key, Mode: mode, Start: start, End: mono(), Result: res})
		if err != nil && !errors.Is(err, locks.ErrLost) && ctx.Err() == nil {
			sleep(ctx, time.Duration(w.rng.IntN(100))*time.Millisecond)
		}
	}
}

// underPermit is fn under a semaphore's permit: it works (sleeps) a few
// times, up to a third of a ttl each, so that some permits outlast a ttl
// and are renewed; the holder's interval is what the checker counts.
func (w *worker) underPermit(ctx context.Context, lease *locks.Lease) error {
	for range 1 + w.rng.IntN(4) {
		if lease.Lost() != nil || !sleep(ctx, time.Duration(w.rng.Int64N(int64(w.ttl/3)))) {
			return nil
		}
	}
	return nil
}

// underRead is fn under a reader's lease: it reads the key's counter a
// few times (a writer's fenced writes are what it sees), pausing between.
func (w *worker) underRead(ctx context.Context, n int64, key string, lease *locks.Lease) error {
	for range 1 + w.rng.IntN(4) {
		if lease.Lost() != nil || ctx.Err() != nil {
			return nil
		}
		start := mono()
		v, err := w.data.Do(ctx, "GET", counterKey(key)).Text()
		w.emit(Event{Kind: evRead, Client: w.id, Hold: n, Key: key, Fence: lease.Fence, Start: start, End: mono(), Value: v, Result: result(err)})
		if err != nil && !errors.Is(err, redis.Nil) {
			return nil
		}
		if !sleep(ctx, time.Duration(w.rng.Int64N(int64(w.ttl/3)))) {
			return nil
		}
	}
	return nil
}

// underLease is fn of a mutex's or a writer's lease: the holder's interval
// runs from its start to its end, or to the holder's deadline if that
// comes first.
func (w *worker) underLease(ctx context.Context, n int64, key string, lease *locks.Lease) error {
	ck := counterKey(key)
	fence := strconv.FormatInt(lease.Fence, 10)
	for range 1 + w.rng.IntN(4) {
		if lease.Lost() != nil || ctx.Err() != nil {
			return nil
		}
		pause := time.Duration(w.rng.Int64N(int64(w.ttl / 3)))
		// One increment in three is careless, as code that ignores its
		// context is: it looks at its lease, then pauses (where a freeze
		// of its process lands), then reads and writes without looking
		// again. Its write may go after its deadline, to be refused by
		// the fence (LOCK-12) if the next holder has written.
		careless := w.rng.IntN(3) == 0
		opCtx := ctx
		if careless {
			time.Sleep(pause)
			opCtx = context.Background()
		}
		start := mono()
		v, err := w.data.Do(opCtx, "GET", ck).Text()
		w.emit(Event{Kind: evRead, Client: w.id, Hold: n, Key: key, Fence: lease.Fence, Start: start, End: mono(), Value: v, Result: result(err)})
		if err != nil && !errors.Is(err, redis.Nil) {
			return nil
		}
		count, _, ok := parseCounter(v)
		if !ok && v != "" {
			return fmt.Errorf("counter %s holds %q", ck, v)
		}
		// The last look at the deadline before the write goes.
		if !careless && lease.Lost() != nil {
			return nil
		}
		deadline := monoOf(lease.Deadline())
		value := fmt.Sprintf("%d:%d", count+1, lease.Fence)
		sent := mono()
		err = w.data.Do(opCtx, "SET", ck, value, "FENCE", fence).Err()
		w.emit(Event{Kind: evWrite, Client: w.id, Hold: n, Key: key, Fence: lease.Fence, Start: sent, End: mono(),
			Deadline: deadline, Value: value, Result: result(err), Late: sent > deadline})
		if err != nil {
			return nil
		}
		// Some holds outlast a ttl, so renewals are in play.
		if !careless && !sleep(ctx, pause) {
			return nil
		}
	}
	return nil
}

// parseCounter reads "count:fence".
func parseCounter(v string) (count, fence int64, ok bool) {
	c, f, found := strings.Cut(v, ":")
	if !found {
		return 0, 0, false
	}
	count, err1 := strconv.ParseInt(c, 10, 64)
	fence, err2 := strconv.ParseInt(f, 10, 64)
	return count, fence, err1 == nil && err2 == nil
}

func result(err error) string {
	var rerr redis.Error
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, redis.Nil):
		return "nil"
	case errors.As(err, &rerr):
		code, _, _ := strings.Cut(err.Error(), " ")
		return code
	}
	return "err: " + err.Error()
}

// sleep sleeps d unless ctx ends first, and says whether it slept.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

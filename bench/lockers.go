package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

// A locker speaks one lock dialect: tenure's LOCK.* commands, the Redis
// recipe of SET NX PX with compare-and-delete and compare-and-extend
// scripts, or etcd's concurrency.Mutex. The scenarios are written once
// against it; etcd runs the lock scenarios only (hold, release,
// stopRenewing).
type locker interface {
	// hold gets (lock, key) for ttl, waiting as the dialect waits: tenure
	// in its line, the recipe by retrying with backoff, etcd's Mutex by
	// watching the key ahead of it. It returns when granted, or with ctx's
	// error.
	hold(ctx context.Context, w *worker, key string, ttl time.Duration) (lease, error)
	// tryHold asks once, through a pipeline (for bulk setup); parse reads
	// its reply after Exec.
	tryHold(ctx context.Context, p redis.Pipeliner, w *worker, key string, ttl time.Duration) func() (lease, bool, error)
	release(ctx context.Context, w *worker, l lease) error
	// renew extends the lease to ttl from now; errLost if it had ended.
	renew(ctx context.Context, w *worker, l lease, ttl time.Duration) error
	// stopRenewing makes sure nothing keeps l alive, and returns its
	// deadline (on the program's clock), taken no later than the store's:
	// sent is when the hold was sent.
	stopRenewing(w *worker, l lease, sent int64, ttl time.Duration) int64
	// prepare readies a fresh server (loads the recipe's scripts).
	prepare(ctx context.Context, c *redis.Client) error
}

// worker is one client of a scenario: the pool it sends through, its random
// source, and on etcd its client and the session its holds are made in.
type worker struct {
	c           *redis.Client
	rng         *rand.Rand
	etcd        *clientv3.Client
	etcdSession *concurrency.Session
	etcdTTL     int // seconds, the session's
}

// worker is the i-th client of a scenario, sending through c (tenure and
// Redis) or the run's etcd clients, shared round-robin.
func (r *run) worker(c *redis.Client, i int) *worker {
	w := &worker{c: c, rng: newRand()}
	if len(r.etcd) > 0 {
		w.etcd = r.etcd[i%len(r.etcd)]
	}
	return w
}

// close lets the worker's etcd session go. Not revoked: the server is
// stopped after the run anyway, and a revoke per waiter would be measured
// as the next run's setup.
func (w *worker) close() {
	if w.etcdSession != nil {
		w.etcdSession.Orphan()
		w.etcdSession = nil
	}
}

// lease is what the holder keeps: tenure's lease id, the recipe's key and
// random token, or etcd's Mutex.
type lease struct {
	key, id string
	etcd    *concurrency.Mutex
}

var errLost = errors.New("lease lost")

// lockName is the lock every scenario holds keys of; the recipe prefixes
// its keys with it, as redsync and redislock users do.
const lockName = "bench"

// token is 128 random bits as 32 hex characters: the SDK's reqid, and the
// recipe's token (redislock draws 16 random bytes too). A benchmark needs
// no cryptographic source; both sides pay the same for it.
func token(rng *rand.Rand) string {
	const digits = "0123456789abcdef"
	var b [32]byte
	a, c := rng.Uint64(), rng.Uint64()
	for i := range 16 {
		b[i] = digits[a>>(60-4*i)&15]
		b[16+i] = digits[c>>(60-4*i)&15]
	}
	return string(b[:])
}

func newRand() *rand.Rand { return rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64())) }

func msArg(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }

// tenureLocker sends what the Go SDK sends (sdk/locks/wire.go): LOCK.HOLD
// with a fresh reqid, TTL, and a WAIT chunk of half the client's read
// timeout, repeated with the same reqid until granted. opts are SPEC §12's
// options every HOLD of it carries (LIMIT n, or SHARED), as the SDK's
// Limit and HoldShared send them.
type tenureLocker struct {
	chunk time.Duration
	opts  []any
}

func (t tenureLocker) prepare(context.Context, *redis.Client) error { return nil }

func (t tenureLocker) hold(ctx context.Context, w *worker, key string, ttl time.Duration) (lease, error) {
	reqid := token(w.rng)
	for {
		args := append([]any{"LOCK.HOLD", lockName, key, reqid, "TTL", msArg(ttl), "WAIT", msArg(t.chunk)}, t.opts...)
		vals, err := w.c.Do(ctx, args...).Slice()
		switch {
		case errors.Is(err, redis.Nil):
			if err := ctx.Err(); err != nil {
				return lease{}, err
			}
			continue // the chunk ran out; the place in line lingers for this reqid
		case err != nil:
			return lease{}, err
		}
		return parseGrant(vals)
	}
}

func parseGrant(vals []any) (lease, error) {
	if len(vals) != 3 {
		return lease{}, fmt.Errorf("LOCK.HOLD replied %v, want [leaseid fence ttl]", vals)
	}
	id, ok := vals[0].(string)
	if !ok {
		return lease{}, fmt.Errorf("LOCK.HOLD replied %v, want [leaseid fence ttl]", vals)
	}
	return lease{id: id}, nil
}

func (t tenureLocker) tryHold(ctx context.Context, p redis.Pipeliner, w *worker, key string, ttl time.Duration) func() (lease, bool, error) {
	cmd := p.Do(ctx, "LOCK.HOLD", lockName, key, token(w.rng), "TTL", msArg(ttl), "WAIT", "0")
	return func() (lease, bool, error) {
		vals, err := cmd.Slice()
		switch {
		case errors.Is(err, redis.Nil):
			return lease{}, false, nil
		case err != nil:
			return lease{}, false, err
		}
		l, err := parseGrant(vals)
		return l, err == nil, err
	}
}

func (t tenureLocker) release(ctx context.Context, w *worker, l lease) error {
	return lostOr(w.c.Do(ctx, "LOCK.RELEASE", l.id).Err())
}

func (t tenureLocker) renew(ctx context.Context, w *worker, l lease, ttl time.Duration) error {
	return lostOr(w.c.Do(ctx, "LOCK.RENEW", l.id, "TTL", msArg(ttl)).Err())
}

// stopRenewing: nothing renews a tenure lease but LOCK.RENEW. Its deadline
// is the grant's + ttl, and the grant came after the HOLD was sent.
func (t tenureLocker) stopRenewing(_ *worker, _ lease, sent int64, ttl time.Duration) int64 {
	return sent + int64(ttl)
}

// lostOr maps a -LOST reply to errLost.
func lostOr(err error) error {
	if err != nil && strings.HasPrefix(err.Error(), "LOST") {
		return fmt.Errorf("%w: %v", errLost, err)
	}
	return err
}

// The recipe's scripts, as redsync and bsm/redislock ship them.
var (
	releaseScript = redis.NewScript(`if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`)
	extendScript  = redis.NewScript(`if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("pexpire", KEYS[1], ARGV[2]) else return 0 end`)
)

// redisLocker is the SET k token NX PX recipe. Waiting is retrying with
// the backoff of a lock library: the next delay comes from backoff(n), n
// counting the attempts that failed.
type redisLocker struct {
	backoff func(rng *rand.Rand, n int) time.Duration
}

// Retry strategies of the usual Go libraries.
var retryStrategies = map[string]func(rng *rand.Rand, n int) time.Duration{
	// bsm/redislock ExponentialBackoff(16ms, 512ms): 2^(n+1) ms within
	// [16ms, 512ms], the minimum its docs recommend.
	"redislock": func(_ *rand.Rand, n int) time.Duration {
		return min(max(time.Duration(2<<min(n, 20))*time.Millisecond, 16*time.Millisecond), 512*time.Millisecond)
	},
	// go-redsync's default: a random delay from 50 to 250 ms.
	"redsync": func(rng *rand.Rand, _ int) time.Duration {
		return time.Duration(50+rng.IntN(200)) * time.Millisecond
	},
}

func (r redisLocker) prepare(ctx context.Context, c *redis.Client) error {
	for _, s := range []*redis.Script{releaseScript, extendScript} {
		if err := s.Load(ctx, c).Err(); err != nil {
			return fmt.Errorf("SCRIPT LOAD: %w", err)
		}
	}
	return nil
}

func (r redisLocker) hold(ctx context.Context, w *worker, key string, ttl time.Duration) (lease, error) {
	l := lease{key: lockName + ":" + key, id: token(w.rng)}
	var timer *time.Timer
	for n := 1; ; n++ {
		err := w.c.Do(ctx, "SET", l.key, l.id, "PX", msArg(ttl), "NX").Err()
		switch {
		case err == nil:
			return l, nil
		case !errors.Is(err, redis.Nil):
			return lease{}, err
		}
		d := r.backoff(w.rng, n)
		if timer == nil {
			timer = time.NewTimer(d)
			defer timer.Stop()
		} else {
			timer.Reset(d)
		}
		select {
		case <-ctx.Done():
			return lease{}, ctx.Err()
		case <-timer.C:
		}
	}
}

func (r redisLocker) tryHold(ctx context.Context, p redis.Pipeliner, w *worker, key string, ttl time.Duration) func() (lease, bool, error) {
	l := lease{key: lockName + ":" + key, id: token(w.rng)}
	cmd := p.Do(ctx, "SET", l.key, l.id, "PX", msArg(ttl), "NX")
	return func() (lease, bool, error) {
		switch err := cmd.Err(); {
		case errors.Is(err, redis.Nil):
			return lease{}, false, nil
		case err != nil:
			return lease{}, false, err
		}
		return l, true, nil
	}
}

// release runs the compare-and-delete script (EVALSHA, EVAL on NOSCRIPT).
func (r redisLocker) release(ctx context.Context, w *worker, l lease) error {
	n, err := releaseScript.Run(ctx, w.c, []string{l.key}, l.id).Int64()
	if err == nil && n != 1 {
		return errLost
	}
	return err
}

// renew runs the compare-and-extend script: PEXPIRE if the token matches.
func (r redisLocker) renew(ctx context.Context, w *worker, l lease, ttl time.Duration) error {
	n, err := extendScript.Run(ctx, w.c, []string{l.key}, l.id, msArg(ttl)).Int64()
	if err == nil && n != 1 {
		return errLost
	}
	return err
}

// stopRenewing: the recipe's key lives for its PX from the SET, sent at sent.
func (r redisLocker) stopRenewing(_ *worker, _ lease, sent int64, ttl time.Duration) int64 {
	return sent + int64(ttl)
}

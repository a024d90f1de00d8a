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
)

// A locker speaks one lock dialect: tenure's LOCK.* commands, or the Redis
// recipe of SET NX PX with compare-and-delete and compare-and-extend
// scripts. The scenarios are written once against it.
type locker interface {
	// hold gets (lock, key) for ttl, waiting as the dialect waits: tenure
	// in its line, the recipe by retrying with backoff. It returns when
	// granted, or with ctx's error.
	hold(ctx context.Context, c *redis.Client, rng *rand.Rand, key string, ttl time.Duration) (lease, error)
	// tryHold asks once, through a pipeline (for bulk setup); parse reads
	// its reply after Exec.
	tryHold(ctx context.Context, p redis.Pipeliner, rng *rand.Rand, key string, ttl time.Duration) func() (lease, bool, error)
	release(ctx context.Context, c *redis.Client, l lease) error
	// renew extends the lease to ttl from now; errLost if it had ended.
	renew(ctx context.Context, c *redis.Client, l lease, ttl time.Duration) error
	// prepare readies a fresh server (loads the recipe's scripts).
	prepare(ctx context.Context, c *redis.Client) error
}

// lease is what the holder keeps: tenure's lease id, or the recipe's key
// and random token.
type lease struct{ key, id string }

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
// timeout, repeated with the same reqid until granted.
type tenureLocker struct{ chunk time.Duration }

func (t tenureLocker) prepare(context.Context, *redis.Client) error { return nil }

func (t tenureLocker) hold(ctx context.Context, c *redis.Client, rng *rand.Rand, key string, ttl time.Duration) (lease, error) {
	reqid := token(rng)
	for {
		vals, err := c.Do(ctx, "LOCK.HOLD", lockName, key, reqid, "TTL", msArg(ttl), "WAIT", msArg(t.chunk)).Slice()
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

func (t tenureLocker) tryHold(ctx context.Context, p redis.Pipeliner, rng *rand.Rand, key string, ttl time.Duration) func() (lease, bool, error) {
	cmd := p.Do(ctx, "LOCK.HOLD", lockName, key, token(rng), "TTL", msArg(ttl), "WAIT", "0")
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

func (t tenureLocker) release(ctx context.Context, c *redis.Client, l lease) error {
	return lostOr(c.Do(ctx, "LOCK.RELEASE", l.id).Err())
}

func (t tenureLocker) renew(ctx context.Context, c *redis.Client, l lease, ttl time.Duration) error {
	return lostOr(c.Do(ctx, "LOCK.RENEW", l.id, "TTL", msArg(ttl)).Err())
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

func (r redisLocker) hold(ctx context.Context, c *redis.Client, rng *rand.Rand, key string, ttl time.Duration) (lease, error) {
	l := lease{key: lockName + ":" + key, id: token(rng)}
	var timer *time.Timer
	for n := 1; ; n++ {
		err := c.Do(ctx, "SET", l.key, l.id, "PX", msArg(ttl), "NX").Err()
		switch {
		case err == nil:
			return l, nil
		case !errors.Is(err, redis.Nil):
			return lease{}, err
		}
		d := r.backoff(rng, n)
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

func (r redisLocker) tryHold(ctx context.Context, p redis.Pipeliner, rng *rand.Rand, key string, ttl time.Duration) func() (lease, bool, error) {
	l := lease{key: lockName + ":" + key, id: token(rng)}
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
func (r redisLocker) release(ctx context.Context, c *redis.Client, l lease) error {
	n, err := releaseScript.Run(ctx, c, []string{l.key}, l.id).Int64()
	if err == nil && n != 1 {
		return errLost
	}
	return err
}

// renew runs the compare-and-extend script: PEXPIRE if the token matches.
func (r redisLocker) renew(ctx context.Context, c *redis.Client, l lease, ttl time.Duration) error {
	n, err := extendScript.Run(ctx, c, []string{l.key}, l.id, msArg(ttl)).Int64()
	if err == nil && n != 1 {
		return errLost
	}
	return err
}

package main

// The scenarios of issues 31 and 32 beyond the mutex: the Redis lock
// recipe run unmodified against tenure beside LOCK.*, a semaphore's
// permits against the Redis recipe for expiring permits, and readers
// beside writers.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// recipe is scenario 1's cycle with the Redis recipe (SET NX PX, then the
// compare-and-delete script by EVALSHA) on every server, tenure included:
// what a team pays when it points the lock code it has at tenure. On
// tenure the same run then measures LOCK.HOLD+RELEASE as well, on the same
// server, so the gain of moving to LOCK.* sits beside it.
func recipe(ctx context.Context, r *run) (map[string]float64, error) {
	own := r.lk
	r.lk = redisLocker{backoff: retryStrategies[r.cfg.retry]}
	m, err := uncontended(ctx, r)
	r.lk = own
	if err != nil || r.p.target.Redis {
		return m, err
	}
	r.progress("    then LOCK.HOLD+RELEASE on the same server")
	lm, err := uncontended(ctx, r)
	if err != nil {
		return m, fmt.Errorf("LOCK.* cycles: %w", err)
	}
	for k, v := range lm {
		m["lock_"+k] = v
	}
	if m["ops_per_sec"] > 0 {
		m["lock_gain"] = lm["ops_per_sec"] / m["ops_per_sec"]
	}
	return m, nil
}

// permits is how a scenario holds one of a semaphore's permits, or a
// reader's or a writer's hold: hold waits until granted.
type permits interface {
	prepare(ctx context.Context, c *redis.Client) error
	hold(ctx context.Context, w *worker, key string, ttl time.Duration) (lease, error)
	release(ctx context.Context, w *worker, l lease) error
}

// The Redis recipe for a semaphore whose permits expire, as redis-semaphore
// (Node) and Redisson's RPermitExpirableSemaphore build it: a sorted set
// of the holders' tokens scored by their deadlines, in a script that drops
// the expired, counts the rest and adds the caller if there is room.
// Release takes the caller's token out. The deadline is the client's clock
// plus the ttl, as redis-semaphore passes Date.now().
var (
	semAcquireScript = redis.NewScript(`redis.call("zremrangebyscore", KEYS[1], "-inf", ARGV[4])
if redis.call("zcard", KEYS[1]) < tonumber(ARGV[1]) then
  redis.call("zadd", KEYS[1], tonumber(ARGV[4]) + tonumber(ARGV[3]), ARGV[2])
  redis.call("pexpire", KEYS[1], ARGV[3])
  return 1
end
return 0`)
)

// redisSemaphore waits by retrying every retry: redis-semaphore's default
// retryInterval is 10 ms.
type redisSemaphore struct {
	limit int
	retry time.Duration
}

func (s redisSemaphore) prepare(ctx context.Context, c *redis.Client) error {
	if err := semAcquireScript.Load(ctx, c).Err(); err != nil {
		return fmt.Errorf("SCRIPT LOAD: %w", err)
	}
	return nil
}

func (s redisSemaphore) hold(ctx context.Context, w *worker, key string, ttl time.Duration) (lease, error) {
	l := lease{key: lockName + ":" + key, id: token(w.rng)}
	limit := strconv.Itoa(s.limit)
	timer := time.NewTimer(0)
	<-timer.C
	defer timer.Stop()
	for {
		got, err := semAcquireScript.EvalSha(ctx, w.c, []string{l.key}, limit, l.id, msArg(ttl), strconv.FormatInt(time.Now().UnixMilli(), 10)).Int64()
		switch {
		case err != nil:
			return lease{}, err
		case got == 1:
			return l, nil
		}
		timer.Reset(s.retry)
		select {
		case <-ctx.Done():
			return lease{}, ctx.Err()
		case <-timer.C:
		}
	}
}

func (s redisSemaphore) release(ctx context.Context, w *worker, l lease) error {
	n, err := w.c.ZRem(ctx, l.key, l.id).Result()
	if err == nil && n != 1 {
		return errLost
	}
	return err
}

// semRetry is redis-semaphore's default retryInterval.
const semRetry = 10 * time.Millisecond

// semaphore: clients workers on one key of permits permits, each
// acquiring a permit, releasing it at once and asking again: tenure's
// LOCK.HOLD … LIMIT n in its line against the recipe's sorted set. Every
// worker beyond the permits waits, so every release is a handoff.
//
// Which grant a release made room for is not known to the clients (the
// recipe has no fences, and several permits change hands at once), so the
// handoff is measured as a mean over the window, exactly: the permits are
// never short of takers, so each is, at every instant, either held (from
// its grant's reply to its release's send) or between holders; the time
// they spend between holders, divided by the releases, is the mean time
// from a release to the grant it made room for, as the clients see it.
func semaphore(ctx context.Context, r *run) (map[string]float64, error) {
	n, limit := r.cfg.clients, r.cfg.permits
	var pm permits = tenureLocker{chunk: readTimeout / 2, opts: []any{"LIMIT", strconv.Itoa(limit)}}
	if r.p.target.Redis {
		pm = redisSemaphore{limit: limit, retry: semRetry}
	}
	c := newClient(r.p.addr, n+4, 16<<10)
	defer c.Close()
	if err := r.warm(ctx, c, n); err != nil {
		return nil, err
	}
	if err := pm.prepare(ctx, c); err != nil {
		return nil, err
	}
	ws, err := r.workers(ctx, c, n, lockTTL)
	if err != nil {
		return nil, err
	}
	defer closeWorkers(ws)
	w := newWindow(r.cfg.warmup, r.cfg.duration)
	wctx, cancel := context.WithTimeout(ctx, time.Duration(w.to-now()))
	defer cancel()
	cpu := r.meter(w)
	var inside, most atomic.Int64
	grants := make([]int, n)
	waits := make([][]int64, n)
	busy := make([]int64, n)     // ns of held permits within the window
	releases := make([]int64, n) // releases sent within the window
	var fail failures
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			wk := ws[i]
			for ctx.Err() == nil && now() < w.to {
				asked := now()
				l, err := pm.hold(wctx, wk, "permits", lockTTL)
				g := now()
				if err != nil {
					if wctx.Err() == nil {
						fail.add(err)
					}
					continue
				}
				// Held from the grant's reply to the release's send: within
				// the store's lease, so never more than limit at once.
				in := inside.Add(1)
				for m := most.Load(); in > m && !most.CompareAndSwap(m, in); m = most.Load() {
				}
				if asked >= w.from && g <= w.to {
					grants[i]++
					waits[i] = append(waits[i], g-asked)
				}
				inside.Add(-1)
				rel := now()
				busy[i] += max(min(rel, w.to)-max(g, w.from), 0)
				if rel >= w.from && rel < w.to {
					releases[i]++
				}
				if err := pm.release(ctx, wk, l); err != nil {
					fail.add(err)
				}
			}
		})
	}
	wg.Wait()
	total, least, mostGrants := 0, grants[0], grants[0]
	var held, released int64
	for i, g := range grants {
		total += g
		least, mostGrants = min(least, g), max(mostGrants, g)
		held += busy[i]
		released += releases[i]
	}
	m := map[string]float64{
		"ops_per_sec":  float64(total) / w.seconds(),
		"fair_min":     float64(least),
		"fair_max":     float64(mostGrants),
		"most_holders": float64(most.Load()),
	}
	summarize(waits).put(m, "wait_")
	if released > 0 {
		idle := int64(limit)*(w.to-w.from) - held
		m["handoff_mean_ms"] = float64(idle) / float64(released) / 1e6
		m["held_pct"] = 100 * float64(held) / float64(int64(limit)*(w.to-w.from))
	}
	if err := cpu(m, total); err != nil {
		return nil, err
	}
	if most.Load() > int64(limit) {
		return m, fmt.Errorf("%d holders believed they held a permit at once, limit %d", most.Load(), limit)
	}
	return m, fail.verdict(m, total)
}

// rwlock: readers and writers (r.cfg.writers of the clients) on one key of
// tenure, readers holding SHARED, writers exclusive, each releasing at
// once and asking again. The line is FIFO (LOCK-08): a writer waiting
// holds back the readers behind it, so neither side starves.
func rwlock(ctx context.Context, r *run) (map[string]float64, error) {
	n, writers := r.cfg.clients, r.cfg.writers
	reader := tenureLocker{chunk: readTimeout / 2, opts: []any{"SHARED"}}
	writer := tenureLocker{chunk: readTimeout / 2}
	c := newClient(r.p.addr, n+4, 16<<10)
	defer c.Close()
	if err := r.warm(ctx, c, n); err != nil {
		return nil, err
	}
	ws, err := r.workers(ctx, c, n, lockTTL)
	if err != nil {
		return nil, err
	}
	defer closeWorkers(ws)
	w := newWindow(r.cfg.warmup, r.cfg.duration)
	wctx, cancel := context.WithTimeout(ctx, time.Duration(w.to-now()))
	defer cancel()
	cpu := r.meter(w)
	// What the holders believe, from grant reply to release send: a writer
	// never beside anyone (LOCK-01).
	var readersIn, writersIn, overlaps atomic.Int64
	waits := make([][]int64, n)
	var fail failures
	var wg sync.WaitGroup
	for i := range n {
		isWriter := i < writers
		lk := reader
		if isWriter {
			lk = writer
		}
		wg.Go(func() {
			wk := ws[i]
			for ctx.Err() == nil && now() < w.to {
				asked := now()
				l, err := lk.hold(wctx, wk, "rw", lockTTL)
				g := now()
				if err != nil {
					if wctx.Err() == nil {
						fail.add(err)
					}
					continue
				}
				if isWriter {
					if writersIn.Add(1) > 1 || readersIn.Load() > 0 {
						overlaps.Add(1)
					}
				} else if readersIn.Add(1); writersIn.Load() > 0 {
					overlaps.Add(1)
				}
				if asked >= w.from && g <= w.to {
					waits[i] = append(waits[i], g-asked)
				}
				if isWriter {
					writersIn.Add(-1)
				} else {
					readersIn.Add(-1)
				}
				if err := lk.release(ctx, wk, l); err != nil {
					fail.add(err)
				}
			}
		})
	}
	wg.Wait()
	rl, wl := summarize(waits[writers:]), summarize(waits[:writers])
	m := map[string]float64{
		"ops_per_sec":        float64(rl.N+wl.N) / w.seconds(),
		"reader_per_sec":     float64(rl.N) / w.seconds(),
		"writer_per_sec":     float64(wl.N) / w.seconds(),
		"exclusion_breaches": float64(overlaps.Load()),
	}
	rl.put(m, "reader_")
	wl.put(m, "writer_")
	if err := cpu(m, rl.N+wl.N); err != nil {
		return nil, err
	}
	if overlaps.Load() > 0 {
		return m, errors.New("a writer believed it held beside another holder")
	}
	return m, fail.verdict(m, rl.N+wl.N)
}

// tenureOnly: the scenarios with no like-for-like recipe elsewhere.
func tenureOnly(t *target) bool { return !t.Redis && !t.Etcd }

package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// settings are the knobs of the scenarios, from the flags.
type settings struct {
	duration      time.Duration // measured part of each run
	warmup        time.Duration // before it, unmeasured
	clients       int           // uncontended, renewal workers, keyspace
	contenders    int           // contended handoff
	renewLeases   int
	renewTTL      time.Duration
	memLeases     int
	expiryHolders int
	expiryTTL     time.Duration
	expirySpread  time.Duration
	pipeline      int
	retry         string // the recipe's retry strategy: redislock or redsync
	etcdHolders   int    // expiry holders on etcd, at most
	massLeases    int
	massSpread    time.Duration
	massLead      time.Duration
	massWaiters   int
	massReaders   int
	massLockers   int
	permits       int // the semaphore's LIMIT
	writers       int // writers among the clients of the readers+writers mix
}

// run is what a scenario gets for one run against one fresh server.
type run struct {
	cfg      *settings
	p        *process
	lk       locker
	etcd     []*clientv3.Client               // on etcd, the clients the workers share
	progress func(format string, args ...any) // a line on stderr
}

type scenarioFunc func(ctx context.Context, r *run) (map[string]float64, error)

// lockTTL is the ttl of leases that are released, not renewed: the SDK's
// default. It matters to tenure, which remembers an ended lease's reqid for
// a ttl (SPEC §3), so memory under churn grows with it.
const lockTTL = 10 * time.Second

// readTimeout is the clients' read timeout; tenure's waits are chunks of
// half of it, as the SDK's are.
const readTimeout = 10 * time.Second

// newClient is the go-redis client every scenario uses, the same for both
// servers: RESP2 (tenure answers HELLO 3 with -NOPROTO), no client-side
// retries (a retry would hide an error), pipelines on the main pool.
func newClient(addr string, pool, buf int) *redis.Client {
	return redis.NewClient(&redis.Options{
		Addr:             addr,
		Protocol:         2,
		DisableIdentity:  true,
		PoolSize:         pool,
		PipelinePoolSize: -1,
		PoolTimeout:      30 * time.Second,
		MaxRetries:       -1,
		DialTimeout:      10 * time.Second,
		ReadTimeout:      readTimeout,
		WriteTimeout:     10 * time.Second,
		ReadBufferSize:   buf,
		WriteBufferSize:  buf,
		ConnMaxIdleTime:  -1,
	})
}

// warm opens n connections of c's pool at once, so that dialing is not
// measured, and readies the dialect on the server.
func (r *run) warm(ctx context.Context, c *redis.Client, n int) error {
	if r.p.target.Etcd {
		return nil // its clients were dialed, blocking, before the run
	}
	conns := make([]*redis.Conn, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			conns[i] = c.Conn()
			errs[i] = conns[i].Ping(ctx).Err()
		})
	}
	wg.Wait()
	for _, cn := range conns {
		cn.Close() // back to the pool, still open
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("open %d connections: %w", n, err)
	}
	return r.lk.prepare(ctx, c)
}

// workers makes n workers sending through c, each with its session made
// (on etcd) for ttl, so that no grant of a lease is measured as a hold.
func (r *run) workers(ctx context.Context, c *redis.Client, n int, ttl time.Duration) ([]*worker, error) {
	ws := make([]*worker, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		ws[i] = r.worker(c, i)
		if ws[i].etcd != nil {
			wg.Go(func() { errs[i] = ws[i].session(ctx, ttl) })
		}
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		closeWorkers(ws)
		return nil, err
	}
	return ws, nil
}

func closeWorkers(ws []*worker) {
	for _, w := range ws {
		w.close()
	}
}

// failures counts failed operations and keeps the first error.
type failures struct {
	n     atomic.Int64
	once  sync.Once
	first error
}

func (f *failures) add(err error) {
	f.n.Add(1)
	f.once.Do(func() { f.first = err })
}

// verdict fails the run if nothing succeeded and something failed;
// otherwise errors are a metric. A run in which nothing completed and
// nothing failed measured a stall (a busy disk holds up an AOF fsync, and
// Redis its writes, for up to 2 s): its rate is zero, and stalled says so.
func (f *failures) verdict(m map[string]float64, succeeded int) error {
	m["errors"] = float64(f.n.Load())
	if succeeded == 0 && f.first != nil {
		return f.first
	}
	if succeeded == 0 {
		m["stalled"] = 1
	}
	return nil
}

// meter reads the server's CPU time at the window's start and end, so a
// run shows whether the server was the bottleneck (near 100% of the CPUs
// it is pinned to) or the client was. Call the function it returns after
// the window, with the operations done in it, to put the server's CPU
// seconds, its share of one CPU and its CPU time per operation into m.
func (r *run) meter(w window) func(m map[string]float64, ops int) error {
	var cpu [2]time.Duration
	var errs [2]error
	var wg sync.WaitGroup
	for k, at := range []int64{w.from, w.to} {
		wg.Go(func() {
			sleepUntil(at)
			cpu[k], errs[k] = r.p.cpuTime()
		})
	}
	return func(m map[string]float64, ops int) error {
		wg.Wait()
		if err := errors.Join(errs[:]...); err != nil {
			return fmt.Errorf("read server CPU time: %w", err)
		}
		m["cpu_s"] = (cpu[1] - cpu[0]).Seconds()
		m["server_cpu_pct"] = 100 * m["cpu_s"] / w.seconds()
		if ops > 0 {
			m["cpu_us_per_op"] = m["cpu_s"] / float64(ops) * 1e6
		}
		return nil
	}
}

// uncontended: clients workers, each HOLD+RELEASE on keys of its own. One
// op is the cycle, two round trips.
func uncontended(ctx context.Context, r *run) (map[string]float64, error) {
	n := r.cfg.clients
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
	cpu := r.meter(w)
	samples := make([][]int64, n)
	var fail failures
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			wk := ws[i]
			keys := make([]string, 16)
			for j := range keys {
				keys[j] = "own:" + strconv.Itoa(i) + ":" + strconv.Itoa(j)
			}
			for j := 0; ctx.Err() == nil; j++ {
				start := now()
				if start >= w.to {
					return
				}
				l, err := r.lk.hold(ctx, wk, keys[j%len(keys)], lockTTL)
				if err == nil {
					err = r.lk.release(ctx, wk, l)
				}
				end := now()
				if err != nil {
					fail.add(err)
					continue
				}
				if w.holds(start, end) {
					samples[i] = append(samples[i], end-start)
				}
			}
		})
	}
	wg.Wait()
	lat := summarize(samples)
	m := map[string]float64{"ops_per_sec": float64(lat.N) / w.seconds()}
	lat.put(m, "")
	if err := cpu(m, lat.N); err != nil {
		return nil, err
	}
	return m, fail.verdict(m, lat.N)
}

// contended: contenders workers on one key, each releasing at once when
// granted and asking again. A handoff is a grant to another client than
// the last holder; its latency runs from the moment the last holder sent
// RELEASE to the moment the next one has its grant. One holder at a time,
// so the last release recorded before a grant is the one that freed the
// key. (The recipe's releaser, retrying at once while the others sleep in
// backoff, mostly takes the key back itself: those grants count as grants,
// not handoffs.)
func contended(ctx context.Context, r *run) (map[string]float64, error) {
	n := r.cfg.contenders
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
	// Waiting recipe clients stop at the window's end; tenure's are
	// granted in turn and leave.
	wctx, cancel := context.WithTimeout(ctx, time.Duration(w.to-now()))
	defer cancel()
	cpu := r.meter(w)
	var lastRelease, lastHolder atomic.Int64
	lastHolder.Store(-1)
	grants := make([]int, n)
	handed := make([]int, n)
	handoffs := make([][]int64, n)
	var fail failures
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			wk := ws[i]
			for ctx.Err() == nil && now() < w.to {
				l, err := r.lk.hold(wctx, wk, "hot", lockTTL)
				granted := now()
				if err != nil {
					if wctx.Err() == nil {
						fail.add(err)
					}
					continue
				}
				if granted >= w.from && granted <= w.to {
					grants[i]++
					if prev := lastRelease.Load(); prev >= w.from && lastHolder.Load() != int64(i) {
						handed[i]++
						handoffs[i] = append(handoffs[i], granted-prev)
					}
				}
				lastHolder.Store(int64(i))
				lastRelease.Store(now())
				if err := r.lk.release(ctx, wk, l); err != nil {
					fail.add(err)
				}
			}
		})
	}
	wg.Wait()
	total, nhanded, least, most := 0, 0, grants[0], grants[0]
	for i, g := range grants {
		total += g
		nhanded += handed[i]
		least, most = min(least, g), max(most, g)
	}
	lat := summarize(handoffs)
	m := map[string]float64{
		"grants_per_sec":   float64(total) / w.seconds(),
		"handoffs_per_sec": float64(nhanded) / w.seconds(),
		"fair_min":         float64(least),
		"fair_max":         float64(most),
	}
	lat.put(m, "handoff_")
	if err := cpu(m, total); err != nil {
		return nil, err
	}
	return m, fail.verdict(m, total)
}

// bulkHold takes n keys named prefix+i, key i for ttl(i) (called as its
// HOLD is queued), through pipelines of 256 from 8 workers, and returns the
// leases if keep. Every key must be free.
func (r *run) bulkHold(ctx context.Context, c *redis.Client, prefix string, n int, ttl func(i int) time.Duration, keep bool) ([]lease, error) {
	const workers, batch = 8, 256
	var leases []lease
	if keep {
		leases = make([]lease, n)
	}
	var done atomic.Int64
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		t := time.NewTicker(5 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				r.progress("    holding %s keys: %d/%d", strings.TrimSuffix(prefix, ":"), done.Load(), n)
			}
		}
	}()
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for wk := range workers {
		wg.Go(func() {
			w := r.worker(c, wk)
			for lo := wk * batch; lo < n && ctx.Err() == nil; lo += workers * batch {
				hi := min(lo+batch, n)
				pipe := c.Pipeline()
				parse := make([]func() (lease, bool, error), 0, hi-lo)
				for i := lo; i < hi; i++ {
					parse = append(parse, r.lk.tryHold(ctx, pipe, w, prefix+strconv.Itoa(i), ttl(i)))
				}
				pipe.Exec(ctx) // each reply is read below, errors included
				for k, p := range parse {
					l, ok, err := p()
					switch {
					case err != nil:
						errs[wk] = err
						return
					case !ok:
						errs[wk] = fmt.Errorf("%s%d was not free", prefix, lo+k)
						return
					case keep:
						leases[lo+k] = l
					}
				}
				done.Add(int64(hi - lo))
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return leases, ctx.Err()
}

// fixed is the same ttl for every key of a bulkHold.
func fixed(ttl time.Duration) func(int) time.Duration {
	return func(int) time.Duration { return ttl }
}

// renewal: renewLeases live leases, renewed at ttl/3 as the SDK renews,
// spread evenly over the period by clients workers, with the fine clock
// running so that they leave as spread (fineclock.go). The offered load is
// fixed (leases / (ttl/3) per second); what differs is whether the server
// keeps up, how fast it answers, and the CPU it burns doing so.
func renewal(ctx context.Context, r *run) (map[string]float64, error) {
	n, ttl := r.cfg.clients, r.cfg.renewTTL
	c := newClient(r.p.addr, n+8, 16<<10)
	defer c.Close()
	if err := r.warm(ctx, c, n+8); err != nil {
		return nil, err
	}
	leases, err := r.bulkHold(ctx, c, "renew:", r.cfg.renewLeases, fixed(ttl), true)
	if err != nil {
		return nil, err
	}
	period := ttl / 3
	stopClock, err := fineClock() // the renewals leave as paced, not in bursts
	if err != nil {
		return nil, err
	}
	defer stopClock()
	start := now()
	w := window{from: start + int64(r.cfg.warmup), to: start + int64(r.cfg.warmup+r.cfg.duration)}
	cpu := r.meter(w)
	samples := make([][]int64, n)
	lost := make([]int, n)
	var fail failures
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			wk := r.worker(c, i)
			var mine []lease
			for j := i; j < len(leases); j += n {
				mine = append(mine, leases[j])
			}
			if len(mine) == 0 {
				return
			}
			step := int64(period) / int64(len(mine))
			next := start + int64(i)*step/int64(n) // workers staggered
			for k := 0; ctx.Err() == nil; k, next = k+1, next+step {
				if next >= w.to {
					return
				}
				sleepUntil(next)
				l := mine[k%len(mine)]
				if l.id == "" {
					continue // lost earlier
				}
				s := now()
				err := r.lk.renew(ctx, wk, l, ttl)
				e := now()
				switch {
				case errors.Is(err, errLost):
					lost[i]++
					mine[k%len(mine)] = lease{}
				case err != nil:
					fail.add(err)
				case w.holds(s, e):
					samples[i] = append(samples[i], e-s)
				}
			}
		})
	}
	wg.Wait()
	lat := summarize(samples)
	nlost := 0
	for _, x := range lost {
		nlost += x
	}
	m := map[string]float64{
		"renewals_per_sec": float64(lat.N) / w.seconds(),
		"offered_per_sec":  float64(len(leases)) / period.Seconds(),
		"lost":             float64(nlost),
	}
	if err := cpu(m, lat.N); err != nil {
		return nil, err
	}
	lat.put(m, "")
	return m, fail.verdict(m, lat.N)
}

// memory: the server's RSS before and after memLeases live leases (the
// recipe: as many lock keys), as bytes per lease. One connection pool is
// open in both readings, so connections are not counted.
func memory(ctx context.Context, r *run) (map[string]float64, error) {
	c := newClient(r.p.addr, 12, 64<<10)
	defer c.Close()
	if err := r.warm(ctx, c, 8); err != nil {
		return nil, err
	}
	before, err := r.p.rss()
	if err != nil {
		return nil, err
	}
	n := r.cfg.memLeases
	start := time.Now()
	// Ten minutes: alive however long the loading takes.
	if _, err := r.bulkHold(ctx, c, "mem:", n, fixed(10*time.Minute), false); err != nil {
		return nil, err
	}
	load := time.Since(start)
	time.Sleep(time.Second) // let a collection that the load started finish
	after, err := r.p.rss()
	if err != nil {
		return nil, err
	}
	live, err := liveLocks(ctx, c, r.p.target)
	if err != nil {
		return nil, err
	}
	if live != n {
		return nil, fmt.Errorf("%d live leases after holding %d", live, n)
	}
	return map[string]float64{
		"rss_before_mb":   float64(before) / (1 << 20),
		"rss_after_mb":    float64(after) / (1 << 20),
		"bytes_per_lease": float64(after-before) / float64(n),
		"load_per_sec":    float64(n) / load.Seconds(),
	}, nil
}

// liveLocks counts live leases: INFO locks on tenure, DBSIZE on Redis.
func liveLocks(ctx context.Context, c *redis.Client, t *target) (int, error) {
	if t.Redis {
		n, err := c.DBSize(ctx).Result()
		return int(n), err
	}
	info, err := c.Info(ctx, "locks").Result()
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "leases:"); ok {
			return strconv.Atoi(v)
		}
	}
	return 0, errors.New("INFO locks has no leases field")
}

package main

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

// expiry: expiryHolders holders take a key each for expiryTTL and never
// renew; each key has one waiter. The holders take their keys evenly over
// expirySpread, so the deadlines come at a known rate (holders/spread a
// second) whatever the server: a burst of expiries the server must turn
// into grants as fast as they fall due. The lateness of a waiter's grant is from
// its holder's deadline, taken as the time the holder sent its HOLD (or
// SET) plus the ttl: the store's deadline is no earlier, so the lateness
// shown is, if anything, too large. Tenure's waiters wait in line, one
// connection each; the recipe's retry with backoff.
func expiry(ctx context.Context, r *run) (map[string]float64, error) {
	h, ttl := r.cfg.expiryHolders, r.cfg.expiryTTL
	if r.p.target.Etcd {
		// etcd takes ~5,000 locks a second here: more holders would not
		// take their keys within the spread.
		h = min(h, r.cfg.etcdHolders)
	}
	hc := newClient(r.p.addr, r.cfg.clients+4, 16<<10)
	defer hc.Close()
	wc := newClient(r.p.addr, h+4, 4<<10)
	defer wc.Close()
	if err := r.warm(ctx, hc, r.cfg.clients); err != nil {
		return nil, err
	}
	if err := r.warm(ctx, wc, h); err != nil {
		return nil, err
	}
	waiters, err := r.workers(ctx, wc, h, lockTTL)
	if err != nil {
		return nil, err
	}
	defer closeWorkers(waiters)
	keys := make([]string, h)
	for i := range keys {
		keys[i] = "exp:" + strconv.Itoa(i)
	}
	deadline := make([]int64, h)
	var fail failures
	var next atomic.Int64
	var wg sync.WaitGroup
	holding := now()
	step := int64(r.cfg.expirySpread) / int64(h)
	for k := range r.cfg.clients {
		wg.Go(func() {
			wk := r.worker(hc, k)
			defer wk.close()
			for i := int(next.Add(1) - 1); i < h && ctx.Err() == nil; i = int(next.Add(1) - 1) {
				sleepUntil(holding + int64(i)*step)
				sent := now()
				l, err := r.lk.hold(ctx, wk, keys[i], ttl)
				if err != nil {
					fail.add(err)
					deadline[i] = -1
					continue
				}
				deadline[i] = r.lk.stopRenewing(wk, l, sent, ttl)
			}
		})
	}
	wg.Wait()
	if fail.first != nil {
		return nil, fmt.Errorf("holders: %w", fail.first)
	}
	setup := now()
	wctx, cancel := context.WithTimeout(ctx, ttl+30*time.Second)
	defer cancel()
	// The server's CPU from the first deadline to the last grant: near
	// 100%, the expiries came faster than it could turn them into grants.
	first := deadline[0]
	for _, d := range deadline {
		if d > 0 {
			first = min(first, d)
		}
	}
	var cpuFrom time.Duration
	var cpuErr error
	var meter sync.WaitGroup
	meter.Go(func() {
		sleepUntil(first)
		cpuFrom, cpuErr = r.p.cpuTime()
	})
	late := make([][]int64, h)
	var lateJoins, early atomic.Int64
	for i := range h {
		wg.Go(func() {
			if now() >= deadline[i] {
				lateJoins.Add(1) // joined after the deadline: not a measure of the store
				return
			}
			_, err := r.lk.hold(wctx, waiters[i], keys[i], lockTTL)
			granted := now()
			if err != nil {
				fail.add(err)
				return
			}
			if granted < deadline[i] {
				early.Add(1)
			}
			late[i] = []int64{max(granted-deadline[i], 0)}
		})
	}
	wg.Wait()
	end := now()
	meter.Wait()
	cpuTo, err := r.p.cpuTime()
	if err = errors.Join(cpuErr, err); err != nil {
		return nil, fmt.Errorf("read server CPU time: %w", err)
	}
	lat := summarize(late)
	m := map[string]float64{
		"server_cpu_pct": 100 * (cpuTo - cpuFrom).Seconds() / (float64(end-first) / 1e9),
		"granted":        float64(lat.N),
		"late_joins":     float64(lateJoins.Load()),
		"early":          float64(early.Load()),
		"setup_s":        float64(setup-holding) / 1e9,
	}
	if lat.N > 0 {
		m["late_p50_ms"], m["late_p99_ms"], m["late_max_ms"] = lat.P50, lat.P99, lat.Max
	}
	return m, fail.verdict(m, lat.N)
}

// massExpiry: massLeases leases whose deadlines fall evenly within
// massSpread, massWaiters of them with a waiter in line, while massReaders
// clients PING and GET and massLockers hold and release keys of their own.
// What it shows is whether ending a million leases at once stalls
// everything else: the readers' latency while they fall due, the lockers'
// (a lock command must see every lease due by then ended, LOCK-06),
// the waiters' grant lateness (LOCK-06), and how long after the last
// deadline the last lease is gone. The leases are loaded through pipelines
// with a ttl each that puts its deadline at its place in the spread,
// massLead after loading began. The store's deadline is no earlier than
// that place, but later by as long as the pipeline took to reach the store
// (milliseconds, while a million leases load): so a waiter's holder's
// deadline is taken as the later of its place and what the store says of
// it before the waiter joins (see deadlineNoEarlier), no later than the
// store's either way.
func massExpiry(ctx context.Context, r *run) (map[string]float64, error) {
	const lockerEvery = 5 * time.Millisecond
	n, spread, nw, nr, nl := r.cfg.massLeases, r.cfg.massSpread, r.cfg.massWaiters, r.cfg.massReaders, r.cfg.massLockers
	c := newClient(r.p.addr, 12, 64<<10)
	defer c.Close()
	wc := newClient(r.p.addr, nw+4, 4<<10)
	defer wc.Close()
	rc := newClient(r.p.addr, nr+4, 4<<10)
	defer rc.Close()
	lc := newClient(r.p.addr, nl+4, 4<<10)
	defer lc.Close()
	for _, w := range []struct {
		c *redis.Client
		n int
	}{{c, 8}, {wc, nw}, {rc, nr}, {lc, nl}} {
		if err := r.warm(ctx, w.c, w.n); err != nil {
			return nil, err
		}
	}
	const readKey = "mass:read"
	if err := c.Set(ctx, readKey, "0123456789abcdef", 0).Err(); err != nil {
		return nil, err
	}
	start := now()
	first := start + int64(r.cfg.massLead)
	due := func(i int) int64 { return first + int64(spread)*int64(i)/int64(n) }
	var short atomic.Bool
	ttl := func(i int) time.Duration {
		// Rounded up to the millisecond the command carries, so that the
		// store's deadline is no earlier than due(i).
		d := (time.Duration(due(i)-now()) + time.Millisecond - 1).Truncate(time.Millisecond)
		if d < time.Second {
			short.Store(true) // tenure's smallest TTL; loading took too long
			d = time.Second
		}
		return d
	}
	if _, err := r.bulkHold(ctx, c, "mass:", n, ttl, false); err != nil {
		return nil, err
	}
	loaded := now()
	if short.Load() || loaded > first-int64(500*time.Millisecond) {
		return nil, fmt.Errorf("loading %d leases took %.1fs, too close to the first deadline: raise -mass-lead", n, float64(loaded-start)/1e9)
	}

	// The waiters' holders' deadlines, then the waiters join at once, well
	// before them.
	deadlines := make([]int64, nw)
	skew := make([][]int64, 1)
	for k := range nw {
		i := k * n / nw
		d, err := deadlineNoEarlier(ctx, c, r.p.target, "mass:"+strconv.Itoa(i))
		if err != nil {
			return nil, err
		}
		deadlines[k] = max(due(i), d)
		skew[0] = append(skew[0], deadlines[k]-due(i))
	}
	late := make([][]int64, nw)
	var fail failures
	var lateJoins atomic.Int64
	wctx, cancel := context.WithTimeout(ctx, time.Duration(first-now())+spread+30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for k := range nw {
		wg.Go(func() {
			i := k * n / nw
			deadline := deadlines[k]
			if now() >= deadline {
				lateJoins.Add(1)
				return
			}
			_, err := r.lk.hold(wctx, r.worker(wc, k), "mass:"+strconv.Itoa(i), lockTTL)
			granted := now()
			if err != nil {
				fail.add(err)
				return
			}
			late[k] = []int64{max(granted-deadline, 0)}
		})
	}

	// The readers, from a second before the first deadline to half a
	// second after the last; measured while the leases fall due.
	w := window{from: first, to: first + int64(spread) + int64(500*time.Millisecond)}
	cpu := r.meter(w)
	reads := make([][]int64, nr)
	var readers sync.WaitGroup
	for k := range nr {
		readers.Go(func() {
			sleepUntil(first - int64(time.Second))
			for j := 0; ctx.Err() == nil; j++ {
				s := now()
				if s >= w.to {
					return
				}
				var err error
				if j%2 == 0 {
					err = rc.Ping(ctx).Err()
				} else {
					err = rc.Get(ctx, readKey).Err()
				}
				e := now()
				if err != nil {
					fail.add(err)
					continue
				}
				if w.holds(s, e) {
					reads[k] = append(reads[k], e-s)
				}
			}
		})
	}
	// The lockers, over the same window: a HOLD and a RELEASE each on
	// keys of their own, none of them due, one cycle every lockerEvery, as
	// workers that have nothing to do with the mass's keys would send them:
	// a probe of how long a lock command waits, not more load.
	cycles := make([][]int64, nl)
	for k := range nl {
		readers.Go(func() {
			wk := r.worker(lc, nw+k)
			defer wk.close()
			key := "mass-locker:" + strconv.Itoa(k)
			sleepUntil(first - int64(time.Second))
			for ctx.Err() == nil {
				s := now()
				if s >= w.to {
					return
				}
				l, err := r.lk.hold(ctx, wk, key, lockTTL)
				if err == nil {
					err = r.lk.release(ctx, wk, l)
				}
				e := now()
				if err != nil {
					fail.add(err)
					continue
				}
				if w.holds(s, e) {
					cycles[k] = append(cycles[k], e-s)
				}
				sleepUntil(s + int64(lockerEvery))
			}
		})
	}
	readers.Wait()
	wg.Wait()
	m := map[string]float64{"load_per_sec": float64(n) / (float64(loaded-start) / 1e9), "late_joins": float64(lateJoins.Load())}
	lat := summarize(reads)
	m["reads_per_sec"] = float64(lat.N) / w.seconds()
	lat.put(m, "read_")
	if err := cpu(m, lat.N); err != nil {
		return nil, err
	}
	cl := summarize(cycles)
	m["cycles_per_sec"] = float64(cl.N) / w.seconds()
	cl.put(m, "cycle_")
	wl := summarize(late)
	m["granted"] = float64(wl.N)
	if wl.N > 0 {
		m["late_p50_ms"], m["late_p99_ms"], m["late_max_ms"] = wl.P50, wl.P99, wl.Max
	}
	// How much later than their places the store put the deadlines: what
	// the lateness would wrongly include, were it taken from the places.
	m["deadline_after_place_p99_ms"] = summarize(skew).P99

	// Gone: only the waiters' leases are left (and the key the readers
	// read, on Redis).
	last := due(n - 1)
	left := nw
	if r.p.target.Redis {
		left++
	}
	for {
		live, err := liveLocks(ctx, c, r.p.target)
		if err != nil {
			return nil, err
		}
		if live <= left {
			m["ended_s"] = max(float64(now()-last)/1e9, 0)
			break
		}
		if now()-last > int64(time.Minute) {
			return nil, fmt.Errorf("%d leases still live a minute after the last deadline", live-left)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return m, fail.verdict(m, lat.N)
}

// deadlineNoEarlier is a time (on the program's clock) no later than the
// deadline the store has for key's lease: when the question was sent plus
// the time left it answers, as LOCK.INFO's ttl (whole milliseconds, cut
// down) or Redis's PTTL (whole milliseconds of a deadline kept in whole
// milliseconds: one less).
func deadlineNoEarlier(ctx context.Context, c *redis.Client, t *target, key string) (int64, error) {
	sent := now()
	if t.Redis {
		left, err := c.PTTL(ctx, lockName+":"+key).Result()
		if err != nil || left <= 0 {
			return 0, fmt.Errorf("PTTL %s: %v, %w", key, left, err)
		}
		return sent + int64(left) - int64(time.Millisecond), nil
	}
	info, err := c.Do(ctx, "LOCK.INFO", lockName, key).Slice()
	if err != nil {
		return 0, fmt.Errorf("LOCK.INFO %s: %w", key, err)
	}
	for j := 0; j+1 < len(info); j += 2 {
		if info[j] == "ttl" {
			if ms, ok := info[j+1].(int64); ok && ms > 0 {
				return sent + ms*int64(time.Millisecond), nil
			}
		}
	}
	return 0, fmt.Errorf("LOCK.INFO %s replied %v: no ttl left", key, info)
}

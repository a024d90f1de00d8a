package main

// Watching (issue 33): how soon a watcher learns that a key changed, with
// many watchers waiting. On tenure each watcher is a connection blocked in
// LOCK.WATCH lock key FENCE f, watching again with the fence it was told
// (what the SDKs' Observe does); on etcd each is a Watch of the key through
// etcd's own Go client (what its election's Observe rests on), its
// watchers sharing the run's clients. A changer changes one key at a time,
// round robin, at a steady rate: on tenure a grant and then a release of
// the key (a new leader, then none), on etcd a Put. Redis has no watch of
// its own and does not run it.

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

const (
	watchKeys         = 1000
	watchersPerKey    = 10 // 10,000 watchers in all
	watchChangesPerS  = 500
	watchTimeoutMs    = 4000 // each LOCK.WATCH's TIMEOUT: under the clients' read timeout
	watchLockName     = "watch"
	watchSetupTimeout = 2 * time.Minute
)

// watchServers: tenure and etcd; redis-server has no watch.
func watchServers(t *target) bool { return !t.Redis }

func watchScenario(*settings) *scenario {
	wakes := row{"wakes_per_sec", "watchers woken/s", "ops"}
	lat := []row{{"wake_p50_ms", "wake-up p50", "ms"}, {"wake_p99_ms", "wake-up p99", "ms"}, {"wake_p999_ms", "wake-up p999", "ms"}}
	return &scenario{Name: "watch", Group: "9",
		Title: fmt.Sprintf("watch wake-up: %s watchers on %s keys (%d a key), %d changes/s round robin; from the change sent to each watcher told",
			thousands(watchKeys*watchersPerKey), thousands(watchKeys), watchersPerKey, watchChangesPerS),
		Run: watchLatency, On: watchServers, Rate: wakes, Latency: lat,
		Rows: rows([]row{wakes}, lat, []row{{"wake_max_ms", "wake-up max", "ms"},
			{"change_p50_ms", "the change's own reply p50", "ms"}, {"change_p99_ms", "the change's own reply p99", "ms"},
			{"missed", "wake-ups missing at the end", "n"}, {"rss_watching_mb", "server RSS with every watcher waiting", "MB"}},
			cpuRows("wake-up"), []row{errorsRow})}
}

// watchState is the scenario's shared record: when each key's last change
// was sent, and every watcher's samples.
type watchState struct {
	changed []atomic.Int64 // per key: when its last change was sent; 0: none yet
	seq     []atomic.Int64 // per key: changes sent
	w       window
	mu      sync.Mutex
	samples [][]int64
	woken   atomic.Int64 // wake-ups of changes in the window
	fail    failures
}

// woke records that a watcher of key learned of its change number n.
func (s *watchState) woke(key int, n int64, at int64, mine *[]int64) {
	if n != s.seq[key].Load() {
		return // a later change came meanwhile: this one is not timed
	}
	sent := s.changed[key].Load()
	if sent < s.w.from || sent > s.w.to || at < sent {
		return // changes sent in the window are timed, however late told
	}
	*mine = append(*mine, at-sent)
	s.woken.Add(1)
}

func watchLatency(ctx context.Context, r *run) (map[string]float64, error) {
	n := watchKeys * watchersPerKey
	st := &watchState{changed: make([]atomic.Int64, watchKeys), seq: make([]atomic.Int64, watchKeys), samples: make([][]int64, n)}
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer stop()

	var change func(ctx context.Context, key int) error
	ready := make(chan error, n)
	if r.p.target.Etcd {
		for i := range n {
			key := i % watchKeys
			cli := r.etcd[i%len(r.etcd)]
			wg.Go(func() { etcdWatcher(wctx, cli, st, key, i, ready) })
		}
		change = func(ctx context.Context, key int) error {
			_, err := r.etcd[key%len(r.etcd)].Put(ctx, watchLockName+"/"+strconv.Itoa(key), strconv.FormatInt(now(), 10))
			return err
		}
	} else {
		wc := newClient(r.p.addr, n+4, 4<<10)
		defer wc.Close()
		if err := r.warm(ctx, wc, n); err != nil {
			return nil, err
		}
		for i := range n {
			key := i % watchKeys
			wg.Go(func() { tenureWatcher(wctx, wc, st, key, i, ready) })
		}
		cc := newClient(r.p.addr, 4, 16<<10)
		defer cc.Close()
		leases := make([]string, watchKeys)
		change = func(ctx context.Context, key int) error {
			if id := leases[key]; id != "" {
				leases[key] = ""
				return cc.Do(ctx, "LOCK.RELEASE", id).Err()
			}
			v, err := cc.Do(ctx, "LOCK.HOLD", watchLockName, strconv.Itoa(key), "c"+strconv.FormatInt(now(), 36), "TTL", 600000, "WAIT", 0).Slice()
			if err != nil {
				return err
			}
			leases[key], _ = v[0].(string)
			return nil
		}
	}
	// Every watcher waits before the first change.
	setup := time.NewTimer(watchSetupTimeout)
	defer setup.Stop()
	for range n {
		select {
		case err := <-ready:
			if err != nil {
				return nil, fmt.Errorf("watchers: %w", err)
			}
		case <-setup.C:
			return nil, fmt.Errorf("watchers not all waiting within %v", watchSetupTimeout)
		}
	}
	if !r.p.target.Etcd {
		// The last LOCK.WATCH has reached the store.
		cc := newClient(r.p.addr, 1, 4<<10)
		err := waitWatchers(ctx, cc, n)
		cc.Close()
		if err != nil {
			return nil, err
		}
	}
	rss, _ := r.p.rss()

	st.w = newWindow(r.cfg.warmup, r.cfg.duration)
	cpu := r.meter(st.w)
	var changeLat []int64
	every := int64(time.Second) / watchChangesPerS
	changes := 0
	for i, at := 0, now(); at < st.w.to+int64(100*time.Millisecond); i, at = i+1, at+every {
		sleepUntil(at)
		key := i % watchKeys
		sent := now()
		st.seq[key].Add(1)
		st.changed[key].Store(sent)
		if err := change(ctx, key); err != nil {
			st.fail.add(err)
			continue
		}
		if end := now(); sent >= st.w.from && sent <= st.w.to {
			changeLat = append(changeLat, end-sent)
			changes++
		}
	}
	time.Sleep(time.Second) // the last wake-ups of the window arrive
	stop()
	wg.Wait()

	lat := summarize(st.samples)
	m := map[string]float64{"wakes_per_sec": float64(lat.N) / st.w.seconds()}
	lat.put(m, "wake_")
	cl := summarize([][]int64{changeLat})
	m["change_p50_ms"], m["change_p99_ms"] = cl.P50, cl.P99
	m["missed"] = float64(changes*watchersPerKey - lat.N)
	if rss > 0 {
		m["rss_watching_mb"] = float64(rss) / (1 << 20)
	}
	if err := cpu(m, lat.N); err != nil {
		return nil, err
	}
	return m, st.fail.verdict(m, lat.N)
}

// tenureWatcher is one watcher on tenure: LOCK.WATCH with the fence it
// last saw, again and again. ready is told once the first watch waits.
func tenureWatcher(ctx context.Context, c *redis.Client, st *watchState, key, i int, ready chan<- error) {
	name := strconv.Itoa(key)
	var fence int64
	// The first LOCK.WATCH of a free key waits; its going out is the
	// watcher's being ready (the store answers it only on a change).
	first := true
	for ctx.Err() == nil {
		n := st.seq[key].Load()
		if first {
			ready <- nil
			first = false
		}
		v, err := c.Do(ctx, "LOCK.WATCH", watchLockName, name, "FENCE", fence, "TIMEOUT", watchTimeoutMs).Result()
		at := now()
		switch {
		case errors.Is(err, redis.Nil):
			v = nil
		case err != nil:
			if ctx.Err() == nil {
				st.fail.add(err)
			}
			continue
		}
		f, err := fenceOf(v)
		if err != nil {
			st.fail.add(err)
			continue
		}
		if f != fence {
			fence = f
			mine := &st.samples[i]
			if cur := st.seq[key].Load(); cur > n {
				st.woke(key, cur, at, mine)
			}
		}
	}
}

// waitWatchers waits until INFO locks counts n watchers.
func waitWatchers(ctx context.Context, c *redis.Client, n int) error {
	deadline := time.Now().Add(watchSetupTimeout)
	for {
		info, err := c.Info(ctx, "locks").Result()
		if err != nil {
			return err
		}
		for _, line := range strings.Split(info, "\r\n") {
			if v, ok := strings.CutPrefix(line, "watchers:"); ok {
				if got, _ := strconv.Atoi(v); got >= n {
					return nil
				}
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not %d watchers within %v: %q", n, watchSetupTimeout, info)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// fenceOf reads the fence of LOCK.WATCH's reply (RESP2 pairs); 0 for null.
func fenceOf(v any) (int64, error) {
	a, ok := v.([]any)
	if v == nil {
		return 0, nil
	}
	for i := 0; ok && i+1 < len(a); i += 2 {
		if a[i] == "fence" {
			if f, ok := a[i+1].(int64); ok {
				return f, nil
			}
		}
	}
	return 0, fmt.Errorf("LOCK.WATCH replied %v", v)
}

// etcdWatcher is one watcher on etcd: a Watch of the key, each event a
// change told.
func etcdWatcher(ctx context.Context, cli *clientv3.Client, st *watchState, key, i int, ready chan<- error) {
	wch := cli.Watch(clientv3.WithRequireLeader(ctx), watchLockName+"/"+strconv.Itoa(key), clientv3.WithCreatedNotify())
	created := false
	for resp := range wch {
		at := now()
		if err := resp.Err(); err != nil {
			if ctx.Err() == nil {
				st.fail.add(err)
			}
			if !created {
				ready <- err
			}
			return
		}
		if resp.Created && !created {
			created = true
			ready <- nil
			continue
		}
		if len(resp.Events) > 0 {
			st.woke(key, st.seq[key].Load(), at, &st.samples[i])
		}
	}
	if !created {
		ready <- errors.New("watch closed before it was created")
	}
}

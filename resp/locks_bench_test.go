package resp_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tenure-db/tenure"
	"github.com/tenure-db/tenure/internal/testenv"
	"github.com/tenure-db/tenure/resp/resptest"
)

// The figures of the lock module's note (issue 3), against a real server
// in this process over loopback, through go-redis:
//
//	go test -run XXX -bench 'LockHoldRelease|LockHandoff' -benchtime 10s ./resp/
//
// Run them without -race: the race detector slows the server several times.

// BenchmarkLockHoldReleaseCycle: 50 clients, each on its own key, each
// looping LOCK.HOLD (granted at once) and LOCK.RELEASE. One op is one
// cycle of two commands; cycles/s is the figure.
func BenchmarkLockHoldReleaseCycle(b *testing.B) {
	const clients = 50
	s := resptest.Start(b, tenure.Options{})
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr, PoolSize: clients, MinIdleConns: clients})
	b.Cleanup(func() { rdb.Close() })
	var next atomic.Int64
	var id atomic.Int64
	b.SetParallelism((clients + 1) / 2) // × GOMAXPROCS goroutines: 50 on 2 cores
	b.ResetTimer()
	defer testenv.ReportCPU(b)()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		key := fmt.Sprint("k", id.Add(1))
		for pb.Next() {
			reqid := fmt.Sprint("r", next.Add(1))
			v, err := rdb.Do(ctx, "LOCK.HOLD", "bench", key, reqid, "TTL", 10000, "WAIT", 0).Slice()
			if err != nil || len(v) != 3 {
				b.Errorf("LOCK.HOLD: %v %v", v, err)
				return
			}
			if err := rdb.Do(ctx, "LOCK.RELEASE", v[0]).Err(); err != nil {
				b.Errorf("LOCK.RELEASE: %v", err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "cycles/s")
}

// BenchmarkLockHandoff: 8 clients contend for one key; each holds it and
// releases it at once, and waits in line (blocking HOLD) otherwise. The
// handoff latency is from just before a holder sends LOCK.RELEASE to the
// moment the next holder has its grant reply: the store's release, its
// grant in the same step, and both round trips. One op is one handoff.
func BenchmarkLockHandoff(b *testing.B) {
	const clients = 8
	s := resptest.Start(b, tenure.Options{})
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr, PoolSize: clients, MinIdleConns: clients})
	b.Cleanup(func() { rdb.Close() })

	var (
		mu        sync.Mutex
		releaseAt = map[int64]time.Time{} // fence -> when its release was sent
		latencies []time.Duration
		remaining atomic.Int64
		reqs      atomic.Int64
		wg        sync.WaitGroup
	)
	remaining.Store(int64(b.N))
	b.ResetTimer()
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := context.Background()
			for remaining.Add(-1) >= 0 {
				reqid := fmt.Sprint("r", reqs.Add(1))
				var v []any
				for {
					// Wait in chunks shorter than go-redis's read timeout,
					// the same reqid keeping the place (SPEC §8).
					var err error
					v, err = rdb.Do(ctx, "LOCK.HOLD", "bench", "hot", reqid, "TTL", 10000, "WAIT", 1000).Slice()
					if err == redis.Nil {
						continue
					}
					if err != nil || len(v) != 3 {
						b.Errorf("LOCK.HOLD: %v %v", v, err)
						return
					}
					break
				}
				granted := time.Now()
				fence := v[1].(int64)
				mu.Lock()
				// Every grant on this server is on this key, so the lease
				// before this one had the fence before it.
				if at, ok := releaseAt[fence-1]; ok {
					latencies = append(latencies, granted.Sub(at))
					delete(releaseAt, fence-1)
				}
				releaseAt[fence] = time.Now()
				mu.Unlock()
				if err := rdb.Do(ctx, "LOCK.RELEASE", v[0]).Err(); err != nil {
					b.Errorf("LOCK.RELEASE: %v", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	if len(latencies) == 0 {
		return
	}
	slices.Sort(latencies)
	q := func(p float64) float64 {
		return float64(latencies[int(p*float64(len(latencies)-1))].Microseconds())
	}
	b.ReportMetric(q(0.50), "p50-µs")
	b.ReportMetric(q(0.99), "p99-µs")
}

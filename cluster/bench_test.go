package cluster_test

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// cpuTime is the CPU time this process (every node and client) has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkClusterSet is b.N SETs through the leader of a three-node
// cluster in this process, from 50 clients at once, as the cluster's
// throughput row of make bench -cluster offers them: what an acknowledged
// write costs when a majority must have it (SPEC §10).
func BenchmarkClusterSet(b *testing.B) {
	tc := newCluster(b, 3)
	lead := tc.leader(10 * time.Second)
	c := tc.client(lead)
	ctx := context.Background()
	const clients = 50
	var next atomic.Int64
	var wg sync.WaitGroup
	cpu0 := cpuTime()
	b.ResetTimer()
	for w := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := "k" + strconv.Itoa(w)
			for next.Add(1) <= int64(b.N) {
				if err := c.Set(ctx, key, "0123456789abcdef", 0).Err(); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
}

package main

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// The writes rows of the cluster mode: tenure's and etcd's three-node
// clusters, writes through the leader from clients that wait for each.

// clusterWrite is one run of the writes rows: a three-node cluster's
// writes through its leader, from clients that each wait for their write
// before the next (tenure SET, etcd Put of a 16-byte value on keys of
// their own).
type clusterWrite struct {
	Target  string  `json:"target"`
	Clients int     `json:"clients"`
	Round   int     `json:"round"`
	PerSec  float64 `json:"per_sec"`
	P50MS   float64 `json:"p50_ms"`
	P99MS   float64 `json:"p99_ms"`
	Err     string  `json:"err,omitempty"`
}

// writeClients are the client counts of the writes rows: a lone writer
// (what one write waits) and the throughput rows' clients.
func writeClients(s *settings) []int { return []int{1, s.clients} }

// clusterWrites runs the writes rows: tenure's and etcd's three-node
// clusters at each count of writeClients, rounds times in alternation.
func clusterWrites(ctx context.Context, l *launcher, s *settings, withEtcd bool, rounds int, progress func(string, ...any)) []clusterWrite {
	ts := []*target{allTargets[0]}
	if withEtcd {
		ts = append(ts, allTargets[3])
	}
	var out []clusterWrite
	for round := 1; round <= rounds && ctx.Err() == nil; round++ {
		for _, n := range writeClients(s) {
			for j := range ts {
				t := ts[(j+round)%len(ts)]
				w := clusterWrite{Target: t.Name, Clients: n, Round: round}
				if err := runWrites(ctx, l, s, t, &w); err != nil {
					w.Err = err.Error()
				}
				progress("round %d · cluster writes · %s, %d clients: %s/s, p50 %.3f ms", round, t.Name, n, thousands(w.PerSec), w.P50MS)
				if w.Err != "" {
					progress("    FAILED: %s", w.Err)
				}
				out = append(out, w)
			}
		}
	}
	return out
}

// runWrites starts a cluster of t's servers and measures w.Clients
// writers on its leader for s.duration after s.warmup.
func runWrites(ctx context.Context, l *launcher, s *settings, t *target, w *clusterWrite) error {
	ms, err := l.startMembers(ctx, t, nil)
	if err != nil {
		return err
	}
	defer ms.stop()
	lead, err := ms.leader(ctx)
	if err != nil {
		return err
	}
	addr := ms.nodes[lead].addr
	var write func(ctx context.Context, i int, key string) error
	if t.Etcd {
		cs, err := dialEtcd(addr)
		if err != nil {
			return err
		}
		defer closeEtcd(cs)
		write = func(ctx context.Context, i int, key string) error {
			_, err := cs[i%len(cs)].Put(ctx, key, "0123456789abcdef")
			return err
		}
	} else {
		c := redis.NewClient(&redis.Options{Addr: addr, PoolSize: w.Clients, MaxRetries: -1})
		defer c.Close()
		write = func(ctx context.Context, _ int, key string) error {
			return c.Set(ctx, key, "0123456789abcdef", 0).Err()
		}
	}
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		samples [][]int64
		errs    []error
	)
	begin := time.Now()
	measureFrom, end := begin.Add(s.warmup), begin.Add(s.warmup+s.duration)
	for i := range w.Clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := fmt.Sprintf("w%d", i)
			var mine []int64
			for ctx.Err() == nil {
				t0 := time.Now()
				if t0.After(end) {
					break
				}
				if err := write(ctx, i, key); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
					return
				}
				if t0.After(measureFrom) {
					mine = append(mine, int64(time.Since(t0)))
				}
			}
			mu.Lock()
			samples = append(samples, mine)
			mu.Unlock()
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		return errs[0]
	}
	lat := summarize(samples)
	w.PerSec = float64(lat.N) / s.duration.Seconds()
	w.P50MS, w.P99MS = lat.P50, lat.P99 // summarize gives ms
	return nil
}

// writesTable prints the writes rows: medians of the rounds, and the
// issue 38 goals (≥ 2× etcd's Put/s at the throughput rows' clients; a
// lone writer's p50 no worse than etcd's).
func writesTable(b io.Writer, s *settings, ws []clusterWrite, withEtcd bool) (failed bool) {
	fmt.Fprintf(b, "\nwrites: a 3-node cluster through its leader, each client waiting for its write (SET / etcd Put, 16-byte values), medians\n\n")
	fmt.Fprintf(b, "  %-12s %8s %12s %10s %10s   %s\n", "", "clients", "writes/s", "p50 ms", "p99 ms", "vs etcd")
	med := func(target string, n int, f func(clusterWrite) float64) float64 {
		var xs []float64
		for _, w := range ws {
			if w.Target == target && w.Clients == n && w.Err == "" {
				xs = append(xs, f(w))
			}
		}
		return median(xs)
	}
	rate := func(w clusterWrite) float64 { return w.PerSec }
	p50 := func(w clusterWrite) float64 { return w.P50MS }
	p99 := func(w clusterWrite) float64 { return w.P99MS }
	for _, w := range ws {
		if w.Err != "" {
			failed = true
		}
	}
	for _, n := range writeClients(s) {
		for _, t := range []string{"tenure", "etcd"} {
			if t == "etcd" && !withEtcd {
				continue
			}
			goal := ""
			if t == "tenure" && withEtcd {
				if n == 1 {
					r := med("tenure", n, p50) / med("etcd", n, p50)
					goal = fmt.Sprintf("p50 %.2f× etcd's (goal ≤ 1×: %s)", r, verdict(r <= 1))
				} else {
					r := med("tenure", n, rate) / med("etcd", n, rate)
					goal = fmt.Sprintf("%.2f× etcd's writes/s (goal ≥ 2×: %s)", r, verdict(r >= 2))
				}
			}
			fmt.Fprintf(b, "  %-12s %8d %12s %10.3f %10.3f   %s\n", t, n, thousands(med(t, n, rate)), med(t, n, p50), med(t, n, p99), goal)
		}
	}
	return failed
}

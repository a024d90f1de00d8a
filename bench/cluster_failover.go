package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"
)

// The failover rows of the cluster mode: the leader killed again and
// again, and the time from each kill to the first write acknowledged and
// the first lock granted by the nodes that are left.

// failoverGoal is issue 20's: a client writes and locks again within 1.5 s
// of the leader's death, p99, with tenure's defaults.
const failoverGoal = 1500 * time.Millisecond

// firstSuccess starts an attempt of try every 5 ms, each given up to 2 s,
// without waiting for the ones before it (an attempt may wait inside the
// server for a leader), and returns how long after from the first one
// succeeded; it gives up 30 s after from.
func firstSuccess(ctx context.Context, from time.Time, try func(ctx context.Context) error) (time.Duration, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	won := make(chan time.Duration, 1)
	var mu sync.Mutex
	var last error
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	giveUp := time.After(30*time.Second - time.Since(from))
	for {
		go func() {
			actx, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			if err := try(actx); err != nil {
				mu.Lock()
				last = err
				mu.Unlock()
				return
			}
			select {
			case won <- time.Since(from):
			default:
			}
		}()
		select {
		case d := <-won:
			return d, nil
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-giveUp:
			mu.Lock()
			defer mu.Unlock()
			return 0, fmt.Errorf("nothing succeeded within 30s of the kill: %v", last)
		case <-tick.C:
		}
	}
}

// failoverSetting is one row of the failover table.
type failoverSetting struct {
	Name   string
	target *target
	extra  []string
	goal   bool // the goal is for this row
}

// failoverResult is the row's samples, in milliseconds.
type failoverResult struct {
	Setting string    `json:"setting"`
	WriteMS []float64 `json:"write_ms"`
	LockMS  []float64 `json:"lock_ms"`
	Err     string    `json:"error,omitempty"`
}

// failover kills the leader of a fresh cluster cs.kills times and times
// the first write and the first lock after each kill, tried on the nodes
// that are left.
func failover(ctx context.Context, l *launcher, cs clusterSettings, fs failoverSetting, progress func(string, ...any)) (res failoverResult) {
	res.Setting = fs.Name
	ms, err := l.startMembers(ctx, fs.target, fs.extra)
	if err != nil {
		res.Err = err.Error()
		return res
	}
	defer ms.stop()
	for k := range cs.kills {
		lead, err := ms.leader(ctx)
		if err != nil {
			res.Err = err.Error()
			return res
		}
		var rest []string
		for i, n := range ms.nodes {
			if i != lead {
				rest = append(rest, n.addr)
			}
		}
		write, lock, cleanup, err := probes(ctx, fs.target, rest, k)
		if err != nil {
			res.Err = err.Error()
			return res
		}
		from := time.Now()
		ms.kill(lead)
		var wt, lt time.Duration
		var werr, lerr error
		done := make(chan struct{})
		go func() {
			defer close(done)
			wt, werr = firstSuccess(ctx, from, write)
		}()
		lt, lerr = firstSuccess(ctx, from, lock)
		<-done
		cleanup()
		if err := errors.Join(werr, lerr); err != nil {
			res.Err = fmt.Sprintf("kill %d of n%d: %v", k+1, lead+1, err)
			for i, p := range ms.procs {
				if p != nil {
					res.Err += fmt.Sprintf("\n  n%d (%s) log: %s", i+1, ms.nodes[i].addr, p.logTail())
				}
			}
			return res
		}
		res.WriteMS = append(res.WriteMS, float64(wt)/1e6)
		res.LockMS = append(res.LockMS, float64(lt)/1e6)
		progress("    %s kill %d/%d: write %v, lock %v", fs.Name, k+1, cs.kills, wt.Round(time.Millisecond), lt.Round(time.Millisecond))
		if err := ms.restart(ctx, lead); err != nil {
			res.Err = err.Error()
			return res
		}
		time.Sleep(cs.settle) // the restarted node catches up before the next kill
	}
	return res
}

// probes are the k-th kill's first write and first lock, sent to the
// nodes in rest: on tenure SET and LOCK.HOLD to each node in turn (only
// the leader accepts them; overlapping attempts share the reqid, so they
// are one hold); on etcd a Put and a concurrency.Mutex Lock
// through a client of those nodes, in a session made before the kill.
func probes(ctx context.Context, t *target, rest []string, k int) (write, lock func(context.Context) error, cleanup func(), err error) {
	key := "failover-" + strconv.Itoa(k)
	if t.Etcd {
		c, err := clientv3.New(clientv3.Config{Endpoints: rest, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
		if err != nil {
			return nil, nil, nil, err
		}
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		s, err := concurrency.NewSession(c, concurrency.WithTTL(10), concurrency.WithContext(sctx))
		if err != nil {
			c.Close()
			return nil, nil, nil, fmt.Errorf("etcd session: %w", err)
		}
		write = func(ctx context.Context) error { _, err := c.Put(ctx, "/"+key, "1"); return err }
		// A Mutex an attempt: attempts overlap. Those of one session are
		// one waiter (the session's key), and the first to return has it.
		lock = func(ctx context.Context) error { return concurrency.NewMutex(s, "/"+lockName+"/"+key).Lock(ctx) }
		return write, lock, func() { s.Orphan(); c.Close() }, nil
	}
	var cs []*redis.Client
	for _, a := range rest {
		cs = append(cs, redis.NewClient(&redis.Options{Addr: a, MaxRetries: -1, DialTimeout: 100 * time.Millisecond, ReadTimeout: time.Second}))
	}
	eachNode := func(try func(ctx context.Context, c *redis.Client) error) func(context.Context) error {
		return func(ctx context.Context) error {
			var errs []error
			for _, c := range cs {
				if err := try(ctx, c); err == nil {
					return nil
				} else {
					errs = append(errs, err)
				}
			}
			return errors.Join(errs...)
		}
	}
	write = eachNode(func(ctx context.Context, c *redis.Client) error { return c.Set(ctx, key, k, 0).Err() })
	lock = eachNode(func(ctx context.Context, c *redis.Client) error {
		return c.Do(ctx, "LOCK.HOLD", lockName, key, "req-"+key, "TTL", 1000, "WAIT", 0).Err()
	})
	return write, lock, func() {
		for _, c := range cs {
			c.Close()
		}
	}, nil
}

// summarizeMS is summarize of samples in milliseconds.
func summarizeMS(ms []float64) latency {
	ns := make([]int64, len(ms))
	for i, v := range ms {
		ns[i] = int64(v * 1e6)
	}
	slices.Sort(ns)
	return summarize([][]int64{ns})
}

// failoverSettings are the rows of the failover table: tenure with its
// defaults and with cs.faster, and etcd with its own when withEtcd.
func failoverSettings(cs clusterSettings, withEtcd bool) []failoverSetting {
	tenure := allTargets[0]
	sets := []failoverSetting{
		{Name: "tenure, defaults (--raft-election-timeout 300ms)", target: tenure, goal: true},
		{Name: "tenure --raft-election-timeout " + cs.faster.String(), target: tenure, extra: []string{"--raft-election-timeout", cs.faster.String()}},
	}
	if withEtcd {
		sets = append(sets, failoverSetting{Name: "etcd, defaults (heartbeat 100ms, election 1s)", target: allTargets[3]})
	}
	return sets
}

// failoverTable writes the failover rows, fails being the results of
// sets, and says whether any of them failed.
func failoverTable(b io.Writer, cs clusterSettings, sets []failoverSetting, fails []failoverResult) (failed bool) {
	fmt.Fprintf(b, "failover: 3 nodes on loopback, %d leader kills (SIGKILL) each; ms from the kill to the first\n", cs.kills)
	fmt.Fprintf(b, "write acknowledged (SET / Put) and the first lock granted (LOCK.HOLD / concurrency.Mutex Lock)\n\n")
	fmt.Fprintf(b, "  %-52s %8s %8s %8s   %8s %8s %8s  %s\n", "", "write50", "write99", "max", "lock50", "lock99", "max", "goal (p99 ≤ 1.5 s)")
	for i, fr := range fails {
		if fr.Err != "" {
			failed = true
			fmt.Fprintf(b, "  %-52s FAILED: %s\n", fr.Setting, fr.Err)
			continue
		}
		w, lk := summarizeMS(fr.WriteMS), summarizeMS(fr.LockMS)
		goal := ""
		if sets[i].goal {
			goal = verdict(w.P99 <= float64(failoverGoal)/1e6 && lk.P99 <= float64(failoverGoal)/1e6)
		}
		fmt.Fprintf(b, "  %-52s %8.0f %8.0f %8.0f   %8.0f %8.0f %8.0f  %s\n", fr.Setting, w.P50, w.P99, w.Max, lk.P50, lk.P99, lk.Max, goal)
	}
	return failed
}

package main

// The cluster mode (-cluster, issue 20): three-node clusters on loopback.
// Failover: the leader is killed (SIGKILL) again and again, and the time
// from each kill to the first write acknowledged and the first lock granted
// by the new leader is measured, for tenure (the default election timeout
// and a shorter one) and for etcd (its defaults). Throughput: the lock
// cycle, GET and SET of a three-node tenure cluster, through its leader,
// against one tenure server. The approach is that of cmd/tenure's
// TestClusterProcess/LeaderKills, without its writers: here only the
// probes run, so the figures are what a client waits, not what a loaded
// cluster does.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"
)

// clusterNode is how one member of a cluster is started.
type clusterNode struct {
	id    string   // tenure --node-id, etcd --name
	addr  string   // where clients reach it: tenure's RESP (and Raft) address, etcd's client URL's host:port
	peers string   // tenure --peers, etcd --initial-cluster
	extra []string // more tenure flags

	clientPort, peerPort int // etcd's
}

func (n *clusterNode) etcdArgs(dir string) []string {
	return etcdArgs(dir, n.id, n.clientPort, n.peerPort, n.peers)
}

// failoverGoal is issue 20's: a client writes and locks again within 1.5 s
// of the leader's death, p99, with tenure's defaults.
const failoverGoal = 1500 * time.Millisecond

// clusterSettings are the cluster mode's flags.
type clusterSettings struct {
	kills  int           // leader kills of each failover setting
	settle time.Duration // after a killed node is back, before the next kill
	faster time.Duration // the second tenure setting's --raft-election-timeout
}

// memberSet is a running cluster of three.
type memberSet struct {
	l     *launcher
	t     *target
	nodes []*clusterNode
	procs []*process
	dirs  []string
}

// startMembers starts a three-node cluster of t's servers and waits until
// every node answers.
func (l *launcher) startMembers(ctx context.Context, t *target, extra []string) (*memberSet, error) {
	ports, err := freePorts(6)
	if err != nil {
		return nil, err
	}
	ms := &memberSet{l: l, t: t}
	var peers []string
	for i := range 3 {
		n := &clusterNode{id: "n" + strconv.Itoa(i+1), extra: extra, clientPort: ports[i], peerPort: ports[3+i]}
		n.addr = "127.0.0.1:" + strconv.Itoa(ports[i])
		if t.Etcd {
			peers = append(peers, n.id+"=http://127.0.0.1:"+strconv.Itoa(n.peerPort))
		} else {
			peers = append(peers, n.id+"="+n.addr)
		}
		ms.nodes = append(ms.nodes, n)
		l.seq++
		ms.dirs = append(ms.dirs, filepath.Join(l.tmp, fmt.Sprintf("%03d-%s-%s", l.seq, t.Name, n.id)))
	}
	for _, n := range ms.nodes {
		n.peers = strings.Join(peers, ",")
	}
	// All at once: an etcd member does not answer until a quorum is up.
	ms.procs = make([]*process, 3)
	for i := range ms.nodes {
		if ms.procs[i], err = l.spawn(t, startOptions{node: ms.nodes[i]}, ms.dirs[i]); err != nil {
			ms.stop()
			return nil, err
		}
	}
	for _, p := range ms.procs {
		if err := p.waitReady(ctx); err != nil {
			ms.stop()
			return nil, err
		}
	}
	return ms, nil
}

func (ms *memberSet) stop() {
	for _, p := range ms.procs {
		if p != nil {
			p.stop()
		}
	}
}

// kill SIGKILLs node i and waits until it is gone; its data stays.
func (ms *memberSet) kill(i int) {
	p := ms.procs[i]
	p.cmd.Process.Kill()
	<-p.exited
	<-p.logged
	p.logf.Close()
	ms.procs[i] = nil
}

// restart starts node i again on its data and waits until it answers.
func (ms *memberSet) restart(ctx context.Context, i int) error {
	p, err := ms.l.spawn(ms.t, startOptions{node: ms.nodes[i]}, ms.dirs[i])
	if err != nil {
		return err
	}
	ms.procs[i] = p
	return p.waitReady(ctx)
}

// leader waits up to 20 s for a node that says it leads: INFO's
// role:master on tenure, Status's leader being the member itself on etcd.
func (ms *memberSet) leader(ctx context.Context) (int, error) {
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); {
		for i, n := range ms.nodes {
			if ms.procs[i] != nil && ms.leads(ctx, n.addr) {
				return i, nil
			}
		}
		select {
		case <-ctx.Done():
			return -1, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
	return -1, errors.New("no leader within 20s")
}

func (ms *memberSet) leads(ctx context.Context, addr string) bool {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if ms.t.Etcd {
		c, err := newEtcdClient(addr)
		if err != nil {
			return false
		}
		defer c.Close()
		st, err := c.Status(ctx, addr)
		return err == nil && st.Leader != 0 && st.Leader == st.Header.MemberId
	}
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	defer c.Close()
	text, err := c.Info(ctx, "replication").Result()
	return err == nil && strings.Contains(text, "role:master")
}

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

// clusterThroughput is the cluster's rows: each of the lock cycle, GET
// and SET against one tenure server and against a three-node cluster's
// leader, rounds times in alternation.
func clusterThroughput(ctx context.Context, l *launcher, s *settings, scs []*scenario, rounds int, progress func(string, ...any)) []result {
	single := allTargets[0]
	clustered := &target{Name: "tenure-cluster", About: "three tenure nodes, --fsync everysec, through the leader"}
	var out []result
	for round := 1; round <= rounds && ctx.Err() == nil; round++ {
		for _, sc := range scs {
			for j := range 2 {
				res := result{Scenario: sc.Name, Target: single.Name, Round: round}
				start := time.Now()
				if (j+round)%2 == 0 {
					res = runOnce(ctx, l, s, sc, single, round, progress)
				} else {
					res.Target = clustered.Name
					if ms, err := l.startMembers(ctx, single, nil); err != nil {
						res.Err = err.Error()
					} else {
						if i, err := ms.leader(ctx); err != nil {
							res.Err = err.Error()
						} else {
							runOn(ctx, s, sc, ms.procs[i], &res, progress)
						}
						ms.stop()
					}
					res.Seconds = time.Since(start).Seconds()
				}
				progress("round %d · %s · %s: %s", round, sc.Name, res.Target, brief(sc, res))
				if res.Err != "" {
					progress("    FAILED: %s", res.Err)
				}
				out = append(out, res)
			}
		}
	}
	return out
}

// runCluster is the cluster mode: the failover rows, then the throughput
// rows, printed and written to outDir as cluster.json and cluster.txt.
func runCluster(ctx context.Context, l *launcher, s *settings, cs clusterSettings, withEtcd bool, rounds int, outDir string,
	stdout io.Writer, progress func(string, ...any)) error {
	began := time.Now()
	load := [2]string{loadavg()}
	tenure := allTargets[0]
	sets := []failoverSetting{
		{Name: "tenure, defaults (--raft-election-timeout 300ms)", target: tenure, goal: true},
		{Name: "tenure --raft-election-timeout " + cs.faster.String(), target: tenure, extra: []string{"--raft-election-timeout", cs.faster.String()}},
	}
	if withEtcd {
		sets = append(sets, failoverSetting{Name: "etcd, defaults (heartbeat 100ms, election 1s)", target: allTargets[3]})
	}
	var fails []failoverResult
	for _, fs := range sets {
		progress("failover: %s, %d kills", fs.Name, cs.kills)
		fails = append(fails, failover(ctx, l, cs, fs, progress))
	}
	var scs []*scenario
	for _, sc := range scenarios(s) {
		// set-always-50: the cluster acknowledges a write once a majority
		// has fsynced it, so the one server it is fairly set against
		// fsyncs every write too (the cluster's nodes run as in "set").
		if sc.Name == "uncontended" || sc.Name == "get" || sc.Name == "set" || sc.Name == "set-always-50" {
			scs = append(scs, sc)
		}
	}
	tput := clusterThroughput(ctx, l, s, scs, rounds, progress)
	writes := clusterWrites(ctx, l, s, withEtcd, rounds, progress)
	if ctx.Err() != nil {
		return errors.New("interrupted")
	}
	load[1] = loadavg()

	var b strings.Builder
	fmt.Fprintf(&b, "tenure bench -cluster, %s, load average %s at the start, %s at the end; servers on CPU %s\n\n",
		time.Now().UTC().Format(time.RFC3339), load[0], load[1], orNone(l.cpus))
	fmt.Fprintf(&b, "failover: 3 nodes on loopback, %d leader kills (SIGKILL) each; ms from the kill to the first\n", cs.kills)
	fmt.Fprintf(&b, "write acknowledged (SET / Put) and the first lock granted (LOCK.HOLD / concurrency.Mutex Lock)\n\n")
	fmt.Fprintf(&b, "  %-52s %8s %8s %8s   %8s %8s %8s  %s\n", "", "write50", "write99", "max", "lock50", "lock99", "max", "goal (p99 ≤ 1.5 s)")
	failed := false
	for i, fr := range fails {
		if fr.Err != "" {
			failed = true
			fmt.Fprintf(&b, "  %-52s FAILED: %s\n", fr.Setting, fr.Err)
			continue
		}
		w, lk := summarizeMS(fr.WriteMS), summarizeMS(fr.LockMS)
		goal := ""
		if sets[i].goal {
			goal = verdict(w.P99 <= float64(failoverGoal)/1e6 && lk.P99 <= float64(failoverGoal)/1e6)
		}
		fmt.Fprintf(&b, "  %-52s %8.0f %8.0f %8.0f   %8.0f %8.0f %8.0f  %s\n", fr.Setting, w.P50, w.P99, w.Max, lk.P50, lk.P99, lk.Max, goal)
	}
	fmt.Fprintf(&b, "\nthroughput: a 3-node tenure cluster (clients on its leader) against one tenure server, medians of %d rounds\n\n", rounds)
	fmt.Fprintf(&b, "  %-52s %12s %12s %12s\n", "", "one server", "cluster", "cluster/one")
	for _, sc := range scs {
		var one, three []float64
		for _, r := range tput {
			if r.Scenario != sc.Name {
				continue
			}
			if r.Err != "" {
				failed = true
				continue
			}
			if r.Target == tenure.Name {
				one = append(one, r.Metrics[sc.Rate.Key])
			} else {
				three = append(three, r.Metrics[sc.Rate.Key])
			}
		}
		label := map[string]string{"uncontended": "lock cycles/s (HOLD+RELEASE, uncontended)", "get": "GET/s", "set": "SET/s",
			"set-always-50": "SET/s, one server --fsync always, 50 clients"}[sc.Name]
		if sc.Name != "set-always-50" {
			label += fmt.Sprintf(", %d clients", s.clients)
		}
		o, t := median(one), median(three)
		fmt.Fprintf(&b, "  %-52s %12s %12s %11.2f×\n", label, thousands(o), thousands(t), t/o)
	}
	if writesTable(&b, s, writes, withEtcd) {
		failed = true
	}
	fmt.Fprint(stdout, b.String())
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return err
	}
	raw, err := json.MarshalIndent(map[string]any{"failover": fails, "throughput": tput, "writes": writes, "load": load}, "", "  ")
	if err != nil {
		return err
	}
	if err := errors.Join(os.WriteFile(filepath.Join(outDir, "cluster.json"), raw, 0o644),
		os.WriteFile(filepath.Join(outDir, "cluster.txt"), []byte(b.String()), 0o644)); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\nraw results: %s  table: %s\n", filepath.Join(outDir, "cluster.json"), filepath.Join(outDir, "cluster.txt"))
	progress("done in %s", time.Since(began).Round(time.Second))
	if failed {
		return errors.New("some runs failed; see FAILED above")
	}
	return nil
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

func orNone(s string) string {
	if s == "" {
		return "(not pinned)"
	}
	return s
}

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

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Config is one run of the harness.
type Config struct {
	Duration time.Duration // how long the nemesis works
	Seed     uint64
	Keys     int // keys of the lock, each with its counter
	// Beside them (SPEC §12, §13): SemKeys semaphore keys of Limit
	// permits each, RWKeys read-write keys (SHARED readers, writers that
	// increment the key's counter), RecipeKeys keys of the Redis lock
	// recipe. 0: none of the kind; Limit 0 means 2.
	SemKeys, Limit, RWKeys, RecipeKeys int
	Goroutines                         int           // lock clients in the harness's process
	Procs                              int           // child processes of lock clients, which the nemesis freezes
	PerProc                            int           // lock clients in each child process
	TTL                                time.Duration // of every lease
	Server                             string        // a tenure binary; empty: build one
	// RedisRetries is go-redis's MaxRetries for the SDK's clients; the
	// zero value means -1, none (see newWorker).
	RedisRetries int
	Race         bool      // build the server with -race
	Faults       []string  // the kinds of fault to inject; empty: all
	History      string    // where the history of a failing run is written
	KeepAll      bool      // write the history of a passing run too
	ClientExe    []string  // how to start a child client (it reads TORTURE_CLIENT)
	Log          io.Writer // progress; nil: none
	// LinBudget bounds the linearizability check of the history; a
	// partition left undecided fails the run. 0: a default.
	LinBudget time.Duration
	// Cluster is the number of nodes of a Raft cluster to run (SPEC §10)
	// instead of one server; 0: one server.
	Cluster         int
	ElectionTimeout time.Duration // the nodes' --raft-election-timeout; 0: the server's default
}

// Every kind of fault the nemesis knows.
var allFaults = []string{"kill", "freeze", "cut", "swallow", "burst"}

// Every kind of fault the nemesis of a cluster knows.
var clusterFaults = []string{"kill-leader", "kill-follower", "stop-leader", "partition-leader", "partition-one", "freeze", "cut", "swallow", "burst"}

type harness struct {
	cfg     Config
	rng     *rand.Rand
	history *History
	srvs    []*server // the one server, or the nodes of a cluster
	proxies []*proxy  // one in front of each
	gens    atomic.Int64
	keys    keySet
	// nodeAddrs are a cluster's nodes' advertised addresses (--peers), as
	// -MOVED names them: their proxies'.
	nodeAddrs []string

	mu       sync.Mutex
	children []*childClients
	faults   map[string]int
	restarts int
}

func (h *harness) logf(format string, args ...any) {
	if h.cfg.Log != nil {
		fmt.Fprintf(h.cfg.Log, "torture: "+format+"\n", args...)
	}
}

// Run runs the harness: the server, the proxy, the clients and the
// nemesis, for cfg.Duration; then it stops everything, reads the counters
// and checks the history.
func Run(cfg Config) (*Report, error) {
	if cfg.Keys <= 0 {
		cfg.Keys = 3
	}
	if cfg.TTL <= 0 {
		cfg.TTL = time.Second
	}
	if len(cfg.Faults) == 0 {
		cfg.Faults = allFaults
		if cfg.Cluster > 0 {
			cfg.Faults = clusterFaults
		}
	}
	if cfg.ElectionTimeout <= 0 {
		cfg.ElectionTimeout = 300 * time.Millisecond
	}
	if cfg.RedisRetries == 0 {
		cfg.RedisRetries = -1
	}
	work, err := os.MkdirTemp("", "tenure-torture-")
	if err != nil {
		return nil, err
	}
	defer removeAll(work)
	h := &harness{
		cfg:     cfg,
		rng:     rand.New(rand.NewPCG(cfg.Seed, 0x6e656d65)),
		history: &History{},
		faults:  map[string]int{},
	}
	if cfg.Limit <= 0 {
		cfg.Limit = 2
	}
	h.keys.Limit = cfg.Limit
	for i := range cfg.Keys {
		h.keys.Mutex = append(h.keys.Mutex, fmt.Sprintf("k%d", i))
	}
	for i := range cfg.SemKeys {
		h.keys.Sem = append(h.keys.Sem, fmt.Sprintf("s%d", i))
	}
	for i := range cfg.RWKeys {
		h.keys.RW = append(h.keys.RW, fmt.Sprintf("rw%d", i))
	}
	for i := range cfg.RecipeKeys {
		h.keys.Recipe = append(h.keys.Recipe, fmt.Sprintf("r%d", i))
	}
	bin := cfg.Server
	if bin == "" {
		h.logf("building the server")
		if bin, err = buildServer(work, cfg.Race); err != nil {
			return nil, err
		}
	}
	h.history.Add(Event{Kind: evConfig, Client: "harness", Start: mono(),
		Detail: fmt.Sprintf("redis-retries=%d ttl=%v seed=%d cluster=%d", cfg.RedisRetries, cfg.TTL, cfg.Seed, cfg.Cluster)})
	defer func() {
		for _, s := range h.srvs {
			s.kill()
		}
	}()
	defer func() {
		for _, p := range h.proxies {
			p.close()
		}
	}()
	if cfg.Cluster > 0 {
		if err := h.startCluster(bin, work); err != nil {
			return nil, err
		}
	} else {
		h.srvs = []*server{{bin: bin, dir: work + "/data"}}
		if _, err := h.srvs[0].start(); err != nil {
			return nil, err
		}
		p, err := startProxy(h.history, &h.gens, nil)
		if err != nil {
			return nil, err
		}
		h.proxies = []*proxy{p}
		begin := mono()
		gen := p.setTarget(h.srvs[0].address())
		h.history.Add(Event{Kind: evRestart, Client: "nemesis", Start: begin, End: mono(), Target: gen, Detail: "epoch " + h.epoch()})
	}
	var addrs []string
	for _, p := range h.proxies {
		addrs = append(addrs, p.Addr())
	}

	// The clients.
	ctx, stopClients := context.WithCancel(context.Background())
	defer stopClients()
	var wg sync.WaitGroup
	var closers []func()
	for i := range cfg.Goroutines {
		w, closeW, err := newWorker(fmt.Sprintf("g%d", i), addrs, h.nodeAddrs, h.keys, cfg.TTL, cfg.RedisRetries, cfg.Seed+uint64(i)+1, h.history.Add)
		if err != nil {
			return nil, err
		}
		closers = append(closers, closeW)
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.run(ctx)
		}()
	}
	// Hash and set clients besides (collections.go), one per two lock
	// clients.
	closers = append(closers, runCollectionClients(ctx, &wg, addrs, max(1, cfg.Goroutines/2), cfg.Seed+7777)...)
	// RESTORE … REPLACE clients (restores.go), two.
	closers = append(closers, runRestoreClients(ctx, &wg, addrs, 2, cfg.Seed+9999)...)
	// A queue's producers and consumers (queue.go), two of each.
	closers = append(closers, runQueueClients(ctx, &wg, addrs, 2, 2, cfg.Seed+8888)...)
	// (g): observers of the mutex keys beside the holders, one per key
	// and a second on the first (observer.go); the child processes run
	// one each besides, which the nemesis freezes.
	for i, key := range append(slices.Clone(h.keys.Mutex), h.keys.Mutex[0]) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runObserver(ctx, fmt.Sprintf("o%d", i), addrs, h.nodeAddrs, key, cfg.TTL, h.history.Add)
		}()
	}
	if cfg.Cluster == 0 {
		// (f): a subscriber of lock events beside the holders.
		wg.Add(1)
		go func() {
			defer wg.Done()
			h.watchLockEvents(ctx)
		}()
	}
	for i := range cfg.Procs {
		c, err := h.startChild(clientConfig{
			ID: fmt.Sprintf("p%d", i), Addrs: addrs, Nodes: h.nodeAddrs, Keys: h.keys, TTL: cfg.TTL,
			Workers: max(cfg.PerProc, 1), Retries: cfg.RedisRetries, Seed: cfg.Seed + 1000*uint64(i+1),
		})
		if err != nil {
			stopClients()
			wg.Wait()
			return nil, err
		}
		h.children = append(h.children, c)
	}
	if cfg.Cluster > 0 {
		h.logf("a cluster of %d nodes, election timeout %v", cfg.Cluster, cfg.ElectionTimeout)
	}
	h.logf("%d mutex keys, %d semaphore keys (LIMIT %d), %d read-write keys, %d keys of the Redis recipe; %d client goroutines, %d client processes of %d, ttl %v, seed %d, faults %s, for %v",
		cfg.Keys, cfg.SemKeys, cfg.Limit, cfg.RWKeys, cfg.RecipeKeys, cfg.Goroutines, cfg.Procs, max(cfg.PerProc, 1), cfg.TTL, cfg.Seed, strings.Join(cfg.Faults, ","), cfg.Duration)

	// The nemesis, for the duration.
	start := time.Now()
	nctx, stopNemesis := context.WithTimeout(context.Background(), cfg.Duration)
	if cfg.Cluster > 0 {
		h.clusterNemesis(nctx)
	} else {
		h.nemesis(nctx)
	}
	stopNemesis()
	h.logf("nemesis done after %v; stopping the clients", time.Since(start).Round(time.Millisecond))

	// Stop: thaw the frozen, make sure the server runs, stop the clients
	// (they let go of their leases), then read what the run left.
	var problems []string
	for _, c := range h.children {
		c.thaw()
	}
	for i, s := range h.srvs {
		if s.running() {
			continue
		}
		if cfg.Cluster > 0 {
			err = h.restartNode(i)
		} else {
			err = h.restart()
		}
		if err != nil {
			return nil, err
		}
	}
	stopClients()
	wg.Wait()
	for _, c := range h.children {
		c.stdin.Close()
	}
	for _, c := range h.children {
		select {
		case <-c.done:
		case <-time.After(30 * time.Second):
			problems = append(problems, fmt.Sprintf("client process %s did not stop within 30s", c.id))
			c.cmd.Process.Kill()
			<-c.done
		}
		if code := c.cmd.ProcessState.ExitCode(); code != 0 {
			problems = append(problems, fmt.Sprintf("client process %s exited %d: %s", c.id, code, c.stderr.String()))
		}
	}
	for _, f := range closers {
		f()
	}
	final := map[string]string{}
	last, err := h.finalNode()
	if err != nil {
		return nil, err
	}
	for _, k := range h.keys.counted() {
		start := mono()
		v, err := readFinal(last, counterKey(k))
		if err != nil && !errors.Is(err, redis.Nil) {
			problems = append(problems, fmt.Sprintf("reading %s after the run: %v", counterKey(k), err))
		}
		final[k] = v
		h.history.Add(Event{Kind: evFinal, Client: "harness", Key: k, Value: v, Start: start, End: mono(), Result: result(err)})
	}
	if err := readQueues(last, h.history.Add); err != nil {
		problems = append(problems, err.Error())
	}
	info, err := last.info(context.Background())
	if err != nil {
		problems = append(problems, fmt.Sprintf("INFO after the run: %v", err))
	}
	h.history.Add(Event{Kind: evCounter, Client: "harness", End: mono(),
		Detail: fmt.Sprintf("epoch=%s grants_total=%s leases=%s renewals_total=%s", info["epoch"], info["grants_total"], info["leases"], info["renewals_total"])})
	var proxyConns int64
	for _, p := range h.proxies {
		p.close()
		proxyConns += p.accepted.Load()
	}
	for _, s := range h.srvs {
		if err := s.stop(); err != nil {
			problems = append(problems, err.Error())
		}
		s.mu.Lock()
		for _, c := range s.crash {
			problems = append(problems, "the server "+c)
		}
		s.mu.Unlock()
	}

	h.logf("checking the history")
	rep := check(h.history.Events(), info, cfg.LinBudget)
	rep.Elapsed = time.Since(start)
	rep.Faults = h.faults
	rep.Restarts = h.restarts
	rep.Violations = append(rep.Violations, problems...)
	rep.ProxyConns = proxyConns
	if len(rep.Violations) > 0 || cfg.KeepAll {
		path := cfg.History
		if path == "" {
			path = fmt.Sprintf("torture-history-%d.jsonl", time.Now().Unix())
		}
		f, err := os.Create(path)
		if err == nil {
			_, err = h.history.WriteTo(f)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			return rep, fmt.Errorf("write the history: %w", err)
		}
		rep.HistoryFile = path
		rep.Visuals = rep.writeVisualizations(path)
	}
	return rep, nil
}

// epoch is the server's epoch, from INFO.
func (h *harness) epoch() string {
	info, err := h.srvs[0].info(context.Background())
	if err != nil {
		return "?"
	}
	return info["epoch"]
}

// restart starts the server again. Its restart event starts when the proxy
// begins to pass connections to it: the clients' commands reach it only
// from then on.
func (h *harness) restart() error {
	addr, err := h.srvs[0].start()
	if err != nil {
		return err
	}
	begin := mono()
	gen := h.proxies[0].setTarget(addr)
	h.mu.Lock()
	h.restarts++
	h.mu.Unlock()
	h.history.Add(Event{Kind: evRestart, Client: "nemesis", Start: begin, End: mono(), Target: gen, Detail: "epoch " + h.epoch()})
	return nil
}

// nemesis injects faults at random until ctx ends: every 0.2 to 1.2 s one
// of the kinds asked, a server kill at most every 3 s.
func (h *harness) nemesis(ctx context.Context) {
	var lastKill time.Time
	var thaws sync.WaitGroup
	defer thaws.Wait()
	for {
		if !sleep(ctx, time.Duration(200+h.rng.IntN(1000))*time.Millisecond) {
			return
		}
		kind := h.pick()
		detail := ""
		switch kind {
		case "kill":
			if time.Since(lastKill) < 3*time.Second {
				continue
			}
			lastKill = time.Now()
			h.proxies[0].setTarget("")
			h.srvs[0].kill()
			down := time.Duration(h.rng.IntN(300)) * time.Millisecond
			detail = fmt.Sprintf("SIGKILL, down %v", down)
			h.fault(kind, detail)
			sleep(context.Background(), down)
			if err := h.restart(); err != nil {
				h.logf("restart failed: %v", err)
				h.srvs[0].mu.Lock()
				h.srvs[0].crash = append(h.srvs[0].crash, "did not restart: "+err.Error())
				h.srvs[0].mu.Unlock()
				return
			}
			continue
		case "freeze":
			if detail = h.freezeSome(&thaws); detail == "" {
				continue
			}
		case "cut":
			frac := []float64{0.3, 1}[h.rng.IntN(2)]
			detail = fmt.Sprintf("cut %d connections", h.proxies[0].cut(h.rng, frac))
		case "swallow":
			detail = fmt.Sprintf("swallow the next reply of %d connections", h.proxies[0].swallowSome(h.rng, 0.3))
		case "burst":
			n := 100 + h.rng.IntN(200)
			detail = fmt.Sprintf("burst of %d connections: %s", n, burst(h.proxies[0].Addr(), n))
		}
		h.fault(kind, detail)
	}
}

// freezeSome SIGSTOPs a child process of clients that runs, for half a ttl
// to 3.5 ttls, and says so; "": none runs.
func (h *harness) freezeSome(thaws *sync.WaitGroup) string {
	var thawed []*childClients
	for _, c := range h.children {
		if !c.isFrozen() {
			thawed = append(thawed, c)
		}
	}
	if len(thawed) == 0 {
		return ""
	}
	c := thawed[h.rng.IntN(len(thawed))]
	d := h.cfg.TTL/2 + time.Duration(h.rng.Int64N(int64(3*h.cfg.TTL)))
	c.freeze()
	thaws.Add(1)
	go func() {
		defer thaws.Done()
		sleep(context.Background(), d)
		c.thaw()
	}()
	return fmt.Sprintf("SIGSTOP %s for %v", c.id, d.Round(time.Millisecond))
}

// faultKinds are every kind of fault, the single server's and a
// cluster's, each once.
func faultKinds() []string {
	kinds := slices.Clone(allFaults)
	for _, k := range clusterFaults {
		if !slices.Contains(kinds, k) {
			kinds = append(kinds, k)
		}
	}
	return kinds
}

// faultWeights make freezes the commonest fault and bursts the rarest.
var faultWeights = map[string]int{"kill": 2, "freeze": 4, "cut": 2, "swallow": 3, "burst": 1,
	"kill-leader": 2, "kill-follower": 1, "stop-leader": 2, "partition-leader": 2, "partition-one": 1}

// pick draws a kind of fault among those asked, by weight.
func (h *harness) pick() string {
	total := 0
	for _, k := range h.cfg.Faults {
		total += max(faultWeights[k], 1)
	}
	n := h.rng.IntN(total)
	for _, k := range h.cfg.Faults {
		if n -= max(faultWeights[k], 1); n < 0 {
			return k
		}
	}
	return h.cfg.Faults[0]
}

func (h *harness) fault(kind, detail string) {
	h.mu.Lock()
	h.faults[kind]++
	h.mu.Unlock()
	h.history.Add(Event{Kind: evFault, Client: "nemesis", Start: mono(), Detail: kind + ": " + detail})
}

// burst opens n connections at once, PINGs on each, and closes them.
func burst(addr string, n int) string {
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok := 0
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nc, err := net.DialTimeout("tcp", addr, time.Second)
			if err != nil {
				return
			}
			defer nc.Close()
			nc.SetDeadline(time.Now().Add(2 * time.Second))
			buf := make([]byte, 7)
			if _, err := nc.Write([]byte("PING\r\n")); err != nil {
				return
			}
			if _, err := io.ReadFull(nc, buf); err == nil && string(buf) == "+PONG\r\n" {
				mu.Lock()
				ok++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return fmt.Sprintf("%d answered PING", ok)
}

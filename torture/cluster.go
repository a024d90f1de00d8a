package main

// Cluster mode (-cluster 3, issue 20): the nodes of a Raft cluster on
// loopback, each behind a proxy of its own, and a nemesis that kills,
// restarts and freezes nodes, the leader chief among them.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tenure-db/tenure/internal/peerlink"
)

// startCluster starts cfg.Cluster nodes, --fsync always, each with its
// --dir under work and a proxy in front, and waits for a leader. A node is
// advertised (--peers) at its proxy, which stays put, and listens on any
// port, a new one at each restart: its clients and its peers reach it
// through the proxy alone.
func (h *harness) startCluster(bin, work string) error {
	var peers []string
	for i := range h.cfg.Cluster {
		p, err := startProxy(h.history, &h.gens, peerlink.NewLinks())
		if err != nil {
			return err
		}
		h.proxies = append(h.proxies, p)
		h.nodeAddrs = append(h.nodeAddrs, p.Addr())
		peers = append(peers, nodeID(i)+"="+p.Addr())
	}
	for i := range h.cfg.Cluster {
		h.srvs = append(h.srvs, &server{bin: bin, dir: fmt.Sprintf("%s/n%d", work, i+1),
			extra: []string{"--node-id", nodeID(i), "--peers", strings.Join(peers, ","),
				"--raft-election-timeout", h.cfg.ElectionTimeout.String()}})
	}
	// The nodes wait for one another to elect: start them all, then
	// wait for each to listen.
	errs := make(chan error, len(h.srvs))
	for _, s := range h.srvs {
		go func() {
			_, err := s.start()
			errs <- err
		}()
	}
	for range h.srvs {
		if err := <-errs; err != nil {
			return err
		}
	}
	for i := range h.srvs {
		h.pointProxy(i)
	}
	_, err := h.waitLeader(30 * time.Second)
	return err
}

// pointProxy points node i's proxy at it, as it starts or restarts.
func (h *harness) pointProxy(i int) {
	begin := mono()
	gen := h.proxies[i].setTarget(h.srvs[i].address())
	h.history.Add(Event{Kind: evRestart, Client: "nemesis", Start: begin, End: mono(), Target: gen, Detail: fmt.Sprintf("node n%d", i+1)})
}

// restartNode starts node i again on its --dir.
func (h *harness) restartNode(i int) error {
	if _, err := h.srvs[i].start(); err != nil {
		return err
	}
	h.pointProxy(i)
	h.mu.Lock()
	h.restarts++
	h.mu.Unlock()
	return nil
}

// leader asks each running node, directly, whether it leads; -1: none does.
func (h *harness) leader() int {
	for i, s := range h.srvs {
		if !s.running() {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		rdb := redis.NewClient(&redis.Options{Addr: s.address(), MaxRetries: -1})
		v, err := rdb.Do(ctx, "ROLE").Slice()
		rdb.Close()
		cancel()
		if err == nil && len(v) > 0 && v[0] == "master" {
			return i
		}
	}
	return -1
}

func (h *harness) waitLeader(within time.Duration) (int, error) {
	deadline := time.Now().Add(within)
	for {
		if i := h.leader(); i >= 0 {
			return i, nil
		}
		if time.Now().After(deadline) {
			return -1, fmt.Errorf("no node of the cluster led within %v", within)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// clusterNemesis injects faults until ctx ends, every 0.2 to 1.2 s: those
// of the single server's nemesis that fit a cluster (freezes of client
// processes, cuts, swallowed replies and bursts, on every proxy), and, at
// most every 3 s and one node at a time, so that a majority is soon whole
// again: SIGKILL of the leader or of a follower, down up to a second and
// restarted on its --dir, SIGSTOP of the leader for 2 to 8 election
// timeouts, then SIGCONT, and partitions (partition.go): the leader, or a
// follower, cut off from its peers for 2 to 8 election timeouts, its
// clients still reaching it, then healed.
func (h *harness) clusterNemesis(ctx context.Context) {
	var lastNodeFault time.Time
	var thaws sync.WaitGroup
	defer thaws.Wait()
	for {
		if !sleep(ctx, time.Duration(200+h.rng.IntN(1000))*time.Millisecond) {
			return
		}
		kind := h.pick()
		var detail string
		switch kind {
		case "kill-leader", "kill-follower", "stop-leader", "partition-leader", "partition-one":
			if time.Since(lastNodeFault) < 3*time.Second {
				continue
			}
			lead := h.leader()
			if lead < 0 {
				continue // an election is on: fault again later
			}
			lastNodeFault = time.Now()
			target := lead
			if kind == "kill-follower" || kind == "partition-one" {
				target = (lead + 1 + h.rng.IntN(len(h.srvs)-1)) % len(h.srvs)
			}
			s := h.srvs[target]
			if kind == "partition-leader" || kind == "partition-one" {
				h.partition(kind, target, time.Duration(2+h.rng.IntN(7))*h.cfg.ElectionTimeout)
				continue
			}
			if kind == "stop-leader" {
				d := time.Duration(2+h.rng.IntN(7)) * h.cfg.ElectionTimeout
				h.fault(kind, fmt.Sprintf("SIGSTOP n%d for %v", target+1, d))
				s.signal(syscall.SIGSTOP)
				sleep(context.Background(), d)
				s.signal(syscall.SIGCONT)
				h.history.Add(Event{Kind: evFault, Client: "nemesis", Start: mono(), Detail: fmt.Sprintf("cont: SIGCONT n%d", target+1)})
				continue
			}
			down := time.Duration(h.rng.IntN(1000)) * time.Millisecond
			h.fault(kind, fmt.Sprintf("SIGKILL n%d, down %v", target+1, down))
			h.proxies[target].setTarget("")
			s.kill()
			sleep(context.Background(), down)
			if err := h.restartNode(target); err != nil {
				h.logf("restart of n%d failed: %v", target+1, err)
				s.mu.Lock()
				s.crash = append(s.crash, "did not restart: "+err.Error())
				s.mu.Unlock()
				return
			}
			continue
		case "freeze":
			if detail = h.freezeSome(&thaws); detail == "" {
				continue
			}
		case "cut":
			frac := []float64{0.3, 1}[h.rng.IntN(2)]
			n := 0
			for _, p := range h.proxies {
				n += p.cut(h.rng, frac)
			}
			detail = fmt.Sprintf("cut %d connections", n)
		case "swallow":
			n := 0
			for _, p := range h.proxies {
				n += p.swallowSome(h.rng, 0.3)
			}
			detail = fmt.Sprintf("swallow the next reply of %d connections", n)
		case "burst":
			n := 100 + h.rng.IntN(200)
			p := h.proxies[h.rng.IntN(len(h.proxies))]
			detail = fmt.Sprintf("burst of %d connections: %s", n, burst(p.Addr(), n))
		}
		h.fault(kind, detail)
	}
}

// finalNode is the server the run's last reads and INFO go to: the one
// server, or the cluster's leader once every node runs again.
func (h *harness) finalNode() (*server, error) {
	if h.cfg.Cluster == 0 {
		return h.srvs[0], nil
	}
	i, err := h.waitLeader(30 * time.Second)
	if err != nil {
		return nil, err
	}
	return h.srvs[i], nil
}

// readFinal reads key's counter on s after the run; a cluster's leader may
// answer -TRYAGAIN or move on meanwhile, so it retries for a while.
func readFinal(s *server, key string) (string, error) {
	rdb := redis.NewClient(&redis.Options{Addr: s.address(), MaxRetries: 3})
	defer rdb.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		v, err := rdb.Get(context.Background(), key).Result()
		var rerr redis.Error
		if err == nil || errors.Is(err, redis.Nil) || !errors.As(err, &rerr) || time.Now().After(deadline) {
			return v, err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// The three members of a cluster of the cluster mode, tenure's or etcd's:
// started, stopped, killed and restarted, and which one leads.

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

package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/tenure-db/tenure"
	"github.com/tenure-db/tenure/cluster"
)

// The flags of SPEC §10.
type clusterFlags struct {
	nodeID, peers, keyFile string
	electionTimeout        time.Duration
}

func (c *clusterFlags) define(fs *flag.FlagSet) {
	fs.StringVar(&c.nodeID, "node-id", "", "this node's `id` in a cluster (with --peers, or alone to wait for CLUSTER MEET)")
	fs.StringVar(&c.peers, "peers", "", "the voters of a new cluster: `id=host:port,…`, the same list on every node")
	fs.DurationVar(&c.electionTimeout, "raft-election-timeout", cluster.DefaultElectionTimeout, "how long a follower waits for the leader before it stands for election")
	fs.StringVar(&c.keyFile, "cluster-key-file", "", "`file` holding the secret peers prove themselves with (required with --users)")
}

// listenAddr is where the node listens: --addr if given, else, in a
// cluster with --peers, this node's address there. The --peers entry is
// the advertised address, where the others dial it and what -MOVED names;
// --addr may differ from it when something stands between (a proxy, a
// NAT, 0.0.0.0 behind a named host), as etcd's listen and advertise URLs
// or Redis's cluster-announce-ip do.
func (f flags) listenAddr(o *tenure.ClusterOptions) string {
	if f.addrSet || o == nil || o.Peers == nil {
		return f.addr
	}
	return o.Addr
}

// minKeyLen is the shortest cluster key accepted.
const minKeyLen = 16

// clusterOptions reads the cluster flags; nil for a single server.
func (f flags) clusterOptions(withUsers bool) (*tenure.ClusterOptions, error) {
	c := f.cluster
	if c.nodeID == "" {
		for name, set := range map[string]bool{"--peers": c.peers != "", "--cluster-key-file": c.keyFile != ""} {
			if set {
				return nil, fmt.Errorf("%s needs --node-id", name)
			}
		}
		return nil, nil
	}
	if c.electionTimeout < 20*time.Millisecond {
		return nil, fmt.Errorf("--raft-election-timeout %v: want at least 20ms", c.electionTimeout)
	}
	o := &tenure.ClusterOptions{NodeID: c.nodeID, Addr: f.addr, ElectionTimeout: c.electionTimeout}
	if c.peers != "" {
		peers, err := cluster.ParsePeers(c.peers)
		if err != nil {
			return nil, err
		}
		var self *cluster.Peer
		for i := range peers {
			if peers[i].ID == c.nodeID {
				self = &peers[i]
			}
		}
		if self == nil {
			return nil, fmt.Errorf("--peers does not name this node (--node-id %s)", c.nodeID)
		}
		o.Peers, o.Addr = peers, self.Addr
	}
	switch {
	case c.keyFile != "":
		raw, err := os.ReadFile(c.keyFile)
		if err != nil {
			return nil, fmt.Errorf("--cluster-key-file: %w", err)
		}
		key := strings.TrimSpace(string(raw))
		if len(key) < minKeyLen {
			return nil, fmt.Errorf("--cluster-key-file %s: the key is %d bytes, want at least %d", c.keyFile, len(key), minKeyLen)
		}
		o.Key = []byte(key)
	case withUsers:
		return nil, fmt.Errorf("--users in a cluster needs --cluster-key-file: peers must prove themselves too")
	}
	return o, nil
}

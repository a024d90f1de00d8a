package cluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Peer is one voter as --peers names it: its node id and client address.
type Peer struct {
	ID   string `json:"id"`
	Addr string `json:"addr"`
}

// ParsePeers reads --peers: "n1=host:port,n2=host:port,…". Every id and
// every address appears once.
func ParsePeers(s string) ([]Peer, error) {
	var peers []Peer
	ids, addrs := map[string]bool{}, map[string]bool{}
	for _, item := range strings.Split(s, ",") {
		id, addr, ok := strings.Cut(strings.TrimSpace(item), "=")
		if !ok || id == "" || addr == "" {
			return nil, fmt.Errorf("--peers: %q is not id=host:port", item)
		}
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return nil, fmt.Errorf("--peers: %s: %v", id, err)
		}
		if ids[id] {
			return nil, fmt.Errorf("--peers names %s twice", id)
		}
		if addrs[addr] {
			return nil, fmt.Errorf("--peers names the address %s twice", addr)
		}
		ids[id], addrs[addr] = true, true
		peers = append(peers, Peer{ID: id, Addr: addr})
	}
	return peers, nil
}

// FormatPeers is the --peers spelling of peers.
func FormatPeers(peers []Peer) string {
	parts := make([]string, len(peers))
	for i, p := range peers {
		parts[i] = p.ID + "=" + p.Addr
	}
	return strings.Join(parts, ",")
}

// selfIn finds id in peers.
func selfIn(id string, peers []Peer) (Peer, error) {
	for _, p := range peers {
		if p.ID == id {
			return p, nil
		}
	}
	return Peer{}, fmt.Errorf("--peers does not name this node (--node-id %s)", id)
}

// identity is what a data directory remembers of the cluster it belongs
// to, written when the node first starts: a later start with another id
// or another --peers is refused (SPEC §10: bad input stops the server).
type identity struct {
	NodeID string `json:"node_id"`
	Peers  []Peer `json:"peers,omitempty"` // nil: started to be added by CLUSTER MEET
}

const identityFile = "cluster.json"

// checkIdentity compares the node's flags with what dir remembers, and
// writes them there on a first start. It reports whether dir is new.
func checkIdentity(dir string, want identity) (fresh bool, err error) {
	path := filepath.Join(dir, identityFile)
	raw, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		b, _ := json.Marshal(want)
		if err := writeSynced(path, b); err != nil {
			return false, fmt.Errorf("write %s: %w", path, err)
		}
		return true, nil
	}
	if err != nil {
		return false, err
	}
	var have identity
	if err := json.Unmarshal(raw, &have); err != nil {
		return false, fmt.Errorf("%s: %w", path, err)
	}
	if have.NodeID != want.NodeID {
		return false, fmt.Errorf("%s belongs to node %s, not --node-id %s", dir, have.NodeID, want.NodeID)
	}
	if want.Peers != nil && have.Peers != nil && !slices.Equal(sorted(have.Peers), sorted(want.Peers)) {
		return false, fmt.Errorf("--peers %s disagrees with the cluster %s belongs to (%s)", FormatPeers(want.Peers), dir, FormatPeers(have.Peers))
	}
	return false, nil
}

func sorted(peers []Peer) []Peer {
	out := slices.Clone(peers)
	slices.SortFunc(out, func(a, b Peer) int { return strings.Compare(a.ID, b.ID) })
	return out
}

func writeSynced(path string, b []byte) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// NodeOf is the node id the data directory dir belongs to as a cluster
// node, "" for a single server's directory (or a new one): a single
// server must not open a cluster node's keyspace, which only its log may
// change.
func NodeOf(dir string) (string, error) {
	raw, err := os.ReadFile(filepath.Join(dir, "raft", identityFile))
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	var have identity
	if err := json.Unmarshal(raw, &have); err != nil {
		return "", fmt.Errorf("%s: %w", filepath.Join(dir, "raft", identityFile), err)
	}
	return have.NodeID, nil
}

package main

// Partitions in cluster mode: the nodes are advertised (--peers) at their
// proxies and listen elsewhere, so every peer link passes a proxy too,
// which tells it from a client's connection by its hello (naming the
// dialing node) and lets it through or not (internal/peerlink). The
// nemesis cuts a node off from the others, its clients still reaching
// it, and heals the cut a few election timeouts later.

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"time"

	"github.com/tenure-db/tenure/cluster"
	"github.com/tenure-db/tenure/internal/peerlink"
)

// bufConn is a connection whose first bytes a bufio.Reader took.
type bufConn struct {
	net.Conn
	br *bufio.Reader
}

func (c *bufConn) Read(b []byte) (int, error) { return c.br.Read(b) }

// helloWait bounds how long the proxy waits for a connection's first
// bytes (go-redis and the peers send theirs at once).
const helloWait = 5 * time.Second

// takePeer passes a peer's connection on through the proxy's links, and
// says whether it did; a client's connection comes back, its first bytes
// given back. Without links (one server), every connection is a client's.
func (p *proxy) takePeer(nc net.Conn) (net.Conn, bool) {
	if p.links == nil {
		return nc, false
	}
	br := bufio.NewReaderSize(nc, cluster.PeerHelloMax)
	nc.SetReadDeadline(time.Now().Add(helloWait))
	dialer, peer, err := cluster.PeerHello(br)
	nc.SetReadDeadline(time.Time{})
	if !peer {
		// A client's (one that sent nothing yet too: it meets the
		// server as it would have).
		return &bufConn{Conn: nc, br: br}, false
	}
	if err != nil {
		nc.Close()
		return nil, true
	}
	target := ""
	if t := p.target.Load(); t != nil {
		target = t.addr
	}
	p.links.Relay(nc, br, dialer, target)
	return nil, true
}

// nodeLinks maps each node's id to the links into it.
func (h *harness) nodeLinks() map[string]*peerlink.Links {
	m := map[string]*peerlink.Links{}
	for i, p := range h.proxies {
		m[nodeID(i)] = p.links
	}
	return m
}

func nodeID(i int) string { return fmt.Sprintf("n%d", i+1) }

// partition cuts node target off from the others for d, then heals.
func (h *harness) partition(kind string, target int, d time.Duration) {
	links := h.nodeLinks()
	h.fault(kind, fmt.Sprintf("cut %s off from its peers for %v", nodeID(target), d))
	peerlink.Partition(links, nodeID(target))
	sleep(context.Background(), d)
	peerlink.HealAll(links)
	h.history.Add(Event{Kind: evFault, Client: "nemesis", Start: mono(), Detail: "heal: " + nodeID(target) + " joined again"})
}

// Package peerlink partitions a cluster on loopback, for tests and the
// torture harness: a proxy stands at each node's advertised address (its
// --peers entry; the node listens elsewhere, --addr), tells a peer's
// connection from a client's by the peer hello (cluster.PeerHello, which
// names the dialing node), and passes or refuses each peer link by who
// dials whom. Cut separates nodes, Heal joins them again. Clients pass
// through untouched, so that a node cut off from its peers is still
// reached by its clients.
//
// It is not a node's transport (package cluster) and is not for running a
// cluster in earnest.
package peerlink

import (
	"bufio"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tenure-db/tenure/cluster"
)

// Links are the peer links into one node, through its proxy: which peers
// may reach it, and the links open now.
type Links struct {
	mu      sync.Mutex
	blocked map[string]bool
	open    map[*link]struct{}
	closed  bool // CutAll: every link refused from now on
	refused atomic.Int64
}

type link struct {
	dialer       string
	client, node net.Conn
	once         sync.Once
}

func (l *link) close() {
	l.once.Do(func() {
		l.client.Close()
		l.node.Close()
	})
}

// NewLinks lets every peer through.
func NewLinks() *Links {
	return &Links{blocked: map[string]bool{}, open: map[*link]struct{}{}}
}

// Block refuses the peers' links from now on and cuts those open.
func (l *Links) Block(peers ...string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, p := range peers {
		l.blocked[p] = true
	}
	for c := range l.open {
		if l.blocked[c.dialer] {
			c.close()
		}
	}
}

// Heal lets every peer through again.
func (l *Links) Heal() {
	l.mu.Lock()
	clear(l.blocked)
	l.mu.Unlock()
}

// CutAll cuts every link open now and refuses every one after (the
// proxy is closing).
func (l *Links) CutAll() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	for c := range l.open {
		c.close()
	}
}

// Refused counts the peer connections refused.
func (l *Links) Refused() int64 { return l.refused.Load() }

// Relay passes the peer connection client (whose bytes so far br holds,
// dialer its hello's node id) to the node at target, unless dialer is
// blocked; it returns when the link ends.
func (l *Links) Relay(client net.Conn, br *bufio.Reader, dialer, target string) {
	l.mu.Lock()
	blocked := l.blocked[dialer] || l.closed
	l.mu.Unlock()
	if blocked || target == "" {
		l.refused.Add(1)
		client.Close()
		return
	}
	node, err := net.DialTimeout("tcp", target, time.Second)
	if err != nil {
		l.refused.Add(1)
		client.Close()
		return
	}
	c := &link{dialer: dialer, client: client, node: node}
	l.mu.Lock()
	if l.blocked[dialer] || l.closed { // blocked while dialing
		l.mu.Unlock()
		l.refused.Add(1)
		c.close()
		return
	}
	l.open[c] = struct{}{}
	l.mu.Unlock()
	defer func() {
		c.close()
		l.mu.Lock()
		delete(l.open, c)
		l.mu.Unlock()
	}()
	done := make(chan struct{})
	go func() {
		io.Copy(node, br)
		c.close()
		close(done)
	}()
	io.Copy(client, node)
	c.close()
	<-done
}

// Partition cuts every link between the nodes of side and the others, in
// both directions; links maps each node id to the Links into it.
func Partition(links map[string]*Links, side ...string) {
	in := map[string]bool{}
	for _, id := range side {
		in[id] = true
	}
	var out []string
	for id := range links {
		if !in[id] {
			out = append(out, id)
		}
	}
	for id, l := range links {
		if in[id] {
			l.Block(out...)
		} else {
			l.Block(side...)
		}
	}
}

// HealAll heals every node's links.
func HealAll(links map[string]*Links) {
	for _, l := range links {
		l.Heal()
	}
}

// Proxy stands at one node's advertised address and passes clients and
// peers to where the node listens (while Links let them).
type Proxy struct {
	*Links
	ln     net.Listener
	target atomic.Pointer[string]
}

// Listen starts a proxy on a loopback port, pointing nowhere yet.
func Listen() (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{Links: NewLinks(), ln: ln}
	go p.serve()
	return p, nil
}

// Addr is the proxy's address: the node's --peers entry.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// SetTarget points the proxy at the node's listening address.
func (p *Proxy) SetTarget(addr string) { p.target.Store(&addr) }

func (p *Proxy) targetAddr() string {
	if t := p.target.Load(); t != nil {
		return *t
	}
	return ""
}

func (p *Proxy) serve() {
	for {
		nc, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.handle(nc)
	}
}

func (p *Proxy) handle(nc net.Conn) {
	br := bufio.NewReaderSize(nc, cluster.PeerHelloMax)
	dialer, peer, err := cluster.PeerHello(br)
	if err != nil {
		nc.Close()
		return
	}
	if peer {
		p.Relay(nc, br, dialer, p.targetAddr())
		return
	}
	// A client: passed as is.
	node, err := net.DialTimeout("tcp", p.targetAddr(), time.Second)
	if err != nil {
		nc.Close()
		return
	}
	go func() {
		io.Copy(node, br)
		node.Close()
		nc.Close()
	}()
	io.Copy(nc, node)
	node.Close()
	nc.Close()
}

// Close stops the proxy's listener and cuts its peer links (a client's
// connection runs on until one of its ends closes it).
func (p *Proxy) Close() {
	p.ln.Close()
	p.CutAll()
}

package cluster

import (
	"bufio"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// One port per node (SPEC §10): the client listener is shared. A peer's
// connection opens with a hello: peerMagic, whose first byte no RESP
// client sends (a request starts with '*' or an inline command's text), a
// random challenge, and the dialing node's id (a length byte, then the
// id), so that the logs, and a proxy on the link (PeerHello), know who
// dials. The accepting side answers HMAC-SHA256(cluster key, "acceptor" +
// that challenge) and a challenge of its own, which the dialing side
// answers likewise ("dialer" + it + its id, so that the id is proved too)
// with the operation it wants. Each side proves the key to the other, so
// neither a client nor a stranger at a peer's address can take part in
// Raft (a fake follower could otherwise acknowledge entries it never
// stored). Only a peer that proves the key reaches Raft; a refused one is
// logged and closed. Every other connection goes to the RESP server with
// its first byte given back, so a client that sends Raft's own bytes meets
// RESP's protocol error, never Raft.
//
// The key proves a peer, it does not encrypt: Raft's traffic is in clear
// text on the wire, as on a Redis replica link without TLS.

const (
	peerMagic      = "\xfetenure-peer/2\n"
	challengeLen   = 32
	maxIDLen       = 255 // a node id's length fits the hello's length byte
	handshakeLimit = 5 * time.Second

	opRaft   byte = 'R' // the rest of the connection is Raft's transport
	opStatus byte = 'S' // the acceptor writes its applied index and closes
	opID     byte = 'I' // the acceptor writes its node id and closes
)

var errRefused = errors.New("refused by the peer: wrong cluster key")

// PeerHelloMax is the longest hello a peer opens its connection with: a
// reader given to PeerHello buffers at least this much.
const PeerHelloMax = len(peerMagic) + challengeLen + 1 + maxIDLen

// PeerHello tells a peer's connection from a client's by its first bytes,
// which it peeks (br gives them all back): for a peer, the id of the node
// that dials (as it claims: only the handshake after proves it). It is for
// what stands on a peer link, a test's proxy that partitions the nodes;
// a node's own listener does the same itself.
func PeerHello(br *bufio.Reader) (dialer string, peer bool, err error) {
	first, err := br.Peek(1)
	if err != nil || first[0] != peerMagic[0] {
		return "", false, err
	}
	head, err := br.Peek(len(peerMagic) + challengeLen + 1)
	if err != nil {
		return "", true, err
	}
	if string(head[:len(peerMagic)]) != peerMagic {
		return "", true, errors.New("bad peer preamble")
	}
	hello, err := br.Peek(len(head) + int(head[len(head)-1]))
	if err != nil {
		return "", true, err
	}
	return string(hello[len(head):]), true, nil
}

// hello is what node id opens a peer connection with.
func hello(challenge []byte, id string) []byte {
	b := append([]byte(peerMagic), challenge...)
	b = append(b, byte(len(id)))
	return append(b, id...)
}

// prefixConn gives back the bytes read to tell a client from a peer.
type prefixConn struct {
	net.Conn
	r io.Reader
}

func (c *prefixConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// mux splits one listener between the RESP server (Accept) and Raft
// (raftLayer).
type mux struct {
	ln      net.Listener
	node    *Node
	clients chan net.Conn
	done    chan struct{} // closed when ln's accept loop ended
	once    sync.Once

	mu      sync.Mutex
	pending map[net.Conn]struct{} // accepted, first byte not read yet
}

func newMux(ln net.Listener, n *Node) *mux {
	m := &mux{ln: ln, node: n, clients: make(chan net.Conn), done: make(chan struct{}), pending: map[net.Conn]struct{}{}}
	go m.run()
	return m
}

func (m *mux) run() {
	defer func() {
		close(m.done)
		// A connection that never sent a byte is nobody's yet: close it.
		m.mu.Lock()
		for nc := range m.pending {
			nc.Close()
		}
		m.mu.Unlock()
	}()
	var delay time.Duration
	for {
		nc, err := m.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			m.node.log.Warn("cluster: accept failed", "err", err, "retry_in", delay)
			time.Sleep(delay)
			continue
		}
		delay = 0
		go m.classify(nc)
	}
}

// classify reads a connection's first byte: a peer's is peerMagic's.
func (m *mux) classify(nc net.Conn) {
	m.mu.Lock()
	select {
	case <-m.done:
		m.mu.Unlock()
		nc.Close()
		return
	default:
	}
	m.pending[nc] = struct{}{}
	m.mu.Unlock()
	br := bufio.NewReaderSize(nc, len(peerMagic)+challengeLen)
	first, err := br.Peek(1)
	m.mu.Lock()
	delete(m.pending, nc)
	m.mu.Unlock()
	if err != nil {
		nc.Close()
		return
	}
	if first[0] != peerMagic[0] {
		select {
		case m.clients <- &prefixConn{Conn: nc, r: br}:
		case <-m.done:
			nc.Close()
		}
		return
	}
	m.node.acceptPeer(nc, br)
}

// Accept is the RESP server's: every connection that is not a peer's.
func (m *mux) Accept() (net.Conn, error) {
	select {
	case c := <-m.clients:
		return c, nil
	case <-m.done:
		return nil, net.ErrClosed
	}
}

func (m *mux) Close() error {
	var err error
	m.once.Do(func() { err = m.ln.Close() })
	return err
}

func (m *mux) Addr() net.Addr { return m.ln.Addr() }

// acceptPeer runs the accepting side of the handshake and hands the
// connection to its operation.
func (n *Node) acceptPeer(nc net.Conn, br *bufio.Reader) {
	nc.SetDeadline(time.Now().Add(handshakeLimit))
	dialer := "?"
	refuse := func(why string) {
		n.peersRefused.Add(1)
		n.log.Warn("cluster: refused a peer connection", "peer", dialer, "from", nc.RemoteAddr().String(), "reason", why)
		nc.Close()
	}
	head := make([]byte, len(peerMagic)+challengeLen+1)
	if _, err := io.ReadFull(br, head); err != nil || string(head[:len(peerMagic)]) != peerMagic {
		refuse("bad preamble")
		return
	}
	id := make([]byte, head[len(head)-1])
	if _, err := io.ReadFull(br, id); err != nil {
		refuse("bad preamble")
		return
	}
	dialer = string(id)
	challenge := make([]byte, challengeLen)
	rand.Read(challenge)
	if _, err := nc.Write(append(proof(n.cfg.Key, sideAcceptor, head[len(peerMagic):len(peerMagic)+challengeLen]), challenge...)); err != nil {
		nc.Close()
		return
	}
	answer := make([]byte, sha256.Size+1)
	if _, err := io.ReadFull(br, answer); err != nil {
		refuse("no answer to the challenge")
		return
	}
	if !hmac.Equal(answer[:sha256.Size], proof(n.cfg.Key, sideDialer, challenge, id)) {
		nc.Write([]byte{'-'})
		refuse("wrong cluster key")
		return
	}
	if _, err := nc.Write([]byte{'+'}); err != nil {
		nc.Close()
		return
	}
	nc.SetDeadline(time.Time{})
	conn := &prefixConn{Conn: nc, r: br}
	switch answer[sha256.Size] {
	case opRaft:
		select {
		case n.layer.conns <- conn:
		case <-n.layer.closed:
			nc.Close()
		}
	case opStatus:
		var b [8]byte
		binary.BigEndian.PutUint64(b[:], n.fsm.applied.Load())
		nc.Write(b[:])
		nc.Close()
	case opID:
		nc.Write([]byte(n.cfg.NodeID))
		nc.Close()
	default:
		refuse("unknown operation")
	}
}

// The sides of the handshake, in what each proves: an answer of one side
// can never be replayed as the other's.
const (
	sideAcceptor = "acceptor"
	sideDialer   = "dialer"
)

// proof is HMAC-SHA256(key, side + challenge + the dialer's id, for the
// dialer's).
func proof(key []byte, side string, challenge []byte, dialer ...[]byte) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(side))
	h.Write(challenge)
	for _, d := range dialer {
		h.Write(d)
	}
	return h.Sum(nil)
}

// dialPeer connects, as node self, to the node at addr and asks for op.
func dialPeer(addr, self string, key []byte, op byte, timeout time.Duration) (net.Conn, error) {
	nc, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return nil, err
	}
	nc.SetDeadline(time.Now().Add(min(timeout, handshakeLimit)))
	fail := func(err error) (net.Conn, error) {
		nc.Close()
		return nil, fmt.Errorf("peer %s: %w", addr, err)
	}
	mine := make([]byte, challengeLen)
	rand.Read(mine)
	if _, err := nc.Write(hello(mine, self)); err != nil {
		return fail(err)
	}
	reply := make([]byte, sha256.Size+challengeLen)
	if _, err := io.ReadFull(nc, reply); err != nil {
		return fail(fmt.Errorf("no answer (is it a tenure cluster node?): %w", err))
	}
	// The answer goes out either way, so that an acceptor with another key
	// logs why it refuses this dialer too.
	_, werr := nc.Write(append(proof(key, sideDialer, reply[sha256.Size:], []byte(self)), op))
	if !hmac.Equal(reply[:sha256.Size], proof(key, sideAcceptor, mine)) {
		return fail(errors.New("it does not hold this cluster's key"))
	}
	if werr != nil {
		return fail(werr)
	}
	var verdict [1]byte
	if _, err := io.ReadFull(nc, verdict[:]); err != nil || verdict[0] != '+' {
		return fail(errRefused)
	}
	nc.SetDeadline(time.Time{})
	return nc, nil
}

// peerID asks the node at addr for its node id (CLUSTER MEET).
func peerID(addr, self string, key []byte, timeout time.Duration) (string, error) {
	nc, err := dialPeer(addr, self, key, opID, timeout)
	if err != nil {
		return "", err
	}
	defer nc.Close()
	nc.SetReadDeadline(time.Now().Add(timeout))
	b, err := io.ReadAll(io.LimitReader(nc, 256))
	if err != nil || len(b) == 0 {
		return "", fmt.Errorf("peer %s: no node id: %v", addr, err)
	}
	return string(b), nil
}

// peerApplied asks the node at addr for its applied index.
func peerApplied(addr, self string, key []byte, timeout time.Duration) (uint64, error) {
	nc, err := dialPeer(addr, self, key, opStatus, timeout)
	if err != nil {
		return 0, err
	}
	defer nc.Close()
	nc.SetReadDeadline(time.Now().Add(timeout))
	var b [8]byte
	if _, err := io.ReadFull(nc, b[:]); err != nil {
		return 0, err
	}
	return binary.BigEndian.Uint64(b[:]), nil
}

// raftLayer is Raft's StreamLayer: it accepts the peers the muxes let in,
// and dials with the handshake.
type raftLayer struct {
	addr   raftAddr
	self   string // this node's id, which it dials with
	key    []byte
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
}

type raftAddr string

func (a raftAddr) Network() string { return "tcp" }
func (a raftAddr) String() string  { return string(a) }

func newRaftLayer(addr, self string, key []byte) *raftLayer {
	return &raftLayer{addr: raftAddr(addr), self: self, key: key, conns: make(chan net.Conn), closed: make(chan struct{})}
}

func (l *raftLayer) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *raftLayer) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

// Addr is this node's address as --peers names it (where the others dial
// it, not necessarily where it listens): what Raft tells the others.
func (l *raftLayer) Addr() net.Addr { return l.addr }

func (l *raftLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	return dialPeer(string(address), l.self, l.key, opRaft, timeout)
}

// hclogWriter carries Raft's log lines (hclog text: time, [LEVEL], text)
// into slog at their own level.
type hclogWriter struct{ log *slog.Logger }

func (w hclogWriter) Write(p []byte) (int, error) {
	line := strings.TrimRight(string(p), "\r\n")
	level := slog.LevelInfo
	for tag, l := range map[string]slog.Level{"[ERROR]": slog.LevelError, "[WARN]": slog.LevelWarn, "[DEBUG]": slog.LevelDebug, "[TRACE]": slog.LevelDebug} {
		if i := strings.Index(line, tag); i >= 0 {
			level, line = l, strings.TrimSpace(line[i+len(tag):])
			break
		}
	}
	if i := strings.Index(line, "[INFO]"); i >= 0 {
		line = strings.TrimSpace(line[i+len("[INFO]"):])
	}
	w.log.Log(context.Background(), level, line, "component", "raft")
	return len(p), nil
}

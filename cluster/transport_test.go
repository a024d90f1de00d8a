package cluster

import (
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"
)

// peerListener serves the peer handshake of a node with key on a
// loopback port.
func peerListener(t *testing.T, key []byte) (addr string, n *Node) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	n = &Node{
		cfg:   Config{NodeID: "n7", Key: key},
		log:   slog.New(slog.NewTextHandler(io.Discard, nil)),
		layer: newRaftLayer(ln.Addr().String(), "n7", key),
		fsm:   &fsm{},
	}
	m := newMux(ln, n)
	t.Cleanup(func() { m.Close() })
	return ln.Addr().String(), n
}

// Each side proves the key to the other: the acceptor refuses a dialer
// without it, and the dialer refuses an acceptor without it.
func TestPeerHandshakeIsMutual(t *testing.T) {
	key := []byte("the cluster key, 16+ bytes")
	addr, n := peerListener(t, key)
	if id, err := peerID(addr, "n1", key, time.Second); err != nil || id != "n7" {
		t.Fatalf("with the key: %q %v", id, err)
	}
	if _, err := peerID(addr, "n1", []byte("another key entirely"), time.Second); err == nil {
		t.Fatal("a dialer with another key was let in")
	}
	for deadline := time.Now().Add(5 * time.Second); n.PeersRefused() != 1; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d refused, want 1", n.PeersRefused())
		}
	}

	// A stranger at a peer's address, answering anything: refused by the
	// dialer before it sends a byte of Raft.
	fake, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer fake.Close()
	go func() {
		nc, err := fake.Accept()
		if err != nil {
			return
		}
		defer nc.Close()
		io.ReadFull(nc, make([]byte, len(peerMagic)+challengeLen))
		nc.Write([]byte(strings.Repeat("x", 64)))
		io.ReadAll(nc)
	}()
	_, err = dialPeer(fake.Addr().String(), "n1", key, opRaft, time.Second)
	if err == nil || !strings.Contains(err.Error(), "does not hold this cluster's key") {
		t.Fatalf("dialing a fake peer: %v", err)
	}
}

package cluster

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/tenure-db/tenure/internal/testenv"
)

// peerListener serves the peer handshake of a node with key on a
// loopback port.
func peerListener(t *testing.T, key []byte) (addr string, n *Node) {
	return peerListenerLogging(t, key, io.Discard)
}

// peerListenerLogging is peerListener, its node logging to w.
func peerListenerLogging(t *testing.T, key []byte, w io.Writer) (addr string, n *Node) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	n = &Node{
		cfg:   Config{NodeID: "n7", Key: key},
		log:   slog.New(slog.NewTextHandler(w, nil)),
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

// The hello names the dialing node (PeerHello reads it without taking a
// byte), and the dialer's proof covers that id: a dialer that claims
// another node's id than it proves is refused, and the refusal names who
// claimed to dial.
func TestPeerHelloNamesTheDialer(t *testing.T) {
	b := hello(make([]byte, challengeLen), "n2")
	br := bufio.NewReaderSize(io.MultiReader(bytes.NewReader(b), strings.NewReader("rest")), PeerHelloMax)
	id, peer, err := PeerHello(br)
	if err != nil || !peer || id != "n2" {
		t.Fatalf("PeerHello: %q %v %v, want n2, a peer", id, peer, err)
	}
	if all, _ := io.ReadAll(br); !bytes.Equal(all, append(b, "rest"...)) {
		t.Fatalf("PeerHello took bytes: %q left", all)
	}
	if _, peer, _ := PeerHello(bufio.NewReader(strings.NewReader("*1\r\n$4\r\nPING\r\n"))); peer {
		t.Fatal("a client's PING read as a peer's hello")
	}

	key := []byte("the cluster key, 16+ bytes")
	logs := &testenv.LogBuffer{}
	addr, _ := peerListenerLogging(t, key, logs)
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(5 * time.Second))
	nc.Write(hello(make([]byte, challengeLen), "n2"))
	reply := make([]byte, sha256.Size+challengeLen)
	if _, err := io.ReadFull(nc, reply); err != nil {
		t.Fatal(err)
	}
	nc.Write(append(proof(key, sideDialer, reply[sha256.Size:], []byte("n1")), opID))
	if rest, _ := io.ReadAll(nc); string(rest) != "-" {
		t.Fatalf("a dialer proving n1 while claiming n2: answered %q, want a refusal", rest)
	}
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(logs.String(), "peer=n2"); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the refusal does not name the dialer: %s", logs.String())
		}
	}
}

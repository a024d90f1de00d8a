package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tenure-db/tenure/internal/peerlink"
)

// startBehindProxies starts three nodes that listen at addresses of their
// own (--addr) and are advertised (--peers) at proxies, which carry the
// peer links and can cut them (the node ids to their links).
func startBehindProxies(t *testing.T, bin string, extra ...string) (*clusterProc, []*peerlink.Proxy, map[string]*peerlink.Links) {
	addrs := freeAddrs(t, 3)
	var proxies []*peerlink.Proxy
	var peers []string
	links := map[string]*peerlink.Links{}
	for i, a := range addrs {
		p, err := peerlink.Listen()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Close)
		p.SetTarget(a)
		proxies, peers = append(proxies, p), append(peers, p.Addr())
		links["n"+strconv.Itoa(i+1)] = p.Links
	}
	return startClusterAt(t, bin, addrs, peers, extra...), proxies, links
}

// SPEC §10: a node listens at --addr; its --peers entry is where the
// others dial it and what MOVED and CLUSTER SLOTS name. (This replaces the
// old rule that --addr must be the --peers entry.)
func testClusterAdvertised(t *testing.T, bin string) {
	cp, proxies, _ := startBehindProxies(t, bin)
	l := cp.waitLeader(10 * time.Second) // elected over the proxies: the nodes know no other address
	f := (l + 1) % 3
	c := redis.NewClient(&redis.Options{Addr: cp.addrs[f], MaxRetries: -1})
	defer c.Close()
	ctx := context.Background()
	err := c.Get(ctx, "k").Err()
	if err == nil || !strings.HasSuffix(err.Error(), " "+proxies[l].Addr()) || !strings.HasPrefix(err.Error(), "MOVED ") {
		t.Errorf("GET on a follower: %v, want MOVED … %s (the leader's --peers entry)", err, proxies[l].Addr())
	}
	slots, err := c.ClusterSlots(ctx).Result()
	if err != nil || len(slots) != 1 || len(slots[0].Nodes) == 0 || slots[0].Nodes[0].Addr != proxies[l].Addr() {
		t.Errorf("CLUSTER SLOTS on a follower: %+v %v, want the master at %s", slots, err, proxies[l].Addr())
	}
}

// hold asks c for a lease on key, retrying -TRYAGAIN (a new leader's epoch
// not applied yet) for up to within; it returns the fence.
func hold(t *testing.T, c *redis.Client, key, reqid string, within time.Duration) (string, int64) {
	t.Helper()
	var err error
	for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		var v []any
		v, err = c.Do(context.Background(), "LOCK.HOLD", "part", key, reqid, "TTL", 10000, "WAIT", 0).Slice()
		if err == nil && len(v) == 3 {
			return fmt.Sprint(v[0]), v[1].(int64)
		}
	}
	t.Fatalf("LOCK.HOLD part %s: no grant within %v: %v", key, within, err)
	return "", 0
}

// LOCK-14, SPEC §10: a leader cut off from both followers, its clients
// still reaching it, stops granting once Raft's leader lease runs out
// (checked every LeaderLeaseTimeout, so within twice it, below the
// election timeout), and answers LOCK.HOLD with an error, not a grant; the
// majority elects a leader whose fences are of a larger epoch (LOCK-02),
// so no two holders believe they hold with fences of one epoch.
func testClusterPartitionedLeader(t *testing.T, bin string) {
	const election = 300 * time.Millisecond
	const leaseTimeout = election * 2 / 5 // cluster.Node's LeaderLeaseTimeout
	const slack = 250 * time.Millisecond  // a shared, loaded machine's scheduling
	cp, _, links := startBehindProxies(t, bin, "--raft-election-timeout", election.String())
	l := cp.waitLeader(10 * time.Second)
	old := redis.NewClient(&redis.Options{Addr: cp.addrs[l], MaxRetries: -1, ReadTimeout: 2 * time.Second})
	defer old.Close()
	leaseA, fenceA := hold(t, old, "a", "ra", 10*time.Second)

	cut := time.Now()
	peerlink.Partition(links, "n"+strconv.Itoa(l+1))
	var lastGrant time.Duration
	var oldFences []int64
	var refusal error
	for i := 0; refusal == nil; i++ {
		if time.Since(cut) > 5*time.Second {
			t.Fatalf("the cut-off leader still answers LOCK.HOLD without an error after 5 s (last grant %v after the cut)", lastGrant)
		}
		v, err := old.Do(context.Background(), "LOCK.HOLD", "part", "p"+strconv.Itoa(i), "rp"+strconv.Itoa(i), "TTL", 10000, "WAIT", 0).Slice()
		var rerr redis.Error
		switch {
		case err == nil:
			lastGrant = time.Since(cut)
			oldFences = append(oldFences, v[1].(int64))
		case errors.As(err, &rerr):
			refusal = err
		default:
			t.Fatalf("LOCK.HOLD on the cut-off leader: %v, want an error reply", err)
		}
	}
	t.Logf("cut-off leader n%d: last grant %v after the cut, then %q", l+1, lastGrant.Round(time.Millisecond), refusal)
	if limit := 2*leaseTimeout + slack; lastGrant > limit {
		t.Errorf("the cut-off leader granted %v after the cut, want none after %v (2×LeaderLeaseTimeout + %v)", lastGrant, limit, slack)
	}
	if err := old.Do(context.Background(), "LOCK.RENEW", leaseA).Err(); err == nil {
		t.Errorf("the cut-off leader renewed lease %s", leaseA)
	}

	// The majority elects; its grant on the key a's holder still believes
	// it holds is of a larger epoch.
	var m int
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if m = cp.leaderAmong(l); m >= 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the majority elected no leader within 10 s")
		}
	}
	cur := redis.NewClient(&redis.Options{Addr: cp.addrs[m], MaxRetries: -1})
	defer cur.Close()
	_, fenceB := hold(t, cur, "a", "rb", 10*time.Second)
	for _, f := range append(oldFences, fenceA) {
		if fenceB>>32 <= f>>32 || fenceB <= f {
			t.Errorf("the new leader's fence %d (epoch %d) after the old leader's %d (epoch %d): want a larger epoch", fenceB, fenceB>>32, f, f>>32)
		}
	}
	if err := old.Do(context.Background(), "LOCK.HOLD", "part", "a", "rc", "TTL", 1000, "WAIT", 0).Err(); err == nil {
		t.Error("the cut-off leader granted again while the majority leads")
	}

	// Healed, the old leader follows.
	peerlink.HealAll(links)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if role, err := old.Do(context.Background(), "ROLE").Slice(); err == nil && len(role) > 0 && role[0] == "slave" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the old leader did not follow within 10 s of the heal")
		}
	}
	refused := int64(0)
	for _, lk := range links {
		refused += lk.Refused()
	}
	t.Logf("peer connections refused by the proxies during the partition: %d", refused)
}

// leaderAmong is the node other than skip whose ROLE is master, -1 if none.
func (cp *clusterProc) leaderAmong(skip int) int {
	for i, a := range cp.addrs {
		if i == skip {
			continue
		}
		c := redis.NewClient(&redis.Options{Addr: a, MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
		role, err := c.Do(context.Background(), "ROLE").Slice()
		c.Close()
		if err == nil && len(role) > 0 && role[0] == "master" {
			return i
		}
	}
	return -1
}

// LOCK-14: a leader frozen (SIGSTOP) past the election timeout resumes
// believing it leads until Raft's timers run; a LOCK.HOLD waiting in its
// socket meanwhile must not be granted in the old epoch after the new
// leader granted in a newer one: its lease on granting ran out while it
// was frozen.
func testClusterFrozenLeader(t *testing.T, bin string) {
	cp := startClusterProc(t, bin, 3, "--raft-election-timeout", "300ms")
	l := cp.waitLeader(10 * time.Second)
	old := redis.NewClient(&redis.Options{Addr: cp.addrs[l], MaxRetries: -1})
	defer old.Close()
	_, fenceA := hold(t, old, "a", "ra", 10*time.Second)
	raw, err := net.Dial("tcp", cp.addrs[l])
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()

	// And one waits in the leader's line for a lease that runs out
	// while the leader is frozen: its expiry, on the thaw, must not
	// grant in the old epoch either.
	if err := old.Do(context.Background(), "LOCK.HOLD", "part", "w", "rw1", "TTL", 1000, "WAIT", 0).Err(); err != nil {
		t.Fatal(err)
	}
	waiter, err := net.Dial("tcp", cp.addrs[l])
	if err != nil {
		t.Fatal(err)
	}
	defer waiter.Close()
	if _, err := waiter.Write(respCommand("LOCK.HOLD", "part", "w", "rw2", "TTL", "1000", "WAIT", "20000")); err != nil {
		t.Fatal(err)
	}
	inLine := time.Now().Add(time.Second) // the first lease's end, give or take a round trip
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if n, _ := old.Do(context.Background(), "LOCK.INFO", "part", "w").Result(); strings.Contains(fmt.Sprint(n), "waiters:1") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the second HOLD of w never joined the line")
		}
	}

	cp.children[l].cmd.Process.Signal(syscall.SIGSTOP)
	defer cp.children[l].cmd.Process.Signal(syscall.SIGCONT)
	var m int
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if m = cp.leaderAmong(l); m >= 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no new leader while the old one was frozen")
		}
	}
	cur := redis.NewClient(&redis.Options{Addr: cp.addrs[m], MaxRetries: -1})
	defer cur.Close()
	_, fenceB := hold(t, cur, "b", "rb", 10*time.Second)

	// The request waits in the frozen leader's socket; then it thaws,
	// after the waited-for lease's end.
	if _, err := raw.Write(respCommand("LOCK.HOLD", "part", "c", "rc", "TTL", "1000", "WAIT", "0")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Until(inLine) + 200*time.Millisecond)
	cp.children[l].cmd.Process.Signal(syscall.SIGCONT)
	raw.SetReadDeadline(time.Now().Add(10 * time.Second))
	line, err := bufio.NewReader(raw).ReadString('\n')
	if err != nil {
		t.Fatalf("no answer from the thawed leader: %v", err)
	}
	if !strings.HasPrefix(line, "-") {
		t.Errorf("the thawed leader answered LOCK.HOLD with %q (its epoch %d, the new leader's %d): want an error, not a grant", strings.TrimSpace(line), fenceA>>32, fenceB>>32)
	} else {
		t.Logf("the thawed leader answered %s", strings.TrimSpace(line))
	}
	waiter.SetReadDeadline(time.Now().Add(10 * time.Second))
	line, err = bufio.NewReader(waiter).ReadString('\n')
	if err != nil {
		t.Fatalf("no answer to the waiter from the thawed leader: %v", err)
	}
	if !strings.HasPrefix(line, "-") {
		t.Errorf("the thawed leader granted the waiter: %q (the new leader's epoch %d): want an error", strings.TrimSpace(line), fenceB>>32)
	} else {
		t.Logf("the thawed leader answered the waiter %s", strings.TrimSpace(line))
	}
}

// respCommand is args as a RESP array of bulk strings.
func respCommand(args ...string) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	return []byte(b.String())
}

package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestClusterProcess runs three tenure binaries as a cluster (SPEC §10).
func TestClusterProcess(t *testing.T) {
	bin := buildServer(t)
	t.Run("BadPeersFailInOneLine", func(t *testing.T) { testClusterBadPeers(t, bin) })
	t.Run("LeaderKillsLoseNoAcknowledgedWrite", func(t *testing.T) { testClusterKills(t, bin) })
	t.Run("ListensAtAddrAdvertisesPeers", func(t *testing.T) { testClusterAdvertised(t, bin) })
	t.Run("PartitionedLeaderStopsGranting", func(t *testing.T) { testClusterPartitionedLeader(t, bin) })
	t.Run("FrozenLeaderGrantsNothingOnThaw", func(t *testing.T) { testClusterFrozenLeader(t, bin) })
}

// freeAddrs picks n loopback addresses whose ports are free now.
func freeAddrs(t *testing.T, n int) []string {
	var addrs []string
	var lns []net.Listener
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		addrs = append(addrs, ln.Addr().String())
	}
	for _, ln := range lns {
		ln.Close()
	}
	return addrs
}

func peersFlag(addrs []string) string {
	var parts []string
	for i, a := range addrs {
		parts = append(parts, "n"+strconv.Itoa(i+1)+"="+a)
	}
	return strings.Join(parts, ",")
}

// SPEC §10: a --peers that does not name this node, names it twice, or
// disagrees with the cluster its --dir belongs to stops the server with a
// one-line error before it listens.
func testClusterBadPeers(t *testing.T, bin string) {
	addrs := freeAddrs(t, 3)
	dir := t.TempDir()
	users := filepath.Join(t.TempDir(), "users")
	os.WriteFile(users, []byte("user admin admin sha256:"+strings.Repeat("0", 64)+"\n"), 0o600)
	// The dir joins the cluster of addrs once.
	first := startChild(t, bin, "--node-id", "n1", "--peers", peersFlag(addrs), "--dir", dir, "--raft-election-timeout", "200ms")
	first.cmd.Process.Signal(syscall.SIGTERM)
	if code := first.wait(20 * time.Second); code != 0 {
		t.Fatalf("SIGTERM: exit %d\n%s", code, first.stderr())
	}
	other := freeAddrs(t, 1)[0]
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--node-id", "n1", "--peers", "n2=" + addrs[1] + ",n3=" + addrs[2]}, "--peers does not name this node (--node-id n1)"},
		{[]string{"--node-id", "n1", "--peers", "n1=" + addrs[0] + ",n1=" + addrs[1]}, "--peers names n1 twice"},
		{[]string{"--node-id", "n1", "--peers", "n1=" + addrs[0] + ",n2=" + addrs[0]}, "--peers names the address " + addrs[0] + " twice"},
		{[]string{"--node-id", "n1", "--peers", "n1=nowhere"}, "--peers: n1"},
		{[]string{"--peers", peersFlag(addrs)}, "--peers needs --node-id"},
		{[]string{"--node-id", "n1", "--peers", peersFlag(addrs), "--users", users}, "--users in a cluster needs --cluster-key-file"},
		{[]string{"--node-id", "n1", "--peers", peersFlag([]string{addrs[0], addrs[1], other}), "--dir", dir}, "disagrees with the cluster"},
		{[]string{"--node-id", "n2", "--peers", peersFlag(addrs), "--dir", dir}, "belongs to node n1, not --node-id n2"},
		{[]string{"--addr", addrs[0], "--dir", dir}, "belongs to cluster node n1"},
	} {
		args := tc.args
		if !slices.Contains(args, "--dir") {
			args = append(args, "--dir", t.TempDir())
		}
		c := runChild(t, bin, args...)
		code := c.wait(20 * time.Second)
		lines := c.stderrLines()
		if code == 0 || len(lines) == 0 || !strings.HasPrefix(lines[len(lines)-1], "tenure: ") || !strings.Contains(lines[len(lines)-1], tc.want) {
			t.Errorf("tenure %s: exit %d, want a last line `tenure: …%s…`, got:\n%s", strings.Join(args, " "), code, tc.want, c.stderr())
		}
		if strings.Contains(c.stderr(), "ready to accept connections") {
			t.Errorf("tenure %s listened before it failed", strings.Join(args, " "))
		}
	}
}

// clusterProc is a cluster of tenure binaries.
type clusterProc struct {
	t     *testing.T
	bin   string
	addrs []string // where the nodes listen, and the clients dial
	peers []string // their --peers entries: addrs, or proxies in front

	dirs     []string
	extra    []string
	children []*child
}

func startClusterProc(t *testing.T, bin string, n int, extra ...string) *clusterProc {
	addrs := freeAddrs(t, n)
	return startClusterAt(t, bin, addrs, addrs, extra...)
}

// startClusterAt starts a cluster whose nodes listen at addrs and are
// advertised at peers.
func startClusterAt(t *testing.T, bin string, addrs, peers []string, extra ...string) *clusterProc {
	n := len(addrs)
	cp := &clusterProc{t: t, bin: bin, addrs: addrs, peers: peers, extra: extra, children: make([]*child, n)}
	for range n {
		cp.dirs = append(cp.dirs, t.TempDir())
	}
	for i := range n {
		cp.start(i)
	}
	return cp
}

func (cp *clusterProc) start(i int) {
	args := []string{"--node-id", "n" + strconv.Itoa(i+1), "--peers", peersFlag(cp.peers), "--dir", cp.dirs[i], "--log-level", "warn"}
	if cp.addrs[i] != cp.peers[i] {
		args = append(args, "--addr", cp.addrs[i])
	}
	args = append(args, cp.extra...)
	cp.children[i] = runChild(cp.t, cp.bin, args...)
	cp.waitListening(i)
}

// waitListening waits until node i answers PING (--log-level warn hides
// the ready line).
func (cp *clusterProc) waitListening(i int) {
	c := redis.NewClient(&redis.Options{Addr: cp.addrs[i], MaxRetries: -1})
	defer c.Close()
	for deadline := time.Now().Add(20 * time.Second); c.Ping(context.Background()).Err() != nil; {
		select {
		case <-cp.children[i].exited:
			cp.t.Fatalf("n%d exited: %v\n%s", i+1, cp.children[i].err, cp.children[i].stderr())
		default:
		}
		if time.Now().After(deadline) {
			cp.t.Fatalf("n%d does not answer PING", i+1)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (cp *clusterProc) kill(i int) {
	cp.children[i].cmd.Process.Signal(syscall.SIGKILL)
	<-cp.children[i].exited
}

// leader is the node whose ROLE is master, -1 if none.
func (cp *clusterProc) leader() int { return cp.leaderAmong(-1) }

func (cp *clusterProc) waitLeader(within time.Duration) int {
	for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if l := cp.leader(); l >= 0 {
			return l
		}
	}
	cp.t.Fatalf("no leader within %v", within)
	return -1
}

// firstSuccess probes every node but skip with try until one succeeds and
// returns how long that took.
func firstSuccess(addrs []string, skip int, try func(c *redis.Client) error) time.Duration {
	start := time.Now()
	clients := make([]*redis.Client, len(addrs))
	for i, a := range addrs {
		clients[i] = redis.NewClient(&redis.Options{Addr: a, MaxRetries: -1, DialTimeout: 100 * time.Millisecond, ReadTimeout: time.Second})
		defer clients[i].Close()
	}
	for time.Since(start) < 30*time.Second {
		for i, c := range clients {
			if i != skip && try(c) == nil {
				return time.Since(start)
			}
		}
		time.Sleep(2 * time.Millisecond)
	}
	return time.Since(start)
}

// LOCK-14, SPEC §10: SIGKILL the leader again and again with writers
// running, SETs and two-key MULTI/EXECs from 16 connections (so the
// leader proposes them in groups): every write acknowledged is there at
// the end, each transaction whole. The time from
// each kill to the first write acknowledged and the first LOCK.HOLD
// granted by the new leader is logged (TENURE_CLUSTER_KILLS kills, 3 by
// default; TENURE_RAFT_ELECTION_TIMEOUT passes --raft-election-timeout).
func testClusterKills(t *testing.T, bin string) {
	kills := 3
	if v, err := strconv.Atoi(os.Getenv("TENURE_CLUSTER_KILLS")); err == nil && v > 0 {
		kills = v
	}
	var extra []string
	if v := os.Getenv("TENURE_RAFT_ELECTION_TIMEOUT"); v != "" {
		extra = append(extra, "--raft-election-timeout", v)
	}
	cp := startClusterProc(t, bin, 3, extra...)
	cp.waitLeader(5 * time.Second)
	cc := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs: cp.addrs, ClusterStateReloadInterval: 200 * time.Millisecond,
		MaxRedirects: 16, DialTimeout: 200 * time.Millisecond, ReadTimeout: 2 * time.Second,
	})
	defer cc.Close()

	ctx, stop := context.WithCancel(context.Background())
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		acked = map[string]int{}
		tries atomic.Int64
	)
	// Sixteen writers, so that the leader's writes go in groups of
	// several proposals per log entry (cluster/group.go); half of them
	// write two keys in one MULTI/EXEC, which must come back whole.
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ctx.Err() == nil; i++ {
				key := fmt.Sprintf("{w%d-%d}", w, i)
				tries.Add(1)
				var err error
				if w%2 == 0 {
					err = cc.Set(ctx, key, i, 0).Err()
				} else {
					_, err = cc.TxPipelined(ctx, func(p redis.Pipeliner) error {
						p.Set(ctx, key, i, 0)
						p.Set(ctx, key+":b", i, 0)
						return nil
					})
				}
				if err == nil {
					mu.Lock()
					acked[key] = i
					if w%2 == 1 {
						acked[key+":b"] = i
					}
					mu.Unlock()
				}
			}
		}()
	}
	var writes, grants []time.Duration
	for k := range kills {
		time.Sleep(300 * time.Millisecond) // let the writers write under this leader
		l := cp.waitLeader(10 * time.Second)
		cp.kill(l)
		var wgProbe sync.WaitGroup
		var write, grant time.Duration
		wgProbe.Add(2)
		go func() {
			defer wgProbe.Done()
			write = firstSuccess(cp.addrs, l, func(c *redis.Client) error {
				return c.Set(context.Background(), "probe", k, 0).Err()
			})
		}()
		go func() {
			defer wgProbe.Done()
			grant = firstSuccess(cp.addrs, l, func(c *redis.Client) error {
				return c.Do(context.Background(), "LOCK.HOLD", "probe", "k"+strconv.Itoa(k), "req"+strconv.Itoa(k), "TTL", 1000, "WAIT", 0).Err()
			})
		}()
		wgProbe.Wait()
		writes, grants = append(writes, write), append(grants, grant)
		cp.start(l)
	}
	stop()
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if len(acked) == 0 {
		t.Fatal("no write was acknowledged")
	}
	lost := 0
	for key, want := range acked {
		got, err := cc.Get(context.Background(), key).Int()
		if err != nil || got != want {
			lost++
			if lost <= 5 {
				t.Errorf("acknowledged %s=%d, read %d (%v)", key, want, got, err)
			}
		}
	}
	t.Logf("%d kills: %d keys acknowledged, of %d writes tried (SETs and two-key EXECs), %d lost", kills, len(acked), tries.Load(), lost)
	t.Logf("kill to first acknowledged write: %s", percentiles(writes))
	t.Logf("kill to first grant on the new leader: %s", percentiles(grants))
}

func percentiles(ds []time.Duration) string {
	s := slices.Clone(ds)
	slices.Sort(s)
	at := func(p float64) time.Duration { return s[min(len(s)-1, int(p*float64(len(s))))] }
	return fmt.Sprintf("p50 %v p99 %v max %v (n=%d)", at(0.50).Round(time.Millisecond), at(0.99).Round(time.Millisecond), s[len(s)-1].Round(time.Millisecond), len(s))
}

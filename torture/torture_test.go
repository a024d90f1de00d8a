package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tenure-db/tenure/internal/testenv"
)

// TestMain lets this test binary be a child process of clients too.
func TestMain(m *testing.M) {
	if env := os.Getenv("TORTURE_CLIENT"); env != "" {
		os.Exit(clientMain(env))
	}
	code := m.Run()
	if serverDir != "" {
		os.RemoveAll(serverDir)
	}
	os.Exit(code)
}

// The server binary the runs share, built once (with -race under -race).
var (
	serverOnce sync.Once
	serverDir  string
	serverBin  string
	serverErr  error
)

func testServer(t *testing.T) string {
	serverOnce.Do(func() {
		if serverDir, serverErr = os.MkdirTemp("", "tenure-torture-bin-"); serverErr == nil {
			serverBin, serverErr = buildServer(serverDir, testenv.RaceEnabled())
		}
	})
	if serverErr != nil {
		t.Fatal(serverErr)
	}
	return serverBin
}

// TestTorture is the CI-sized run of the harness: 40 s of nemesis over a
// real server process, clients in this process and in two child processes
// (this test binary again). Any violation fails it, and its history is
// kept in torture/torture-history-failed.jsonl, with porcupine's picture of
// each partition that is not linearizable beside it (…jsonl.PARTITION.html).
// `make torture DURATION=30m` runs the long one.
func TestTorture(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the server under a nemesis for 40s")
	}
	rep := runCISized(t, Config{Duration: 40 * time.Second}, "torture-history-failed.jsonl")
	if rep.Granted == 0 || rep.Accepted == 0 || rep.Restarts == 0 || rep.LinCounters.Ops == 0 || rep.LinLocks.Partitions <= rep.Restarts {
		t.Fatalf("the run did too little to show anything: %d grants, %d accepted writes, %d restarts, %d counter operations and %d lock partitions checked for linearizability",
			rep.Granted, rep.Accepted, rep.Restarts, rep.LinCounters.Ops, rep.LinLocks.Partitions)
	}
}

// TestTortureCluster is the CI-sized run of the harness in cluster mode
// (issue 20): 60 s of nemesis over a Raft cluster of three server
// processes, SIGKILLs of the leader and of followers, SIGSTOPs of the
// leader past its election timeout, partitions of the leader and of a
// follower from their peers, and the single server's faults of the
// clients' side. Any violation fails it; its history is kept in
// torture/torture-history-cluster-failed.jsonl.
// `make torture CLUSTER=3 DURATION=10m` runs the long one.
func TestTortureCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a cluster under a nemesis for 60s")
	}
	rep := runCISized(t, Config{Duration: 60 * time.Second, Cluster: 3}, "torture-history-cluster-failed.jsonl")
	nodeFaults := rep.Faults["kill-leader"] + rep.Faults["kill-follower"] + rep.Faults["stop-leader"]
	if rep.Granted == 0 || rep.Accepted == 0 || nodeFaults < 3 || rep.Epochs < 2 || rep.LinCounters.Ops == 0 {
		t.Fatalf("the run did too little to show anything: %d grants, %d accepted writes, %d kills and stops of nodes, %d epochs granted, %d counter operations checked for linearizability",
			rep.Granted, rep.Accepted, nodeFaults, rep.Epochs, rep.LinCounters.Ops)
	}
	if n := rep.Faults["partition-leader"] + rep.Faults["partition-one"]; n == 0 || rep.OrderedGrants == 0 {
		t.Fatalf("the run partitioned no node (%d) or saw no grant on the wire (%d)", n, rep.OrderedGrants)
	}
}

// runCISized runs the harness with c's duration and mode and the CI-sized
// clients (3 keys, 4 goroutines here and 2 in each of 2 child processes,
// ttl 1 s), logs its report, and fails the test on any violation, keeping
// the history in torture/<failed>, with porcupine's picture of each
// partition that is not linearizable beside it (<failed>.PARTITION.html).
func runCISized(t *testing.T, c Config, failed string) *Report {
	t.Helper()
	history := t.TempDir() + "/history.jsonl"
	var log bytes.Buffer
	c.Seed = uint64(time.Now().UnixNano())
	c.Keys, c.Goroutines, c.Procs, c.PerProc, c.TTL = 3, 4, 2, 2, time.Second
	c.SemKeys, c.Limit, c.RWKeys, c.RecipeKeys = 1, 2, 1, 1
	c.Server, c.History, c.ClientExe, c.Log = testServer(t), history, []string{os.Args[0]}, &log
	rep, err := Run(c)
	var out bytes.Buffer
	if rep != nil {
		rep.Print(&out)
	}
	t.Logf("%s%s", log.String(), out.String())
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Violations) > 0 {
		if data, err := os.ReadFile(history); err == nil {
			os.WriteFile(failed, data, 0o644)
		}
		for _, v := range rep.Visuals {
			if data, err := os.ReadFile(v); err == nil {
				os.WriteFile(failed+strings.TrimPrefix(filepath.Base(v), filepath.Base(history)), data, 0o644)
			}
		}
		t.Fatalf("%d violations; the history is in torture/%s", len(rep.Violations), failed)
	}
	if rep.PermitIntervals == 0 || rep.ReaderIntervals == 0 || rep.WriterIntervals == 0 || rep.RecipeIntervals == 0 {
		t.Fatalf("the kinds of key beside the mutex did too little to show anything: %d permits, %d readers, %d writers, %d recipe holders",
			rep.PermitIntervals, rep.ReaderIntervals, rep.WriterIntervals, rep.RecipeIntervals)
	}
	if rep.Observers == 0 || rep.Observed-rep.ObservedNone == 0 {
		t.Fatalf("the observers (issue 33) did too little to show anything: %d observers yielded %d leaders, %d of them none", rep.Observers, rep.Observed, rep.ObservedNone)
	}
	if rep.QueueAcked == 0 || rep.QueueDelivered == 0 {
		t.Fatalf("the queue (issue 35) did too little to show anything: %d pushes acknowledged, %d items delivered", rep.QueueAcked, rep.QueueDelivered)
	}
	return rep
}

// Command torture runs tenure under a nemesis and checks what its lock
// clients saw (issue 8). It starts the server as a child process, puts a TCP
// proxy in front of it, and runs lock clients (the Go SDK, sdk/locks) as
// goroutines and as child processes, each holding keys and incrementing a
// counter per key under its lease, GET then SET … FENCE. Beside the mutex
// keys (issues 31, 32) they hold semaphore keys (LIMIT n), read-write keys
// (SHARED readers that read the counter, writers that increment it) and
// keys of the Redis lock recipe (SET NX PX, compare-and-delete and
// compare-and-pexpire scripts by EVALSHA; recipe.go). Meanwhile the
// nemesis SIGKILLs and restarts the server, freezes client processes with
// SIGSTOP and thaws them, cuts connections, swallows replies, and opens
// bursts of connections. It is a test harness, not a benchmark (that is
// bench) and not part of the server. Then it checks the history:
//
//   - (a) what holders believed: the interval from fn's start to its end or
//     the holder's deadline (SPEC §8), on CLOCK_MONOTONIC, never overlaps
//     another on the same key in one epoch (LOCK-01), but a reader's a
//     reader's, and a semaphore's key never has more than its limit at
//     once; across a restart the later holder's fence is the larger
//     (LOCK-02, LOCK-10). The recipe's holders (from the SET's reply to the
//     release's send or the recipe's validity) never overlap at all, across
//     restarts too: what the recipe promises with an fsync of every write;
//   - (b) fences at the resource: the fence that last wrote a counter never
//     goes back in time (LOCK-12), and every increment lost (two accepted
//     writes of one count) is explained by a restart overlap or a write sent
//     after its holder's deadline (a frozen holder's);
//   - (c) one lease per request id (LOCK-03): the grants the server sent, as
//     the proxy saw them, against the request ids and the clients' fences,
//     and the server's grants_total;
//   - (d) linearizability of the raw command history, as the proxy saw it
//     pass, with porcupine, partitioned by key: the counters' GET and
//     SET … FENCE against a fenced register across restarts, the LOCK.*
//     commands against the lease lock per key and epoch (see
//     linearize.go), but those of keys held with LIMIT or SHARED, which
//     the mutex's model does not know, and the recipe's, which are not
//     recorded (its holders' beliefs are checked in (a)). A partition porcupine cannot decide in time counts as
//     a violation;
//   - (e) first come, first served (LOCK-08): no request id is granted
//     while one that certainly joined the line before it was certainly
//     waiting in it, from the LOCK.HOLDs the proxy saw pass (see fifo.go);
//   - (f) lock events (SPEC §13): a subscriber beside the holders turns on
//     notify-keyspace-events L after each restart and PSUBSCRIBEs to
//     __lock@0__:*; within each of its sessions the granted fences grow,
//     and every grant the proxy saw asked after a session began is among
//     its events whenever the session heard a later fence (see
//     lockevents.go). One server only;
//   - (g) observers (LOCK-17): clients follow the mutex keys with the SDK's
//     Observe, through the proxies, in the harness and in each child
//     process (which the nemesis freezes); no observer yields a fence
//     smaller than one it yielded before, and every leader it yields is a
//     grant of that key, fence and OWNER (the holders' client ids) the
//     proxy saw, sent before the observation (see observer.go);
//   - the queue (issue 35): producers LPUSH unique items on two lists,
//     consumers BRPOP, RPOP and LMOVE them; no item comes out twice
//     (among the pops' replies and the lists read at the end), and no
//     acknowledged push is lost but as many as pops whose reply never
//     came (see queue.go). Beside the hashes and sets, sorted sets'
//     members are registers of (d) too (ZADD, ZINCRBY, ZREM, ZSCORE).
//
// It prints operations, faults by kind and violations, and writes the
// history of a failing run to a file, with porcupine's picture of each
// partition that is not linearizable beside it. It exits 1 on a violation.
//
// With -cluster 3 it runs a Raft cluster of three nodes instead (SPEC §10,
// issue 20; cluster.go), each behind a proxy, the clients following the
// leader, and a nemesis that SIGKILLs the leader and followers and SIGSTOPs
// the leader past the election timeout. It checks (a), (b), (c), (g), the
// queue and the counters and collections of (d) as for one server, epochs now the leaders'; not the lock
// commands of (d), (e) nor (f), whose partitions are a server's runs.
//
//	go run ./torture -duration 30m
//	go run ./torture -cluster 3 -duration 10m
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"
)

func main() {
	if env := os.Getenv("TORTURE_CLIENT"); env != "" {
		os.Exit(clientMain(env))
	}
	var (
		duration   = flag.Duration("duration", time.Minute, "how long the nemesis works")
		seed       = flag.Uint64("seed", uint64(time.Now().UnixNano()), "random seed")
		keys       = flag.Int("keys", 3, "mutex keys of the lock")
		semKeys    = flag.Int("sem-keys", 1, "semaphore keys (LOCK.HOLD … LIMIT -limit)")
		limit      = flag.Int("limit", 2, "permits of each semaphore key")
		rwKeys     = flag.Int("rw-keys", 1, "read-write keys (SHARED readers, exclusive writers)")
		recipeKeys = flag.Int("recipe-keys", 1, "keys of the Redis lock recipe (SET NX PX, compare-and-delete / compare-and-pexpire scripts by EVALSHA)")
		goroutines = flag.Int("goroutines", 6, "lock clients in this process")
		procs      = flag.Int("procs", 3, "child processes of lock clients (the nemesis freezes them)")
		perProc    = flag.Int("per-proc", 2, "lock clients in each child process")
		ttl        = flag.Duration("ttl", time.Second, "ttl of every lease (1s at least)")
		serverBin  = flag.String("server", "", "tenure binary (default: build ./cmd/tenure)")
		race       = flag.Bool("race", false, "build the server with -race")
		retries    = flag.Int("redis-retries", -1, "go-redis MaxRetries of the SDK's clients (-1: none; the SDK retries itself)")
		faults     = flag.String("faults", "", "faults to inject (default: "+strings.Join(allFaults, ",")+"; in a cluster "+strings.Join(clusterFaults, ",")+")")
		history    = flag.String("history", "", "file for a failing run's history (default torture-history-UNIX.jsonl)")
		keep       = flag.Bool("keep-history", false, "write the history of a passing run too")
		recheck    = flag.String("check", "", "check a history `file` written by an earlier run, and run nothing")
		linBudget  = flag.Duration("lin-budget", 0, "time for the linearizability check (0: 2m); undecided partitions fail the run")
		nodes      = flag.Int("cluster", 0, "run a Raft cluster of this many nodes instead of one server (0: one server)")
		election   = flag.Duration("raft-election-timeout", 300*time.Millisecond, "the cluster's --raft-election-timeout")
	)
	flag.Parse()
	if *recheck != "" {
		rep, err := checkFile(*recheck, *linBudget)
		if err != nil {
			fmt.Fprintf(os.Stderr, "torture: %v\n", err)
			os.Exit(2)
		}
		rep.Print(os.Stdout)
		if len(rep.Violations) > 0 {
			os.Exit(1)
		}
		return
	}
	rep, err := Run(Config{
		Duration: *duration, Seed: *seed, Keys: *keys, SemKeys: *semKeys, Limit: *limit, RWKeys: *rwKeys, RecipeKeys: *recipeKeys, Goroutines: *goroutines,
		Procs: *procs, PerProc: *perProc, TTL: *ttl, Server: *serverBin, Race: *race, RedisRetries: *retries,
		Faults: faultList(*faults), Cluster: *nodes, ElectionTimeout: *election, History: *history, KeepAll: *keep,
		ClientExe: []string{os.Args[0]}, Log: os.Stderr, LinBudget: *linBudget,
	})
	if rep != nil {
		rep.Print(os.Stdout)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "torture: %v\n", err)
		os.Exit(2)
	}
	if len(rep.Violations) > 0 {
		os.Exit(1)
	}
}

// faultList is the -faults flag's list; empty: the default.
func faultList(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

package main

// The cluster mode (-cluster, issue 20): three-node clusters on loopback.
// Failover: the leader is killed (SIGKILL) again and again, and the time
// from each kill to the first write acknowledged and the first lock granted
// by the new leader is measured, for tenure (the default election timeout
// and a shorter one) and for etcd (its defaults). Throughput: the lock
// cycle, GET and SET of a three-node tenure cluster, through its leader,
// against one tenure server. The approach is that of cmd/tenure's
// TestClusterProcess/LeaderKills, without its writers: here only the
// probes run, so the figures are what a client waits, not what a loaded
// cluster does. Writes: tenure's and etcd's three-node clusters, writes
// through the leader from clients that wait for each.
//
// This file runs the mode and writes its report; cluster_members.go
// starts and stops the three members, tenure's or etcd's;
// cluster_failover.go, cluster_throughput.go and cluster_writes.go are
// the three kinds of rows, each with its table.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// clusterSettings are the cluster mode's flags.
type clusterSettings struct {
	kills  int           // leader kills of each failover setting
	settle time.Duration // after a killed node is back, before the next kill
	faster time.Duration // the second tenure setting's --raft-election-timeout
}

// runCluster is the cluster mode: the failover rows, the throughput rows
// and the writes rows, printed and written to outDir as cluster.json and
// cluster.txt.
func runCluster(ctx context.Context, l *launcher, s *settings, cs clusterSettings, withEtcd bool, rounds int, outDir string,
	stdout io.Writer, progress func(string, ...any)) error {
	began := time.Now()
	load := [2]string{loadavg()}
	sets := failoverSettings(cs, withEtcd)
	var fails []failoverResult
	for _, fs := range sets {
		progress("failover: %s, %d kills", fs.Name, cs.kills)
		fails = append(fails, failover(ctx, l, cs, fs, progress))
	}
	scs := clusterScenarios(s)
	tput := clusterThroughput(ctx, l, s, scs, rounds, progress)
	writes := clusterWrites(ctx, l, s, withEtcd, rounds, progress)
	if ctx.Err() != nil {
		return errors.New("interrupted")
	}
	load[1] = loadavg()

	var b strings.Builder
	fmt.Fprintf(&b, "tenure bench -cluster, %s, load average %s at the start, %s at the end; servers on CPU %s\n\n",
		time.Now().UTC().Format(time.RFC3339), load[0], load[1], orNone(l.cpus))
	failed := failoverTable(&b, cs, sets, fails)
	if throughputTable(&b, s, scs, tput, rounds) {
		failed = true
	}
	if writesTable(&b, s, writes, withEtcd) {
		failed = true
	}
	fmt.Fprint(stdout, b.String())
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return err
	}
	raw, err := json.MarshalIndent(map[string]any{"failover": fails, "throughput": tput, "writes": writes, "load": load}, "", "  ")
	if err != nil {
		return err
	}
	if err := errors.Join(os.WriteFile(filepath.Join(outDir, "cluster.json"), raw, 0o644),
		os.WriteFile(filepath.Join(outDir, "cluster.txt"), []byte(b.String()), 0o644)); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\nraw results: %s  table: %s\n", filepath.Join(outDir, "cluster.json"), filepath.Join(outDir, "cluster.txt"))
	progress("done in %s", time.Since(began).Round(time.Second))
	if failed {
		return errors.New("some runs failed; see FAILED above")
	}
	return nil
}

func orNone(s string) string {
	if s == "" {
		return "(not pinned)"
	}
	return s
}

package main

import (
	"context"
	"fmt"
	"io"
	"time"
)

// The throughput rows of the cluster mode: the lock cycle, GET and SET
// through a three-node tenure cluster's leader against one tenure server.

// clusterThroughput is the cluster's rows: each of the lock cycle, GET
// and SET against one tenure server and against a three-node cluster's
// leader, rounds times in alternation.
func clusterThroughput(ctx context.Context, l *launcher, s *settings, scs []*scenario, rounds int, progress func(string, ...any)) []result {
	single := allTargets[0]
	clustered := &target{Name: "tenure-cluster", About: "three tenure nodes, --fsync everysec, through the leader"}
	var out []result
	for round := 1; round <= rounds && ctx.Err() == nil; round++ {
		for _, sc := range scs {
			for j := range 2 {
				res := result{Scenario: sc.Name, Target: single.Name, Round: round}
				start := time.Now()
				if (j+round)%2 == 0 {
					res = runOnce(ctx, l, s, sc, single, round, progress)
				} else {
					res.Target = clustered.Name
					if ms, err := l.startMembers(ctx, single, nil); err != nil {
						res.Err = err.Error()
					} else {
						if i, err := ms.leader(ctx); err != nil {
							res.Err = err.Error()
						} else {
							runOn(ctx, s, sc, ms.procs[i], &res, progress)
						}
						ms.stop()
					}
					res.Seconds = time.Since(start).Seconds()
				}
				progress("round %d · %s · %s: %s", round, sc.Name, res.Target, brief(sc, res))
				if res.Err != "" {
					progress("    FAILED: %s", res.Err)
				}
				out = append(out, res)
			}
		}
	}
	return out
}

// clusterScenarios are the scenarios of the throughput rows.
func clusterScenarios(s *settings) []*scenario {
	var scs []*scenario
	for _, sc := range scenarios(s) {
		// set-always-50: the cluster acknowledges a write once a majority
		// has fsynced it, so the one server it is fairly set against
		// fsyncs every write too (the cluster's nodes run as in "set").
		if sc.Name == "uncontended" || sc.Name == "get" || sc.Name == "set" || sc.Name == "set-always-50" {
			scs = append(scs, sc)
		}
	}
	return scs
}

// throughputTable writes the throughput rows, medians of rounds, and says
// whether any run failed.
func throughputTable(b io.Writer, s *settings, scs []*scenario, tput []result, rounds int) (failed bool) {
	fmt.Fprintf(b, "\nthroughput: a 3-node tenure cluster (clients on its leader) against one tenure server, medians of %d rounds\n\n", rounds)
	fmt.Fprintf(b, "  %-52s %12s %12s %12s\n", "", "one server", "cluster", "cluster/one")
	for _, sc := range scs {
		var one, three []float64
		for _, r := range tput {
			if r.Scenario != sc.Name {
				continue
			}
			if r.Err != "" {
				failed = true
				continue
			}
			if r.Target == allTargets[0].Name {
				one = append(one, r.Metrics[sc.Rate.Key])
			} else {
				three = append(three, r.Metrics[sc.Rate.Key])
			}
		}
		label := map[string]string{"uncontended": "lock cycles/s (HOLD+RELEASE, uncontended)", "get": "GET/s", "set": "SET/s",
			"set-always-50": "SET/s, one server --fsync always, 50 clients"}[sc.Name]
		if sc.Name != "set-always-50" {
			label += fmt.Sprintf(", %d clients", s.clients)
		}
		o, t := median(one), median(three)
		fmt.Fprintf(b, "  %-52s %12s %12s %11.2f×\n", label, thousands(o), thousands(t), t/o)
	}
	return failed
}

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tenure-db/tenure/internal/testenv"
)

// TestMain lets this test binary be a child process of clients too.
func TestMain(m *testing.M) {
	if env := os.Getenv("TORTURE_CLIENT"); env != "" {
		os.Exit(clientMain(env))
	}
	os.Exit(m.Run())
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
	history := t.TempDir() + "/history.jsonl"
	var log bytes.Buffer
	rep, err := Run(Config{
		Duration:   40 * time.Second,
		Seed:       uint64(time.Now().UnixNano()),
		Keys:       3,
		Goroutines: 4,
		Procs:      2,
		PerProc:    2,
		TTL:        time.Second,
		Race:       testenv.RaceEnabled(),
		History:    history,
		ClientExe:  []string{os.Args[0]},
		Log:        &log,
	})
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
			os.WriteFile("torture-history-failed.jsonl", data, 0o644)
		}
		// porcupine's pictures of what is not linearizable, beside it.
		for _, v := range rep.Visuals {
			if data, err := os.ReadFile(v); err == nil {
				os.WriteFile("torture-history-failed.jsonl"+strings.TrimPrefix(filepath.Base(v), filepath.Base(history)), data, 0o644)
			}
		}
		t.Fatalf("%d violations; the history is in torture/torture-history-failed.jsonl", len(rep.Violations))
	}
	if rep.Granted == 0 || rep.Accepted == 0 || rep.Restarts == 0 || rep.LinCounters.Ops == 0 || rep.LinLocks.Partitions <= rep.Restarts {
		t.Fatalf("the run did too little to show anything: %d grants, %d accepted writes, %d restarts, %d counter operations and %d lock partitions checked for linearizability",
			rep.Granted, rep.Accepted, rep.Restarts, rep.LinCounters.Ops, rep.LinLocks.Partitions)
	}
}

// Command bench measures tenure against redis-server and etcd on this
// machine, in one run: tenure's leases against the SET NX PX lock recipe
// (through go-redis, as every Redis scenario) and against etcd's
// concurrency.Mutex (through etcd's own Go client), plain GET and SET, a
// million leases falling due at once, and what a durable SET costs. It
// builds ./cmd/tenure, starts a fresh server for every run (tenure with
// --fsync everysec; redis-server with persistence off, and with appendfsync
// everysec for the fair comparison; one etcd member; the durability rows
// with fsync always), pins the servers to the same CPUs, runs every
// scenario against each server in alternation for several rounds, and
// prints the medians with the ratios tenure/Redis and tenure/etcd and the
// targets of issues 6, 19 and 38. Raw results (JSON) and a chart (SVG) go to
// the output directory.
//
// It is not a load generator for production capacity planning: client and
// servers share one machine, and the numbers say how tenure compares with
// Redis and etcd here, not what any does on its own hardware.
//
//	go run ./bench                      # or: make bench
//	go run ./bench -duration 2s -rounds 1 -scenarios uncontended,keyspace
//	go run ./bench -cluster             # 3-node clusters: failover, throughput, writes (cluster*.go)
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// scenario is one row group of the table: what it runs and what it shows.
type scenario struct {
	Name  string // for -scenarios and the JSON
	Group string // its number in the tables and bench/README.md
	// Family, if set, is a name -scenarios takes for all the scenarios of
	// its group (keyspace, durability, …).
	Family string
	Title  string
	Run    scenarioFunc
	// On, if not nil, says which servers it runs against; nil: tenure and
	// the redis-servers, not etcd.
	On    func(*target) bool
	Start startOptions // how the servers are started for it
	Rows  []row
	// The chart: one throughput-like metric, and latency percentiles.
	Rate    row
	Latency []row
}

// row is one metric as the table shows it.
type row struct {
	Key, Label string
	Unit       string // ops, ms, MB, B, s, us, n
}

// cpuRows: the server's share of one CPU in the window (near 100%, the
// server was the bottleneck; well below, the client or the machine was),
// and its CPU time per operation, which compares the servers' costs even
// when the client is the bottleneck.
func cpuRows(op string) []row {
	return []row{{"server_cpu_pct", "server CPU, % of one CPU", "pct"}, {"cpu_us_per_op", "server CPU per " + op, "us"}}
}

var errorsRow = row{"errors", "errors", "n"}

// runsOn reports whether sc runs against t.
func (sc *scenario) runsOn(t *target) bool {
	if sc.On == nil {
		return !t.Etcd
	}
	return sc.On(t)
}

// lockServers: the lock scenarios run against every server, etcd too.
func lockServers(*target) bool { return true }

// durableServers: the durability scenarios run where a write can be made
// durable before its answer: tenure and redis-server with an AOF.
func durableServers(t *target) bool { return !t.Redis && !t.Etcd || t.AOF }

// rows joins groups of rows in order.
func rows(groups ...[]row) []row {
	var out []row
	for _, g := range groups {
		out = append(out, g...)
	}
	return out
}

func scenarios(s *settings) []*scenario {
	pct := func(prefix, label string) []row {
		return []row{{prefix + "p50_ms", label + " p50", "ms"}, {prefix + "p99_ms", label + " p99", "ms"}, {prefix + "p999_ms", label + " p999", "ms"}}
	}
	ks := func(name, op string, pipelined bool) *scenario {
		group, family, what := "6", "keyspace", strings.ToUpper(op)
		if op == "evalsha" {
			group, family, what = "11", "scripts", "EVALSHA of a compare-and-set script (GET, then SET: one write)"
		}
		title := fmt.Sprintf("%s, %d clients, one command a round trip", what, s.clients)
		unit := "latency"
		if pipelined {
			title = fmt.Sprintf("%s, %d clients, pipelines of %d", what, s.clients, s.pipeline)
			unit = "pipeline"
		}
		rate, lat := row{"ops_per_sec", "commands/s", "ops"}, pct("", unit)
		return &scenario{Name: name, Group: group, Family: family, Title: title, Run: keyspace(op, pipelined, s.clients),
			Rows: rows([]row{rate}, lat, cpuRows("command"), []row{errorsRow}), Rate: rate, Latency: lat}
	}
	durable := func(clients int) *scenario {
		rate, lat := row{"ops_per_sec", "commands/s", "ops"}, pct("", "latency")
		return &scenario{Name: fmt.Sprintf("set-always-%d", clients), Group: "8", Family: "durability",
			Title: fmt.Sprintf("durable SET, %d client(s), one a round trip: tenure --fsync always, Redis appendfsync always", clients),
			Run:   keyspace("set", false, clients), On: durableServers, Start: startOptions{fsyncAlways: true},
			Rows: rows([]row{rate}, lat, cpuRows("command"), []row{errorsRow}), Rate: rate, Latency: lat}
	}
	fanout := func(subs int) *scenario {
		rate, lat := row{"delivered_per_sec", "messages delivered/s", "ops"}, pct("", "delivery")
		return &scenario{Name: fmt.Sprintf("pubsub-%d", subs), Group: "10", Family: "pubsub",
			Title: fmt.Sprintf("pub/sub fan-out: %d publishers, PUBLISH to %d subscriber(s), one round trip at a time", pubsubPublishers, subs),
			Run:   pubsubFanout(subs), Rate: rate, Latency: lat,
			Rows: rows([]row{rate, {"published_per_sec", "PUBLISH/s", "ops"}}, lat, cpuRows("message delivered"), []row{errorsRow})}
	}
	cycles, cycleLat := row{"ops_per_sec", "cycles/s", "ops"}, pct("", "")
	for i := range cycleLat {
		cycleLat[i].Label = strings.TrimSpace(cycleLat[i].Label)
	}
	grants, handoffLat := row{"grants_per_sec", "grants/s", "ops"}, pct("handoff_", "handoff")
	renewals, renewLat := row{"renewals_per_sec", "renewals/s", "ops"}, pct("", "renew")
	bytesPer := row{"bytes_per_lease", "bytes per lease", "B"}
	lateness := []row{{"late_p50_ms", "lateness p50", "ms"}, {"late_p99_ms", "lateness p99", "ms"}, {"late_max_ms", "lateness max", "ms"}}
	return append([]*scenario{
		{Name: "uncontended", Group: "1", Title: fmt.Sprintf("uncontended lock cycle: HOLD+RELEASE, %d clients on keys of their own", s.clients),
			Run: uncontended, On: lockServers, Rate: cycles, Latency: cycleLat,
			Rows: rows([]row{cycles}, cycleLat, cpuRows("cycle"), []row{errorsRow})},
		{Name: "contended", Group: "2", Title: fmt.Sprintf("contended handoff: %d clients on one key, no work while held", s.contenders),
			Run: contended, On: lockServers, Rate: grants, Latency: handoffLat,
			Rows: rows([]row{grants, {"handoffs_per_sec", "handoffs/s (grants to another client)", "ops"}}, handoffLat,
				[]row{{"fair_min", "grants per client, min", "n"}, {"fair_max", "grants per client, max", "n"}}, cpuRows("grant"), []row{errorsRow})},
		{Name: "renew", Group: "3", Title: fmt.Sprintf("renewal load: %s live leases, ttl %v, renewed every ttl/3", thousands(float64(s.renewLeases)), s.renewTTL),
			Run: renewal, Rate: renewals, Latency: renewLat,
			Rows: rows([]row{renewals, {"offered_per_sec", "renewals/s offered", "ops"}, {"cpu_s", "server CPU in the window", "s"}},
				cpuRows("renewal"), renewLat, []row{{"lost", "leases lost", "n"}, errorsRow})},
		{Name: "memory", Group: "4", Title: fmt.Sprintf("memory: server RSS with %s live leases (Redis: lock keys)", thousands(float64(s.memLeases))),
			Run: memory, Rate: bytesPer,
			Rows: []row{{"rss_before_mb", "RSS before", "MB"}, {"rss_after_mb", "RSS after", "MB"}, bytesPer, {"load_per_sec", "pipelined holds/s while loading", "ops"}}},
		{Name: "expiry", Group: "5", Title: fmt.Sprintf("expiry handoff: %s holders stop renewing, deadlines spread over %v, one waiter each", thousands(float64(s.expiryHolders)), s.expirySpread),
			Run: expiry, On: lockServers, Latency: lateness,
			Rows: rows(lateness, []row{{"server_cpu_pct", "server CPU while granting, % of one CPU", "pct"}, {"granted", "waiters granted", "n"},
				{"late_joins", "waiters joined after the deadline (not counted)", "n"}, errorsRow})},
		ks("get", "get", false),
		ks("set", "set", false),
		ks("get-pipelined", "get", true),
		ks("set-pipelined", "set", true),
		{Name: "mass-expiry", Group: "7", Title: fmt.Sprintf("mass expiry: %s leases fall due within %v, %d of them with a waiter, while %d clients PING and GET and %d hold and release keys of their own",
			thousands(float64(s.massLeases)), s.massSpread, s.massWaiters, s.massReaders, s.massLockers),
			Run: massExpiry, Rate: row{"reads_per_sec", "PING+GET/s while they fall due", "ops"}, Latency: pct("read_", "PING/GET"),
			Rows: rows([]row{{"reads_per_sec", "PING+GET/s while they fall due", "ops"}}, pct("read_", "PING/GET"),
				[]row{{"read_max_ms", "PING/GET max", "ms"}}, pct("cycle_", "other keys' HOLD+RELEASE"), []row{{"cycle_max_ms", "other keys' HOLD+RELEASE max", "ms"}}, lateness,
				[]row{{"deadline_after_place_p99_ms", "store's deadline after its place in the spread, p99", "ms"},
					{"granted", "waiters granted", "n"}, {"ended_s", "last lease ended, s after the last deadline", "s"},
					{"server_cpu_pct", "server CPU while they fall due, % of one CPU", "pct"}, {"load_per_sec", "pipelined holds/s while loading", "ops"}, errorsRow})},
		durable(1),
		durable(8),
		durable(50),
		watchScenario(s), // watch.go
		fanout(1),
		fanout(100),
		fanout(1000),
		ks("evalsha", "evalsha", false),
		ks("evalsha-pipelined", "evalsha", true),
		{Name: "recipe", Group: "12", Title: fmt.Sprintf("the Redis lock recipe unmodified (SET NX PX + compare-and-delete by EVALSHA), %d clients on keys of their own; on tenure, LOCK.HOLD+RELEASE in the same run", s.clients),
			Run: recipe, Rate: cycles, Latency: cycleLat,
			Rows: rows([]row{{"ops_per_sec", "recipe cycles/s", "ops"}}, pct("", "recipe cycle"), cpuRows("recipe cycle"),
				[]row{{"lock_ops_per_sec", "LOCK.HOLD+RELEASE cycles/s, same server", "ops"}}, pct("lock_", "LOCK.* cycle"),
				[]row{{"lock_cpu_us_per_op", "server CPU per LOCK.* cycle", "us"}, {"lock_gain", "LOCK.* cycles/s ÷ recipe cycles/s", "x"}, errorsRow})},
		{Name: "semaphore", Group: "13", Title: fmt.Sprintf("semaphore: %d clients on one key of %d permits, acquire+release, no work while held: tenure LOCK.HOLD … LIMIT %d; Redis the sorted-set recipe (retry every %v)", s.clients, s.permits, s.permits, semRetry),
			Run: semaphore, Rate: row{"ops_per_sec", "permits/s", "ops"}, Latency: pct("wait_", "acquire"),
			Rows: rows([]row{{"ops_per_sec", "permits granted/s", "ops"}}, pct("wait_", "acquire"),
				[]row{{"handoff_mean_ms", "handoff: a release to the grant it made room for, mean", "ms"}, {"held_pct", "permits held, % of the window (the rest is handoffs)", "pct"}},
				[]row{{"fair_min", "permits per client, min", "n"}, {"fair_max", "permits per client, max", "n"}, {"most_holders", "most holders at once (client's view)", "n"}},
				cpuRows("permit"), []row{errorsRow})},
		{Name: "rwlock", Group: "14", Title: fmt.Sprintf("readers and writers: %d SHARED readers and %d writers on one key, hold+release, no work while held (tenure only)", s.clients-s.writers, s.writers),
			Run: rwlock, On: tenureOnly, Rate: cycles, Latency: pct("reader_", "reader acquire"),
			Rows: rows([]row{cycles, {"reader_per_sec", "reader grants/s", "ops"}, {"writer_per_sec", "writer grants/s", "ops"}},
				pct("reader_", "reader acquire"), pct("writer_", "writer acquire"),
				[]row{{"exclusion_breaches", "a writer beside another holder (client's view; must be 0)", "n"}}, cpuRows("grant"), []row{errorsRow})},
	}, append(collectionScenarios(s), // group 15: bench/collections.go
		zsetListScenarios(s)...)...) // group 16: bench/zsetlist.go
}

func main() {
	// go-redis logs failed dials itself (the readiness poll makes some);
	// every error that matters reaches the scenarios as a returned error.
	redis.SetLogger(quiet{})
	os.Exit(mainErr(os.Args[1:], os.Stdout, os.Stderr))
}

// quiet is a go-redis logger that drops what it is given.
type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

func mainErr(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	s := &settings{}
	var (
		names    = fs.String("scenarios", "all", "comma-separated: scenarios by name, group name or number (the list is below), or all")
		targets  = fs.String("targets", "tenure,redis-aof,redis,etcd", "servers to run against: tenure, redis-aof, redis, etcd, tenure-dashboard (tenure with its dashboard open)")
		rounds   = fs.Int("rounds", 3, "rounds; each runs every scenario against every server once")
		outDir   = fs.String("out", "bench/out", "`directory` for results.json, chart.svg and table.txt")
		pin      = fs.String("pin", "auto", "CPUs for the servers (taskset -c LIST); auto: the upper half of this machine's CPUs; none: no pinning")
		pinSelf  = fs.String("client-pin", "auto", "CPUs for this program; auto: the CPUs the servers do not get; none: no pinning")
		tenureAt = fs.String("tenure-bin", "", "use this tenure binary instead of building ./cmd/tenure")
		cluster  = fs.Bool("cluster", false, "the cluster mode (issue 20): failover of 3-node tenure and etcd clusters, and a tenure cluster's throughput against one server; -scenarios is not used, -targets only says whether etcd runs")
		cs       clusterSettings
	)
	fs.IntVar(&cs.kills, "cluster-kills", 20, "leader kills of each failover setting (-cluster)")
	fs.DurationVar(&cs.settle, "cluster-settle", time.Second, "after a killed node is back, wait this long before the next kill (-cluster)")
	fs.DurationVar(&cs.faster, "cluster-election-timeout", 150*time.Millisecond, "tenure's --raft-election-timeout of the second failover setting (-cluster)")
	fs.DurationVar(&s.duration, "duration", 1500*time.Millisecond, "measured time of each run")
	fs.DurationVar(&s.warmup, "warmup", 300*time.Millisecond, "unmeasured time before it")
	fs.IntVar(&s.clients, "clients", 50, "clients of the uncontended, renewal and keyspace scenarios")
	fs.IntVar(&s.contenders, "contenders", 64, "clients on the one key of the contended scenario")
	fs.IntVar(&s.renewLeases, "renew-leases", 100_000, "live leases in the renewal scenario")
	fs.DurationVar(&s.renewTTL, "renew-ttl", 10*time.Second, "their ttl (renewed every ttl/3)")
	fs.IntVar(&s.memLeases, "memory-leases", 1_000_000, "live leases in the memory scenario")
	fs.IntVar(&s.expiryHolders, "expiry-holders", 10_000, "holders (and waiters) in the expiry scenario; each waiter holds a connection")
	fs.DurationVar(&s.expiryTTL, "expiry-ttl", 2500*time.Millisecond, "their ttl: long enough for the holders to be spread and all waiters to join before it runs out")
	fs.DurationVar(&s.expirySpread, "expiry-spread", time.Second, "the holders take their keys evenly over this time, so the deadlines fall due at holders/spread a second")
	fs.IntVar(&s.pipeline, "pipeline", 16, "commands in each pipeline of the pipelined keyspace scenarios")
	fs.IntVar(&s.etcdHolders, "etcd-expiry-holders", 2000, "holders (and waiters) of the expiry scenario on etcd, at most: it takes locks more slowly than the spread would need")
	fs.IntVar(&s.massLeases, "mass-leases", 1_000_000, "leases of the mass expiry scenario")
	fs.DurationVar(&s.massSpread, "mass-spread", time.Second, "their deadlines fall evenly within this time")
	fs.DurationVar(&s.massLead, "mass-lead", 20*time.Second, "the first deadline is this long after loading starts: time to load them all and to queue the waiters")
	fs.IntVar(&s.massWaiters, "mass-waiters", 1000, "leases of the mass expiry with a waiter each, evenly among them")
	fs.IntVar(&s.massReaders, "mass-readers", 50, "clients that PING and GET while the leases fall due")
	fs.IntVar(&s.massLockers, "mass-lockers", 10, "clients that hold and release keys of their own, a cycle every 5 ms each, while the leases fall due")
	fs.IntVar(&s.permits, "permits", 5, "the semaphore's LIMIT (its permits), one key")
	fs.IntVar(&s.writers, "writers", 5, "writers among -clients in the readers+writers mix; the rest are SHARED readers")
	fs.StringVar(&s.retry, "redis-retry", "redislock", "the recipe's retry while waiting: redislock (exponential 16-512 ms) or redsync (random 50-250 ms)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: go run ./bench [flags]\n")
		fs.PrintDefaults()
		fmt.Fprintf(stderr, "\nscenarios: -scenarios takes a name, a group's number or its name\n")
		for _, sc := range scenarios(s) {
			fmt.Fprintf(stderr, "  %-3s %-12s %s\n", sc.Group, sc.Family, sc.Name)
		}
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "bench: "+format+"\n", a...)
		return 1
	}
	if fs.NArg() > 0 {
		return fail("unexpected argument %q", fs.Arg(0))
	}
	switch {
	case *rounds < 1:
		return fail("-rounds must be at least 1")
	case s.duration <= 0 || s.warmup < 0:
		return fail("-duration must be positive and -warmup not negative")
	case s.clients < 1 || s.contenders < 1 || s.renewLeases < 1 || s.memLeases < 1 || s.expiryHolders < 1 || s.pipeline < 1 ||
		s.etcdHolders < 1 || s.massLeases < 1 || s.massWaiters < 1 || s.massReaders < 1 || s.massLockers < 1:
		return fail("-clients, -contenders, -renew-leases, -memory-leases, -expiry-holders, -etcd-expiry-holders, -pipeline, -mass-leases, -mass-waiters, -mass-readers and -mass-lockers must be at least 1")
	case s.massWaiters > min(s.massLeases, 15_000):
		return fail("-mass-waiters is at most -mass-leases and 15000 (each waiter holds a connection)")
	case s.massSpread <= 0 || s.massLead < 2*time.Second:
		return fail("-mass-spread must be positive and -mass-lead at least 2s")
	case s.expiryHolders > 15_000:
		return fail("-expiry-holders is at most 15000: each waiter holds a connection, and tenure and redis-server are started with room for 19000")
	case s.renewTTL < time.Second || s.expiryTTL < time.Second:
		return fail("-renew-ttl and -expiry-ttl must be at least 1s (tenure's smallest TTL)")
	case s.expirySpread < 0 || s.expiryTTL < s.expirySpread+time.Second:
		return fail("-expiry-ttl must be at least -expiry-spread + 1s, for the waiters to join in time")
	case cs.kills < 1 || cs.settle < 0 || cs.faster < 20*time.Millisecond:
		return fail("-cluster-kills must be at least 1, -cluster-settle not negative, -cluster-election-timeout at least 20ms")
	case s.permits < 1 || s.permits > 65536 || s.writers < 1 || s.writers >= s.clients:
		return fail("-permits must be from 1 to 65536, -writers at least 1 and fewer than -clients")
	case retryStrategies[s.retry] == nil:
		return fail("-redis-retry %q: want redislock or redsync", s.retry)
	}
	all := scenarios(s)
	picked, err := pickScenarios(all, *names)
	if err != nil {
		return fail("%v", err)
	}
	tgts, err := pickTargets(*targets)
	if err != nil {
		return fail("%v", err)
	}
	withEtcd := false
	if *cluster {
		// tenure always; etcd if asked for; no redis-server.
		withEtcd = slices.ContainsFunc(tgts, func(t *target) bool { return t.Etcd })
		tgts = []*target{allTargets[0]}
		if withEtcd {
			tgts = append(tgts, allTargets[3])
		}
	}

	// Tools first: a machine without redis-server or etcd says so in one
	// line.
	redisBin, etcdBin, needRedis, needEtcd := "", "", false, false
	for _, t := range tgts {
		needRedis = needRedis || t.Redis
		needEtcd = needEtcd || t.Etcd
	}
	if needRedis {
		if redisBin, err = exec.LookPath("redis-server"); err != nil {
			return fail("redis-server not found on PATH: install it (Debian: apt-get install redis-server) or leave redis and redis-aof out of -targets")
		}
	}
	if needEtcd {
		if etcdBin, err = exec.LookPath("etcd"); err != nil {
			return fail("etcd not found on PATH: install it (Debian: apt-get install etcd-server) or leave etcd out of -targets")
		}
	}
	pins, err := planPinning(*pin, *pinSelf)
	if err != nil {
		return fail("%v", err)
	}
	if pins.client != "" && os.Getenv(pinnedEnv) == "" {
		// Run again under taskset, so that every thread of this program is
		// pinned. The new image plans from the CPUs this one had, which
		// the variable carries.
		exe, err := os.Executable()
		if err != nil {
			return fail("pin this program: %v", err)
		}
		argv := append([]string{pins.taskset, "-c", pins.client, exe}, args...)
		err = syscall.Exec(pins.taskset, argv, append(os.Environ(), pinnedEnv+"="+pins.all))
		return fail("pin this program with taskset: %v", err)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	tmp, err := os.MkdirTemp("", "tenure-bench-")
	if err != nil {
		return fail("%v", err)
	}
	defer os.RemoveAll(tmp)
	progress := func(format string, a ...any) { fmt.Fprintf(stderr, format+"\n", a...) }

	tenureBin := *tenureAt
	if tenureBin == "" && hasTenure(tgts) {
		progress("building ./cmd/tenure")
		if tenureBin, err = buildTenure(ctx, tmp); err != nil {
			return fail("%v", err)
		}
	}
	env := describeEnv(redisBin, etcdBin, pins, s, *rounds, tgts)
	l := &launcher{tenureBin: tenureBin, redisBin: redisBin, etcdBin: etcdBin, taskset: pins.taskset, cpus: pins.server, tmp: tmp}
	if pins.server == "" {
		l.taskset = ""
	}

	if *cluster {
		progress("pinning: %s", pins.note)
		if err := runCluster(ctx, l, s, cs, withEtcd, *rounds, *outDir, stdout, progress); err != nil {
			return fail("%v", err)
		}
		return 0
	}
	total := 0
	for _, sc := range picked {
		for _, t := range tgts {
			if sc.runsOn(t) {
				total += *rounds
			}
		}
	}
	progress("pinning: %s", pins.note)
	progress("%d runs: %d rounds × %d scenarios × the servers each runs on (of %d); %v measured each (+%v warm-up, + setup)",
		total, *rounds, len(picked), len(tgts), s.duration, s.warmup)
	var results []result
	began := time.Now()
	k := 0
	failed := false
	for round := 1; round <= *rounds && ctx.Err() == nil; round++ {
		for _, sc := range picked {
			// Alternate: each round starts with a different server.
			for j := range tgts {
				t := tgts[(j+round-1)%len(tgts)]
				if ctx.Err() != nil {
					break
				}
				if !sc.runsOn(t) {
					continue
				}
				eta := "?"
				if k > 0 {
					eta = (time.Since(began) / time.Duration(k) * time.Duration(total-k)).Round(time.Second).String()
				}
				k++
				progress("[%d/%d, %s in, about %s to go] round %d · %s · %s", k, total, time.Since(began).Round(time.Second), eta, round, sc.Name, t.Name)
				res := runOnce(ctx, l, s, sc, t, round, progress)
				results = append(results, res)
				if res.Err != "" {
					failed = true
					progress("    FAILED: %s", res.Err)
				} else {
					progress("    %s", brief(sc, res))
				}
			}
		}
	}
	if ctx.Err() != nil {
		return fail("interrupted")
	}
	env.Load[1] = loadavg()
	rep := newReport(env, picked, tgts, results, s)
	table := rep.table()
	fmt.Fprint(stdout, table)
	if err := rep.write(*outDir, table); err != nil {
		return fail("write results: %v", err)
	}
	fmt.Fprintf(stdout, "\nraw results: %s  chart: %s  table: %s\n",
		filepath.Join(*outDir, "results.json"), filepath.Join(*outDir, "chart.svg"), filepath.Join(*outDir, "table.txt"))
	progress("done in %s", time.Since(began).Round(time.Second))
	if failed {
		return fail("some runs failed; see FAILED above")
	}
	return 0
}

// result is one run: one scenario against one fresh server in one round.
type result struct {
	Scenario string             `json:"scenario"`
	Target   string             `json:"target"`
	Round    int                `json:"round"`
	Seconds  float64            `json:"seconds"` // wall time of the run, setup included
	Metrics  map[string]float64 `json:"metrics,omitempty"`
	Err      string             `json:"error,omitempty"`
}

func runOnce(ctx context.Context, l *launcher, s *settings, sc *scenario, t *target, round int, progress func(string, ...any)) result {
	res := result{Scenario: sc.Name, Target: t.Name, Round: round}
	start := time.Now()
	defer func() { res.Seconds = time.Since(start).Seconds() }()
	p, err := l.start(ctx, t, sc.Start)
	if err != nil {
		res.Err = err.Error()
		return res
	}
	defer p.stop()
	runOn(ctx, s, sc, p, &res, progress)
	res.Seconds = time.Since(start).Seconds()
	return res
}

// runOn runs sc against the running server p, into res.
func runOn(ctx context.Context, s *settings, sc *scenario, p *process, res *result, progress func(string, ...any)) {
	t := p.target
	var err error
	rn := &run{cfg: s, p: p, progress: progress}
	switch {
	case t.Redis:
		rn.lk = redisLocker{backoff: retryStrategies[s.retry]}
	case t.Etcd:
		rn.lk = etcdLocker{}
		if rn.etcd, err = dialEtcd(p.addr); err != nil {
			res.Err = err.Error()
			return
		}
		defer closeEtcd(rn.etcd)
	default:
		rn.lk = tenureLocker{chunk: readTimeout / 2}
	}
	// Generous: a run that hangs is a bug to report, not to wait out.
	rctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	m, err := sc.Run(rctx, rn)
	select {
	case <-p.exited:
		err = fmt.Errorf("%s exited during the run (%v): %s", t.Name, p.err, p.logTail())
	default:
	}
	res.Metrics = m
	if err != nil {
		res.Err = err.Error()
	}
}

// brief is a run's progress line: its rate and its p99, or what it has.
func brief(sc *scenario, r result) string {
	var parts []string
	for _, rw := range append([]row{sc.Rate}, sc.Latency...) {
		if rw.Key == "" {
			continue
		}
		if v, ok := r.Metrics[rw.Key]; ok {
			parts = append(parts, rw.Label+" "+format(v, rw.Unit))
		}
	}
	if e := r.Metrics["errors"]; e > 0 {
		parts = append(parts, fmt.Sprintf("errors %.0f", e))
	}
	if r.Metrics["stalled"] > 0 {
		parts = append(parts, "STALLED: no operation completed in the measured window")
	}
	return strings.Join(parts, " · ") + fmt.Sprintf("  (%.1fs)", r.Seconds)
}

func pickScenarios(all []*scenario, spec string) ([]*scenario, error) {
	if spec == "all" {
		return all, nil
	}
	want := map[string]bool{}
	for _, f := range strings.Split(spec, ",") {
		f = strings.TrimSpace(f)
		found := false
		for _, sc := range all {
			if f == sc.Name || f == sc.Group || (f == sc.Family && f != "") {
				want[sc.Name], found = true, true
			}
		}
		if !found {
			return nil, fmt.Errorf("-scenarios: unknown %q", f)
		}
	}
	var out []*scenario
	for _, sc := range all {
		if want[sc.Name] {
			out = append(out, sc)
		}
	}
	return out, nil
}

func pickTargets(spec string) ([]*target, error) {
	var out []*target
	for _, f := range strings.Split(spec, ",") {
		f = strings.TrimSpace(f)
		found := false
		for _, t := range allTargets {
			if t.Name == f {
				out, found = append(out, t), true
			}
		}
		if !found {
			return nil, fmt.Errorf("-targets: unknown %q (want tenure, redis-aof, redis, etcd, tenure-dashboard)", f)
		}
	}
	return out, nil
}

func hasTenure(ts []*target) bool {
	for _, t := range ts {
		if !t.Redis && !t.Etcd {
			return true
		}
	}
	return false
}

// buildTenure builds ./cmd/tenure of the module this program runs in.
func buildTenure(ctx context.Context, dir string) (string, error) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		// go run may have been called by its full path: try the toolchain
		// this program was built with.
		gobin = filepath.Join(runtime.GOROOT(), "bin", "go")
		if _, err := os.Stat(gobin); err != nil {
			return "", errors.New("go not found on PATH: it builds ./cmd/tenure (or pass -tenure-bin)")
		}
	}
	out, err := exec.CommandContext(ctx, gobin, "env", "GOMOD").Output()
	mod := strings.TrimSpace(string(out))
	if err != nil || mod == "" || mod == os.DevNull {
		return "", errors.New("run from inside the tenure module (the directory of go.mod), or pass -tenure-bin")
	}
	bin := filepath.Join(dir, "tenure")
	cmd := exec.CommandContext(ctx, gobin, "build", "-o", bin, "./cmd/tenure")
	cmd.Dir = filepath.Dir(mod)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build ./cmd/tenure: %v\n%s", err, out)
	}
	return bin, nil
}

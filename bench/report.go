package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"time"
)

// envInfo is what the numbers were measured on and with.
type envInfo struct {
	Date     string            `json:"date"`
	CPUs     int               `json:"cpus"`
	CPUModel string            `json:"cpu_model"`
	OS       string            `json:"os"`
	Go       string            `json:"go"`
	Redis    string            `json:"redis_server,omitempty"`
	GoRedis  string            `json:"go_redis"`
	Etcd     string            `json:"etcd_server,omitempty"`
	EtcdGo   string            `json:"etcd_client,omitempty"`
	Tenure   string            `json:"tenure_commit,omitempty"`
	Pinning  string            `json:"pinning"`
	Recipe   string            `json:"recipe"`
	Servers  map[string]string `json:"servers"`
	Rounds   int               `json:"rounds"`
	Load     [2]string         `json:"loadavg"` // /proc/loadavg at the start and at the end
	Settings map[string]string `json:"settings"`
}

func describeEnv(redisBin, etcdBin string, pins pinning, s *settings, rounds int, tgts []*target) envInfo {
	e := envInfo{
		Date:    time.Now().UTC().Format(time.RFC3339),
		CPUs:    runtime.NumCPU(),
		OS:      runtime.GOOS + "/" + runtime.GOARCH,
		Go:      runtime.Version(),
		GoRedis: "go-redis",
		Pinning: pins.note,
		Rounds:  rounds,
		Load:    [2]string{loadavg()},
		Servers: map[string]string{},
		Recipe: fmt.Sprintf("SET key token NX PX; release and renew by compare-and-delete / compare-and-extend scripts (EVALSHA); "+
			"a waiter retries with %s", map[string]string{"redislock": "bsm/redislock's ExponentialBackoff(16ms, 512ms)", "redsync": "go-redsync's random 50-250 ms delay"}[s.retry]),
		Settings: map[string]string{
			"duration": s.duration.String(), "warmup": s.warmup.String(), "clients": fmt.Sprint(s.clients),
			"contenders": fmt.Sprint(s.contenders), "renew_leases": fmt.Sprint(s.renewLeases), "renew_ttl": s.renewTTL.String(),
			"memory_leases": fmt.Sprint(s.memLeases), "expiry_holders": fmt.Sprint(s.expiryHolders), "expiry_ttl": s.expiryTTL.String(), "expiry_spread": s.expirySpread.String(),
			"pipeline": fmt.Sprint(s.pipeline), "redis_retry": s.retry, "etcd_expiry_holders": fmt.Sprint(s.etcdHolders),
			"mass_leases": fmt.Sprint(s.massLeases), "mass_spread": s.massSpread.String(), "mass_lead": s.massLead.String(),
			"mass_waiters": fmt.Sprint(s.massWaiters), "mass_readers": fmt.Sprint(s.massReaders), "mass_lockers": fmt.Sprint(s.massLockers),
			"permits": fmt.Sprint(s.permits), "writers": fmt.Sprint(s.writers),
		},
	}
	// The machine's CPUs, not this program's share of them (it may run
	// pinned): the processors /proc/cpuinfo lists.
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		n := 0
		for line := range strings.Lines(string(b)) {
			if strings.HasPrefix(line, "processor") {
				n++
			}
			if v, ok := strings.CutPrefix(line, "model name"); ok && e.CPUModel == "" {
				e.CPUModel = strings.TrimSpace(strings.TrimLeft(v, "\t :"))
			}
		}
		e.CPUs = max(e.CPUs, n)
	}
	if redisBin != "" {
		if out, err := exec.Command(redisBin, "--version").Output(); err == nil {
			e.Redis = strings.TrimSpace(string(out))
			if f := strings.Fields(e.Redis); len(f) >= 3 {
				e.Redis = "redis-server " + strings.TrimPrefix(f[2], "v=")
			}
		}
	}
	if etcdBin != "" {
		// "etcd Version: 3.4.23" on its first line.
		if out, err := exec.Command(etcdBin, "--version").Output(); err == nil {
			line, _, _ := strings.Cut(string(out), "\n")
			if f := strings.Fields(line); len(f) == 3 {
				e.Etcd = "etcd " + f[2]
			}
		}
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			switch d.Path {
			case "github.com/redis/go-redis/v9":
				e.GoRedis = "go-redis " + d.Version
			case "go.etcd.io/etcd/client/v3":
				if etcdBin != "" {
					e.EtcdGo = "go.etcd.io/etcd/client/v3 " + d.Version
				}
			}
		}
	}
	if out, err := exec.Command("git", "describe", "--always", "--dirty").Output(); err == nil {
		e.Tenure = strings.TrimSpace(string(out))
	}
	for _, t := range tgts {
		e.Servers[t.Name] = t.About
	}
	return e
}

// loadavg is the first three fields of /proc/loadavg.
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "?"
}

// busy warns when other work shared the machine: the servers and this
// client alone keep the load average near the number of CPUs at most.
func busy(e envInfo) string {
	for _, l := range e.Load {
		var one float64
		if _, err := fmt.Sscan(l, &one); err == nil && one > float64(e.CPUs)+0.5 {
			return " (other work shared the machine: expect noise)"
		}
	}
	return ""
}

// report is the outcome of a whole run.
type report struct {
	Env       envInfo                                  `json:"env"`
	Results   []result                                 `json:"runs"`
	Medians   map[string]map[string]map[string]float64 `json:"medians"` // scenario, server, metric
	Goals     []goalResult                             `json:"targets"`
	scenarios []*scenario
	targets   []*target
	settings  *settings
}

func newReport(env envInfo, scs []*scenario, tgts []*target, results []result, s *settings) *report {
	r := &report{Env: env, Results: results, Medians: map[string]map[string]map[string]float64{}, scenarios: scs, targets: tgts, settings: s}
	values := map[[3]string][]float64{}
	for _, res := range results {
		if res.Err != "" {
			continue
		}
		for k, v := range res.Metrics {
			key := [3]string{res.Scenario, res.Target, k}
			values[key] = append(values[key], v)
		}
	}
	for key, vs := range values {
		sc, tg, m := key[0], key[1], key[2]
		if r.Medians[sc] == nil {
			r.Medians[sc] = map[string]map[string]float64{}
		}
		if r.Medians[sc][tg] == nil {
			r.Medians[sc][tg] = map[string]float64{}
		}
		r.Medians[sc][tg][m] = median(vs)
	}
	r.Goals = r.checkGoals()
	return r
}

// med is the median of a metric, NaN if it was not measured.
func (r *report) med(sc, tg, metric string) float64 {
	if v, ok := r.Medians[sc][tg][metric]; ok {
		return v
	}
	return math.NaN()
}

// ratioUnits are the units whose tenure/Redis ratio means something.
var ratioUnits = map[string]bool{"ops": true, "ms": true, "MB": true, "B": true, "s": true, "us": true}

func (r *report) table() string {
	var b strings.Builder
	e := r.Env
	fmt.Fprintf(&b, "tenure vs Redis and etcd: medians of %d round(s), %v measured per run (after %v warm-up), a fresh server for every run\n",
		e.Rounds, r.settings.duration, r.settings.warmup)
	var versions []string
	for _, v := range []string{e.Redis, e.Etcd} {
		if v != "" {
			versions = append(versions, v)
		}
	}
	fmt.Fprintf(&b, "machine: %d CPU × %s, %s, %s; %s; client %s\n", e.CPUs, e.CPUModel, e.OS, e.Go, strings.Join(versions, ", "), e.GoRedis)
	fmt.Fprintf(&b, "pinning: %s\n", e.Pinning)
	fmt.Fprintf(&b, "load average (1, 5, 15 min) at the start: %s; at the end: %s%s\n", e.Load[0], e.Load[1], busy(e))
	for _, t := range r.targets {
		fmt.Fprintf(&b, "%-11s %s\n", t.Name+":", t.About)
	}
	b.WriteString("locks:      on tenure, the commands the Go SDK sends (LOCK.HOLD key reqid TTL WAIT, LOCK.RENEW, LOCK.RELEASE);\n")
	fmt.Fprintf(&b, "            on Redis, the recipe: %s\n", e.Recipe)
	if e.Etcd != "" {
		fmt.Fprintf(&b, "            on etcd (%s), concurrency.Mutex of %s, a session per client (TTL: the lease's ttl in whole seconds, rounded up, at least %d s)\n",
			e.Etcd, e.EtcdGo, etcdMinTTL)
	}
	b.WriteString("\n")

	bases := r.bases(func(*target) bool { return true })
	showRatio := hasTenure(r.targets)
	header := []string{""}
	for _, t := range r.targets {
		header = append(header, t.Name)
	}
	if showRatio {
		for _, bn := range bases {
			header = append(header, "tenure/"+bn)
		}
	}
	var lines [][]string
	var titles []int // indexes of lines that are titles
	for _, sc := range r.scenarios {
		titles = append(titles, len(lines))
		lines = append(lines, []string{sc.Group + " " + sc.Title})
		for _, rw := range sc.Rows {
			cells := []string{"  " + rw.Label + unitSuffix(rw.Unit)}
			for _, t := range r.targets {
				cells = append(cells, format(r.med(sc.Name, t.Name, rw.Key), rw.Unit))
			}
			if showRatio {
				for _, bn := range bases {
					cells = append(cells, ratioCell(r.med(sc.Name, "tenure", rw.Key), r.med(sc.Name, bn, rw.Key), rw.Unit))
				}
			}
			lines = append(lines, cells)
		}
	}
	widths := make([]int, len(header))
	for _, l := range append([][]string{header}, lines...) {
		if len(l) == 1 {
			continue // titles run across
		}
		for i, c := range l {
			widths[i] = max(widths[i], len([]rune(c)))
		}
	}
	writeRow := func(cells []string) {
		for i, c := range cells {
			pad := widths[i] - len([]rune(c))
			if i == 0 {
				b.WriteString(c + strings.Repeat(" ", pad))
			} else {
				b.WriteString("  " + strings.Repeat(" ", pad) + c)
			}
		}
		b.WriteString("\n")
	}
	writeRow(header)
	for i, l := range lines {
		if len(titles) > 0 && titles[0] == i {
			titles = titles[1:]
			b.WriteString(l[0] + "\n")
			continue
		}
		writeRow(l)
	}

	if len(r.Goals) > 0 {
		b.WriteString("\ntargets of issues 6, 19 and 38 (medians; shown, not asserted)\n")
		w0, w1 := 0, 0
		for _, g := range r.Goals {
			w0, w1 = max(w0, len([]rune(g.Target))), max(w1, len([]rune(g.Measured)))
		}
		for _, g := range r.Goals {
			fmt.Fprintf(&b, "  %s%s  %s%s  %s\n", g.Target, strings.Repeat(" ", w0-len([]rune(g.Target))),
				g.Measured, strings.Repeat(" ", w1-len([]rune(g.Measured))), g.Verdict)
		}
	}
	return b.String()
}

func ratioCell(t, base float64, unit string) string {
	if !ratioUnits[unit] || math.IsNaN(t) || math.IsNaN(base) || base == 0 {
		return ""
	}
	return ratio(t / base)
}

// ratio shows x with about three significant digits: 0.0021×, 0.83×, 54.1×.
func ratio(x float64) string {
	switch a := math.Abs(x); {
	case a >= 100:
		return fmt.Sprintf("%.0f×", x)
	case a >= 10:
		return fmt.Sprintf("%.1f×", x)
	case a >= 0.1 || a == 0:
		return fmt.Sprintf("%.2f×", x)
	}
	return fmt.Sprintf("%.2g×", x)
}

// format shows v in its unit: thousands grouped, about three significant
// digits for times.
func format(v float64, unit string) string {
	switch {
	case math.IsNaN(v):
		return "–"
	case unit == "ops" && v >= 100:
		return thousands(v)
	case unit == "ops":
		return fmt.Sprintf("%.1f", v)
	case unit == "ms" || unit == "us" || unit == "s":
		switch a := math.Abs(v); {
		case a >= 100:
			return fmt.Sprintf("%.0f", v)
		case a >= 10:
			return fmt.Sprintf("%.1f", v)
		case a >= 1:
			return fmt.Sprintf("%.2f", v)
		default:
			return fmt.Sprintf("%.3f", v)
		}
	case unit == "MB":
		return fmt.Sprintf("%.1f", v)
	case unit == "pct":
		return fmt.Sprintf("%.0f%%", v)
	case unit == "x":
		return ratio(v)
	}
	return thousands(v)
}

// thousands is v rounded, with commas: 1,000,000.
func thousands(v float64) string {
	s := fmt.Sprintf("%.0f", math.Abs(v))
	var b strings.Builder
	if v < 0 && s != "0" {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// bases are the servers tenure is compared with that pass keep, in the
// order they ran.
func (r *report) bases(keep func(*target) bool) []string {
	var out []string
	for _, t := range r.targets {
		if (t.Redis || t.Etcd) && keep(t) {
			out = append(out, t.Name)
		}
	}
	return out
}

// goalResult is one target of issues 6, 19 and 38 beside what was measured.
type goalResult struct {
	Target   string `json:"target"`
	Measured string `json:"measured"`
	Verdict  string `json:"verdict"` // met, MISSED
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "MISSED"
}

// checkGoals compares the medians with the targets of issues 6, 19 and 38. A
// target against "Redis" is checked against each Redis server that ran.
func (r *report) checkGoals() []goalResult {
	var out []goalResult
	ran := func(sc string) bool { _, ok := r.Medians[sc]["tenure"]; return ok }
	redises := r.bases(func(t *target) bool { return t.Redis })
	etcds := r.bases(func(t *target) bool { return t.Etcd })
	ratioOver := func(bases []string, sc, metric, label, what string, want float64) {
		if !ran(sc) {
			return
		}
		for _, bn := range bases {
			t, b := r.med(sc, "tenure", metric), r.med(sc, bn, metric)
			if math.IsNaN(t) || math.IsNaN(b) || b == 0 {
				continue
			}
			out = append(out, goalResult{
				Target:   fmt.Sprintf("%s ≥ %.1f× %s", label, want, bn),
				Measured: fmt.Sprintf("%s (%s vs %s %s)", ratio(t/b), format(t, "ops"), format(b, "ops"), what),
				Verdict:  verdict(t/b >= want),
			})
		}
	}
	vsRedis := func(sc, metric, label, what string, want float64) { ratioOver(redises, sc, metric, label, what, want) }
	atMost := func(sc, metric, label, unit string, limit float64) {
		if !ran(sc) {
			return
		}
		v := r.med(sc, "tenure", metric)
		if math.IsNaN(v) {
			return
		}
		out = append(out, goalResult{
			Target:   fmt.Sprintf("%s ≤ %s %s", label, format(limit, unit), unit),
			Measured: fmt.Sprintf("%s %s", format(v, unit), unit),
			Verdict:  verdict(v <= limit),
		})
	}

	// noWorse: tenure's metric at most each base's (lower is better).
	noWorse := func(bases []string, sc, metric, label, unit, shown string) {
		if !ran(sc) {
			return
		}
		for _, bn := range bases {
			t, b := r.med(sc, "tenure", metric), r.med(sc, bn, metric)
			if math.IsNaN(t) || math.IsNaN(b) {
				continue
			}
			out = append(out, goalResult{
				Target:   label + " no worse than " + bn,
				Measured: fmt.Sprintf("%s %s vs %s %s", format(t, unit), shown, format(b, unit), shown),
				Verdict:  verdict(t <= b),
			})
		}
	}

	vsRedis("uncontended", "ops_per_sec", "1 lock cycles/s", "cycles/s", 1.2)
	noWorse(redises, "uncontended", "p99_ms", "1 lock cycle p99", "ms", "ms")
	atMost("contended", "handoff_p99_ms", "2 handoff p99", "ms", 1)
	vsRedis("contended", "grants_per_sec", "2 grants/s on one key", "grants/s", 20)
	// The recipe's grants are mostly a releaser taking the key straight
	// back (its waiters sleep in backoff), which no store can beat twenty
	// times over; what a waiter gets is a handoff. Shown beside the target
	// as the issue words it, not instead of it.
	vsRedis("contended", "handoffs_per_sec", "2 (as we read it) handoffs/s on one key", "handoffs/s", 20)
	if ran("contended") {
		// Starvation in any round is starvation: the worst round counts.
		least, most := math.Inf(1), 0.0
		for _, res := range r.Results {
			if res.Scenario == "contended" && res.Target == "tenure" && res.Err == "" {
				least, most = math.Min(least, res.Metrics["fair_min"]), math.Max(most, res.Metrics["fair_max"])
			}
		}
		out = append(out, goalResult{
			Target:   "2 no client starves (every client granted in every round)",
			Measured: fmt.Sprintf("grants per client: min %.0f, max %.0f (over all rounds)", least, most),
			Verdict:  verdict(least > 0),
		})
	}
	atMost("memory", "bytes_per_lease", fmt.Sprintf("4 memory with %s live leases", thousands(float64(r.settings.memLeases))), "B", 300)
	atMost("expiry", "late_p99_ms", "5 expiry handoff lateness p99", "ms", 10)
	vsRedis("get", "ops_per_sec", "6 GET/s", "commands/s", 0.8)
	vsRedis("set", "ops_per_sec", "6 SET/s", "commands/s", 0.8)
	vsRedis("get-pipelined", "ops_per_sec", fmt.Sprintf("6 GET/s pipelined ×%d", r.settings.pipeline), "commands/s", 0.6)
	vsRedis("set-pipelined", "ops_per_sec", fmt.Sprintf("6 SET/s pipelined ×%d", r.settings.pipeline), "commands/s", 0.6)
	atMost("mass-expiry", "read_p99_ms", "7 mass expiry: PING/GET p99", "ms", 10)
	atMost("mass-expiry", "late_p99_ms", "7 mass expiry: waiters' grant lateness p99 (LOCK-06)", "ms", 10)

	// Issue 19's targets, against Redis with AOF everysec only (the issue
	// measures tenure / Redis-AOF).
	aof := []string{}
	for _, bn := range redises {
		if bn == "redis-aof" {
			aof = append(aof, bn)
		}
	}
	ratioOver(aof, "uncontended", "ops_per_sec", "19 lock cycles/s", "cycles/s", 1.0)
	noWorse(aof, "uncontended", "cpu_us_per_op", "19 lock cycle server CPU", "us", "µs")
	ratioOver(aof, "get", "ops_per_sec", "19 GET/s", "commands/s", 1.0)
	ratioOver(aof, "set", "ops_per_sec", "19 SET/s", "commands/s", 1.0)
	ratioOver(aof, "get-pipelined", "ops_per_sec", fmt.Sprintf("19 GET/s pipelined ×%d", r.settings.pipeline), "commands/s", 0.9)
	ratioOver(aof, "set-pipelined", "ops_per_sec", fmt.Sprintf("19 SET/s pipelined ×%d", r.settings.pipeline), "commands/s", 0.8)

	// Issue 38's targets, against Redis with AOF (appendfsync always in
	// the durability scenarios).
	for _, n := range []int{8, 50} {
		sc := fmt.Sprintf("set-always-%d", n)
		ratioOver(aof, sc, "ops_per_sec", fmt.Sprintf("38 durable SET/s, %d clients", n), "commands/s", 0.9)
		if ran(sc) {
			for _, bn := range aof {
				t, b := r.med(sc, "tenure", "cpu_us_per_op"), r.med(sc, bn, "cpu_us_per_op")
				if math.IsNaN(t) || math.IsNaN(b) || b == 0 {
					continue
				}
				out = append(out, goalResult{
					Target:   fmt.Sprintf("38 durable SET server CPU, %d clients ≤ 1.2× %s", n, bn),
					Measured: fmt.Sprintf("%s (%s µs vs %s µs)", ratio(t/b), format(t, "us"), format(b, "us")),
					Verdict:  verdict(t/b <= 1.2),
				})
			}
		}
	}
	noWorse(aof, "renew", "p50_ms", "38 renew p50", "ms", "ms")
	noWorse(aof, "renew", "p99_ms", "38 renew p99", "ms", "ms")

	// Issue 19's targets against etcd.
	ratioOver(etcds, "uncontended", "ops_per_sec", "1 lock cycles/s", "cycles/s", 10)
	ratioOver(etcds, "contended", "handoffs_per_sec", "2 handoffs/s on one key", "handoffs/s", 10)
	if ran("expiry") {
		for _, bn := range etcds {
			t, b := r.med("expiry", "tenure", "late_p99_ms"), r.med("expiry", bn, "late_p99_ms")
			if math.IsNaN(t) || math.IsNaN(b) {
				continue
			}
			// A p99 of 0 ms (below the clock's grain) counts as 0.01 ms.
			sooner := b / math.Max(t, 0.01)
			out = append(out, goalResult{
				Target:   "5 expiry handoff p99 ≥ 50× sooner than " + bn,
				Measured: fmt.Sprintf("%s (%s ms vs %s ms)", ratio(sooner), format(t, "ms"), format(b, "ms")),
				Verdict:  verdict(sooner >= 50),
			})
		}
	}
	return out
}

// write puts results.json, chart.svg and table.txt in dir.
func (r *report) write(dir, table string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var js bytes.Buffer
	enc := json.NewEncoder(&js)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r.jsonSafe()); err != nil {
		return err
	}
	files := map[string][]byte{
		"results.json": js.Bytes(),
		"chart.svg":    r.chart(),
		"table.txt":    []byte(table),
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// jsonSafe is the report with NaN and infinities dropped (JSON has none).
func (r *report) jsonSafe() *report {
	c := *r
	c.Results = make([]result, len(r.Results))
	for i, res := range r.Results {
		m := map[string]float64{}
		for k, v := range res.Metrics {
			if !math.IsNaN(v) && !math.IsInf(v, 0) {
				m[k] = v
			}
		}
		res.Metrics = m
		c.Results[i] = res
	}
	c.Medians = map[string]map[string]map[string]float64{}
	for sc, byT := range r.Medians {
		c.Medians[sc] = map[string]map[string]float64{}
		for tg, ms := range byT {
			c.Medians[sc][tg] = map[string]float64{}
			for k, v := range ms {
				if !math.IsNaN(v) && !math.IsInf(v, 0) {
					c.Medians[sc][tg][k] = v
				}
			}
		}
	}
	return &c
}

package main

import (
	"cmp"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/tenure-db/tenure/internal/linmodel"
)

// (d) Linearizability of the raw command history, with porcupine,
// partitioned by key. The history is what passed the proxy (evWire): every
// command a client sent that reached a server, with the times between
// which the server processed it and its reply, which the proxy saw even
// when it then swallowed it. A command whose connection closed before its
// reply came has an unknown outcome: it may have taken effect, or not (see
// linmodel).
//
//   - counters: every GET and SET … FENCE of a counter key, against
//     linmodel.FencedRegister, one partition per key over the whole run
//     (with the harness's final reads). The server runs with --fsync
//     always, so an acknowledged SET survives a SIGKILL, and the register
//     lives across restarts (LOCK-12, and nothing acknowledged is lost);
//   - locks: every LOCK.HOLD, LOCK.RENEW and LOCK.RELEASE, against
//     linmodel.Leases, one partition per key and server: lease state dies
//     with the server (LOCK-10), so each run of it, one epoch, starts free.
//     The proxy knows which server each command reached. Lease expiry is
//     judged by the commands' times (LOCK-06).
//
// A partition porcupine cannot decide within the check's time is
// undecided, which fails the run like one that is not linearizable: it is
// no pass.

// linReport is what the check of one model found.
type linReport struct {
	Ops        int // operations checked
	Unknown    int // … of which the outcome is unknown
	Dropped    int // operations left out, each for a reason that cannot hide a violation
	Partitions int
	Illegal    int
	Undecided  int
	Elapsed    time.Duration
}

// linFailure is a partition that is not linearizable, kept for porcupine's
// visualization.
type linFailure struct {
	name  string
	model porcupine.Model
	info  porcupine.LinearizationInfo
}

// defaultLinBudget bounds the check of a run's history: porcupine's search
// is exponential at worst.
const defaultLinBudget = 2 * time.Minute

// checkLinearizable runs check (d) on a history within budget.
func checkLinearizable(r *Report, events []Event, budget time.Duration) {
	if budget <= 0 {
		budget = defaultLinBudget
	}
	deadline := time.Now().Add(budget)
	for _, e := range events {
		if e.Kind == evWire && e.Result == "unreadable" {
			r.Violations = append(r.Violations, fmt.Sprintf("the proxy could not read what a client sent (%s): the raw command history is incomplete", e.Reply))
		}
	}
	counters, cDropped := counterHistory(events)
	colls, collDropped := collectionHistory(events)
	r.LinColls.Dropped = collDropped
	var recipes []porcupine.Operation
	if r.Cluster == 0 {
		// In a cluster an unanswered command's effect has no bound in
		// time (recipeHistory): (a) checks the recipe's holders there.
		var rDropped int
		recipes, rDropped = recipeHistory(events)
		r.LinRecipe.Dropped = rDropped
	}
	var locks []porcupine.Operation
	var lDropped int
	var wrong []string
	if r.Cluster == 0 {
		// A cluster's lock commands are not checked: a partition is a key
		// in one server's run, one epoch, and a node's run spans epochs.
		locks, lDropped, wrong = lockHistory(events)
	}
	r.Violations = append(r.Violations, wrong...)
	r.LinCounters.Dropped, r.LinLocks.Dropped = cDropped, lDropped

	type job struct {
		what  string
		model porcupine.Model
		part  []porcupine.Operation
		lr    *linReport
	}
	var jobs []job
	for _, m := range []struct {
		what  string
		model porcupine.Model
		ops   []porcupine.Operation
		lr    *linReport
	}{
		{"counters", linmodel.FencedRegister, counters, &r.LinCounters},
		{"locks", linmodel.Leases, locks, &r.LinLocks},
		{"hashes and sets", memberRegister, colls, &r.LinColls},
		{"the Redis recipe", recipeModel, recipes, &r.LinRecipe},
	} {
		for _, part := range m.model.Partition(m.ops) {
			jobs = append(jobs, job{m.what, m.model, part, m.lr})
		}
	}
	// Each partition may take an equal share of the time left, so that
	// one that blows up leaves the others theirs; the smallest go first,
	// and what they leave goes to the largest.
	slices.SortStableFunc(jobs, func(a, b job) int { return cmp.Compare(len(a.part), len(b.part)) })
	for i, j := range jobs {
		start := time.Now()
		name := partitionName(j.part[0].Input)
		j.lr.Partitions++
		j.lr.Ops += len(j.part)
		for _, op := range j.part {
			if unknownOutcome(op) {
				j.lr.Unknown++
			}
		}
		assignLanes(j.part)
		res := porcupine.Unknown
		if left := time.Until(deadline); left > 0 {
			res = porcupine.CheckOperationsTimeout(j.model, j.part, left/time.Duration(len(jobs)-i))
		}
		switch res {
		case porcupine.Illegal:
			j.lr.Illegal++
			if len(r.linFailures) < maxVisuals {
				// Again, for the partial linearizations to draw.
				vm := j.model
				vm.DescribeOperationMetadata = func(m any) string { s, _ := m.(string); return s }
				_, info := porcupine.CheckOperationsVerbose(vm, j.part, max(time.Until(deadline), 10*time.Second))
				r.linFailures = append(r.linFailures, linFailure{name: name, model: vm, info: info})
			}
			r.Violations = append(r.Violations, fmt.Sprintf("linearizability: the %d operations on %s are not linearizable (%s)", len(j.part), name, j.what))
		case porcupine.Unknown:
			j.lr.Undecided++
			r.Violations = append(r.Violations, fmt.Sprintf("linearizability: porcupine could not decide the %d operations on %s (%s) in %v, its share of the check's %v: undecided is no pass",
				len(j.part), name, j.what, time.Since(start).Round(time.Millisecond), budget))
		}
		j.lr.Elapsed += time.Since(start)
	}
}

func unknownOutcome(op porcupine.Operation) bool {
	switch out := op.Output.(type) {
	case linmodel.RegisterOutput:
		return out.Outcome == linmodel.Unknown
	case linmodel.LeaseOutput:
		return out.Outcome == linmodel.Unknown
	case collOutput:
		return out.Unknown
	case recipeOutput:
		return out.Unknown
	}
	return false
}

func partitionName(in any) string {
	switch in := in.(type) {
	case linmodel.RegisterInput:
		return in.Key
	case linmodel.LeaseInput:
		return in.Key
	case collInput:
		return strings.ReplaceAll(in.Reg, "\x00", " ")
	case recipeInput:
		return in.Key
	}
	return "?"
}

// assignLanes gives the operations of a partition client ids for the
// visualization, one row per lane of operations that do not overlap; the
// client's name is the operation's metadata.
func assignLanes(part []porcupine.Operation) {
	idx := make([]int, len(part))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return cmp.Compare(part[a].Call, part[b].Call) })
	var busy []int64 // the return of each lane's last operation
	for _, i := range idx {
		lane := slices.IndexFunc(busy, func(ret int64) bool { return ret < part[i].Call })
		if lane < 0 {
			lane = len(busy)
			busy = append(busy, 0)
		}
		busy[lane] = part[i].Return
		part[i].ClientId = lane
	}
}

// counterHistory is every GET and SET of the counters, as porcupine
// operations of linmodel.FencedRegister, and how many were left out: reads
// that were not answered (they change nothing), or answered with an error,
// and writes not answered after a SET with a larger fence had been
// acknowledged (refused, whenever they came, LOCK-12).
func counterHistory(events []Event) ([]porcupine.Operation, int) {
	var ops []porcupine.Operation
	dropped := 0
	// For each key, the acknowledged writes, to bound the effect of one
	// not answered.
	type ack struct{ fence, ret int64 }
	acks := map[string][]ack{}
	for _, e := range events {
		if s, ok := parseSet(e); ok && e.Result == "ok" {
			acks[s.Key] = append(acks[s.Key], ack{s.Fence, e.End})
		}
	}
	for _, e := range events {
		switch {
		case e.Kind == evFinal || (e.Kind == evWire && strings.EqualFold(e.Args[0], "get")):
			in := linmodel.RegisterInput{Key: counterKey(e.Key)}
			meta := "after the run"
			if e.Kind == evWire {
				in.Key, meta = e.Args[1], fmt.Sprintf("server %d", e.Target)
			}
			var out linmodel.RegisterOutput
			switch e.Result {
			case "ok":
				out = linmodel.RegisterOutput{Outcome: linmodel.OK, Value: e.Reply}
				if e.Kind == evFinal {
					out.Value = e.Value
				}
			case "nil":
				out = linmodel.RegisterOutput{Outcome: linmodel.Null}
			default:
				dropped++
				continue
			}
			if e.Start == 0 { // a final read of an older history, untimed
				dropped++
				continue
			}
			op := linmodel.RegisterOp(0, e.Start, e.End, in, out)
			op.Metadata = meta
			ops = append(ops, op)
		case e.Kind == evWire:
			in, ok := parseSet(e)
			if !ok {
				continue
			}
			out := linmodel.RegisterOutput{Outcome: linmodel.OK}
			ret := e.End
			switch {
			case e.Result == "ok":
			case e.Result == "error" && strings.HasPrefix(e.Reply, "FENCED"):
				out.Outcome = linmodel.Refused
			case e.Result == "error" && (strings.HasPrefix(e.Reply, "MOVED ") || strings.HasPrefix(e.Reply, "CLUSTERDOWN")):
				// A cluster's follower redirected it, and did nothing.
				dropped++
				continue
			default:
				// No reply, or an error that says nothing of what was
				// done: it may have been written, until a larger fence
				// was.
				out.Outcome = linmodel.Unknown
				ret = math.MaxInt64
				for _, a := range acks[in.Key] {
					if a.fence > in.Fence {
						ret = min(ret, a.ret)
					}
				}
				if ret < e.Start {
					dropped++
					continue
				}
			}
			op := linmodel.RegisterOp(0, e.Start, ret, in, out)
			op.Metadata = fmt.Sprintf("server %d", e.Target)
			ops = append(ops, op)
		}
	}
	return ops, dropped
}

// parseSet reads a SET on the wire: SET key value [FENCE f] …, or a
// RESTORE … REPLACE of a string, a plain SET of its value (restores.go).
func parseSet(e Event) (linmodel.RegisterInput, bool) {
	if r, ok := parseRestore(e); ok {
		return linmodel.RegisterInput{Key: r.key, Set: true, Value: r.value}, true
	}
	if e.Kind != evWire || len(e.Args) < 3 || !strings.EqualFold(e.Args[0], "set") {
		return linmodel.RegisterInput{}, false
	}
	in := linmodel.RegisterInput{Key: e.Args[1], Set: true, Value: e.Args[2]}
	for i := 3; i < len(e.Args); i++ {
		if strings.EqualFold(e.Args[i], "fence") && i+1 < len(e.Args) {
			f, err := strconv.ParseInt(e.Args[i+1], 10, 64)
			if err != nil {
				return in, false
			}
			in.Fence = f
			i++
			continue
		}
		return in, false // NX, EX, …: not in the model, and not sent
	}
	return in, true
}

func secs(t int64) string { return fmt.Sprintf("%.3fs", float64(t)/1e9) }

// maxVisuals is how many partitions that are not linearizable get a
// picture.
const maxVisuals = 5

// writeVisualizations writes porcupine's visualization of each partition
// that is not linearizable (the first maxVisuals) beside prefix, as
// prefix.PARTITION.html, and returns the files.
func (r *Report) writeVisualizations(prefix string) []string {
	var files []string
	unsafe := regexp.MustCompile(`[^A-Za-z0-9._@-]+`)
	for _, f := range r.linFailures {
		path := fmt.Sprintf("%s.%s.html", prefix, unsafe.ReplaceAllString(f.name, "_"))
		if err := porcupine.VisualizePath(f.model, f.info, path); err != nil {
			fmt.Fprintf(os.Stderr, "torture: visualize %s: %v\n", f.name, err)
			continue
		}
		files = append(files, filepath.Clean(path))
	}
	return files
}

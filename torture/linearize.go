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
	"github.com/tenure-db/tenure/internal/lockspec"
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
	locks, lDropped, wrong := lockHistory(events)
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
	}
	return false
}

func partitionName(in any) string {
	switch in := in.(type) {
	case linmodel.RegisterInput:
		return in.Key
	case linmodel.LeaseInput:
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

// parseSet reads a SET on the wire: SET key value [FENCE f] …
func parseSet(e Event) (linmodel.RegisterInput, bool) {
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

// serverRun is one run of the server: its epoch, and when its SIGKILL had
// finished (math.MaxInt64: never), after which it processed nothing.
type serverRun struct {
	epoch  int64
	killed int64
}

// serverRuns reads the restarts and kills of a history, by Target.
func serverRuns(events []Event) map[int64]serverRun {
	type start struct {
		gen, epoch, at int64
	}
	var starts []start
	var kills []int64
	for _, e := range events {
		switch {
		case e.Kind == evFault && strings.HasPrefix(e.Detail, "kill:"):
			kills = append(kills, e.Start)
		case e.Kind == evRestart:
			ep, err := strconv.ParseInt(strings.TrimPrefix(e.Detail, "epoch "), 10, 64)
			if err != nil {
				ep = 0 // its INFO failed
			}
			starts = append(starts, start{e.Target, ep, e.Start})
		}
	}
	slices.Sort(kills)
	slices.SortFunc(starts, func(a, b start) int { return cmp.Compare(a.at, b.at) })
	// By LOCK-10 every open is one more epoch (checked apart).
	for i := 1; i < len(starts); i++ {
		if starts[i].epoch == 0 && starts[i-1].epoch != 0 {
			starts[i].epoch = starts[i-1].epoch + 1
		}
	}
	for i := len(starts) - 2; i >= 0; i-- {
		if starts[i].epoch == 0 && starts[i+1].epoch > 1 {
			starts[i].epoch = starts[i+1].epoch - 1
		}
	}
	runs := map[int64]serverRun{}
	for _, s := range starts {
		run := serverRun{epoch: s.epoch, killed: math.MaxInt64}
		if k, _ := slices.BinarySearch(kills, s.at); k < len(kills) {
			run.killed = kills[k]
		}
		runs[s.gen] = run
	}
	return runs
}

// lockHistory is every LOCK.* command that reached a server, as porcupine
// operations of linmodel.Leases partitioned by (lock, key, server), and how
// many were left out: RENEW and RELEASE of lease ids no server was seen to
// grant (no key to put them on), and commands of unknown outcome that can
// have had no effect (below). It also returns grants whose fence is not of
// the epoch of the server that granted them (LOCK-02, LOCK-10).
//
// A command of unknown outcome keeps porcupine searching where it may have
// taken effect, so what is known bounds it:
//   - a HOLD whose request id was seen granted a lease at that server can
//     only have granted that lease (LOCK-03), before the first reply that
//     showed it;
//   - one whose request id was not can only have granted a fence nobody
//     saw: fences count the server's grants, so one between those seen or
//     above them all (linmodel.LeaseInput.Gaps);
//   - either only after the grants of the smaller fences seen on its key
//     (LOCK-02, linmodel.LeaseInput.Granted);
//   - a RENEW or RELEASE only while its lease lived: before the first
//     reply that showed it had ended (a grant of a larger fence on its
//     key, its RELEASE answered :1, -LOST).
//
// Placed after the operation that bounds it, each changes nothing, so the
// bound is its Return; one bounded before it was sent is left out.
func lockHistory(events []Event) ([]porcupine.Operation, int, []string) {
	runs := serverRuns(events)
	type at struct { // a lease id, request id or key, at one server
		name   string
		server int64
	}
	type lease struct {
		lock, key string
		fence     int64
	}
	type grant struct {
		id    string
		fence int64
	}
	leases := map[string]lease{} // lease id -> its grant
	granted := map[at]grant{}    // request id -> the lease it was granted
	seen := map[at]int64{}       // lease id -> when a reply first showed it
	ended := map[at]int64{}      // lease id -> when a reply first showed it had ended
	seenN := map[int64]map[int64]bool{}
	fenceEpoch := map[int64]int64{}
	type keyGrant struct {
		id         string
		fence, end int64
	}
	byKey := map[at][]keyGrant{} // lock/key -> its grants seen
	first := func(m map[at]int64, k at, t int64) {
		if old, ok := m[k]; !ok || t < old {
			m[k] = t
		}
	}
	var wrong []string
	for _, e := range events {
		c, ok := parseLockCmd(e)
		if !ok || c.out.Outcome == linmodel.Unknown {
			continue
		}
		if c.in.Cmd == linmodel.Hold && c.out.Outcome == linmodel.OK {
			leases[c.out.ID] = lease{c.lock, c.key, c.out.Fence}
			if _, ok := granted[at{c.in.ReqID, e.Target}]; !ok {
				granted[at{c.in.ReqID, e.Target}] = grant{c.out.ID, c.out.Fence}
			}
			first(seen, at{c.out.ID, e.Target}, e.End)
			byKey[at{c.lock + "/" + c.key, e.Target}] = append(byKey[at{c.lock + "/" + c.key, e.Target}], keyGrant{c.out.ID, c.out.Fence, e.End})
			if seenN[e.Target] == nil {
				seenN[e.Target] = map[int64]bool{}
			}
			seenN[e.Target][c.out.Fence&0xffffffff] = true
			fenceEpoch[e.Target] = epochOf(c.out.Fence)
			if run, ok := runs[e.Target]; ok && run.epoch != 0 && epochOf(c.out.Fence) != run.epoch {
				wrong = append(wrong, fmt.Sprintf("LOCK-02: the server of epoch %d granted fence %d, of epoch %d", run.epoch, c.out.Fence, epochOf(c.out.Fence)))
			}
		}
		if c.in.Cmd != linmodel.Hold && (c.out.Outcome == linmodel.Lost || (c.in.Cmd == linmodel.Release && c.out.Outcome == linmodel.OK)) {
			first(ended, at{c.in.ID, e.Target}, e.End)
		}
	}
	for k, gs := range byKey {
		for _, l := range gs {
			for _, g := range gs {
				if g.fence > l.fence {
					first(ended, at{l.id, k.server}, g.end)
				}
			}
		}
	}
	// The fences seen on each key, in order, and those nobody saw, by
	// server.
	keyFences := map[at][]int64{}
	for k, gs := range byKey {
		for _, g := range gs {
			keyFences[k] = append(keyFences[k], g.fence)
		}
		slices.Sort(keyFences[k])
		keyFences[k] = slices.Compact(keyFences[k])
	}
	gaps := map[int64][]int64{}
	above := map[int64]int64{}
	for server, ns := range seenN {
		base := fenceEpoch[server] << 32
		var top int64
		for n := range ns {
			top = max(top, n)
		}
		for n := int64(1); n < top; n++ {
			if !ns[n] {
				gaps[server] = append(gaps[server], base+n)
			}
		}
		above[server] = base + top
	}

	var ops []porcupine.Operation
	dropped := 0
	for _, e := range events {
		c, ok := parseLockCmd(e)
		if !ok {
			continue
		}
		lock, key := c.lock, c.key
		if c.in.Cmd != linmodel.Hold {
			l, ok := leases[c.in.ID]
			if !ok {
				dropped++
				continue
			}
			lock, key = l.lock, l.key
		}
		run, ok := runs[e.Target]
		if !ok {
			run = serverRun{killed: math.MaxInt64}
		}
		in := c.in
		if run.epoch != 0 {
			in.Key = fmt.Sprintf("%s/%s@epoch%d", lock, key, run.epoch)
		} else {
			in.Key = fmt.Sprintf("%s/%s@server%d", lock, key, e.Target)
		}
		bound := int64(math.MaxInt64)
		if c.out.Outcome == linmodel.Unknown {
			switch g, ok := granted[at{in.ReqID, e.Target}]; {
			case in.Cmd == linmodel.Hold && ok:
				in.ID, in.Fence = g.id, g.fence
				in.Granted = keyFences[at{lock + "/" + key, e.Target}]
				bound = seen[at{g.id, e.Target}]
			case in.Cmd == linmodel.Hold:
				in.Granted = keyFences[at{lock + "/" + key, e.Target}]
				in.Gaps = gaps[e.Target]
				if a, ok := above[e.Target]; ok {
					in.Above = a
				} else if run.epoch != 0 {
					in.Above = run.epoch << 32
				}
			default:
				if t, ok := ended[at{in.ID, e.Target}]; ok {
					bound = t
				}
			}
			if bound < in.Call {
				dropped++
				continue
			}
			// And processed, if at all, before its server was killed.
			in.Return = min(bound, run.killed)
		}
		op := linmodel.LeaseOp(0, in, c.out)
		if bound != math.MaxInt64 {
			op.Return = bound
		}
		op.Metadata = fmt.Sprintf("server %d", e.Target)
		ops = append(ops, op)
	}
	return ops, dropped, wrong
}

// parsedCmd is a LOCK.* command on the wire as the model's input and
// output.
type parsedCmd struct {
	lock, key string
	in        linmodel.LeaseInput
	out       linmodel.LeaseOutput
}

// parseLockCmd reads a LOCK.HOLD, RENEW or RELEASE on the wire.
func parseLockCmd(e Event) (parsedCmd, bool) {
	var c parsedCmd
	if e.Kind != evWire || len(e.Args) < 2 {
		return c, false
	}
	c.in.Call, c.in.Return = e.Start, e.End
	switch strings.ToLower(e.Args[0]) {
	case "lock.hold":
		if len(e.Args) < 4 {
			return c, false
		}
		c.lock, c.key = e.Args[1], e.Args[2]
		c.in.Cmd, c.in.ReqID, c.in.TTL, c.in.Wait = linmodel.Hold, e.Args[3], lockspec.DefaultTTL.Milliseconds(), -1
		for i := 4; i+1 < len(e.Args); i += 2 {
			n, err := strconv.ParseInt(e.Args[i+1], 10, 64)
			if err != nil {
				return c, false
			}
			switch strings.ToLower(e.Args[i]) {
			case "ttl":
				c.in.TTL = n
			case "wait":
				c.in.Wait = n
			default:
				return c, false // MAXHOLD: not in the model, and not sent
			}
		}
	case "lock.renew":
		if len(e.Args) != 2 {
			return c, false // an explicit TTL: not sent
		}
		c.in.Cmd, c.in.ID = linmodel.Renew, e.Args[1]
	case "lock.release":
		c.in.Cmd, c.in.ID = linmodel.Release, e.Args[1]
	default:
		return c, false
	}
	switch e.Result {
	case "ok":
		c.out.Outcome = linmodel.OK
		switch c.in.Cmd {
		case linmodel.Hold:
			f := strings.Fields(e.Reply)
			if len(f) != 3 {
				return c, false
			}
			fence, err1 := strconv.ParseInt(f[1], 10, 64)
			left, err2 := strconv.ParseInt(f[2], 10, 64)
			if err1 != nil || err2 != nil {
				return c, false
			}
			c.out.ID, c.out.Fence, c.out.Left = f[0], fence, left
		case linmodel.Renew:
			left, err := strconv.ParseInt(e.Reply, 10, 64)
			if err != nil {
				return c, false
			}
			c.out.Left = left
		}
	case "nil":
		c.out.Outcome = linmodel.Null
	case "error":
		if reason, ok := strings.CutPrefix(e.Reply, "LOST "); ok {
			c.out.Outcome, c.out.Reason = linmodel.Lost, reason
		} else {
			c.out.Outcome, c.out.Reason = linmodel.Refused, e.Reply
		}
	default:
		c.out.Outcome = linmodel.Unknown
	}
	return c, true
}

// secs is a time of the history in seconds.
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

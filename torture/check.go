package main

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Report is what a run did and what its history shows.
type Report struct {
	Elapsed    time.Duration
	Restarts   int
	Faults     map[string]int
	ProxyConns int64

	Holds, Granted, Lost, NotHeld, HoldErrors int
	Reads, Writes, Accepted, Fenced, Failed   int
	LateWrites, LateAccepted, LateFenced      int

	Intervals, RestartOverlaps       int // (a)
	PermitIntervals, MostPermits     int // … of semaphores' keys, and the most permits believed held at once
	ReaderIntervals, WriterIntervals int // … of read-write keys' readers and writers
	RecipeIntervals                  int // … of the recipe's holders
	Collisions                       int // (b) increments lost: two writes of one count
	ByRestart, ByLate                int // … explained by a restart overlap, by a late write
	ProxyGrants, ReqIDs              int // (c)
	Regranted                        int // … request ids granted again after a restart
	OrderedGrants                    int // … HOLDs answered with a lease, checked in epoch order
	GrantsTotal                      string
	FinalCounts                      map[string]int64
	LinCounters, LinLocks            linReport      // (d)
	LinRecipe                        linReport      // (d) of the Redis recipe's keys
	LinColls                         linReport      // (d) of hashes and sets (collections.go)
	FIFOReqIDs, FIFOIntervals        int            // (e) request ids, and their intervals proven in line
	FIFOByLock                       map[string]int // … the intervals by lock: the semaphores' and read-write keys' apart
	// (f) lock events: heard, sessions, and grants checked to be among them
	LockEvents, LockEventSessions, LockEventsChecked int
	// (g) observers: how many, leaders they yielded, of them none, and
	// of them whose grant was never answered (a HOLD of their owner's was not)
	Observers, Observed, ObservedNone, ObservedUnanswered int
	// the queue (queue.go): LPUSHes, items acknowledged pushed, pops,
	// items delivered, LMOVEs, items left at the end, acknowledged items
	// missing, pops whose reply never came
	QueuePushes, QueueAcked, QueuePops, QueueDelivered, QueueMoves, QueueLeft, QueueMissing, QueueLostPops int

	// Cluster is the number of nodes of the cluster the run was of, 0
	// for one server; Epochs how many epochs granted.
	Cluster, Epochs int

	Violations  []string
	HistoryFile string
	Visuals     []string // porcupine's pictures of the partitions not linearizable

	linFailures []linFailure
}

// interval is what one holder believed: from fn's start to fn's end or the
// holder's deadline, whichever came first.
type interval struct {
	client     string
	hold       int64
	key        string
	mode       string // modeMutex, modeShared, …: how it held key
	fence      int64  // 0 for the recipe's
	start, end int64
	overlaps   bool // with a holder of another epoch, across a restart
}

func epochOf(fence int64) int64 { return fence >> 32 }

// check reads a history and returns its figures and its violations. The
// linearizability check (d) takes at most linBudget (0: a default).
func check(events []Event, info map[string]string, linBudget time.Duration) *Report {
	r := &Report{FinalCounts: map[string]int64{}, GrantsTotal: info["grants_total"], Cluster: clusterOf(events)}
	violate := func(format string, args ...any) {
		r.Violations = append(r.Violations, fmt.Sprintf(format, args...))
	}

	type holdID struct {
		client string
		hold   int64
	}
	holds := map[holdID]*interval{}
	ended := map[holdID]bool{}
	var writes, reads []Event
	for _, e := range events {
		id := holdID{e.Client, e.Hold}
		switch e.Kind {
		case evHeld:
			r.Holds++
			switch {
			case e.Result == "ok":
			case strings.HasPrefix(e.Result, "lost"):
				r.Lost++
			case e.Result == "not held":
				r.NotHeld++
			default:
				r.HoldErrors++
			}
		case evHold:
			r.Granted++
			holds[id] = &interval{client: e.Client, hold: e.Hold, key: e.Key, mode: e.Mode, fence: e.Fence, start: e.Start, end: e.Deadline}
		case evEnd:
			if iv := holds[id]; iv != nil {
				iv.end = min(e.End, e.Deadline)
				ended[id] = true
			}
		case evWrite:
			writes = append(writes, e)
			if iv := holds[id]; iv != nil && !ended[id] {
				// A hold whose end never came (its process stopped)
				// lasted at least to the deadline its writes saw.
				iv.end = max(iv.end, e.Deadline)
			}
		case evRead:
			reads = append(reads, e)
		}
	}

	// (a) What holders believed: per key, no two intervals overlap in one
	// epoch (LOCK-01) but readers' (SHARED) with readers', and a
	// semaphore's no more than its limit at once; across a restart the
	// later holder's fence is the larger (LOCK-02, LOCK-10). The recipe's
	// holders, who have no fence, never overlap at all (recipe.go).
	byKey := map[string][]*interval{}
	byFence := map[int64]*interval{}
	for _, iv := range holds {
		byKey[iv.key] = append(byKey[iv.key], iv)
		if iv.mode == modeRecipe {
			continue
		}
		if o := byFence[iv.fence]; o != nil {
			violate("LOCK-03: fence %d was handed to two holds: %s#%d and %s#%d", iv.fence, o.client, o.hold, iv.client, iv.hold)
		}
		byFence[iv.fence] = iv
	}
	for key, ivs := range byKey {
		slices.SortFunc(ivs, func(a, b *interval) int { return cmp.Compare(a.start, b.start) })
		r.Intervals += len(ivs)
		for _, iv := range ivs {
			switch {
			case iv.mode == modeShared:
				r.ReaderIntervals++
			case iv.mode == modeWriter:
				r.WriterIntervals++
			case iv.mode == modeRecipe:
				r.RecipeIntervals++
			}
		}
		for j, b := range ivs {
			for _, a := range ivs[:j] {
				// b.end <= b.start: b believed nothing (its grant's
				// reply came after its deadline, as after a freeze).
				if a.end <= b.start || b.end <= b.start {
					continue
				}
				if a.mode != b.mode && (a.mode == modeRecipe || b.mode == modeRecipe || strings.HasPrefix(a.mode, "limit:") || strings.HasPrefix(b.mode, "limit:")) {
					violate("on %s, holds of different kinds: %s#%d (%q) and %s#%d (%q)", key, a.client, a.hold, a.mode, b.client, b.hold, b.mode)
					continue
				}
				switch {
				case a.mode == modeRecipe:
					violate("recipe: on %s, %s#%d and %s#%d believed they held at once, for %v, neither's PX passed (less the recipe's drift)",
						key, a.client, a.hold, b.client, b.hold, time.Duration(min(a.end, b.end)-b.start))
				case epochOf(a.fence) == epochOf(b.fence):
					if a.mode == modeShared && b.mode == modeShared || strings.HasPrefix(a.mode, "limit:") {
						continue // readers together; permits are counted below
					}
					violate("LOCK-01: on %s, %s#%d (fence %d%s) and %s#%d (fence %d%s) believed they held at once, for %v",
						key, a.client, a.hold, a.fence, modeNote(a.mode), b.client, b.hold, b.fence, modeNote(b.mode), time.Duration(min(a.end, b.end)-b.start))
				case b.fence <= a.fence:
					violate("LOCK-02: on %s, %s#%d (fence %d) began while %s#%d (fence %d) held, across a restart, with a smaller fence",
						key, b.client, b.hold, b.fence, a.client, a.hold, a.fence)
				default:
					a.overlaps, b.overlaps = true, true
					r.RestartOverlaps++
				}
			}
		}
		checkLimit(r, key, ivs, violate)
	}

	// (b) Fences at the resource.
	for _, e := range reads {
		r.Reads++
		_ = e
	}
	unsafe := func(w Event) (late, overlap bool) {
		iv := holds[holdID{w.Client, w.Hold}]
		return w.Late, iv != nil && iv.overlaps
	}
	for _, w := range writes {
		r.Writes++
		switch w.Result {
		case "ok":
			r.Accepted++
		case "FENCED":
			r.Fenced++
		default:
			r.Failed++
		}
		if w.Late {
			r.LateWrites++
			switch w.Result {
			case "ok":
				r.LateAccepted++
			case "FENCED":
				r.LateFenced++
			}
		}
	}
	for _, key := range keysOf(writes, reads) {
		checkCounter(r, key, writes, reads, unsafe, violate)
	}
	for _, e := range events {
		if e.Kind != evFinal {
			continue
		}
		n, _, ok := parseCounter(e.Value)
		if !ok && e.Value != "" {
			violate("counter %s ends as %q", counterKey(e.Key), e.Value)
		}
		r.FinalCounts[e.Key] = n
	}

	// (c) One lease per request id (LOCK-03): what the server granted, as
	// the proxy saw it, against what the clients hold. Within one epoch:
	// a store that opens holds no lease (LOCK-10) and knows no request id,
	// so a HOLD retried across a restart is granted afresh; the lease of
	// the first grant died with the process. Those are counted, apart.
	type grant struct {
		lease string
		fence int64
	}
	type reqEpoch struct {
		reqid string
		epoch int64
	}
	byReqID := map[reqEpoch]map[grant]bool{}
	epochsOf := map[string]map[int64]bool{}
	reqOfFence := map[int64]map[string]bool{}
	epochGrants := map[int64]map[int64]bool{}
	for _, e := range events {
		if e.Kind != evGrant {
			continue
		}
		r.ProxyGrants++
		g := grant{e.LeaseID, e.Fence}
		re := reqEpoch{e.ReqID, epochOf(e.Fence)}
		if byReqID[re] == nil {
			byReqID[re] = map[grant]bool{}
		}
		byReqID[re][g] = true
		if epochsOf[e.ReqID] == nil {
			epochsOf[e.ReqID] = map[int64]bool{}
		}
		epochsOf[e.ReqID][re.epoch] = true
		if reqOfFence[e.Fence] == nil {
			reqOfFence[e.Fence] = map[string]bool{}
		}
		reqOfFence[e.Fence][e.ReqID] = true
		if epochGrants[epochOf(e.Fence)] == nil {
			epochGrants[epochOf(e.Fence)] = map[int64]bool{}
		}
		epochGrants[epochOf(e.Fence)][e.Fence] = true
	}
	r.ReqIDs = len(epochsOf)
	r.Epochs = len(epochGrants)
	for re, gs := range byReqID {
		if len(gs) > 1 {
			violate("LOCK-03: request id %s was answered with %d different leases in epoch %d: %v", re.reqid, len(gs), re.epoch, gs)
		}
	}
	for _, eps := range epochsOf {
		r.Regranted += len(eps) - 1
	}
	for f, ids := range reqOfFence {
		if len(ids) > 1 {
			violate("LOCK-03: fence %d was granted to %d request ids", f, len(ids))
		}
	}
	for f, iv := range byFence {
		if reqOfFence[f] == nil && iv.mode != modeRecipe {
			violate("LOCK-03: %s#%d holds fence %d, which the server was never seen to grant", iv.client, iv.hold, f)
		}
	}
	if total, err := strconv.ParseInt(info["epoch"], 10, 64); err == nil {
		grants, _ := strconv.ParseInt(info["grants_total"], 10, 64)
		seen := epochGrants[total]
		var maxN int64
		for f := range seen {
			maxN = max(maxN, f&0xffffffff)
		}
		if int64(len(seen)) > grants || maxN > grants {
			violate("LOCK-03: the last epoch counts %d grants, but %d were seen (the largest n %d)", grants, len(seen), maxN)
		}
	}
	// LOCK-10: every open is a new epoch, one more than the last. (A
	// cluster's restarts are of nodes: its epochs are the leaders', and
	// move through the log.)
	var last int64
	for _, e := range events {
		if e.Kind != evRestart || r.Cluster > 0 {
			continue
		}
		ep, err := strconv.ParseInt(strings.TrimPrefix(e.Detail, "epoch "), 10, 64)
		if err != nil {
			continue
		}
		if last != 0 && ep != last+1 {
			violate("LOCK-10: the server opened at epoch %d after epoch %d", ep, last)
		}
		last = ep
	}

	checkEpochOrder(r, events, violate)

	// (d) Linearizability of the raw command history.
	checkLinearizable(r, events, linBudget)

	// (e) First come, first served (LOCK-08), per server or node run and
	// key; in a cluster within one epoch (fifo.go).
	checkFIFO(r, events, violate)

	// (f) Lock events on pub/sub, in order, every grant among them
	// (lockevents.go).
	checkLockEvents(r, events, violate)

	// (g) Observers' leaders: fences never go back, every leader a real
	// holder (observer.go).
	checkObservers(r, events, violate)

	// The queue: no item delivered twice, no acknowledged push lost
	// (queue.go).
	checkQueue(r, events, violate)
	return r
}

// modeNote is how a violation names a hold's mode.
func modeNote(mode string) string {
	switch mode {
	case modeMutex:
		return ""
	case modeShared:
		return ", a reader"
	case modeWriter:
		return ", a writer"
	}
	return ", " + mode
}

// checkLimit is (a) for a semaphore's key (its holds' mode limit:n): within
// one epoch, never more than n holders believed they held at once
// (LOCK-01). ivs are the key's intervals, sorted by start.
func checkLimit(r *Report, key string, ivs []*interval, violate func(string, ...any)) {
	if len(ivs) == 0 || !strings.HasPrefix(ivs[0].mode, "limit:") {
		return
	}
	limit, err := strconv.Atoi(strings.TrimPrefix(ivs[0].mode, "limit:"))
	if err != nil {
		violate("on %s, a semaphore's hold of mode %q", key, ivs[0].mode)
		return
	}
	r.PermitIntervals += len(ivs)
	byEpoch := map[int64][]*interval{}
	for _, iv := range ivs {
		byEpoch[epochOf(iv.fence)] = append(byEpoch[epochOf(iv.fence)], iv)
	}
	for epoch, ivs := range byEpoch {
		// Sweep the starts and ends in time order, an end before a start
		// at the same instant (the one ended as the other began).
		type edge struct {
			at    int64
			delta int
			iv    *interval
		}
		var edges []edge
		for _, iv := range ivs {
			if iv.end > iv.start {
				edges = append(edges, edge{iv.start, 1, iv}, edge{iv.end, -1, iv})
			}
		}
		slices.SortFunc(edges, func(a, b edge) int {
			if c := cmp.Compare(a.at, b.at); c != 0 {
				return c
			}
			return cmp.Compare(a.delta, b.delta)
		})
		in := map[*interval]bool{}
		for _, e := range edges {
			if e.delta < 0 {
				delete(in, e.iv)
				continue
			}
			in[e.iv] = true
			r.MostPermits = max(r.MostPermits, len(in))
			if len(in) > limit {
				var who []string
				for iv := range in {
					who = append(who, fmt.Sprintf("%s#%d (fence %d)", iv.client, iv.hold, iv.fence))
				}
				slices.Sort(who)
				violate("LOCK-01: on %s (LIMIT %d), %d holders believed they held at once in epoch %d: %s",
					key, limit, len(in), epoch, strings.Join(who, ", "))
				break // one report per epoch
			}
		}
	}
}

// clusterOf reads the number of nodes of a run's cluster from its config
// event: 0, one server.
func clusterOf(events []Event) int {
	for _, e := range events {
		if e.Kind != evConfig {
			continue
		}
		for _, kv := range strings.Fields(e.Detail) {
			if v, ok := strings.CutPrefix(kv, "cluster="); ok {
				n, _ := strconv.Atoi(v)
				return n
			}
		}
	}
	return 0
}

// checkCounter checks one key's counter: every observation of it (a read,
// an accepted write) carries the fence that last wrote it, and that fence
// never goes back in time (LOCK-12: no write with an older fence is taken
// after a newer one; nor is an acknowledged write lost). Every increment
// lost (two accepted writes of one count) is explained by a write that was
// late or made across a restart overlap.
func checkCounter(r *Report, key string, writes, reads []Event, unsafe func(Event) (bool, bool), violate func(string, ...any)) {
	type obs struct {
		start, end, fence int64
		what              string
	}
	var all []obs
	for _, e := range reads {
		if e.Key != key || (e.Result != "ok" && e.Result != "nil") {
			continue
		}
		_, f, _ := parseCounter(e.Value)
		all = append(all, obs{e.Start, e.End, f, fmt.Sprintf("a read by %s#%d of %q", e.Client, e.Hold, e.Value)})
	}
	counts := map[int64][]Event{}
	for _, e := range writes {
		if e.Key != key || e.Result != "ok" {
			continue
		}
		all = append(all, obs{e.Start, e.End, e.Fence, fmt.Sprintf("a write by %s#%d of %q", e.Client, e.Hold, e.Value)})
		n, _, _ := parseCounter(e.Value)
		counts[n] = append(counts[n], e)
	}
	// Sweep: for each observation, the largest fence of those that ended
	// before it started.
	byEnd := slices.Clone(all)
	slices.SortFunc(byEnd, func(a, b obs) int { return cmp.Compare(a.end, b.end) })
	prefix := make([]int, len(byEnd)) // index of the largest fence in byEnd[:i+1]
	for i := range byEnd {
		prefix[i] = i
		if i > 0 && byEnd[prefix[i-1]].fence >= byEnd[i].fence {
			prefix[i] = prefix[i-1]
		}
	}
	for _, o := range all {
		i := sort.Search(len(byEnd), func(i int) bool { return byEnd[i].end >= o.start }) - 1
		if i < 0 {
			continue
		}
		if p := byEnd[prefix[i]]; p.fence > o.fence {
			violate("LOCK-12: on %s, %s (fence %d) came after %s (fence %d) had ended",
				counterKey(key), o.what, o.fence, p.what, p.fence)
		}
	}
	for n, ws := range counts {
		if len(ws) < 2 {
			continue
		}
		r.Collisions += len(ws) - 1
		late, overlap := 0, 0
		for _, w := range ws {
			l, o := unsafe(w)
			switch {
			case o:
				overlap++
			case l:
				late++
			}
		}
		if late+overlap < len(ws)-1 {
			var who []string
			for _, w := range ws {
				who = append(who, fmt.Sprintf("%s#%d (fence %d)", w.Client, w.Hold, w.Fence))
			}
			violate("lost increment: on %s, count %d was written by %s, not explained by a restart overlap or a late write",
				counterKey(key), n, strings.Join(who, " and "))
			continue
		}
		r.ByRestart += min(overlap, len(ws)-1)
		r.ByLate += len(ws) - 1 - min(overlap, len(ws)-1)
	}
}

func keysOf(writes, reads []Event) []string {
	seen := map[string]bool{}
	for _, e := range append(slices.Clone(writes), reads...) {
		seen[e.Key] = true
	}
	keys := make([]string, 0, len(seen))
	for k := range seen {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Print writes the figures.
func (r *Report) Print(w io.Writer) {
	what := "server"
	if r.Cluster > 0 {
		what = fmt.Sprintf("node (of a cluster of %d)", r.Cluster)
	}
	fmt.Fprintf(w, "torture: %v under the nemesis, %d %s restarts, %d connections through the proxies, %d epochs granted\n",
		r.Elapsed.Round(time.Second), r.Restarts, what, r.ProxyConns, r.Epochs)
	var kinds []string
	total := 0
	for _, k := range faultKinds() {
		if n := r.Faults[k]; n > 0 {
			kinds = append(kinds, fmt.Sprintf("%s %d", k, n))
			total += n
		}
	}
	fmt.Fprintf(w, "faults:     %d (%s)\n", total, strings.Join(kinds, ", "))
	fmt.Fprintf(w, "holds:      %d (fn ran %d, lost %d, not held %d, errors %d)\n", r.Holds, r.Granted, r.Lost, r.NotHeld, r.HoldErrors)
	fmt.Fprintf(w, "counters:   %d reads, %d writes (%d accepted, %d FENCED, %d failed); late writes %d (%d accepted, %d FENCED); final %v\n",
		r.Reads, r.Writes, r.Accepted, r.Fenced, r.Failed, r.LateWrites, r.LateAccepted, r.LateFenced, r.FinalCounts)
	fmt.Fprintf(w, "operations: %d\n", r.Holds+r.Reads+r.Writes)
	fmt.Fprintf(w, "(a) beliefs: %d intervals, %d overlaps across a restart, each with the later fence larger\n", r.Intervals, r.RestartOverlaps)
	fmt.Fprintf(w, "             of them %d semaphore permits (at most %d believed held at once), %d readers and %d writers of read-write keys, %d holders by the Redis recipe (never two at once)\n",
		r.PermitIntervals, r.MostPermits, r.ReaderIntervals, r.WriterIntervals, r.RecipeIntervals)
	fmt.Fprintf(w, "(b) fences:  %d increments lost, %d explained by a restart overlap, %d by a late write\n", r.Collisions, r.ByRestart, r.ByLate)
	fmt.Fprintf(w, "(c) grants:  %d seen at the proxy for %d request ids, %d of them granted again after a restart; the last epoch's grants_total %s\n",
		r.ProxyGrants, r.ReqIDs, r.Regranted, r.GrantsTotal)
	fmt.Fprintf(w, "             %d HOLDs answered with a lease, none of an epoch older than one granted before it was asked\n", r.OrderedGrants)
	r.LinCounters.print(w, "(d) linearizable: counters", "by key")
	if r.Cluster > 0 {
		fmt.Fprintf(w, "                  locks: not checked in a cluster (a node's run spans epochs; (a), (c) and (e) check them)\n")
	} else {
		r.LinLocks.print(w, "                  locks   ", "by key and epoch")
	}
	r.LinColls.print(w, "                  hashes, sets, sorted sets", "by key and member")
	if r.Cluster > 0 {
		fmt.Fprintf(w, "                  recipe: not checked in a cluster (an unanswered write may commit under the next leader, at no bound in time; (a) checks its holders)\n")
	} else {
		r.LinRecipe.print(w, "                  recipe  ", "by key")
	}
	fmt.Fprintf(w, "(e) FIFO:    %d request ids, %d intervals in which one certainly waited in line (%d on semaphore keys, %d on read-write keys)\n",
		r.FIFOReqIDs, r.FIFOIntervals, r.FIFOByLock[semLockName], r.FIFOByLock[rwLockName])
	if r.LockEventSessions > 0 {
		fmt.Fprintf(w, "(f) lock events: %d heard in %d subscriber sessions; %d grants checked to be among them, in fence order\n",
			r.LockEvents, r.LockEventSessions, r.LockEventsChecked)
	}
	fmt.Fprintf(w, "(g) observers: %d (Observe of the SDK) yielded %d leaders (%d of them none, %d of a HOLD never answered), fences never back, every leader a holder granted before\n",
		r.Observers, r.Observed, r.ObservedNone, r.ObservedUnanswered)
	fmt.Fprintf(w, "queue:      %d LPUSHes (%d acknowledged), %d pops delivered %d items, %d LMOVEs, %d items left; %d acknowledged items missing for %d pops not answered; none delivered twice\n",
		r.QueuePushes, r.QueueAcked, r.QueuePops, r.QueueDelivered, r.QueueMoves, r.QueueLeft, r.QueueMissing, r.QueueLostPops)
	fmt.Fprintf(w, "violations: %d\n", len(r.Violations))
	for _, v := range r.Violations {
		fmt.Fprintf(w, "  %s\n", v)
	}
	if r.HistoryFile != "" {
		fmt.Fprintf(w, "history:    %s\n", r.HistoryFile)
	}
	for _, v := range r.Visuals {
		fmt.Fprintf(w, "porcupine:  %s\n", v)
	}
}

func (l linReport) print(w io.Writer, what, parts string) {
	result := "linearizable"
	if l.Illegal > 0 || l.Undecided > 0 {
		result = fmt.Sprintf("%d NOT linearizable, %d undecided", l.Illegal, l.Undecided)
	}
	fmt.Fprintf(w, "%s: %d operations (%d of unknown outcome; %d left out) in %d partitions %s: %s, checked in %v\n",
		what, l.Ops, l.Unknown, l.Dropped, l.Partitions, parts, result, l.Elapsed.Round(time.Millisecond))
}

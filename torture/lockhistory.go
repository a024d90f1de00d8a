package main

// The lock commands of a history as porcupine operations (check (d),
// locks): which server run each reached, and what a command of unknown
// outcome can have done.

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/anishathalye/porcupine"

	"github.com/tenure-db/tenure/internal/linmodel"
	"github.com/tenure-db/tenure/internal/lockspec"
)

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
// grant (no key to put them on), commands of unknown outcome that can
// have had no effect (below), and every command of a key held with LIMIT
// or SHARED (SPEC §12: the model is a mutex's; checks (a), (c) and (e)
// hold such keys to LOCK-01, LOCK-03 and LOCK-08). It also returns grants whose fence is not of
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
	// The keys held with LIMIT or SHARED are left out, every command of
	// theirs: the model is a mutex's. (a), (c) and (e) check them.
	multi := map[string]bool{}
	for _, e := range events {
		if c, ok := parseLockCmd(e); ok && c.multi {
			multi[c.lock+"/"+c.key] = true
		}
	}
	var wrong []string
	for _, e := range events {
		c, ok := parseLockCmd(e)
		if !ok || c.out.Outcome == linmodel.Unknown || (c.in.Cmd == linmodel.Hold && multi[c.lock+"/"+c.key]) {
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
		if c.in.Cmd == linmodel.Hold && multi[lock+"/"+key] {
			dropped++
			continue
		}
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
	// multi: a HOLD with LIMIT or SHARED (SPEC §12), which linmodel.Leases,
	// a mutex's model, does not know.
	multi bool
	in    linmodel.LeaseInput
	out   linmodel.LeaseOutput
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
		for i := 4; i < len(e.Args); i += 2 {
			if strings.EqualFold(e.Args[i], "shared") {
				c.multi = true
				i-- // a flag, with no value
				continue
			}
			if i+1 >= len(e.Args) {
				return c, false
			}
			if strings.EqualFold(e.Args[i], "owner") {
				continue // what the store shows of the holder (LOCK-16): not in the model
			}
			if strings.EqualFold(e.Args[i], "limit") {
				c.multi = true
				continue
			}
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

package linmodel

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/anishathalye/porcupine"
)

// Slack is how much the store's clock and the history's may disagree about
// a deadline: both read CLOCK_MONOTONIC, so this covers only the rounding of
// their readings.
const Slack = 2 * time.Millisecond

const (
	slack = int64(Slack)
	msNs  = int64(time.Millisecond)
)

// LeaseCmd is a command of the lock module (SPEC §3).
type LeaseCmd uint8

const (
	Hold LeaseCmd = iota
	Renew
	Release
	Info
)

// LeaseInput is one command on one (lock, key).
type LeaseInput struct {
	Cmd LeaseCmd
	// Key names the partition: the (lock, key), and its epoch when the
	// history spans restarts of the store.
	Key   string
	ReqID string // HOLD's request id
	// ID is the lease id of RENEW and RELEASE. For a HOLD whose outcome is
	// Unknown, it is the lease its request id was seen granted in this
	// partition, if any (by LOCK-03 the only lease it can have been granted),
	// with its Fence; empty: a grant nobody saw.
	ID    string
	Fence int64
	// Gaps and Above narrow the fence of a grant nobody saw (a HOLD of
	// unknown outcome without ID): one of Gaps, in order, or any above
	// Above. Fences count grants one by one (SPEC §2), so a grant nobody
	// saw has a fence between those that were seen, or above them all.
	// Neither: any fence.
	Gaps  []int64
	Above int64
	// Granted, for a HOLD of unknown outcome: the fences seen granted on
	// this key, in order. Its grant can only follow those of the smaller
	// ones (LOCK-02).
	Granted []int64
	TTL     int64 // ms: HOLD's TTL, the lease's ttl
	Wait    int64 // ms: HOLD's WAIT, -1 for none (only described)
	// Call is when the command was sent; Return when its reply came or,
	// for an unknown outcome, the latest time it can have been processed
	// (math.MaxInt64: no bound). Nanoseconds on the clock of the store's
	// deadlines.
	Call, Return int64
}

// Outcome is how a command was answered.
type Outcome uint8

const (
	// OK: HOLD granted (ID, Fence, Left); RENEW answered (Left); RELEASE
	// :1; INFO of a held key (Fence; 0 for a free key with lingering
	// places); GET of a present key (Value); SET written.
	OK Outcome = iota
	// Null: HOLD not granted within its WAIT; INFO or GET of a free or
	// missing key.
	Null
	// Lost: -LOST (Reason).
	Lost
	// Refused: another error reply, by which the store changed nothing:
	// a superseded HOLD, SET's -FENCED.
	Refused
	// Unknown: the reply never came; the command may have taken effect
	// or not.
	Unknown
)

func (o Outcome) String() string {
	switch o {
	case OK:
		return "ok"
	case Null:
		return "null"
	case Lost:
		return "LOST"
	case Refused:
		return "refused"
	}
	return "unknown"
}

// LeaseOutput is a command's reply.
type LeaseOutput struct {
	Outcome Outcome
	ID      string
	Fence   int64
	Left    int64  // ms to the deadline: HOLD granted, RENEW
	Reason  string // Lost's reason, Refused's text
}

// LeaseOp makes a porcupine operation of a command: an unknown outcome
// returns at +infinity (see the package doc). A caller that knows a time
// after which the command can have had no effect may lower the operation's
// Return (and in.Return) to it, if the operation that shows it (a later
// grant, the lease's end) leaves the command no effect when placed after it.
func LeaseOp(client int, in LeaseInput, out LeaseOutput) porcupine.Operation {
	ret := in.Return
	if out.Outcome == Unknown {
		ret = math.MaxInt64
	}
	return porcupine.Operation{ClientId: client, Input: in, Call: in.Call, Output: out, Return: ret}
}

// leaseState is one (lock, key): its holder, if any, and bounds of the
// holder's deadline.
type leaseState struct {
	held  bool
	id    string
	reqid string
	fence int64
	ttl   int64 // ns, the lease's
	// The holder's deadline lies in [dlo, dhi]; it may have passed.
	dlo, dhi int64
	// since is a lower bound of the time of every command after this
	// state: no earlier command was processed before since.
	since int64
	last  int64 // the largest fence granted (LOCK-02)
	// ghost: until when a lease granted by a reply nobody saw may live
	// (0: none). Such a lease explains a null answer; it is not the
	// holder, and blocks no grant (see Leases).
	ghost int64
}

// Leases is the sequential specification of the lease lock of one
// (lock, key): LOCK-01 (a grant only of a key whose lease has ended, so never
// two live leases), LOCK-02 (each grant's fence above every earlier one),
// LOCK-03 (a retried HOLD is answered with its lease, not renewed, or -LOST
// once it ended), LOCK-04/05 (only the holder's id renews or releases; an
// ended lease is never renewed), LOCK-06 (a lease ends at its deadline,
// grant or last renewal + ttl, and not before), and LOCK.INFO showing the
// holder's fence.
//
// A HOLD whose reply was lost may have granted a lease. If its request id
// was seen granted elsewhere, that is the lease it granted, and the model
// follows it exactly. If not, nobody saw the lease, and the model does
// not make it the holder: it only lets it explain a null answer (the key
// was held) until the latest it could run out, and does not let it block
// another grant. Placed exactly, such grants make the search exponential
// in their number; this way they only weaken, for a while, the check that
// a null answer had a live lease behind it.
var Leases = porcupine.Model{
	Partition: partitionBy(func(in any) string { return in.(LeaseInput).Key }),
	Init:      func() any { return leaseState{} },
	Step: func(state, input, output any) (bool, any) {
		return leaseStep(state.(leaseState), input.(LeaseInput), output.(LeaseOutput))
	},
	DescribeOperation: func(input, output any) string {
		return describeLease(input.(LeaseInput), output.(LeaseOutput))
	},
	DescribeState: func(state any) string {
		st := state.(leaseState)
		if !st.held {
			return fmt.Sprintf("free (last fence %d)", st.last)
		}
		return fmt.Sprintf("%s/%d for %s, deadline in [%s, %s]", short(st.id), st.fence, short(st.reqid), seconds(st.dlo), seconds(st.dhi))
	},
}

func leaseStep(st leaseState, in LeaseInput, out LeaseOutput) (bool, any) {
	// The earliest in can have been processed, and whether the holder's
	// lease can have been live then, or have ended by then.
	now := max(st.since, in.Call)
	live := st.held && now < add(st.dhi, slack)
	gone := !st.held || add(in.Return, slack) >= st.dlo
	mine := st.held && st.id != "" && st.id == in.ID
	free := func() leaseState { return leaseState{since: now, last: st.last, ghost: st.ghost} }
	// over is a reply that says a lease has ended: if the holder's, it
	// can only have run out (anything else the state would show).
	over := func(holders bool) (bool, any) {
		switch {
		case !holders:
			return true, st
		case !gone:
			return false, st
		}
		return true, free()
	}
	if out.Outcome == Refused {
		return true, st // the store did nothing
	}

	switch in.Cmd {
	case Hold:
		switch out.Outcome {
		case OK:
			if st.held && st.reqid == in.ReqID && st.id == out.ID {
				// A retry answered with the lease its request has
				// (LOCK-03): live, the same, and not renewed.
				if !live || st.fence != out.Fence {
					return false, st
				}
				st.dlo = max(st.dlo, now+out.Left*msNs)
				st.dhi = min(st.dhi, add(in.Return, (out.Left+1)*msNs))
				return st.dlo <= add(st.dhi, slack), st
			}
			if st.held && st.reqid == in.ReqID && add(in.Return, slack) < add(st.dlo, st.ttl) {
				// Another lease for the request while the first is
				// remembered.
				return false, st
			}
			if !gone || out.Fence <= st.last {
				return false, st
			}
			if st.held {
				now = max(now, st.dlo) // it waited for the lease to end
			}
			return true, leaseState{held: true, id: out.ID, reqid: in.ReqID, fence: out.Fence, ttl: in.TTL * msNs,
				dlo: now + out.Left*msNs, dhi: add(in.Return, (out.Left+1)*msNs), since: now, last: out.Fence, ghost: st.ghost}
		case Null:
			// The key was held when the request came: a free key is
			// granted at once, and a held one to its own request's
			// retry.
			return (live && st.reqid != in.ReqID) || (st.ghost > 0 && now < add(st.ghost, slack)), st
		case Lost:
			return over(st.held && st.reqid == in.ReqID)
		case Unknown:
			ttl := in.TTL * msNs
			if in.ID == "" {
				// A grant nobody saw, if any, with a fence nobody saw,
				// after the grants of the smaller fences seen here.
				if f := unseenFence(in, st.last); f == -1 || st.last >= below(in.Granted, f) {
					st.ghost = max(st.ghost, add(in.Return, ttl))
				}
				return true, st
			}
			if (st.held && st.reqid == in.ReqID) || !gone || in.Fence <= st.last || st.last < below(in.Granted, in.Fence) {
				// Nothing it can grant now: its lease is out already,
				// the key is held, or it is not its fence's turn.
				return true, st
			}
			if st.held {
				now = max(now, st.dlo)
			}
			return true, leaseState{held: true, id: in.ID, reqid: in.ReqID, fence: in.Fence, ttl: ttl,
				dlo: now + ttl, dhi: add(in.Return, ttl), since: now, last: in.Fence, ghost: st.ghost}
		}
	case Renew:
		switch out.Outcome {
		case OK:
			if !mine || !live {
				return false, st
			}
			st.dlo, st.dhi, st.since = now+out.Left*msNs, add(in.Return, (out.Left+1)*msNs), now
			return true, st
		case Lost:
			return over(mine)
		case Unknown:
			if mine && live {
				st.dlo, st.dhi, st.since = now+st.ttl, add(in.Return, st.ttl), now
			}
			return true, st
		}
	case Release:
		switch out.Outcome {
		case OK:
			if mine {
				if !live {
					return false, st
				}
				return true, free()
			}
			// :1 again for a retried RELEASE of a lease this
			// command released.
			return true, st
		case Lost:
			return over(mine)
		case Unknown:
			if mine && live {
				return true, free()
			}
			return true, st
		}
	case Info:
		switch {
		case out.Outcome == Unknown:
			return true, st
		case out.Outcome == Null || (out.Outcome == OK && out.Fence == 0):
			return over(st.held)
		case out.Outcome == OK:
			return (live && st.fence == out.Fence) || (st.ghost > 0 && now < add(st.ghost, slack) && out.Fence > st.last), st
		}
	}
	return false, st
}

// unseenFence is the fence of a grant nobody saw, made after fence last:
// the least it can be, or -1 if anything goes.
func unseenFence(in LeaseInput, last int64) int64 {
	if len(in.Gaps) == 0 && in.Above == 0 {
		return -1
	}
	if i, _ := slices.BinarySearch(in.Gaps, last+1); i < len(in.Gaps) {
		return in.Gaps[i]
	}
	return max(last, in.Above) + 1
}

// below is the largest of fences (in order) below f, 0 if none.
func below(fences []int64, f int64) int64 {
	if i, _ := slices.BinarySearch(fences, f); i > 0 {
		return fences[i-1]
	}
	return 0
}

// add is a + b, saturating at math.MaxInt64 (b >= 0).
func add(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

func describeLease(in LeaseInput, out LeaseOutput) string {
	var call string
	switch in.Cmd {
	case Hold:
		call = fmt.Sprintf("hold(%s, wait %d)", short(in.ReqID), in.Wait)
	case Renew:
		call = fmt.Sprintf("renew(%s)", short(in.ID))
	case Release:
		call = fmt.Sprintf("release(%s)", short(in.ID))
	default:
		call = "info"
	}
	switch out.Outcome {
	case OK:
		switch in.Cmd {
		case Hold:
			return fmt.Sprintf("%s -> %s/%d, %d ms", call, short(out.ID), out.Fence, out.Left)
		case Renew:
			return fmt.Sprintf("%s -> %d ms", call, out.Left)
		case Info:
			return fmt.Sprintf("%s -> fence %d", call, out.Fence)
		}
		return call + " -> ok"
	case Lost:
		return call + " -> LOST " + out.Reason
	case Refused:
		return call + " -> " + out.Reason
	case Unknown:
		if in.Cmd == Hold && in.ID != "" {
			return fmt.Sprintf("%s -> ? (%s/%d was seen)", call, short(in.ID), in.Fence)
		}
		return call + " -> ?"
	}
	return call + " -> null"
}

func short(id string) string {
	if len(id) > 8 {
		return id[:8] + "…"
	}
	if id == "" {
		return "?"
	}
	return id
}

func seconds(t int64) string {
	if t == math.MaxInt64 {
		return "∞"
	}
	return fmt.Sprintf("%.3fs", float64(t)/1e9)
}

// partitionBy makes a Partition function that splits a history by the key
// of its inputs, in the order of the keys.
func partitionBy(key func(input any) string) func([]porcupine.Operation) [][]porcupine.Operation {
	return func(history []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[string][]porcupine.Operation{}
		for _, op := range history {
			k := key(op.Input)
			byKey[k] = append(byKey[k], op)
		}
		keys := make([]string, 0, len(byKey))
		for k := range byKey {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, cmp.Compare)
		out := make([][]porcupine.Operation, 0, len(keys))
		for _, k := range keys {
			out = append(out, byKey[k])
		}
		return out
	}
}

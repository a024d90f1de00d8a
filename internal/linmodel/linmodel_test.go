package linmodel

import (
	"math"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// at is a time of a hand-made history: milliseconds after its start.
func at(msec float64) int64 { return int64(msec * float64(time.Millisecond)) }

// Each model must refuse what the store must never do and accept what it
// may do, faults included, so that a pass of a real history means
// something: every case is a small hand-made history, linearizable or not.
func TestLeasesHandMade(t *testing.T) {
	const ttl = 1000 // ms
	hold := func(client int, reqid string, call, ret float64, out LeaseOutput) porcupine.Operation {
		return LeaseOp(client, LeaseInput{Cmd: Hold, Key: "k", ReqID: reqid, TTL: ttl, Wait: 0, Call: at(call), Return: at(ret)}, out)
	}
	// An unknown HOLD of reqid, its reply lost, whose request was seen
	// granted id/fence elsewhere (id "": nowhere).
	lostHold := func(client int, reqid string, call float64, id string, fence int64) porcupine.Operation {
		return LeaseOp(client, LeaseInput{Cmd: Hold, Key: "k", ReqID: reqid, ID: id, Fence: fence, TTL: ttl, Call: at(call), Return: math.MaxInt64},
			LeaseOutput{Outcome: Unknown})
	}
	// An unknown HOLD whose request nobody saw granted, while the fences
	// nobody saw were gaps and those above above, and those seen on the
	// key seen.
	unseenHold := func(client int, reqid string, call float64, gaps []int64, above int64, seen []int64) porcupine.Operation {
		return LeaseOp(client, LeaseInput{Cmd: Hold, Key: "k", ReqID: reqid, Gaps: gaps, Above: above, Granted: seen, TTL: ttl, Call: at(call), Return: math.MaxInt64},
			LeaseOutput{Outcome: Unknown})
	}
	cmd := func(client int, c LeaseCmd, id string, call, ret float64, out LeaseOutput) porcupine.Operation {
		return LeaseOp(client, LeaseInput{Cmd: c, Key: "k", ID: id, Call: at(call), Return: at(ret)}, out)
	}
	granted := func(id string, fence, left int64) LeaseOutput {
		return LeaseOutput{Outcome: OK, ID: id, Fence: fence, Left: left}
	}
	a, b := granted("aaaaaaaa", 10, ttl), granted("bbbbbbbb", 11, ttl)
	null := LeaseOutput{Outcome: Null}
	ok := LeaseOutput{Outcome: OK}
	left := func(ms int64) LeaseOutput { return LeaseOutput{Outcome: OK, Left: ms} }
	lost := func(why string) LeaseOutput { return LeaseOutput{Outcome: Lost, Reason: why} }
	unknown := LeaseOutput{Outcome: Unknown}

	for _, tc := range []struct {
		name string
		ops  []porcupine.Operation
		ok   bool
	}{
		{"grant, release, grant", []porcupine.Operation{
			hold(0, "ra", 0, 1, a), cmd(0, Release, a.ID, 2, 3, ok), hold(1, "rb", 4, 5, b),
		}, true},
		{"release and grant at once", []porcupine.Operation{
			hold(0, "ra", 0, 1, a), cmd(0, Release, a.ID, 2, 5, ok), hold(1, "rb", 3, 4, b),
		}, true},
		// LOCK-01: two live leases.
		{"grant while the lease is live", []porcupine.Operation{hold(0, "ra", 0, 1, a), hold(1, "rb", 500, 501, b)}, false},
		// LOCK-06: it ends at its deadline, not before, give or take Slack.
		{"grant after the deadline", []porcupine.Operation{hold(0, "ra", 0, 1, a), hold(1, "rb", 1001, 1002, b)}, true},
		{"grant within Slack of the deadline", []porcupine.Operation{hold(0, "ra", 0, 1, a), hold(1, "rb", 997, 998.5, b)}, true},
		{"grant 5 ms before the deadline", []porcupine.Operation{hold(0, "ra", 0, 1, a), hold(1, "rb", 994, 995, b)}, false},
		{"a renewal moves the deadline", []porcupine.Operation{
			hold(0, "ra", 0, 1, a), cmd(0, Renew, a.ID, 600, 601, left(ttl)), hold(1, "rb", 1200, 1201, b),
		}, false},
		{"renewed, then run out", []porcupine.Operation{
			hold(0, "ra", 0, 1, a), cmd(0, Renew, a.ID, 600, 601, left(ttl)), hold(1, "rb", 1603, 1604, b),
		}, true},
		// LOCK-05: an ended lease is never renewed.
		{"renew after the deadline", []porcupine.Operation{hold(0, "ra", 0, 1, a), cmd(0, Renew, a.ID, 1010, 1011, left(ttl))}, false},
		{"renew after release", []porcupine.Operation{
			hold(0, "ra", 0, 1, a), cmd(0, Release, a.ID, 2, 3, ok), cmd(0, Renew, a.ID, 4, 5, left(ttl)),
		}, false},
		{"LOST while live", []porcupine.Operation{hold(0, "ra", 0, 1, a), cmd(0, Renew, a.ID, 500, 501, lost("expired"))}, false},
		{"LOST after the deadline", []porcupine.Operation{hold(0, "ra", 0, 1, a), cmd(0, Renew, a.ID, 1010, 1011, lost("expired"))}, true},
		// LOCK-04: only the holder's id.
		{"renew by another id", []porcupine.Operation{hold(0, "ra", 0, 1, a), cmd(1, Renew, b.ID, 2, 3, left(ttl))}, false},
		{"release by another id", []porcupine.Operation{
			hold(0, "ra", 0, 1, a), cmd(1, Release, b.ID, 2, 3, ok), hold(1, "rb", 4, 5, b),
		}, false},
		// LOCK-02.
		{"fence goes back", []porcupine.Operation{
			hold(0, "rb", 0, 1, b), cmd(0, Release, b.ID, 2, 3, ok), hold(1, "ra", 4, 5, a),
		}, false},
		// A null answer means the key was held when the request came.
		{"null on a held key", []porcupine.Operation{hold(0, "ra", 0, 1, a), hold(1, "rb", 2, 3, null)}, true},
		{"null on a free key", []porcupine.Operation{hold(0, "ra", 0, 1, null)}, false},
		{"null after the deadline", []porcupine.Operation{hold(0, "ra", 0, 1, a), hold(1, "rb", 1010, 1011, null)}, false},
		// LOCK-03: a retry gets the same lease, not renewed.
		{"retry answered with its lease", []porcupine.Operation{
			hold(0, "ra", 0, 1, a), hold(0, "ra", 600, 601, granted(a.ID, a.Fence, 399)), hold(1, "rb", 1002, 1003, b),
		}, true},
		{"retry renews the lease", []porcupine.Operation{
			hold(0, "ra", 0, 1, a), hold(0, "ra", 600, 601, granted(a.ID, a.Fence, ttl)),
		}, false},
		{"retry answered with another lease", []porcupine.Operation{
			hold(0, "ra", 0, 1, a), hold(0, "ra", 600, 601, b),
		}, false},
		{"retry answered with another lease after the first ran out", []porcupine.Operation{
			hold(0, "ra", 0, 1, a), hold(0, "ra", 1500, 1501, b),
		}, false},
		{"retry answered LOST while live", []porcupine.Operation{
			hold(0, "ra", 0, 1, a), hold(0, "ra", 600, 601, lost("expired")),
		}, false},
		{"retry answered LOST once ended", []porcupine.Operation{
			hold(0, "ra", 0, 1, a), cmd(0, Release, a.ID, 2, 3, ok), hold(0, "ra", 600, 601, lost("released")),
		}, true},
		// Unknown outcomes: may have taken effect, or not.
		{"a lost RELEASE freed the key", []porcupine.Operation{
			hold(0, "ra", 0, 1, a), cmd(0, Release, a.ID, 10, 11, unknown), hold(1, "rb", 20, 21, b),
		}, true},
		{"a lost RELEASE that did not happen", []porcupine.Operation{
			hold(0, "ra", 0, 1, a), cmd(0, Release, a.ID, 10, 11, unknown), cmd(0, Renew, a.ID, 20, 21, left(ttl)),
		}, true},
		{"a lost RELEASE took effect, then a renewal", []porcupine.Operation{
			hold(0, "ra", 0, 1, a), cmd(0, Release, a.ID, 10, 11, unknown), hold(1, "rb", 20, 21, b), cmd(0, Renew, a.ID, 30, 31, left(ttl)),
		}, false},
		{"a lost grant holds the key", []porcupine.Operation{
			lostHold(0, "ra", 0, a.ID, a.Fence), hold(1, "rb", 10, 11, null),
		}, true},
		{"a lost grant nobody saw holds the key", []porcupine.Operation{
			lostHold(0, "ra", 0, "", 0), hold(1, "rb", 10, 11, null),
		}, true},
		// One nobody saw explains a null, but blocks no grant (Leases).
		{"a grant within the ttl of a lost grant nobody saw", []porcupine.Operation{
			lostHold(0, "ra", 0, "", 0), hold(1, "rb", 10, 11, null), hold(1, "rc", 500, 501, b),
		}, true},
		{"a grant within the ttl of a lost grant that was seen", []porcupine.Operation{
			lostHold(0, "ra", 0, a.ID, a.Fence), hold(1, "rb", 10, 11, null), hold(1, "rc", 500, 501, b),
		}, false},
		// Fences count grants: one nobody saw took a fence nobody saw,
		// after the grants of the smaller fences seen on the key.
		{"a lost grant between two seen fences", []porcupine.Operation{
			hold(0, "ra", 0, 1, a), cmd(0, Release, a.ID, 2, 3, ok), unseenHold(2, "rc", 4, []int64{11}, 12, []int64{10, 12}),
			hold(1, "rb", 10, 11, null), hold(1, "rb2", 1200, 1201, granted("bbbbbbbb", 12, ttl)),
		}, true},
		{"a lost grant with no fence left for it before a seen one", []porcupine.Operation{
			hold(0, "ra", 0, 1, a), cmd(0, Release, a.ID, 2, 3, ok), unseenHold(2, "rc", 4, nil, 11, []int64{10, 11}),
			hold(1, "rb", 10, 11, null), hold(1, "rb2", 1200, 1201, b),
		}, false},
		{"a lost grant, then its retry", []porcupine.Operation{
			lostHold(0, "ra", 0, a.ID, a.Fence), hold(1, "rb", 10, 11, null), hold(0, "ra", 300, 301, granted(a.ID, a.Fence, 800)),
		}, true},
		{"a lost renewal kept the lease", []porcupine.Operation{
			hold(0, "ra", 0, 1, a), cmd(0, Renew, a.ID, 900, 901, unknown), hold(1, "rb", 1500, 1501, null),
		}, true},
		{"LOCK.INFO shows the holder", []porcupine.Operation{
			hold(0, "ra", 0, 1, a), cmd(1, Info, "", 2, 3, LeaseOutput{Outcome: OK, Fence: a.Fence}),
		}, true},
		{"LOCK.INFO shows another fence", []porcupine.Operation{
			hold(0, "ra", 0, 1, a), cmd(1, Info, "", 2, 3, LeaseOutput{Outcome: OK, Fence: 9}),
		}, false},
		{"LOCK.INFO shows a held key free", []porcupine.Operation{hold(0, "ra", 0, 1, a), cmd(1, Info, "", 2, 3, null)}, false},
	} {
		if got := porcupine.CheckOperations(Leases, tc.ops); got != tc.ok {
			t.Errorf("%s: linearizable = %v, want %v", tc.name, got, tc.ok)
		}
	}
}

// LOCK-12 and durability, as FencedRegister sees them.
func TestFencedRegisterHandMade(t *testing.T) {
	set := func(client int, call, ret int64, value string, fence int64, o Outcome) porcupine.Operation {
		if o == Unknown {
			ret = math.MaxInt64
		}
		return RegisterOp(client, call, ret, RegisterInput{Key: "c", Set: true, Value: value, Fence: fence}, RegisterOutput{Outcome: o})
	}
	get := func(client int, call, ret int64, value string) porcupine.Operation {
		out := RegisterOutput{Outcome: OK, Value: value}
		if value == "" {
			out.Outcome = Null
		}
		return RegisterOp(client, call, ret, RegisterInput{Key: "c"}, out)
	}
	for _, tc := range []struct {
		name string
		ops  []porcupine.Operation
		ok   bool
	}{
		{"read your write", []porcupine.Operation{get(0, 0, 1, ""), set(0, 2, 3, "1:10", 10, OK), get(0, 4, 5, "1:10")}, true},
		{"a read during a write sees either", []porcupine.Operation{
			set(0, 0, 10, "1:10", 10, OK), get(1, 1, 2, ""), get(2, 3, 4, "1:10"),
		}, true},
		{"a read goes back", []porcupine.Operation{
			set(0, 0, 10, "1:10", 10, OK), get(1, 1, 2, "1:10"), get(2, 3, 4, ""),
		}, false},
		{"an acknowledged write lost", []porcupine.Operation{set(0, 0, 1, "1:10", 10, OK), get(1, 2, 3, "")}, false},
		{"a stale read", []porcupine.Operation{
			set(0, 0, 1, "1:10", 10, OK), set(1, 2, 3, "2:11", 11, OK), get(2, 4, 5, "1:10"),
		}, false},
		// LOCK-12.
		{"an older fence refused", []porcupine.Operation{
			set(0, 0, 1, "1:11", 11, OK), set(1, 2, 3, "1:10", 10, Refused), get(2, 4, 5, "1:11"),
		}, true},
		{"an older fence written", []porcupine.Operation{set(0, 0, 1, "1:11", 11, OK), set(1, 2, 3, "1:10", 10, OK)}, false},
		{"the same fence written again", []porcupine.Operation{set(0, 0, 1, "1:11", 11, OK), set(0, 2, 3, "2:11", 11, OK)}, true},
		{"refused with no newer fence", []porcupine.Operation{set(0, 0, 1, "1:10", 10, OK), set(1, 2, 3, "1:11", 11, Refused)}, false},
		{"refused on a missing key", []porcupine.Operation{set(1, 2, 3, "1:11", 11, Refused)}, false},
		{"refused, concurrent with the newer fence", []porcupine.Operation{
			set(0, 0, 10, "1:11", 11, OK), set(1, 2, 3, "1:10", 10, Refused),
		}, true},
		// Unknown outcomes.
		{"a lost write that took effect", []porcupine.Operation{set(0, 0, 1, "1:10", 10, Unknown), get(1, 5, 6, "1:10")}, true},
		{"a lost write that did not", []porcupine.Operation{set(0, 0, 1, "1:10", 10, Unknown), get(1, 5, 6, "")}, true},
		{"a lost write seen, then unseen", []porcupine.Operation{
			set(0, 0, 1, "1:10", 10, Unknown), get(1, 5, 6, "1:10"), get(1, 7, 8, ""),
		}, false},
		{"a lost write explains a refusal", []porcupine.Operation{
			set(0, 0, 1, "1:11", 11, Unknown), set(1, 5, 6, "1:10", 10, Refused),
		}, true},
		{"a lost write with an older fence cannot win", []porcupine.Operation{
			set(0, 0, 1, "1:11", 11, OK), set(1, 2, 3, "1:10", 10, Unknown), get(2, 5, 6, "1:10"),
		}, false},
	} {
		if got := porcupine.CheckOperations(FencedRegister, tc.ops); got != tc.ok {
			t.Errorf("%s: linearizable = %v, want %v", tc.name, got, tc.ok)
		}
	}
}

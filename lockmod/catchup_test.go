package lockmod

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// LOCK-06, LOCK-01, LOCK-03, LOCK-05, LOCK-08: with no timer firing, so
// that every method meets what the clock made due, a Manager whose lock
// methods run only the due events of what they read (catchUp) answers
// every call as one that advances everything first does, over random
// holds (retries, WAITs, MAXHOLDs), renewals, releases, revokes, abandons
// and Info; and once both have advanced everything (Stats), every ticket
// and counter is the same. Only fences and lease ids may differ: the
// focused Manager grants other keys later, in the order they are read.
// Each step of one key may run more than a sweep step of events (the step
// is drawn small), and then the focused Manager advances everything too.
func TestFocusedCatchUpAnswersAsTheFullAdvance_LOCK06(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		clock := NewFakeClock(start)
		still := stillClock{clock}
		step := rapid.IntRange(1, 6).Draw(rt, "sweepStep")
		tw := &twins{
			focused: New(Config{Clock: still}),
			ref:     New(Config{Clock: still}),
			leases:  map[string][2]string{},
		}
		tw.focused.sweepStep, tw.ref.sweepStep = step, step
		tw.ref.advanceOnCatchUp = true
		defer tw.focused.Close()
		defer tw.ref.Close()
		actions := []func(*rapid.T){tw.hold, tw.hold, tw.hold, tw.renew, tw.release, tw.revoke, tw.info, tw.abandon, tw.settle,
			func(rt *rapid.T) {
				tw.settle(rt) // lag only within one instant: a grant made later lasts longer
				d := time.Duration(rapid.IntRange(1, 12).Draw(rt, "advance")) * 250 * ms
				rt.Logf("ADVANCE %v", d)
				clock.Advance(d)
			},
		}
		for range rapid.IntRange(20, 300).Draw(rt, "steps") {
			actions[rapid.IntRange(0, len(actions)-1).Draw(rt, "action")](rt)
			for _, m := range []*Manager{tw.focused, tw.ref} {
				if err := checkInvariants(m); err != nil {
					rt.Fatal(err)
				}
			}
		}
		tw.settle(rt)
	})
}

// twins are two Managers given the same calls: focused as it is, ref with
// advanceOnCatchUp.
type twins struct {
	focused, ref *Manager
	reqids       []string
	leases       map[string][2]string // reqid: its latest lease's id in each
	leased       []string             // reqids in leases, in the order first granted
	pending      [][2]Ticket
	pendingIDs   []string // the reqid of each pending pair
}

var twinKeys = [][2]string{{"a", "1"}, {"a", "2"}, {"b", "1"}}

// outcome is err as the tests compare it: a *LostError by its reason.
func outcome(err error) string {
	var lost *LostError
	switch {
	case err == nil:
		return "ok"
	case errors.As(err, &lost):
		return "LOST " + lost.Reason
	}
	return err.Error()
}

// answered compares a pair of tickets that should both be done, or both
// waiting; waiting ones are kept for settle.
func (tw *twins) answered(rt *rapid.T, reqid string, f, r Ticket) {
	if isDone(f) != isDone(r) {
		var g Grant
		var err error
		if isDone(f) {
			g, err = f.Result()
		} else {
			g, err = r.Result()
		}
		rt.Fatalf("%s: focused ticket done=%v, the full advance's %v (%+v, %v)", reqid, isDone(f), isDone(r), g, err)
	}
	if !isDone(f) {
		tw.pending = append(tw.pending, [2]Ticket{f, r})
		tw.pendingIDs = append(tw.pendingIDs, reqid)
		return
	}
	gf, ef := f.Result()
	gr, er := r.Result()
	if outcome(ef) != outcome(er) || gf.TTLLeft != gr.TTLLeft {
		rt.Fatalf("%s: focused (%+v, %v), the full advance (%+v, %v)", reqid, gf, ef, gr, er)
	}
	if ef == nil {
		if _, ok := tw.leases[reqid]; !ok {
			tw.leased = append(tw.leased, reqid)
		}
		tw.leases[reqid] = [2]string{gf.LeaseID(), gr.LeaseID()}
	}
}

func (tw *twins) hold(rt *rapid.T) {
	k := twinKeys[rapid.IntRange(0, len(twinKeys)-1).Draw(rt, "key")]
	req := drawHold(rt, k, &tw.reqids, 2)
	reqid := req.ReqID
	rt.Logf("HOLD %v %s ttl=%v wait=%v/%v maxhold=%v", k, reqid, req.TTL, req.HasWait, req.Wait, req.MaxHold)
	tw.answered(rt, reqid, tw.focused.Hold(req), tw.ref.Hold(req))
}

// lease draws the ids of a lease granted to both, or a made-up one.
func (tw *twins) lease(rt *rapid.T) (f, r string) {
	if len(tw.leased) == 0 || rapid.IntRange(0, 9).Draw(rt, "madeUp") == 0 {
		id := fmt.Sprintf("%032x", rapid.Uint64().Draw(rt, "madeUpID"))
		return id, id
	}
	ids := tw.leases[rapid.SampledFrom(tw.leased).Draw(rt, "lease")]
	return ids[0], ids[1]
}

func (tw *twins) renew(rt *rapid.T) {
	f, r := tw.lease(rt)
	ttl := time.Duration(rapid.IntRange(0, 4).Draw(rt, "renewTTL")) * sec
	rt.Logf("RENEW %s %v", f, ttl)
	lf, ef := tw.focused.Renew(f, ttl)
	lr, er := tw.ref.Renew(r, ttl)
	if lf != lr || outcome(ef) != outcome(er) {
		rt.Fatalf("Renew: focused (%v, %v), the full advance (%v, %v)", lf, ef, lr, er)
	}
}

func (tw *twins) release(rt *rapid.T) {
	f, r := tw.lease(rt)
	rt.Logf("RELEASE %s", f)
	if ef, er := tw.focused.Release(f), tw.ref.Release(r); outcome(ef) != outcome(er) {
		rt.Fatalf("Release: focused %v, the full advance %v", ef, er)
	}
}

func (tw *twins) revoke(rt *rapid.T) {
	k := twinKeys[rapid.IntRange(0, len(twinKeys)-1).Draw(rt, "key")]
	rt.Logf("REVOKE %v", k)
	if f, r := tw.focused.Revoke(k[0], k[1]), tw.ref.Revoke(k[0], k[1]); f != r {
		rt.Fatalf("Revoke %v: focused %v, the full advance %v", k, f, r)
	}
}

func (tw *twins) info(rt *rapid.T) {
	k := twinKeys[rapid.IntRange(0, len(twinKeys)-1).Draw(rt, "key")]
	rt.Logf("INFO %v", k)
	f, okf := tw.focused.Info(k[0], k[1])
	r, okr := tw.ref.Info(k[0], k[1])
	if okf != okr || (f.Fence == 0) != (r.Fence == 0) {
		rt.Fatalf("Info %v: focused (%+v, %v), the full advance (%+v, %v)", k, f, okf, r, okr)
	}
	f.Fence, r.Fence = 0, 0
	if f != r {
		rt.Fatalf("Info %v: focused %+v, the full advance %+v", k, f, r)
	}
}

func (tw *twins) abandon(rt *rapid.T) {
	if len(tw.pending) == 0 {
		return
	}
	i := rapid.IntRange(0, len(tw.pending)-1).Draw(rt, "ticket")
	rt.Logf("ABANDON %s", tw.pendingIDs[i])
	p := tw.pending[i]
	p[0].Abandon()
	p[1].Abandon()
}

// settle advances everything in both (Stats) and compares their counters
// and every ticket that was waiting.
func (tw *twins) settle(rt *rapid.T) {
	rt.Logf("SETTLE")
	if f, r := tw.focused.Stats(), tw.ref.Stats(); f != r {
		rt.Fatalf("Stats: focused %+v, the full advance %+v", f, r)
	}
	pending, ids := tw.pending, tw.pendingIDs
	tw.pending, tw.pendingIDs = nil, nil
	for i, p := range pending {
		tw.answered(rt, ids[i], p[0], p[1])
	}
}

package lockmod

import (
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// TestProperties drives a Manager with random sequences of holds (new
// requests and retries, any WAIT, any MAXHOLD), renewals, releases, revokes,
// abandons and clock advances over a few keys, and checks every step against
// a simple model of SPEC §3. The Manager reports each grant and end with its
// store time (Manager.trace); the model checks that history:
//
//   - LOCK-01: a key is granted only when the model has no live lease on it;
//   - LOCK-02: every fence is larger than every earlier one (across an epoch
//     bump: the counter starts near 2^32);
//   - LOCK-03: a reqid gets a second lease only once its first is forgotten;
//     retries are answered with the same lease or its end;
//   - LOCK-05: renewing an ended lease never succeeds;
//   - LOCK-06, LOCK-07: leases end exactly at min(deadline, MAXHOLD), and a
//     key freed with open waiters is granted in the same step;
//   - LOCK-08: a grant goes to the open request that joined first.
func TestProperties(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) { runProperties(rt, false) })
}

// TestPropertiesHashCollisions runs the same with the reqid and key indexes
// hashing everything to four values, so that most probes meet entries of
// other names and reqids under their own hash.
func TestPropertiesHashCollisions(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) { runProperties(rt, true) })
}

func runProperties(rt *rapid.T, collide bool) {
	{
		p := newPropModel(rt)
		if collide {
			p.m.hashMask = 3
			p.m.order.hash = func(s string) uint32 { return uint32(len(s) % 2) }
		}
		defer p.m.Close()
		// Holds come thrice as often as the rest so that lines form.
		actions := map[string]func(*rapid.T){
			"hold": p.hold, "hold again": p.hold, "hold more": p.hold,
			"renew": p.renew, "release": p.release, "revoke": p.revoke,
			"abandon": p.abandon, "advance": p.advance, "advance more": p.advance,
		}
		names := make([]string, 0, len(actions))
		for n := range actions {
			names = append(names, n)
		}
		slices.Sort(names)
		p.check(rt)
		steps := rapid.IntRange(50, 400).Draw(rt, "steps")
		for range steps {
			actions[rapid.SampledFrom(names).Draw(rt, "action")](rt)
			p.check(rt)
		}
	}
}

const (
	pending = iota
	wantGrant
	wantErr
)

type expectation struct {
	tk      Ticket
	want    int
	err     error   // for wantErr; a *LostError is compared by reason
	lease   *mLease // for wantGrant
	ttlLeft time.Duration
}

type mReq struct {
	reqid, name string
	state       phase // waiting (open), lingering, or live (leased; the lease may have ended)
	ticket      Ticket
	waitEnd     instant // -1: no limit
	lingerEnd   instant
	seq         uint64
	ttl         time.Duration
	maxHold     time.Duration
	lease       *mLease
}

type mLease struct {
	id          leaseID
	name, reqid string
	fence       uint64
	grantAt     instant
	deadline    instant
	maxDeadline instant
	ttl, span   time.Duration
	ended       bool
	reason      reason
	endAt       instant
}

func (l *mLease) remembered(now instant) bool {
	return !l.ended || now < l.endAt+instant(l.span)
}

type propModel struct {
	clock *FakeClock
	m     *Manager
	trace []traceEvent
	seen  int
	last  instant // time of the last trace event

	reqs      map[string]*mReq
	reqids    []string
	leases    []*mLease
	byID      map[leaseID]*mLease
	holder    map[string]*mLease
	history   map[string][]*mLease // reqid -> every lease it got
	maxFence  uint64
	seq       uint64
	expects   []*expectation
	waitTks   []Ticket
	expectEnd *traceEvent // a Release or Revoke this step must end this lease
	handoff   string      // a grant on this key must come next
}

var propKeys = [][2]string{{"a", "1"}, {"a", "2"}, {"b", "1"}, {"a1", ""}}

func newPropModel(rt *rapid.T) *propModel {
	clock := NewFakeClock(start)
	first := math.MaxUint32 - uint32(rapid.IntRange(0, 40).Draw(rt, "firstNBelowWrap"))
	p := &propModel{
		clock:   clock,
		reqs:    map[string]*mReq{},
		byID:    map[leaseID]*mLease{},
		holder:  map[string]*mLease{},
		history: map[string][]*mLease{},
	}
	p.m = New(Config{Clock: clock, Epoch: 1, Bumper: &bumper{epoch: 1}, FirstN: first})
	p.m.trace = func(ev traceEvent) { p.trace = append(p.trace, ev) }
	return p
}

func (p *propModel) now() instant { return instant(p.clock.Now().Sub(start)) }

func name(i int) string { return string(keyName(nil, propKeys[i][0], propKeys[i][1])) }

func (p *propModel) expect(tk Ticket) *expectation {
	e := &expectation{tk: tk}
	p.expects = append(p.expects, e)
	return e
}

func (p *propModel) expectFor(tk Ticket) *expectation {
	for _, e := range p.expects {
		if e.tk == tk {
			return e
		}
	}
	panic("ticket not tracked")
}

// drawHold draws a HOLD of key (lock, key) for a rapid test: with a reqid
// drawn before (a retry) or a new one, added to reqids; a ttl of 1–4 s; no
// WAIT, WAIT without a limit, or WAIT 250 ms–3 s; and maybe a MAXHOLD of
// minMaxHold–8 half-seconds.
func drawHold(rt *rapid.T, key [2]string, reqids *[]string, minMaxHold int) HoldRequest {
	var reqid string
	if len(*reqids) > 0 && rapid.Bool().Draw(rt, "retry") {
		reqid = rapid.SampledFrom(*reqids).Draw(rt, "reqid")
	} else {
		reqid = "r" + strconv.Itoa(len(*reqids))
		*reqids = append(*reqids, reqid)
	}
	req := HoldRequest{Lock: key[0], Key: key[1], ReqID: reqid,
		TTL: time.Duration(rapid.IntRange(1, 4).Draw(rt, "ttl")) * sec}
	switch rapid.IntRange(0, 3).Draw(rt, "waitKind") {
	case 1:
		req.HasWait = true
	case 2, 3:
		req.HasWait, req.Wait = true, time.Duration(rapid.IntRange(1, 12).Draw(rt, "wait"))*250*ms
	}
	if rapid.Bool().Draw(rt, "hasMaxHold") {
		req.MaxHold = time.Duration(rapid.IntRange(minMaxHold, 8).Draw(rt, "maxHold")) * 500 * ms
	}
	return req
}

func (p *propModel) hold(rt *rapid.T) {
	k := rapid.IntRange(0, len(propKeys)-1).Draw(rt, "key")
	req := drawHold(rt, propKeys[k], &p.reqids, 1)
	reqid := req.ReqID
	n := name(k)
	now := p.now()
	rt.Logf("%v: HOLD %q %q %s ttl=%v wait=%v/%v maxhold=%v", time.Duration(now), req.Lock, req.Key, reqid, req.TTL, req.HasWait, req.Wait, req.MaxHold)

	tk := p.m.Hold(req)
	e := p.expect(tk)
	if !isDone(tk) {
		p.waitTks = append(p.waitTks, tk)
	}
	waitEnd := instant(-1)
	if req.HasWait {
		waitEnd = now + instant(req.Wait)
	}
	tryOnce := req.HasWait && req.Wait == 0
	join := func(r *mReq) {
		r.state, r.ticket, r.waitEnd, r.ttl, r.maxHold = waiting, tk, waitEnd, req.TTL, req.MaxHold
	}

	r := p.reqs[reqid]
	switch {
	case r != nil && r.name != n:
		e.want, e.err = wantErr, ErrReqIDInUse
	case r != nil && r.state == live && !r.lease.ended:
		e.want, e.lease, e.ttlLeft = wantGrant, r.lease, time.Duration(r.lease.deadline-now)
	case r != nil && r.state == live:
		e.want, e.err = wantErr, r.lease.reason.lost()
	case r != nil: // a place in line, open or lingering
		if r.state == waiting {
			old := p.expectFor(r.ticket)
			old.want, old.err = wantErr, ErrSuperseded
		}
		switch {
		case p.holder[n] == nil:
			join(r) // and granted now: onGrant checks it is first among the open
		case tryOnce:
			r.state, r.ticket, r.lingerEnd = lingering, Ticket{}, now+instant(DefaultLinger)
			r.ttl, r.maxHold = req.TTL, req.MaxHold
			e.want, e.err = wantErr, ErrNotGranted
		default:
			join(r)
		}
	default:
		if p.holder[n] != nil && tryOnce {
			e.want, e.err = wantErr, ErrNotGranted
			break
		}
		p.seq++
		r = &mReq{reqid: reqid, name: n, seq: p.seq}
		p.reqs[reqid] = r
		join(r)
	}
	p.replay(rt)
}

// pickLease draws a lease ever granted, or a made-up id.
func (p *propModel) pickLease(rt *rapid.T) (string, *mLease) {
	if len(p.leases) == 0 || rapid.IntRange(0, 9).Draw(rt, "madeUp") == 0 {
		return fmt.Sprintf("%032x", rapid.Uint64().Draw(rt, "madeUpID")), nil
	}
	l := rapid.SampledFrom(p.leases).Draw(rt, "lease")
	return hex.EncodeToString(l.id[:]), l
}

func (p *propModel) renew(rt *rapid.T) {
	id, l := p.pickLease(rt)
	ttl := time.Duration(rapid.IntRange(0, 4).Draw(rt, "renewTTL")) * sec
	now := p.now()
	rt.Logf("%v: RENEW %s %v", time.Duration(now), id, ttl)
	left, err := p.m.Renew(id, ttl)
	switch {
	case l == nil || !l.remembered(now):
		wantLost(rt, err, ReasonUnknownLease)
	case l.ended:
		wantLost(rt, err, reasonText[l.reason]) // LOCK-05: never renewed
	default:
		if err != nil {
			rt.Fatalf("renew of a live lease: %v", err)
		}
		if ttl == 0 {
			ttl = l.ttl
		}
		l.span = max(l.span, ttl)
		l.deadline = now + instant(ttl)
		if l.maxDeadline != 0 && l.deadline > l.maxDeadline {
			l.deadline = l.maxDeadline
		}
		if left != time.Duration(l.deadline-now) {
			rt.Fatalf("renew answered %v, want %v", left, time.Duration(l.deadline-now))
		}
	}
	p.replay(rt)
}

func (p *propModel) release(rt *rapid.T) {
	id, l := p.pickLease(rt)
	now := p.now()
	rt.Logf("%v: RELEASE %s", time.Duration(now), id)
	if l != nil && !l.ended {
		p.expectEnd = &traceEvent{id: l.id, reason: released, at: now}
	}
	err := p.m.Release(id)
	switch {
	case l == nil || !l.remembered(now):
		wantLost(rt, err, ReasonUnknownLease)
	case !l.ended || l.reason == released: // live, or a retried RELEASE
		if err != nil {
			rt.Fatalf("release: %v, want nil", err)
		}
	default:
		wantLost(rt, err, reasonText[l.reason])
	}
	p.replay(rt)
}

func (p *propModel) revoke(rt *rapid.T) {
	k := rapid.IntRange(0, len(propKeys)-1).Draw(rt, "key")
	now := p.now()
	rt.Logf("%v: REVOKE %q %q", time.Duration(now), propKeys[k][0], propKeys[k][1])
	l := p.holder[name(k)]
	if l != nil {
		p.expectEnd = &traceEvent{id: l.id, reason: revokedByAdmin, at: now}
	}
	if got := p.m.Revoke(propKeys[k][0], propKeys[k][1]); got != (l != nil) {
		rt.Fatalf("revoke answered %v with lease %v", got, l)
	}
	p.replay(rt)
}

func (p *propModel) abandon(rt *rapid.T) {
	if len(p.waitTks) == 0 {
		return
	}
	tk := rapid.SampledFrom(p.waitTks).Draw(rt, "ticket")
	now := p.now()
	rt.Logf("%v: ABANDON", time.Duration(now))
	tk.Abandon()
	for _, r := range p.reqs {
		if r.state == waiting && r.ticket == tk {
			r.state, r.ticket, r.lingerEnd = lingering, Ticket{}, now+instant(DefaultLinger)
			e := p.expectFor(tk)
			e.want, e.err = wantErr, ErrAbandoned
		}
	}
	p.replay(rt)
}

func (p *propModel) advance(rt *rapid.T) {
	d := time.Duration(rapid.IntRange(1, 12).Draw(rt, "advance")) * 250 * ms
	rt.Logf("%v: ADVANCE %v", time.Duration(p.now()), d)
	p.clock.Advance(d)
	p.replay(rt)
}

// lapse moves the model's places through time up to t: WAITs that ran out
// before t (at t too if inclusive) linger; lingers and remembered reqids that
// are over go. Leases end only by the trace, which onEnd checks.
func (p *propModel) lapse(t instant, inclusive bool) {
	for reqid, r := range p.reqs {
		if r.state == waiting && r.waitEnd >= 0 && (r.waitEnd < t || inclusive && r.waitEnd == t) {
			e := p.expectFor(r.ticket)
			e.want, e.err = wantErr, ErrNotGranted
			r.state, r.ticket, r.lingerEnd = lingering, Ticket{}, r.waitEnd+instant(DefaultLinger)
		}
		if r.state == lingering && r.lingerEnd <= t ||
			r.state == live && !r.lease.remembered(t) {
			delete(p.reqs, reqid)
		}
	}
}

// replay checks the grants and ends the Manager reported since the last step.
func (p *propModel) replay(rt *rapid.T) {
	for p.seen < len(p.trace) {
		ev := p.trace[p.seen]
		p.seen++
		if ev.at < p.last {
			rt.Fatalf("event at %v after one at %v", ev.at, p.last)
		}
		p.last = ev.at
		if p.handoff != "" && (!ev.grant || ev.name != p.handoff) {
			rt.Fatalf("LOCK-06: key %q freed with open waiters, next event %+v", p.handoff, ev)
		}
		p.handoff = ""
		p.lapse(ev.at, false)
		if ev.grant {
			p.onGrant(rt, ev)
		} else {
			p.onEnd(rt, ev)
		}
	}
	if p.handoff != "" {
		rt.Fatalf("LOCK-06: key %q freed with open waiters and not granted", p.handoff)
	}
	if p.expectEnd != nil {
		rt.Fatalf("lease %x should have ended (%s)", p.expectEnd.id, reasonText[p.expectEnd.reason])
	}
	now := p.now()
	p.lapse(now, true)
	for n, l := range p.holder {
		if l.deadline <= now {
			rt.Fatalf("LOCK-06: lease on %q live past its deadline %v (now %v)", n, l.deadline, now)
		}
	}
	for _, r := range p.reqs {
		if r.state == waiting && p.holder[r.name] == nil {
			rt.Fatalf("LOCK-06: %s waits for free key %q", r.reqid, r.name)
		}
	}
}

func (p *propModel) onGrant(rt *rapid.T, ev traceEvent) {
	if l := p.holder[ev.name]; l != nil {
		rt.Fatalf("LOCK-01: %q granted to %s at %v while %s holds it until %v", ev.name, ev.reqid, ev.at, l.reqid, l.deadline)
	}
	if ev.fence <= p.maxFence {
		rt.Fatalf("LOCK-02: fence %x after %x", ev.fence, p.maxFence)
	}
	p.maxFence = ev.fence
	for _, old := range p.history[ev.reqid] {
		if old.remembered(ev.at) {
			rt.Fatalf("LOCK-03: %s got a second lease while its first is remembered", ev.reqid)
		}
	}
	r := p.reqs[ev.reqid]
	if r == nil || r.state != waiting || r.name != ev.name {
		rt.Fatalf("granted %s, which the model has not open on %q: %+v", ev.reqid, ev.name, r)
	}
	for _, o := range p.reqs {
		if o != r && o.state == waiting && o.name == ev.name && o.seq < r.seq {
			rt.Fatalf("LOCK-08: %s granted before %s, which joined first", r.reqid, o.reqid)
		}
	}
	l := &mLease{id: ev.id, name: ev.name, reqid: ev.reqid, fence: ev.fence,
		grantAt: ev.at, ttl: r.ttl, span: r.ttl}
	if r.maxHold > 0 {
		l.maxDeadline = ev.at + instant(r.maxHold)
	}
	l.deadline = ev.at + instant(r.ttl)
	if l.maxDeadline != 0 && l.deadline > l.maxDeadline {
		l.deadline = l.maxDeadline
	}
	e := p.expectFor(r.ticket)
	e.want, e.lease, e.ttlLeft = wantGrant, l, time.Duration(l.deadline-ev.at)
	r.state, r.ticket, r.lease = live, Ticket{}, l
	p.holder[ev.name] = l
	p.byID[ev.id] = l
	p.leases = append(p.leases, l)
	p.history[ev.reqid] = append(p.history[ev.reqid], l)
}

func (p *propModel) onEnd(rt *rapid.T, ev traceEvent) {
	l := p.byID[ev.id]
	if l == nil || l.ended || p.holder[ev.name] != l {
		rt.Fatalf("end of a lease the model has not live: %+v", ev)
	}
	switch ev.reason {
	case expired, revokedMaxHold:
		want := expired
		if l.maxDeadline != 0 && l.deadline >= l.maxDeadline {
			want = revokedMaxHold
		}
		if ev.at != l.deadline || ev.reason != want {
			rt.Fatalf("LOCK-06/07: lease ended at %v (%s), want %v (%s)", ev.at, reasonText[ev.reason], l.deadline, reasonText[want])
		}
	default:
		x := p.expectEnd
		if x == nil || x.id != ev.id || x.reason != ev.reason || x.at != ev.at {
			rt.Fatalf("unasked end %+v", ev)
		}
		p.expectEnd = nil
	}
	l.ended, l.reason, l.endAt = true, ev.reason, ev.at
	delete(p.holder, ev.name)
	for _, r := range p.reqs {
		if r.state == waiting && r.name == ev.name {
			p.handoff = ev.name
		}
	}
}

func (p *propModel) check(rt *rapid.T) {
	if err := checkInvariants(p.m); err != nil {
		rt.Fatal(err)
	}
	keep := p.expects[:0]
	for _, e := range p.expects {
		done := isDone(e.tk)
		if done != (e.want != pending) {
			g, err := Grant{}, error(nil)
			if done {
				g, err = e.tk.Result()
			}
			rt.Fatalf("ticket done=%v (%+v, %v), model wants %d (%v)", done, g, err, e.want, e.err)
		}
		if !done {
			keep = append(keep, e)
			continue
		}
		g, err := e.tk.Result()
		switch e.want {
		case wantGrant:
			want := Grant{id: e.lease.id, Fence: e.lease.fence, TTLLeft: e.ttlLeft}
			if err != nil || g != want || g.LeaseID() != hex.EncodeToString(e.lease.id[:]) {
				rt.Fatalf("ticket answered (%+v, %v), want %+v", g, err, want)
			}
		case wantErr:
			var lost *LostError
			if errors.As(e.err, &lost) {
				wantLost(rt, err, lost.Reason)
			} else if !errors.Is(err, e.err) {
				rt.Fatalf("ticket answered (%+v, %v), want %v", g, err, e.err)
			}
		}
	}
	p.expects = keep
	live, places := 0, 0
	for _, r := range p.reqs {
		if r.state == waiting || r.state == lingering {
			places++
		}
	}
	live = len(p.holder)
	if s := p.m.Stats(); s.Leases != int64(live) || s.Waiters != int64(places) {
		rt.Fatalf("stats %+v, model has %d leases and %d places", s, live, places)
	}
}

func wantLost(rt *rapid.T, err error, reason string) {
	var lost *LostError
	if !errors.As(err, &lost) || !errors.Is(err, ErrLost) || lost.Reason != reason {
		rt.Fatalf("got %v, want LOST %s", err, reason)
	}
}

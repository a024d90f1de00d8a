package lockmod

import (
	"errors"
	"slices"
	"strconv"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// TestPropertiesKinds drives a Manager with random holds on two keys —
// plain, SHARED, or with LIMIT 2 or 3, so that they also disagree —
// with retries, any WAIT, MAXHOLD, renewals, releases, revokes (of a
// key's every lease or of one fence), abandons, clock advances and
// restarts (a new epoch, as a failover), and checks at every step:
//
//   - LOCK-01: after every grant the key's live leases are at most its
//     LIMIT, or all SHARED, or one;
//   - LOCK-02: fences increase over the whole run, restarts included;
//   - LOCK-05: a renewal succeeds exactly on the leases live in the model;
//   - LOCK-08: no request is granted while one that joined the key's line
//     earlier still waits once the step is over, and once it is over the
//     first open request of each key does not fit (nobody waits needlessly);
//   - LOCK-15: a request whose LIMIT disagrees with the key's while the key
//     is in use is refused, with the key's limit, and changes nothing; one
//     that agrees, or on a key not in use, never is.
func TestPropertiesKinds(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) { runKinds(rt) })
}

type kindReq struct {
	reqid   string
	key     int
	limit   int
	shared  bool
	seq     uint64 // of its place in line
	tk      Ticket
	waitEnd instant // -1: no limit
	waiting bool    // tk is open
	place   bool    // it has a place in line (waiting, or lingering until lingerEnd)
	linger  instant
}

type kindLease struct {
	id     string
	fence  uint64
	key    int
	shared bool
	limit  int
}

type kindModel struct {
	clock  *FakeClock
	m      *Manager
	epoch  uint64
	trace  []traceEvent
	seen   int
	seq    uint64
	reqs   map[string]*kindReq
	reqids []string
	live   map[uint64]*kindLease // by fence
	ended  []*kindLease
	byID   map[string]*kindLease
	fence  uint64
	grants []string // reqids granted in this step
	kinds  []int    // each key's usual kind: readers and writers, LIMIT 2, LIMIT 3
}

var kindKeys = []string{"x", "y"}

func runKinds(rt *rapid.T) {
	clock := NewFakeClock(start)
	p := &kindModel{clock: clock, epoch: 1, reqs: map[string]*kindReq{}, live: map[uint64]*kindLease{}, byID: map[string]*kindLease{}}
	p.m = New(Config{Clock: clock, Epoch: 1})
	p.m.trace = func(ev traceEvent) { p.trace = append(p.trace, ev) }
	defer p.m.Close()
	for range kindKeys {
		p.kinds = append(p.kinds, rapid.IntRange(0, 2).Draw(rt, "keyKind"))
	}
	actions := map[string]func(*rapid.T){
		"hold": p.hold, "hold again": p.hold, "hold more": p.hold,
		"renew": p.renew, "release": p.release, "revoke": p.revoke,
		"abandon": p.abandon, "advance": p.advance, "advance more": p.advance,
		"restart": p.restart,
	}
	names := make([]string, 0, len(actions))
	for n := range actions {
		names = append(names, n)
	}
	slices.Sort(names)
	steps := rapid.IntRange(50, 300).Draw(rt, "steps")
	for range steps {
		actions[rapid.SampledFrom(names).Draw(rt, "action")](rt)
		p.step(rt)
	}
}

func (p *kindModel) now() instant { return instant(p.clock.Now().Sub(start)) }

func (p *kindModel) hold(rt *rapid.T) {
	k := rapid.IntRange(0, len(kindKeys)-1).Draw(rt, "key")
	var reqid string
	if len(p.reqids) > 0 && rapid.Bool().Draw(rt, "retry") {
		reqid = rapid.SampledFrom(p.reqids).Draw(rt, "reqid")
		if p.reqs[reqid] != nil && p.reqs[reqid].key != k {
			k = p.reqs[reqid].key // another key is another test (LOCK-03)
		}
	} else {
		reqid = "r" + strconv.Itoa(len(p.reqids))
		p.reqids = append(p.reqids, reqid)
	}
	req := HoldRequest{Lock: "l", Key: kindKeys[k], ReqID: reqid, TTL: time.Duration(rapid.IntRange(1, 3).Draw(rt, "ttl")) * sec}
	// Mostly the key's own kind, so that lines grow; now and then another.
	kind := p.kinds[k]
	if rapid.IntRange(0, 7).Draw(rt, "otherKind") == 0 {
		kind = rapid.IntRange(0, 2).Draw(rt, "kind")
	}
	switch kind {
	case 0: // readers and writers
		req.Shared = rapid.Bool().Draw(rt, "shared")
	case 1:
		req.Limit = 2
	case 2:
		req.Limit = 3
	}
	switch rapid.IntRange(0, 3).Draw(rt, "waitKind") {
	case 1:
		req.HasWait = true
	case 2, 3:
		req.HasWait, req.Wait = true, time.Duration(rapid.IntRange(1, 8).Draw(rt, "wait"))*250*ms
	}
	if rapid.Bool().Draw(rt, "hasMaxHold") {
		req.MaxHold = time.Duration(rapid.IntRange(1, 8).Draw(rt, "maxHold")) * 500 * ms
	}
	now := p.now()
	rt.Logf("%v: HOLD %s %s limit=%d shared=%v wait=%v/%v", time.Duration(now), req.Key, reqid, req.Limit, req.Shared, req.HasWait, req.Wait)
	before, inUse := p.m.Info("l", req.Key)
	stats := p.m.Stats()
	tk := p.m.Hold(req)
	want := max(req.Limit, 1)
	if inUse && before.Limit != want {
		_, err := tk.Result()
		var le *LimitError
		if !errors.As(err, &le) || le.Limit != before.Limit {
			rt.Fatalf("LOCK-15: key in use with limit %d, request with %d answered %v", before.Limit, want, err)
		}
		if after, _ := p.m.Info("l", req.Key); after != before || p.m.Stats() != stats {
			rt.Fatalf("LOCK-15: a refused request changed %+v into %+v", before, after)
		}
		return
	}
	r := p.reqs[reqid]
	if r == nil || r.key != k {
		r = &kindReq{reqid: reqid, key: k}
	}
	r.limit, r.shared = req.Limit, req.Shared && req.Limit <= 1
	resumes := r.place && (r.waiting || now < r.linger)
	if !resumes {
		p.seq++
		r.seq = p.seq // where it joins, if it is a new request
	}
	p.reqs[reqid] = r
	if isDone(tk) {
		_, err := tk.Result()
		var le *LimitError
		if errors.As(err, &le) {
			rt.Fatalf("LOCK-15: refused %v though the key is in use with limit %d (in use %v)", err, before.Limit, inUse)
		}
		if errors.Is(err, ErrNotGranted) && resumes {
			r.waiting, r.linger = false, now.add(DefaultLinger) // the place lingers from now
		}
		return
	}
	r.tk, r.waiting, r.place = tk, true, true
	r.waitEnd = -1
	if req.HasWait {
		r.waitEnd = now.add(req.Wait)
	}
}

func (p *kindModel) liveLeases() []*kindLease {
	var ls []*kindLease
	for _, l := range p.live {
		ls = append(ls, l)
	}
	slices.SortFunc(ls, func(a, b *kindLease) int { return int(a.fence>>1) - int(b.fence>>1) })
	return ls
}

func (p *kindModel) renew(rt *rapid.T) {
	all := append(p.liveLeases(), p.ended...)
	if len(all) == 0 {
		return
	}
	l := rapid.SampledFrom(all).Draw(rt, "lease")
	rt.Logf("%v: RENEW %x", time.Duration(p.now()), l.fence)
	_, err := p.m.Renew(l.id, 0)
	if live := p.live[l.fence] != nil; live != (err == nil) {
		rt.Fatalf("LOCK-05: renew of lease %x (live in the model: %v): %v", l.fence, live, err)
	}
}

func (p *kindModel) release(rt *rapid.T) {
	ls := p.liveLeases()
	if len(ls) == 0 {
		return
	}
	l := rapid.SampledFrom(ls).Draw(rt, "lease")
	rt.Logf("%v: RELEASE %x", time.Duration(p.now()), l.fence)
	if err := p.m.Release(l.id); err != nil {
		rt.Fatalf("release of live lease %x: %v", l.fence, err)
	}
}

func (p *kindModel) revoke(rt *rapid.T) {
	k := rapid.IntRange(0, len(kindKeys)-1).Draw(rt, "key")
	want := 0
	var fence uint64
	ls := p.liveLeases()
	if len(ls) > 0 && rapid.Bool().Draw(rt, "oneFence") {
		l := rapid.SampledFrom(ls).Draw(rt, "lease")
		fence = l.fence
		if l.key == k {
			want = 1
		}
	} else {
		for _, l := range ls {
			if l.key == k {
				want++
			}
		}
	}
	rt.Logf("%v: REVOKE %s fence %x", time.Duration(p.now()), kindKeys[k], fence)
	if n := p.m.RevokeFence("l", kindKeys[k], fence); n != want {
		rt.Fatalf("revoked %d, the model has %d to revoke", n, want)
	}
}

func (p *kindModel) abandon(rt *rapid.T) {
	var open []string
	for id, r := range p.reqs {
		if r.waiting && !isDone(r.tk) {
			open = append(open, id)
		}
	}
	if len(open) == 0 {
		return
	}
	slices.Sort(open)
	r := p.reqs[rapid.SampledFrom(open).Draw(rt, "waiter")]
	rt.Logf("%v: ABANDON %s", time.Duration(p.now()), r.reqid)
	r.tk.Abandon()
}

func (p *kindModel) advance(rt *rapid.T) {
	d := time.Duration(rapid.IntRange(1, 8).Draw(rt, "advance")) * 250 * ms
	rt.Logf("%v: ADVANCE %v", time.Duration(p.now()), d)
	p.clock.Advance(d)
}

// restart is a failover: the epoch ends with every lease and place.
func (p *kindModel) restart(rt *rapid.T) {
	rt.Logf("%v: RESTART", time.Duration(p.now()))
	p.m.Pause()
	for _, r := range p.reqs {
		if r.waiting {
			if _, err := r.tk.Result(); !errors.Is(err, ErrNoEpoch) {
				rt.Fatalf("%s waiting at a restart answered %v", r.reqid, err)
			}
		}
	}
	p.epoch++
	p.m.Resume(p.epoch)
	for _, l := range p.live {
		p.ended = append(p.ended, l)
	}
	clear(p.live)
	clear(p.reqs)
}

// step brings the Manager up to now, replays what it reported and checks
// the invariants.
func (p *kindModel) step(rt *rapid.T) {
	p.m.Stats() // runs every due event
	p.grants = p.grants[:0]
	for ; p.seen < len(p.trace); p.seen++ {
		ev := p.trace[p.seen]
		if ev.grant {
			p.onGrant(rt, ev)
		} else {
			l := p.live[ev.fence]
			if l == nil {
				rt.Fatalf("end of lease %x, not live in the model", ev.fence)
			}
			delete(p.live, ev.fence)
			p.ended = append(p.ended, l)
		}
	}
	now := p.now()
	for _, r := range p.reqs {
		if r.waiting && isDone(r.tk) {
			r.waiting = false
			_, err := r.tk.Result()
			switch {
			case err == nil, errors.Is(err, ErrSuperseded):
			case errors.Is(err, ErrNotGranted):
				r.linger = r.waitEnd.add(DefaultLinger)
			case errors.Is(err, ErrAbandoned):
				r.linger = now.add(DefaultLinger) // abandons run at once, in their step
			default:
				rt.Fatalf("%s answered %v", r.reqid, err)
			}
		}
	}
	// LOCK-08: nobody granted while an earlier place still waits.
	for _, id := range p.grants {
		g := p.reqs[id]
		for _, r := range p.reqs {
			if r.waiting && r.key == g.key && r.seq < g.seq {
				rt.Fatalf("LOCK-08: %s granted while %s, ahead of it, waits", id, r.reqid)
			}
		}
	}
	// LOCK-08: the first open request of each key does not fit.
	for k := range kindKeys {
		var first *kindReq
		for _, r := range p.reqs {
			if r.waiting && r.key == k && (first == nil || r.seq < first.seq) {
				first = r
			}
		}
		if first != nil && p.fits(k, first) {
			rt.Fatalf("LOCK-08: %s waits first on %s, and fits", first.reqid, kindKeys[k])
		}
	}
	if err := checkInvariants(p.m); err != nil {
		rt.Fatal(err)
	}
	if s := p.m.Stats(); s.Leases != int64(len(p.live)) {
		rt.Fatalf("stats %d leases, model %d", s.Leases, len(p.live))
	}
}

func (p *kindModel) fits(k int, r *kindReq) bool {
	n, allShared := 0, true
	for _, l := range p.live {
		if l.key == k {
			n++
			allShared = allShared && l.shared
		}
	}
	if r.limit > 1 {
		return n < r.limit
	}
	return n == 0 || r.shared && allShared
}

func (p *kindModel) onGrant(rt *rapid.T, ev traceEvent) {
	if ev.fence <= p.fence {
		rt.Fatalf("LOCK-02: fence %x after %x", ev.fence, p.fence)
	}
	p.fence = ev.fence
	r := p.reqs[ev.reqid]
	if r == nil {
		rt.Fatalf("grant to %s, unknown to the model", ev.reqid)
	}
	if !p.fits(r.key, r) {
		rt.Fatalf("LOCK-01: %s (limit %d, shared %v) granted %s beside %v", ev.reqid, r.limit, r.shared, kindKeys[r.key], p.liveLeases())
	}
	r.place = false
	l := &kindLease{id: leaseIDString(ev.id), fence: ev.fence, key: r.key, shared: r.shared, limit: r.limit}
	p.live[ev.fence] = l
	p.grants = append(p.grants, ev.reqid)
}

func leaseIDString(id leaseID) string { return Grant{id: id}.LeaseID() }

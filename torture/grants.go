package main

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
)

// checkEpochOrder is the second half of (c): once a grant of an epoch has
// been answered, no HOLD asked afterwards is answered with a lease of an
// older epoch, on any server or node (LOCK-02, LOCK-14: a leader that
// lost its majority stops granting before another is elected), as the
// proxies saw the LOCK.HOLDs pass. This is what a leader cut off from its
// peers, or frozen past the election timeout, would break, granting on in
// its old epoch while the new leader grants in a newer one. Within one
// epoch the order of answers proves nothing of the order of grants: a
// retried request id is answered with the lease it already has.
func checkEpochOrder(r *Report, events []Event, violate func(string, ...any)) {
	type answer struct {
		start, end, fence int64
		reqid             string
	}
	var as []answer
	for _, e := range events {
		if e.Kind != evWire || e.Result != "ok" || len(e.Args) < 4 || !strings.EqualFold(e.Args[0], "lock.hold") {
			continue
		}
		f := strings.Fields(e.Reply)
		if len(f) != 3 {
			continue
		}
		fence, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			continue
		}
		as = append(as, answer{e.Start, e.End, fence, e.Args[3]})
	}
	r.OrderedGrants = len(as)
	byEnd := slices.Clone(as)
	slices.SortFunc(byEnd, func(a, b answer) int { return cmp.Compare(a.end, b.end) })
	// newest[i]: the index of the largest fence in byEnd[:i+1].
	newest := make([]int, len(byEnd))
	for i := range byEnd {
		newest[i] = i
		if i > 0 && byEnd[newest[i-1]].fence >= byEnd[i].fence {
			newest[i] = newest[i-1]
		}
	}
	reported := map[int64]bool{}
	for _, a := range as {
		i, _ := slices.BinarySearchFunc(byEnd, a.start, func(b answer, t int64) int { return cmp.Compare(b.end, t) })
		if i == 0 || reported[a.fence] {
			continue
		}
		if p := byEnd[newest[i-1]]; epochOf(p.fence) > epochOf(a.fence) {
			reported[a.fence] = true
			violate("LOCK-14: request %s was answered with fence %d (epoch %d) after request %s had been granted fence %d (epoch %d)",
				a.reqid, a.fence, epochOf(a.fence), p.reqid, p.fence, epochOf(p.fence))
		}
	}
}

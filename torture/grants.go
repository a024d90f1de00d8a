package main

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
)

// checkGrantOrder is the second half of (c): fences strictly increase in
// the order the grants were made (LOCK-02, LOCK-14), over the whole run
// and every server or node, as the proxies saw the LOCK.HOLDs pass. A
// grant answered before another HOLD was sent was made before it, so its
// fence is the smaller, or the same if it is the same lease again (a
// retried request id, LOCK-03, whose fences (c) checks). In a cluster
// this is what a leader cut off from its peers would break, granting on
// in an old epoch after the new leader granted in a new one.
func checkGrantOrder(r *Report, events []Event, violate func(string, ...any)) {
	type grant struct {
		start, end, fence int64
		reqid             string
	}
	var gs []grant
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
		gs = append(gs, grant{e.Start, e.End, fence, e.Args[3]})
	}
	r.OrderedGrants = len(gs)
	byEnd := slices.Clone(gs)
	slices.SortFunc(byEnd, func(a, b grant) int { return cmp.Compare(a.end, b.end) })
	// largest[i]: the index of the largest fence in byEnd[:i+1].
	largest := make([]int, len(byEnd))
	for i := range byEnd {
		largest[i] = i
		if i > 0 && byEnd[largest[i-1]].fence >= byEnd[i].fence {
			largest[i] = largest[i-1]
		}
	}
	for _, g := range gs {
		i, _ := slices.BinarySearchFunc(byEnd, g.start, func(b grant, t int64) int { return cmp.Compare(b.end, t) })
		if i == 0 {
			continue
		}
		if p := byEnd[largest[i-1]]; p.fence > g.fence {
			violate("LOCK-02: request %s was granted fence %d (epoch %d) after request %s had been granted fence %d (epoch %d)",
				g.reqid, g.fence, epochOf(g.fence), p.reqid, p.fence, epochOf(p.fence))
		}
	}
}

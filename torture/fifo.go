package main

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
)

// checkFIFO is (e): waiters are granted in the order they joined the line
// (LOCK-08), as the proxy saw the LOCK.HOLDs pass, per server (a run of
// one, or of a cluster's node) and key. The
// clients wait through the SDK, in overlapping chunks of one reqid (SPEC
// §8), and the nemesis makes some of them leave the line for a while
// (a frozen process, a cut connection), which lets others pass: only what
// the history proves is a violation.
//
// What it proves, from the proxy's times alone (a request reached the
// server after its Start, and was answered before its End):
//
//   - A's request was open in line from some moment P to some moment L: a
//     HOLD h of A answered nil (its WAIT ran out: processed by End - WAIT)
//     or superseded (it was blocking when another HOLD of A came) was
//     processed by P; from then on some HOLD of A was open until the first
//     of A's answers that is not "superseded". That answer came no earlier
//     than: Start + WAIT for nil, Start for an error or an unknown outcome
//     (a closed connection, which the server may have noticed at once), the
//     grant itself for a grant (compared by fence).
//   - B joined after P: B's first HOLD started after P.
//   - B was granted before L: the first reply that carried B's grant ended
//     by L, and B's fence is smaller than A's if A was granted.
//
// Then B was granted while A, ahead of it, was open in line.
//
// In a cluster a node's run spans epochs (it leads, loses, leads again),
// and a line lives one epoch (LOCK-10). The intervals stay within one:
// through [P, L) some HOLD of A was open at the node, and a node that
// stops leading answers every waiter an error, which ends L before it.
// A grant of A and of B of different epochs is never compared.
func checkFIFO(r *Report, events []Event, violate func(string, ...any)) {
	type hold struct {
		start, end int64 // end 0: unknown outcome
		wait       int64 // ns; -1 without WAIT
		result     string
		reply      string
	}
	type place struct {
		target int64
		key    string
	}
	unreadable := map[int64]bool{} // servers whose traffic was partly unrecorded
	holds := map[place]map[string][]hold{}
	for _, e := range events {
		if e.Kind != evWire {
			continue
		}
		if e.Result == "unreadable" {
			unreadable[e.Target] = true
			continue
		}
		if len(e.Args) < 4 || !strings.EqualFold(e.Args[0], "lock.hold") {
			continue
		}
		h := hold{start: e.Start, end: e.End, wait: -1, result: e.Result, reply: e.Reply}
		if e.Result == "unknown" {
			h.end = 0
		}
		for i := 4; i+1 < len(e.Args); i++ {
			if strings.EqualFold(e.Args[i], "wait") {
				if ms, err := strconv.ParseInt(e.Args[i+1], 10, 64); err == nil {
					h.wait = ms * 1e6
				}
			}
		}
		p := place{e.Target, e.Args[1] + "\x00" + e.Args[2]}
		if holds[p] == nil {
			holds[p] = map[string][]hold{}
		}
		holds[p][e.Args[3]] = append(holds[p][e.Args[3]], h)
	}
	superseded := func(h hold) bool {
		return h.result == "error" && strings.HasPrefix(h.reply, "ERR superseded")
	}
	fenceOf := func(h hold) int64 {
		f := strings.Fields(h.reply)
		if h.result != "ok" || len(f) != 3 {
			return 0
		}
		n, _ := strconv.ParseInt(f[1], 10, 64)
		return n
	}

	for p, byReq := range holds {
		if unreadable[p.target] {
			continue
		}
		type joiner struct {
			reqid      string
			firstStart int64
			fence      int64 // 0: never granted here
			grantedBy  int64 // the End of the first reply that carried the grant
		}
		var joiners []joiner
		for reqid, hs := range byReq {
			j := joiner{reqid: reqid, firstStart: hs[0].start}
			for _, h := range hs {
				j.firstStart = min(j.firstStart, h.start)
				if f := fenceOf(h); f != 0 && (j.fence == 0 || h.end < j.grantedBy) {
					j.fence, j.grantedBy = f, h.end
				}
			}
			joiners = append(joiners, j)
		}
		slices.SortFunc(joiners, func(a, b joiner) int { return cmp.Compare(a.firstStart, b.firstStart) })
		r.FIFOReqIDs += len(joiners)
		reported := map[[2]string]bool{}

		for reqidA, hs := range byReq {
			for _, hi := range hs {
				// hi starts an interval in line: it was processed by P.
				var P int64
				switch {
				case hi.result == "nil" && hi.wait > 0:
					P = hi.end - hi.wait
				case superseded(hi):
					P = hi.end
				default:
					continue
				}
				// L: the first answer of A that is not "superseded"
				// came no earlier than L (or at A's grant, fenceA).
				L, fenceA := int64(1<<62), int64(0)
				for _, h := range hs {
					if h.end != 0 && h.end < hi.start {
						continue // answered before hi was sent
					}
					switch {
					case superseded(h):
					case h.result == "nil":
						L = min(L, h.start+max(h.wait, 0))
					case fenceOf(h) != 0:
						if fenceA == 0 || fenceOf(h) < fenceA {
							fenceA = fenceOf(h)
						}
					default: // an error, or unknown
						L = min(L, h.start)
					}
				}
				if L <= P {
					continue
				}
				r.FIFOIntervals++
				if r.FIFOByLock == nil {
					r.FIFOByLock = map[string]int{}
				}
				r.FIFOByLock[strings.SplitN(p.key, "\x00", 2)[0]]++
				i, _ := slices.BinarySearchFunc(joiners, P+1, func(j joiner, t int64) int { return cmp.Compare(j.firstStart, t) })
				for _, b := range joiners[i:] {
					if b.firstStart >= L {
						break
					}
					if b.reqid == reqidA || b.fence == 0 || b.grantedBy > L || (fenceA != 0 && b.fence > fenceA) ||
						(fenceA != 0 && epochOf(b.fence) != epochOf(fenceA)) ||
						reported[[2]string{reqidA, b.reqid}] {
						continue
					}
					reported[[2]string{reqidA, b.reqid}] = true
					key := strings.Replace(p.key, "\x00", " ", 1)
					violate("LOCK-08: on %s (server %d), request %s joined after request %s and was granted first (fence %d), while %s waited in line",
						key, p.target, b.reqid, reqidA, b.fence, reqidA)
				}
			}
		}
	}
}

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"
)

// (f) Lock events (SPEC §13): beside the holders, a subscriber turns on
// notify-keyspace-events L and PSUBSCRIBEs to __lock@0__:*, straight to the
// server (not through the proxy, whose reply pairing knows no pushes),
// again after every restart. Each connection is a session; what it hears
// is in the history, and the check asks that every grant the proxy saw
// appears among a session's events, in fence order, if the session heard
// a later fence: events come in the order of the grants, so a session that
// heard a later one heard this one.

const (
	evEventsOn  = "lockevents-on"  // a session began: L on, subscribed; Hold is its number
	evEventsOff = "lockevents-off" // it ended
	evLockEvent = "lockevent"      // one event heard: Detail its kind, Key, Fence; Hold its session
)

// watchLockEvents runs sessions until ctx ends, each on the server's
// address of the moment.
func (h *harness) watchLockEvents(ctx context.Context) {
	for session := int64(1); ctx.Err() == nil; session++ {
		h.lockEventSession(ctx, session)
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (h *harness) lockEventSession(ctx context.Context, session int64) {
	if !h.srvs[0].running() {
		return
	}
	nc, err := net.DialTimeout("tcp", h.srvs[0].address(), time.Second)
	if err != nil {
		return
	}
	defer nc.Close()
	stop := context.AfterFunc(ctx, func() { nc.Close() })
	defer stop()
	br := bufio.NewReader(nc)
	nc.SetDeadline(time.Now().Add(5 * time.Second))
	io.WriteString(nc, "CONFIG SET notify-keyspace-events L\r\nPSUBSCRIBE __lock@0__:*\r\n")
	if l, err := br.ReadString('\n'); err != nil || l != "+OK\r\n" {
		return
	}
	if _, err := readArray(br); err != nil {
		return
	}
	nc.SetDeadline(time.Time{})
	h.history.Add(Event{Kind: evEventsOn, Client: "events", Hold: session, Start: mono()})
	defer func() { h.history.Add(Event{Kind: evEventsOff, Client: "events", Hold: session, Start: mono()}) }()
	for {
		m, err := readArray(br)
		if err != nil {
			return
		}
		if len(m) != 4 || m[0] != "pmessage" {
			continue
		}
		var e map[string]string
		if json.Unmarshal([]byte(m[3]), &e) != nil {
			h.history.Add(Event{Kind: evLockEvent, Client: "events", Hold: session, Start: mono(), Detail: "bad: " + m[3]})
			continue
		}
		f, _ := strconv.ParseInt(e["fence"], 10, 64)
		h.history.Add(Event{Kind: evLockEvent, Client: "events", Hold: session, Start: mono(),
			Key: e["key"], Fence: f, Detail: e["event"]})
	}
}

// readArray reads one RESP2 array of bulk strings and integers.
func readArray(br *bufio.Reader) ([]string, error) {
	l, err := br.ReadString('\n')
	if err != nil {
		return nil, err
	}
	if len(l) < 3 || l[0] != '*' {
		return nil, fmt.Errorf("not an array: %q", l)
	}
	n, err := strconv.Atoi(strings.TrimSpace(l[1:]))
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, n)
	for range n {
		l, err := br.ReadString('\n')
		if err != nil {
			return nil, err
		}
		switch l[0] {
		case ':':
			out = append(out, strings.TrimSpace(l[1:]))
		case '$':
			size, err := strconv.Atoi(strings.TrimSpace(l[1:]))
			if err != nil {
				return nil, err
			}
			if size < 0 {
				out = append(out, "")
				continue
			}
			b := make([]byte, size+2)
			if _, err := io.ReadFull(br, b); err != nil {
				return nil, err
			}
			out = append(out, string(b[:size]))
		default:
			return nil, fmt.Errorf("unexpected %q", l)
		}
	}
	return out, nil
}

// checkLockEvents is (f): in each session the grants' fences grow; a
// grant whose HOLD was first sent after a session began is among its
// events whenever the session heard a larger fence granted.
func checkLockEvents(r *Report, events []Event, violate func(string, ...any)) {
	began := map[int64]int64{}   // session -> when it began
	heard := map[int64][]int64{} // session -> granted fences, as heard
	inSession := map[int64]map[int64]bool{}
	firstAsked := map[int64]int64{} // fence -> the earliest send of a HOLD answered with it
	for _, e := range events {
		switch e.Kind {
		case evEventsOn:
			began[e.Hold] = e.Start
			inSession[e.Hold] = map[int64]bool{}
		case evLockEvent:
			r.LockEvents++
			if strings.HasPrefix(e.Detail, "bad: ") {
				violate("lock events: not a JSON object: %s", strings.TrimPrefix(e.Detail, "bad: "))
				continue
			}
			if e.Detail != "granted" {
				continue
			}
			if hs := heard[e.Hold]; len(hs) > 0 && e.Fence <= hs[len(hs)-1] {
				violate("lock events: session %d heard fence %d granted after fence %d", e.Hold, e.Fence, hs[len(hs)-1])
			}
			heard[e.Hold] = append(heard[e.Hold], e.Fence)
			inSession[e.Hold][e.Fence] = true
		case evGrant:
			if e.Start == 0 {
				continue
			}
			if t, ok := firstAsked[e.Fence]; !ok || e.Start < t {
				firstAsked[e.Fence] = e.Start
			}
		}
	}
	r.LockEventSessions = len(began)
	fences := make([]int64, 0, len(firstAsked))
	for f := range firstAsked {
		fences = append(fences, f)
	}
	slices.Sort(fences)
	for _, f := range fences {
		asked := firstAsked[f]
		for s, at := range began {
			hs := heard[s]
			if at >= asked || len(hs) == 0 || hs[len(hs)-1] <= f {
				continue
			}
			// Asked after the session began, and the session heard a
			// later fence: it must have heard this one.
			if hs[0] > f && epochOf(hs[0]) != epochOf(f) {
				continue // granted in an earlier run of the server than the session's
			}
			r.LockEventsChecked++
			if !inSession[s][f] {
				violate("lock events: fence %d was granted (asked at %d) but session %d, which began at %d and heard fence %d, never heard it", f, asked, s, at, hs[len(hs)-1])
			}
		}
	}
}

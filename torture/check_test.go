package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The checker must see what it is there to see: each case is a small
// history with one fault of the server or of the clients planted in it.
func TestCheckFindsViolations(t *testing.T) {
	const e1, e2 = 1 << 32, 2 << 32 // fences of epochs 1 and 2
	hold := func(client string, n int64, key string, fence, start, end int64) []Event {
		return []Event{
			{Kind: evHold, Client: client, Hold: n, Key: key, Fence: fence, Start: start, Deadline: end + 100},
			{Kind: evEnd, Client: client, Hold: n, Key: key, Fence: fence, End: end, Deadline: end + 100},
			{Kind: evGrant, ReqID: client + string(rune('0'+n)), LeaseID: client, Fence: fence, End: start},
		}
	}
	write := func(client string, n int64, key string, fence, start, end int64, value, result string, late bool) Event {
		return Event{Kind: evWrite, Client: client, Hold: n, Key: key, Fence: fence, Start: start, End: end, Value: value, Result: result, Late: late}
	}
	read := func(key string, start, end int64, value string) Event {
		return Event{Kind: evRead, Client: "r", Key: key, Start: start, End: end, Value: value, Result: "ok"}
	}
	join := func(parts ...[]Event) []Event {
		var all []Event
		for _, p := range parts {
			all = append(all, p...)
		}
		return all
	}
	for _, tc := range []struct {
		name   string
		events []Event
		want   string // a violation containing this; "" for none
	}{
		{"one after the other", join(hold("a", 1, "k", e1+1, 0, 10), hold("b", 1, "k", e1+2, 20, 30)), ""},
		{"overlap in one epoch", join(hold("a", 1, "k", e1+1, 0, 10), hold("b", 1, "k", e1+2, 5, 30)), "LOCK-01"},
		{"overlap across a restart, later fence larger", join(hold("a", 1, "k", e1+1, 0, 10), hold("b", 1, "k", e2+1, 5, 30)), ""},
		{"overlap across a restart, later fence smaller", join(hold("a", 1, "k", e2+1, 0, 10), hold("b", 1, "k", e1+2, 5, 30)), "LOCK-02"},
		{"one fence, two holds", join(hold("a", 1, "k", e1+1, 0, 10), hold("b", 1, "j", e1+1, 20, 30)), "LOCK-03"},
		{"one reqid, two leases", []Event{
			{Kind: evGrant, ReqID: "r", LeaseID: "x", Fence: e1 + 1},
			{Kind: evGrant, ReqID: "r", LeaseID: "y", Fence: e1 + 2},
		}, "LOCK-03: request id r"},
		{"one reqid, granted again after a restart", []Event{
			{Kind: evGrant, ReqID: "r", LeaseID: "x", Fence: e1 + 1},
			{Kind: evGrant, ReqID: "r", LeaseID: "y", Fence: e2 + 1},
		}, ""},
		{"a fence nobody granted", []Event{{Kind: evHold, Client: "a", Hold: 1, Key: "k", Fence: e1 + 7, Start: 1, Deadline: 9}}, "never seen to grant"},
		{"older fence accepted after a newer one", join(hold("a", 1, "k", e1+1, 0, 10), hold("b", 1, "k", e1+2, 20, 30), []Event{
			write("b", 1, "k", e1+2, 21, 22, "1:2", "ok", false),
			write("a", 1, "k", e1+1, 25, 26, "2:1", "ok", true),
		}), "LOCK-12"},
		{"an acknowledged write lost", join(hold("a", 1, "k", e1+1, 0, 10), []Event{
			write("a", 1, "k", e1+1, 1, 2, "1:4294967297", "ok", false),
			read("k", 5, 6, ""),
		}), "LOCK-12"},
		{"an increment lost, unexplained", join(hold("a", 1, "k", e1+1, 0, 10), hold("b", 1, "k", e1+2, 20, 30), []Event{
			write("a", 1, "k", e1+1, 1, 2, "1:4294967297", "ok", false),
			write("b", 1, "k", e1+2, 21, 22, "1:4294967298", "ok", false),
		}), "lost increment"},
		{"an increment lost to a late write", join(hold("a", 1, "k", e1+1, 0, 10), hold("b", 1, "k", e1+2, 20, 30), []Event{
			write("a", 1, "k", e1+1, 21, 22, "1:4294967297", "ok", true),
			write("b", 1, "k", e1+2, 23, 24, "1:4294967298", "ok", false),
		}), ""},
		{"epochs skip", []Event{
			{Kind: evRestart, Detail: "epoch 1", Start: 1},
			{Kind: evRestart, Detail: "epoch 3", Start: 2},
		}, "LOCK-10"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantViolation(t, check(tc.events, map[string]string{}, 0), tc.want)
		})
	}
}

// wantViolation fails t unless r has a violation that contains want, or,
// with want "", none.
func wantViolation(t *testing.T, r *Report, want string) {
	t.Helper()
	got := strings.Join(r.Violations, "\n")
	switch {
	case want == "" && got != "":
		t.Fatalf("want no violation, got:\n%s", got)
	case want != "" && !strings.Contains(got, want):
		t.Fatalf("want a violation with %q, got:\n%s", want, got)
	}
}

// (e) LOCK-08 from the LOCK.HOLDs on the wire (checkFIFO alone: the leases
// of these histories are never released, which (d) would report): a waiter passed over while
// it certainly waited is a violation; one passed over while its place may
// have lingered (between two chunks) is not.
func TestCheckFIFO(t *testing.T) {
	const e1 = 1 << 32
	const ms = int64(1e6)
	hold := func(reqid string, wait, start, end int64, result, reply string) Event {
		return Event{Kind: evWire, Client: "proxy", Target: 1, Start: start * ms, End: end * ms, Result: result, Reply: reply,
			Args: []string{"LOCK.HOLD", "torture", "k", reqid, "TTL", "1000", "WAIT", strconv.FormatInt(wait, 10)}}
	}
	granted := func(fence int64) string {
		return "0123456789abcdef0123456789abcdef " + strconv.FormatInt(fence, 10) + " 1000"
	}
	const superseded = "ERR superseded by a retry of the same request"
	for _, tc := range []struct {
		name   string
		events []Event
		want   string
	}{
		{"overlapping chunks, served in order", []Event{
			hold("a", 100, 0, 55, "error", superseded),
			hold("b", 100, 70, 125, "error", superseded),
			hold("a", 100, 50, 90, "ok", granted(e1+2)),
			hold("b", 100, 120, 300, "ok", granted(e1+3)),
		}, ""},
		{"passed over while its chunks overlapped", []Event{
			hold("a", 100, 0, 55, "error", superseded),
			hold("b", 100, 70, 120, "ok", granted(e1+2)),
			hold("a", 100, 50, 200, "ok", granted(e1+3)),
		}, "LOCK-08: on torture k (server 1), request b joined after request a"},
		{"passed over while still in its first chunk", []Event{
			hold("a", 100, 0, 100, "nil", ""),
			hold("b", 100, 10, 40, "ok", granted(e1+2)),
		}, "LOCK-08"},
		{"passed over between two chunks: the place lingered", []Event{
			hold("a", 100, 0, 100, "nil", ""),
			hold("b", 100, 20, 105, "ok", granted(e1+2)),
			hold("a", 100, 110, 200, "ok", granted(e1+3)),
		}, ""},
		{"passed over after its connection was cut", []Event{
			hold("a", 100, 0, 55, "error", superseded),
			{Kind: evWire, Client: "proxy", Target: 1, Start: 50 * ms, Result: "unknown",
				Args: []string{"LOCK.HOLD", "torture", "k", "a", "TTL", "1000", "WAIT", "100"}},
			hold("b", 100, 70, 120, "ok", granted(e1+2)),
		}, ""},
		{"joined after the other", []Event{
			hold("b", 100, 0, 55, "error", superseded),
			hold("a", 100, 10, 60, "error", superseded),
			hold("b", 100, 50, 90, "ok", granted(e1+2)),
			hold("a", 100, 55, 200, "ok", granted(e1+3)),
		}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Report{}
			checkFIFO(r, tc.events, func(format string, args ...any) {
				r.Violations = append(r.Violations, fmt.Sprintf(format, args...))
			})
			wantViolation(t, r, tc.want)
		})
	}
}

// In a cluster (a config event with cluster=3) the lock checks run too,
// by the fences' epochs (SPEC §2: fence >> 32): beliefs overlap only across
// an epoch change with the later fence larger (LOCK-01, LOCK-02, LOCK-14),
// one grant per reqid per epoch (LOCK-03), no HOLD is answered with a
// lease of an epoch older than one already granted, on any node (LOCK-02,
// LOCK-14), and FIFO holds within an epoch (LOCK-08).
func TestCheckCluster(t *testing.T) {
	const e1, e2 = 1 << 32, 2 << 32
	const ms = int64(1e6)
	config := Event{Kind: evConfig, Client: "harness", Detail: "redis-retries=-1 ttl=1s seed=1 cluster=3"}
	hold := func(client, key string, fence, start, end int64) []Event {
		return []Event{
			{Kind: evHold, Client: client, Hold: 1, Key: key, Fence: fence, Start: start, Deadline: end + 100},
			{Kind: evEnd, Client: client, Hold: 1, Key: key, Fence: fence, End: end, Deadline: end + 100},
			{Kind: evGrant, ReqID: client, LeaseID: client, Fence: fence, End: start},
		}
	}
	// wire is a LOCK.HOLD as a node's proxy saw it (target: the node's run).
	wire := func(target int64, reqid string, wait, start, end int64, result, reply string) Event {
		return Event{Kind: evWire, Client: "proxy", Target: target, Start: start * ms, End: end * ms, Result: result, Reply: reply,
			Args: []string{"LOCK.HOLD", "torture", "k", reqid, "TTL", "1000", "WAIT", strconv.FormatInt(wait, 10)}}
	}
	granted := func(lease string, fence int64) string { return lease + " " + strconv.FormatInt(fence, 10) + " 1000" }
	const superseded = "ERR superseded by a retry of the same request"
	join := func(parts ...[]Event) []Event {
		all := []Event{config}
		for _, p := range parts {
			all = append(all, p...)
		}
		return all
	}
	for _, tc := range []struct {
		name   string
		events []Event
		want   string
	}{
		{"overlap within one epoch", join(hold("a", "k", e1+1, 0, 10), hold("b", "k", e1+2, 5, 30)), "LOCK-01"},
		{"overlap across epochs, later fence larger", join(hold("a", "k", e1+1, 0, 10), hold("b", "k", e2+1, 5, 30)), ""},
		{"overlap across epochs, later fence smaller", join(hold("a", "k", e2+1, 0, 10), hold("b", "k", e1+2, 5, 30)), "LOCK-02"},
		{"one reqid granted twice in one epoch", join([]Event{
			{Kind: evGrant, ReqID: "r", LeaseID: "x", Fence: e1 + 1},
			{Kind: evGrant, ReqID: "r", LeaseID: "y", Fence: e1 + 2},
		}), "LOCK-03: request id r"},
		{"one reqid granted again in the next epoch", join([]Event{
			{Kind: evGrant, ReqID: "r", LeaseID: "x", Fence: e1 + 1},
			{Kind: evGrant, ReqID: "r", LeaseID: "y", Fence: e2 + 1},
		}), ""},
		// A leader cut off from its peers, or thawed after a freeze,
		// grants on in its old epoch after the new leader granted.
		{"an old epoch's grant after a new one's", join([]Event{
			wire(2, "b", 0, 0, 10, "ok", granted("y", e2+1)),
			wire(1, "c", 0, 20, 30, "ok", granted("z", e1+5)),
		}), "LOCK-14: request c was answered with fence 4294967301 (epoch 1) after request b"},
		{"an old epoch's lease handed to a retry after a new one's grant", join([]Event{
			wire(1, "c", 0, 0, 10, "ok", granted("z", e1+5)),
			wire(2, "b", 0, 20, 30, "ok", granted("y", e2+1)),
			wire(1, "c", 0, 40, 50, "ok", granted("z", e1+5)),
		}), "LOCK-14: request c"},
		{"epochs in order, a retry answered with its lease after a later fence", join([]Event{
			wire(1, "a", 0, 0, 10, "ok", granted("x", e1+1)),
			wire(1, "b", 0, 20, 30, "ok", granted("y", e1+2)),
			wire(1, "a", 0, 40, 50, "ok", granted("x", e1+1)),
			wire(2, "c", 0, 25, 60, "ok", granted("z", e2+1)),
		}), ""},
		{"overlapping answers of two epochs", join([]Event{
			wire(2, "b", 0, 10, 30, "ok", granted("y", e2+1)),
			wire(1, "a", 0, 20, 40, "ok", granted("x", e1+9)),
		}), ""},
		{"passed over in line within one epoch", join([]Event{
			wire(1, "a", 100, 0, 100, "nil", ""),
			wire(1, "b", 100, 10, 40, "ok", granted("y", e1+2)),
		}), "LOCK-08"},
		// The node stops leading while a waits (its waiters answered
		// -TRYAGAIN), and leads again in epoch 2, where b is first.
		{"passed over across epochs: the line was dropped", join([]Event{
			wire(1, "a", 100, 0, 55, "error", superseded),
			wire(1, "a", 100, 50, 60, "error", "TRYAGAIN this node stopped leading"),
			wire(1, "b", 100, 70, 120, "ok", granted("y", e2+1)),
			wire(1, "a", 100, 65, 200, "ok", granted("x", e2+2)),
		}), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := check(tc.events, map[string]string{}, 0)
			if r.Cluster != 3 {
				t.Fatalf("the history reads as a cluster of %d", r.Cluster)
			}
			wantViolation(t, r, tc.want)
		})
	}
}

// TestCheckLockEvents: (f) finds a grant a session should have heard and
// did not, and fences heard out of order; a grant asked before the
// session began, or after the last fence it heard, is not held against it.
func TestCheckLockEvents(t *testing.T) {
	const e1 = 1 << 32
	base := []Event{
		{Kind: evGrant, ReqID: "a", LeaseID: "x", Fence: e1 + 1, Start: 5, End: 6}, // before the session
		{Kind: evEventsOn, Client: "events", Hold: 1, Start: 10},
		{Kind: evGrant, ReqID: "b", LeaseID: "y", Fence: e1 + 2, Start: 20, End: 21},
		{Kind: evGrant, ReqID: "c", LeaseID: "z", Fence: e1 + 3, Start: 30, End: 31},
		{Kind: evGrant, ReqID: "d", LeaseID: "w", Fence: e1 + 4, Start: 40, End: 41}, // after the last heard
		{Kind: evLockEvent, Client: "events", Hold: 1, Fence: e1 + 2, Detail: "granted", Start: 22},
		{Kind: evLockEvent, Client: "events", Hold: 1, Fence: e1 + 2, Detail: "released", Start: 23},
	}
	good := append(slices.Clone(base), Event{Kind: evLockEvent, Client: "events", Hold: 1, Fence: e1 + 3, Detail: "granted", Start: 32})
	r := &Report{}
	checkLockEvents(r, good, func(f string, a ...any) { t.Errorf("a good history: "+f, a...) })
	if r.LockEventsChecked != 1 || r.LockEvents != 3 {
		t.Errorf("checked %d grants of %d events, want 1 of 3", r.LockEventsChecked, r.LockEvents)
	}
	missed := append(slices.Clone(base[:5]), Event{Kind: evLockEvent, Client: "events", Hold: 1, Fence: e1 + 3, Detail: "granted", Start: 32})
	var got []string
	checkLockEvents(&Report{}, missed, func(f string, a ...any) { got = append(got, fmt.Sprintf(f, a...)) })
	if len(got) != 1 || !strings.Contains(got[0], fmt.Sprintf("fence %d was granted", e1+2)) {
		t.Errorf("a missed grant: %q", got)
	}
	got = nil
	swapped := append(slices.Clone(base[:5]),
		Event{Kind: evLockEvent, Client: "events", Hold: 1, Fence: e1 + 3, Detail: "granted", Start: 32},
		Event{Kind: evLockEvent, Client: "events", Hold: 1, Fence: e1 + 2, Detail: "granted", Start: 33})
	checkLockEvents(&Report{}, swapped, func(f string, a ...any) { got = append(got, fmt.Sprintf(f, a...)) })
	if len(got) != 1 || !strings.Contains(got[0], "after fence") {
		t.Errorf("fences out of order: %q", got)
	}
}

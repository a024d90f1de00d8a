package main

import (
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

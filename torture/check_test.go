package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
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
		// The case TestTorture once saw: a grant whose reply sat unread in
		// a frozen client, retried with the same reqid after the store had
		// forgotten the ended lease, another reqid granted in between. A
		// retry within the reqid window (SPEC §8) is answered the same
		// lease, which is no violation.
		{"one reqid, its lease answered again to a retry", []Event{
			{Kind: evGrant, ReqID: "r", LeaseID: "x", Fence: e1 + 1, End: 10},
			{Kind: evGrant, ReqID: "r", LeaseID: "x", Fence: e1 + 1, End: 300},
		}, ""},
		{"one reqid granted again after the store forgot it", []Event{
			{Kind: evGrant, ReqID: "r", LeaseID: "x", Fence: e1 + 1, End: 10},
			{Kind: evGrant, ReqID: "s", LeaseID: "y", Fence: e1 + 2, End: 1100},
			{Kind: evGrant, ReqID: "r", LeaseID: "z", Fence: e1 + 3, End: 2300},
		}, "LOCK-03: request id r was answered with 2 different leases in epoch 1"},
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

// The kinds of key beside the mutex (SPEC §12, §13): a semaphore's
// holders never more than its limit at once in one epoch, readers beside
// readers but a writer beside no one (LOCK-01), and the Redis recipe's
// holders never two at once while their validity lasts, across restarts
// too (it has no fence to tell them apart). Each bad case is a history
// with the violation planted in it.
func TestCheckKindsOfKey(t *testing.T) {
	const e1, e2 = 1 << 32, 2 << 32
	hold := func(client, key, mode string, fence, start, end int64) []Event {
		evs := []Event{
			{Kind: evHold, Client: client, Hold: 1, Key: key, Mode: mode, Fence: fence, Start: start, Deadline: end + 100},
			{Kind: evEnd, Client: client, Hold: 1, Key: key, Mode: mode, Fence: fence, End: end, Deadline: end + 100},
		}
		if mode != modeRecipe {
			evs = append(evs, Event{Kind: evGrant, ReqID: client, LeaseID: client, Fence: fence, End: start})
		}
		return evs
	}
	// A frozen recipe holder: its end came late, its validity earlier.
	frozen := func(client, key string, start, deadline, end int64) []Event {
		return []Event{
			{Kind: evHold, Client: client, Hold: 1, Key: key, Mode: modeRecipe, Start: start, Deadline: deadline},
			{Kind: evEnd, Client: client, Hold: 1, Key: key, Mode: modeRecipe, End: end, Deadline: deadline},
		}
	}
	join := func(parts ...[]Event) []Event {
		var all []Event
		for _, p := range parts {
			all = append(all, p...)
		}
		return all
	}
	lim2 := modeLimit(2)
	for _, tc := range []struct {
		name   string
		events []Event
		want   string
	}{
		{"two permits of two at once", join(hold("a", "s", lim2, e1+1, 0, 10), hold("b", "s", lim2, e1+2, 5, 30)), ""},
		{"three permits of two at once", join(hold("a", "s", lim2, e1+1, 0, 10), hold("b", "s", lim2, e1+2, 5, 30), hold("c", "s", lim2, e1+3, 8, 40)),
			"LOCK-01: on s (LIMIT 2), 3 holders believed they held at once in epoch 1"},
		{"three permits of two, one after the other ended", join(hold("a", "s", lim2, e1+1, 0, 10), hold("b", "s", lim2, e1+2, 5, 30), hold("c", "s", lim2, e1+3, 10, 40)), ""},
		{"three permits of two across a restart", join(hold("a", "s", lim2, e1+1, 0, 10), hold("b", "s", lim2, e1+2, 5, 30), hold("c", "s", lim2, e2+1, 8, 40)), ""},
		{"a permit across a restart with a smaller fence", join(hold("a", "s", lim2, e2+1, 0, 10), hold("b", "s", lim2, e1+2, 5, 30)), "LOCK-02"},
		{"readers together", join(hold("a", "rw", modeShared, e1+1, 0, 10), hold("b", "rw", modeShared, e1+2, 5, 30)), ""},
		{"a writer beside a reader", join(hold("a", "rw", modeShared, e1+1, 0, 10), hold("b", "rw", modeWriter, e1+2, 5, 30)),
			"LOCK-01: on rw, a#1 (fence 4294967297, a reader) and b#1 (fence 4294967298, a writer)"},
		{"a reader beside a writer", join(hold("a", "rw", modeWriter, e1+1, 0, 10), hold("b", "rw", modeShared, e1+2, 5, 30)), "LOCK-01"},
		{"two writers", join(hold("a", "rw", modeWriter, e1+1, 0, 10), hold("b", "rw", modeWriter, e1+2, 5, 30)), "LOCK-01"},
		{"a writer after the readers", join(hold("a", "rw", modeShared, e1+1, 0, 10), hold("b", "rw", modeShared, e1+2, 5, 12), hold("c", "rw", modeWriter, e1+3, 12, 30)), ""},
		{"recipe holders one after the other", join(hold("a", "r", modeRecipe, 0, 0, 10), hold("b", "r", modeRecipe, 0, 10, 30)), ""},
		{"recipe holders at once", join(hold("a", "r", modeRecipe, 0, 0, 10), hold("b", "r", modeRecipe, 0, 5, 30)), "recipe: on r, a#1 and b#1 believed they held at once"},
		{"a frozen recipe holder whose validity ran out first", join(frozen("a", "r", 0, 10, 50), hold("b", "r", modeRecipe, 0, 20, 30)), ""},
		{"a recipe holder whose SET's reply came after its validity", join(hold("a", "r", modeRecipe, 0, 0, 30), frozen("b", "r", 20, 10, 25)), ""},
		{"a frozen recipe holder still valid", join(frozen("a", "r", 0, 25, 50), hold("b", "r", modeRecipe, 0, 20, 30)), "recipe: on r"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantViolation(t, check(tc.events, map[string]string{}, 0), tc.want)
		})
	}
}

// (d) leaves out every LOCK.* command of a key held with LIMIT or SHARED
// (the model is a mutex's): two readers granted at once, and a writer that
// waited for them, are no violation of it; the same on a mutex's key is.
func TestLockHistoryLeavesOutSharedKeys(t *testing.T) {
	const e1 = 1 << 32
	const ms = int64(1e6)
	wire := func(key, reqid string, start, end int64, result, reply string, opts ...string) Event {
		return Event{Kind: evWire, Client: "proxy", Target: 1, Start: start * ms, End: end * ms, Result: result, Reply: reply,
			Args: append([]string{"LOCK.HOLD", "torture-rw", key, reqid, "TTL", "1000", "WAIT", "0"}, opts...)}
	}
	granted := func(lease string, fence int64) string { return lease + " " + strconv.FormatInt(fence, 10) + " 1000" }
	shared := []Event{
		{Kind: evRestart, Detail: "epoch 1", Start: 1, Target: 1},
		wire("rw", "a", 10, 20, "ok", granted("x", e1+1), "SHARED", "OWNER", "h:1"),
		wire("rw", "b", 30, 40, "ok", granted("y", e1+2), "OWNER", "h:2", "SHARED"),
		wire("rw", "c", 50, 60, "nil", "", "OWNER", "h:3"),
	}
	ops, dropped, _ := lockHistory(shared)
	if len(ops) != 0 || dropped != 3 {
		t.Fatalf("the commands of a key held SHARED: %d in the model, %d left out; want 0 and 3", len(ops), dropped)
	}
	// The same grants without SHARED: the model sees a second grant of a
	// held key, and porcupine refuses it.
	var plain []Event
	for _, e := range shared {
		if e.Kind == evWire {
			e.Args = slices.DeleteFunc(slices.Clone(e.Args), func(a string) bool { return a == "SHARED" })
		}
		plain = append(plain, e)
	}
	r := &Report{}
	checkLinearizable(r, plain, 10*time.Second)
	if r.LinLocks.Illegal == 0 {
		t.Fatalf("two grants of one mutex's key at once were found linearizable: %+v", r.LinLocks)
	}
}

// (e) on the kinds of key of SPEC §12: a waiting writer holds back the
// readers that joined after it, and a semaphore's freed permit goes to the
// first in line (LOCK-08); readers granted in one step with the reader
// ahead of them are not passed-over waiters.
func TestCheckFIFOKindsOfKey(t *testing.T) {
	const e1 = 1 << 32
	const ms = int64(1e6)
	hold := func(lock, reqid string, wait, start, end int64, result, reply string, opts ...string) Event {
		return Event{Kind: evWire, Client: "proxy", Target: 1, Start: start * ms, End: end * ms, Result: result, Reply: reply,
			Args: append([]string{"LOCK.HOLD", lock, "k", reqid, "TTL", "1000", "WAIT", strconv.FormatInt(wait, 10)}, opts...)}
	}
	granted := func(fence int64) string {
		return "0123456789abcdef0123456789abcdef " + strconv.FormatInt(fence, 10) + " 1000"
	}
	for _, tc := range []struct {
		name   string
		events []Event
		want   string
	}{
		{"a reader passed a waiting writer", []Event{
			hold(rwLockName, "w", 100, 0, 100, "nil", ""),
			hold(rwLockName, "r", 100, 10, 40, "ok", granted(e1+2), "SHARED", "OWNER", "h:1"),
		}, "LOCK-08: on torture-rw k (server 1), request r joined after request w"},
		{"readers granted in one step, in order", []Event{
			hold(rwLockName, "a", 100, 0, 55, "error", "ERR superseded by a retry of the same request", "SHARED"),
			hold(rwLockName, "a", 100, 50, 90, "ok", granted(e1+2), "SHARED"),
			hold(rwLockName, "b", 100, 60, 90, "ok", granted(e1+3), "SHARED"),
		}, ""},
		{"a permit to a later joiner while the first waited", []Event{
			hold(semLockName, "a", 100, 0, 100, "nil", "", "LIMIT", "2"),
			hold(semLockName, "b", 100, 10, 40, "ok", granted(e1+5), "LIMIT", "2"),
		}, "LOCK-08: on torture-sem k"},
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

// (d) of the recipe's keys: recipeModel accepts what a store that keeps
// SET NX PX and the scripts atomic and durable can answer, and refuses a
// second holder while the first's PX runs, a nil SET on a key that had run
// out, a script that extended or deleted a key it did not hold, and a
// compare-and-delete that found its own live key gone.
func TestRecipeModel(t *testing.T) {
	const ms = int64(time.Millisecond)
	sha := map[string]string{"extend": sha1hex(recipeExtend), "delete": sha1hex(recipeRelease)}
	set := func(token string, start, end int64, result string) Event {
		return Event{Kind: evWire, Client: "proxy", Target: 1, Start: start * ms, End: end * ms, Result: result,
			Args: []string{"SET", recipeKey("r"), token, "NX", "PX", "1000"}}
	}
	script := func(which, token string, start, end int64, result, reply string) Event {
		args := []string{"EVALSHA", sha[which], "1", recipeKey("r"), token}
		if which == "extend" {
			args = append(args, "1000")
		}
		return Event{Kind: evWire, Client: "proxy", Target: 1, Start: start * ms, End: end * ms, Result: result, Reply: reply, Args: args}
	}
	for _, tc := range []struct {
		name   string
		events []Event
		legal  bool
	}{
		{"take, extend, release, take again", []Event{
			set("a", 0, 1, "ok"), script("extend", "a", 500, 501, "ok", "1"), script("delete", "a", 1200, 1201, "ok", "1"), set("b", 1300, 1301, "ok"),
		}, true},
		{"held: the next SET is nil", []Event{set("a", 0, 1, "ok"), set("b", 10, 11, "nil")}, true},
		{"run out: the next SET takes it, the old holder's scripts find it gone", []Event{
			set("a", 0, 1, "ok"), set("b", 1100, 1101, "ok"), script("extend", "a", 1200, 1201, "ok", "0"), script("delete", "a", 1300, 1301, "ok", "0"),
		}, true},
		{"a SET of unknown outcome explains a nil", []Event{
			{Kind: evWire, Client: "proxy", Target: 1, Start: 0, Result: "unknown", Args: []string{"SET", recipeKey("r"), "a", "NX", "PX", "1000"}},
			set("b", 10, 11, "nil"),
		}, true},
		{"a SET of unknown outcome, its server killed, may have done nothing", []Event{
			{Kind: evRestart, Detail: "epoch 1", Start: 0, Target: 1},
			{Kind: evWire, Client: "proxy", Target: 1, Start: 1 * ms, Result: "unknown", Args: []string{"SET", recipeKey("r"), "a", "NX", "PX", "1000"}},
			{Kind: evFault, Detail: "kill: SIGKILL", Start: 5 * ms},
			{Kind: evRestart, Detail: "epoch 2", Start: 10 * ms, Target: 2},
			{Kind: evWire, Client: "proxy", Target: 2, Start: 100 * ms, End: 101 * ms, Result: "ok", Args: []string{"SET", recipeKey("r"), "b", "NX", "PX", "1000"}},
		}, true},
		{"NOSCRIPT changes nothing", []Event{
			set("a", 0, 1, "ok"), script("delete", "a", 5, 6, "error", "NOSCRIPT No matching script"), set("b", 10, 11, "nil"),
		}, true},
		{"two holders while the first's PX runs", []Event{set("a", 0, 1, "ok"), set("b", 500, 501, "ok")}, false},
		{"a nil SET after the key ran out", []Event{set("a", 0, 1, "ok"), set("b", 1100, 1101, "nil")}, false},
		{"an extension of a key held by another", []Event{set("a", 0, 1, "ok"), script("extend", "b", 10, 11, "ok", "1")}, false},
		{"an extension that kept nothing alive", []Event{
			set("a", 0, 1, "ok"), script("extend", "a", 900, 901, "ok", "1"), set("b", 1100, 1101, "ok"),
		}, false},
		{"its own live key not found", []Event{set("a", 0, 1, "ok"), script("delete", "a", 10, 11, "ok", "0")}, false},
		{"a delete that deleted nothing", []Event{set("a", 0, 1, "ok"), script("delete", "a", 10, 11, "ok", "1"), set("b", 20, 21, "nil")}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ops, _ := recipeHistory(tc.events)
			if len(ops) == 0 {
				t.Fatal("no operations")
			}
			got := porcupine.CheckOperations(recipeModel, ops)
			if got != tc.legal {
				t.Fatalf("linearizable: %v, want %v", got, tc.legal)
			}
		})
	}
}

// A recipe command of unknown outcome that reached its server after the
// server's kill was never processed: left out, not bounded before its own
// call (which porcupine cannot order).
func TestRecipeHistoryAfterKill(t *testing.T) {
	const ms = int64(time.Millisecond)
	ops, dropped := recipeHistory([]Event{
		{Kind: evRestart, Detail: "epoch 1", Start: 0, Target: 1},
		{Kind: evFault, Detail: "kill: SIGKILL", Start: 5 * ms},
		{Kind: evWire, Client: "proxy", Target: 1, Start: 6 * ms, Result: "unknown", Args: []string{"SET", recipeKey("r"), "a", "NX", "PX", "1000"}},
	})
	if len(ops) != 0 || dropped != 1 {
		t.Fatalf("%d operations, %d left out; want 0 and 1", len(ops), dropped)
	}
}

package main

import (
	"fmt"
	"strings"
	"testing"
)

// The queue's check (queue.go, issue 35): an item delivered twice, or
// delivered and left in a list, an acknowledged push neither delivered
// nor left (unless a pop whose reply never came, sent after the push, may
// have taken it), and an item no LPUSH sent are violations; an
// unacknowledged push may be anywhere or nowhere.
func TestQueueHistory(t *testing.T) {
	wire := func(start, end int64, result, reply string, args ...string) Event {
		return Event{Kind: evWire, Args: args, Start: start, End: end, Result: result, Reply: reply}
	}
	final := func(key string, items ...string) Event {
		return Event{Kind: evQueueFinal, Key: key, Value: strings.Join(items, " "), Start: 1000, End: 1001}
	}
	pushes := []Event{
		wire(1, 2, "ok", "1", "LPUSH", "queue:0", "a"),
		wire(3, 4, "ok", "2", "LPUSH", "queue:0", "b"),
		wire(5, 6, "ok", "1", "LPUSH", "queue:1", "c"),
	}
	for _, tc := range []struct {
		name   string
		events []Event
		want   string // in the one violation; "" none
	}{
		{"every item once", []Event{
			wire(7, 8, "ok", "a", "RPOP", "queue:0"),
			wire(9, 10, "ok", "queue:1 c", "BRPOP", "queue:0", "queue:1", "0.5"),
			wire(11, 12, "ok", "b", "LMOVE", "queue:0", "queue:1", "RIGHT", "LEFT"),
			final("queue:0"), final("queue:1", "b"),
		}, ""},
		{"delivered twice", []Event{
			wire(7, 8, "ok", "a", "RPOP", "queue:0"),
			wire(9, 10, "ok", "queue:0 a", "BRPOP", "queue:0", "queue:1", "0.5"),
			final("queue:0", "b"), final("queue:1", "c"),
		}, "item a delivered twice"},
		{"delivered and left", []Event{
			wire(7, 8, "ok", "a", "RPOP", "queue:0"),
			final("queue:0", "b", "a"), final("queue:1", "c"),
		}, "item a delivered twice"},
		{"an acknowledged push lost", []Event{
			wire(7, 8, "ok", "a", "RPOP", "queue:0"),
			final("queue:0"), final("queue:1", "c"),
		}, "1 acknowledged pushes lost"},
		{"possibly delivered by a pop whose reply never came", []Event{
			wire(7, 8, "ok", "a", "RPOP", "queue:0"),
			wire(9, 0, "unknown", "", "RPOP", "queue:0"),
			final("queue:0"), final("queue:1", "c"),
		}, ""},
		{"a lost pop explains one item, not two", []Event{
			wire(9, 0, "unknown", "", "RPOP", "queue:0"),
			final("queue:0"), final("queue:1", "c"),
		}, "2 acknowledged pushes lost"},
		{"a blocked BRPOP sent before the push, never answered, may have taken it", []Event{
			wire(0, 0, "unknown", "", "BRPOP", "queue:0", "queue:1", "1"),
			wire(7, 8, "ok", "a", "RPOP", "queue:0"),
			final("queue:0", "b"),
		}, ""},
		{"a pop of unknown outcome that ended before the push explains nothing", []Event{
			wire(0, 4, "error", "ERR cluster: leadership lost while the write was replicated: it may or may not be applied", "RPOP", "queue:1"),
			wire(7, 8, "ok", "a", "RPOP", "queue:0"),
			final("queue:0", "b"),
		}, "1 acknowledged pushes lost"},
		{"an unacknowledged push may be anywhere", []Event{
			wire(20, 0, "unknown", "", "LPUSH", "queue:0", "d"),
			wire(21, 0, "unknown", "", "LPUSH", "queue:0", "e"),
			wire(30, 31, "ok", "d", "RPOP", "queue:0"),
			final("queue:0", "a", "b"), final("queue:1", "c"),
		}, ""},
		{"but not twice", []Event{
			wire(20, 0, "unknown", "", "LPUSH", "queue:0", "d"),
			wire(30, 31, "ok", "d", "RPOP", "queue:0"),
			final("queue:0", "d", "a", "b"), final("queue:1", "c"),
		}, "item d delivered twice"},
		{"an item no one pushed", []Event{
			wire(30, 31, "ok", "z", "RPOP", "queue:0"),
			final("queue:0", "a", "b"), final("queue:1", "c"),
		}, "no LPUSH sent it"},
	} {
		r := &Report{}
		var got []string
		checkQueue(r, append(pushes[:len(pushes):len(pushes)], tc.events...), func(f string, a ...any) {
			got = append(got, fmt.Sprintf(f, a...))
		})
		switch {
		case tc.want == "" && len(got) > 0:
			t.Errorf("%s: violations %q, want none", tc.name, got)
		case tc.want != "" && (len(got) != 1 || !strings.Contains(got[0], tc.want)):
			t.Errorf("%s: violations %q, want one with %q", tc.name, got, tc.want)
		}
	}
}

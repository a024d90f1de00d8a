package main

import (
	"testing"

	"github.com/anishathalye/porcupine"
)

// The hash and set histories (collections.go): a read that sees a write
// before it was sent, or a removed member still there after its SREM was
// acknowledged, is not linearizable; a write of unknown outcome may have
// happened or not.
func TestCollectionHistory(t *testing.T) {
	wire := func(start, end int64, result, reply string, args ...string) Event {
		return Event{Kind: evWire, Args: args, Start: start, End: end, Result: result, Reply: reply}
	}
	for _, tc := range []struct {
		name   string
		events []Event
		legal  bool
	}{
		{"read after write", []Event{
			wire(1, 2, "ok", "1", "HSET", "coll:h:0", "m0", "a"),
			wire(3, 4, "ok", "a", "HGET", "coll:h:0", "m0"),
		}, true},
		{"read of a value not yet written", []Event{
			wire(1, 2, "ok", "a", "HGET", "coll:h:0", "m0"),
			wire(3, 4, "ok", "1", "HSET", "coll:h:0", "m0", "a"),
		}, false},
		{"member left after SREM", []Event{
			wire(1, 2, "ok", "1", "SADD", "coll:s:0", "m1"),
			wire(3, 4, "ok", "1", "SREM", "coll:s:0", "m1"),
			wire(5, 6, "ok", "1", "SISMEMBER", "coll:s:0", "m1"),
		}, false},
		{"a write with no reply may have happened", []Event{
			wire(1, 0, "unknown", "", "SADD", "coll:s:0", "m1"),
			wire(5, 6, "ok", "1", "SISMEMBER", "coll:s:0", "m1"),
			wire(7, 8, "ok", "1", "SISMEMBER", "coll:s:0", "m1"),
		}, true},
		{"ZINCRBY adds to ZADD's score", []Event{
			wire(1, 2, "ok", "1", "ZADD", "coll:z:0", "7", "m0"),
			wire(3, 4, "ok", "10", "ZINCRBY", "coll:z:0", "3", "m0"),
			wire(5, 6, "ok", "10", "ZSCORE", "coll:z:0", "m0"),
		}, true},
		{"ZINCRBY that answers another sum", []Event{
			wire(1, 2, "ok", "1", "ZADD", "coll:z:0", "7", "m0"),
			wire(3, 4, "ok", "3", "ZINCRBY", "coll:z:0", "3", "m0"),
		}, false},
		{"ZSCORE after ZREM", []Event{
			wire(1, 2, "ok", "1", "ZADD", "coll:z:0", "7", "m0"),
			wire(3, 4, "ok", "1", "ZREM", "coll:z:0", "m0"),
			wire(5, 6, "ok", "7", "ZSCORE", "coll:z:0", "m0"),
		}, false},
		{"a ZINCRBY with no reply may have added", []Event{
			wire(1, 0, "unknown", "", "ZINCRBY", "coll:z:1", "2", "m1"),
			wire(3, 4, "ok", "5", "ZINCRBY", "coll:z:1", "3", "m1"),
		}, true},
		{"or not", []Event{
			wire(1, 0, "unknown", "", "HDEL", "coll:h:1", "m1"),
			wire(5, 6, "nil", "", "HGET", "coll:h:1", "m1"),
		}, true},
	} {
		ops, _ := collectionHistory(tc.events)
		if got := porcupine.CheckOperations(memberRegister, ops); got != tc.legal {
			t.Errorf("%s: linearizable %v, want %v", tc.name, got, tc.legal)
		}
	}
}

package main

import (
	"testing"

	"github.com/tenure-db/tenure/internal/linmodel"
)

// The SDKs send OWNER with every HOLD (LOCK-16): the history keeps such a
// HOLD, its owner text aside, rather than leaving it out of the checks.
func TestParseLockCmdTakesHoldsWithAnOwner(t *testing.T) {
	e := Event{Kind: evWire, Start: 1, End: 2, Result: "ok", Reply: "0123456789abcdef0123456789abcdef 4294967297 1000",
		Args: []string{"LOCK.HOLD", "torture", "k", "r1", "TTL", "1000", "WAIT", "500", "OWNER", "host:42"}}
	c, ok := parseLockCmd(e)
	if !ok || c.in.Cmd != linmodel.Hold || c.in.TTL != 1000 || c.in.Wait != 500 || c.out.Fence != 4294967297 {
		t.Fatalf("parsed %+v, %v", c, ok)
	}
}

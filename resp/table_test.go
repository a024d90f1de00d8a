package resp

import (
	"slices"
	"testing"
)

// Every row of the command table, subcommands included, says what it does
// to the store, in a shape the routing, replication, batching and COMMAND
// INFO derived from it can rely on (table.go, effect). A row added without
// its effect fails here, before it can run unreplicated in a cluster.
func TestEveryRowSaysWhatItDoes(t *testing.T) {
	for _, c := range commands() {
		e := c.Effect
		rw := e & (effRead | effWrite)
		switch {
		case e == 0:
			t.Errorf("%s: no effect: say what it does to the store (table.go)", c.Name)
		case e == effLocal, e == effQueue, e == effNone, e == effScript:
			// alone, as they must be
		case e&(effLocal|effQueue|effNone) != 0:
			t.Errorf("%s: effect %b: effLocal, effQueue and effNone stand alone", c.Name, e)
		case rw == 0:
			t.Errorf("%s: effect %b: say whether it reads or writes", c.Name, e)
		case rw == effRead|effWrite:
			t.Errorf("%s: effect %b: a write that reads is effWrite alone", c.Name, e)
		case e&effBatch != 0 && e&(effLocks|effBlock) != 0:
			t.Errorf("%s: effect %b: only the keyspace's point reads and writes are batched", c.Name, e)
		case e&effPubSub != 0 && e&(effLocks|effBatch|effBlock) != 0:
			t.Errorf("%s: effect %b: a pub/sub row touches neither the lock module nor keys", c.Name, e)
		case e&effBlock != 0 && e&(effLocks|effWrite) == 0:
			t.Errorf("%s: effect %b: a blocking row outside the lock module writes (BLPOP pops): resp/blocking.go", c.Name, e)
		}
		// SPEC §5 and §13: a command that writes needs the write role, and
		// the write role is for commands that write.
		if c.writes() && c.Role < RoleWrite {
			t.Errorf("%s: writes, but the %s role may run it", c.Name, c.Role)
		}
		if c.Role == RoleWrite && !c.writes() {
			t.Errorf("%s: needs the write role but its effect says it writes nothing", c.Name)
		}
		if c.Handler == nil && c.Subcommands == nil {
			t.Errorf("%s: no handler", c.Name)
		}
	}
}

// What is derived from the effect, for a few rows whose answer SPEC §10
// spells out: the node-local rows, the writes through the log, the reads
// behind a barrier, and FLUSHALL, whose role is admin and which writes.
func TestEffectDerivations(t *testing.T) {
	table := commandTable()
	row := func(name string) *command {
		if c := lookupPath(table, []byte(name)); c != nil {
			return c
		}
		t.Fatalf("no row %s", name)
		return nil
	}
	for _, name := range []string{"ping", "auth", "hello", "quit", "info", "role", "command", "client|list", "cluster|slots"} {
		if row(name).Effect != effLocal {
			t.Errorf("%s: not node-local (SPEC §10)", name)
		}
	}
	for _, name := range []string{"set", "del", "flushall", "flushdb", "setbit", "copy"} {
		if !row(name).replicated() {
			t.Errorf("%s: not replicated", name)
		}
	}
	for _, name := range []string{"lock.hold", "lock.release", "lock.revoke"} {
		if c := row(name); c.replicated() || !c.writes() {
			t.Errorf("%s: replicated %v, writes %v: the lock module writes, and only on the leader", name, c.replicated(), c.writes())
		}
	}
	// SPEC §13: pub/sub is the leader's, never through the log, and reads
	// no keys behind a barrier.
	for _, name := range []string{"publish", "spublish", "subscribe", "pubsub|numsub"} {
		if c := row(name); c.replicated() || c.readsKeys() || c.Effect&effLocal != 0 {
			t.Errorf("%s: replicated %v, reads keys %v, local %v: pub/sub is served by the leader alone", name, c.replicated(), c.readsKeys(), c.Effect&effLocal != 0)
		}
	}
	for _, name := range []string{"get", "dbsize", "scan", "object|encoding"} {
		if !row(name).readsKeys() {
			t.Errorf("%s: no read barrier", name)
		}
	}
	for name, want := range map[string][]string{
		"flushall":    {"write", "admin"},
		"set":         {"write"},
		"get":         {"readonly", "fast"},
		"config|set":  {"admin"},
		"lock.hold":   {"write", "blocking"},
		"lock.revoke": {"write", "admin"},
		"ping":        {"readonly", "noauth", "fast"},
		"publish":     {"pubsub", "fast"},
		"subscribe":   {"pubsub", "noscript"},
	} {
		if got := commandInfoFlags(row(name)); !slices.Equal(got, want) {
			t.Errorf("COMMAND INFO %s: flags %q, want %q", name, got, want)
		}
	}
}

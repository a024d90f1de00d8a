package resp

import (
	"slices"
	"strings"

	"github.com/tenure-db/tenure/script"
)

// Role is what a connection is admitted to do (SPEC §5). Each role allows
// what the one before it does.
type Role uint8

const (
	RoleNone  Role = iota // not authenticated: AUTH, HELLO, PING, QUIT only
	RoleRead              // GET, SCAN, LOCK.INFO, INFO, …
	RoleWrite             // + SET, DEL, LOCK.HOLD/RENEW/RELEASE, …
	RoleAdmin             // + LOCK.REVOKE, FLUSHALL, CONFIG SET, SHUTDOWN, CLIENT KILL
)

func (r Role) String() string {
	switch r {
	case RoleRead:
		return "read"
	case RoleWrite:
		return "write"
	case RoleAdmin:
		return "admin"
	}
	return "none"
}

// effect is what a command does to the store: the fact of its row from
// which everything that depends on it is derived, so that a new row (a
// new family) is routed, replicated, batched and described by what it
// says here and nowhere else:
//
//   - in a cluster (routing.go), an effLocal row is answered by whichever
//     node gets it; any other by the leader alone (-MOVED elsewhere). There
//     an effWrite row goes through the log (replicated), an effRead row
//     runs once the leader has confirmed it leads (a read barrier), an
//     effLocks row once its epoch is applied, and an effQueue row (EXEC)
//     proposes its queue, whose rows decide for themselves (MULTI's lock
//     rows run on the leader's lock module, the others go in one entry);
//   - an effBatch row runs on a read batch's pipeline (batch.go);
//   - COMMAND INFO says "write" for an effWrite row, "blocking" for an
//     effBlock one; its key specs say RW for the keys of an effWrite row.
//
// A row says effRead or effWrite (not both: a write that reads, INCR,
// is a write), with effLocks when what it reads or writes is the lock
// module's rather than the keyspace's, or effPubSub when it is pub/sub's
// channels; or effLocal, effQueue or effNone alone. TestEveryRowSaysWhatItDoes holds every row to that.
type effect uint16

const (
	effRead  effect = 1 << iota // reads keys (with effLocks: the lock table) and changes none
	effWrite                    // changes keys (with effLocks: leases and lines), reading them or not
	// effLocks: it acts on the lock module, whose leases stay in the
	// leader's memory and are never replicated (SPEC §10).
	effLocks
	effBlock // may block its connection until it is answered (LOCK.HOLD)
	// effBatch: a point read or write of named keys that kv may run on a
	// read batch's pipeline (kv.Pipeline): its writes may share the commit
	// of the requests around it.
	effBatch
	// effQueue: it runs its transaction's queued requests (EXEC); what it
	// does to the store is what they do, each by its own row.
	effQueue
	// effLocal: it is about this node or this connection (PING, HELLO,
	// AUTH, INFO, ROLE, COMMAND, CLIENT, CLUSTER), so any node of a
	// cluster answers it (SPEC §10). Such a row must not change keys.
	effLocal
	// effNone: it touches neither keys nor locks (ECHO, SELECT, MULTI,
	// CONFIG, TIME), yet in a cluster it is the leader's to answer, as
	// SPEC §10 has every row that is not effLocal.
	effNone
	// effScript: it runs a Lua script (EVAL); what it does to the store is
	// what the script's commands do, each by its own row. Alone, the script
	// may write and in a cluster goes through the log as one entry
	// (LOCK-18); with effRead (EVAL_RO) it may only read.
	effScript
	// effPubSub: what it reads or writes is the server's pub/sub channels
	// (pubsub.go), not the keyspace: never through a cluster's log, and
	// served by the leader alone (SPEC §13), as any row not effLocal.
	// With effRead (SUBSCRIBE, PUBSUB) it needs the read role; with
	// effWrite (PUBLISH) the write role.
	effPubSub
)

// writes says the row changes the store (keys, or leases with effLocks).
func (c *command) writes() bool { return c.Effect&effWrite != 0 }

// replicated says the row goes through a cluster's log: it writes keys.
// The lock module's writes never do: leases live on the leader alone.
func (c *command) replicated() bool { return c.Effect&(effWrite|effLocks|effPubSub) == effWrite }

// readsKeys says a cluster's leader must confirm it leads before the row
// reads its own keyspace (a linearizable read, SPEC §10).
func (c *command) readsKeys() bool { return c.Effect&(effRead|effLocks|effPubSub) == effRead }

// commandFlags are the rest of a row's facts, about the connection and
// MULTI rather than the store, shown by COMMAND INFO.
type commandFlags uint16

const (
	FlagNoAuth  commandFlags = 1 << iota // may run before authentication
	FlagFast                             // O(1) or O(log N)
	FlagLoading                          // allowed while loading
	FlagStale
	FlagNotQueued // runs at once inside MULTI instead of being queued (EXEC, DISCARD, QUIT, …)
	FlagNoMulti   // refused inside MULTI, discarding the transaction (SHUTDOWN)
	FlagNoScript  // refused inside a script (Redis's noscript: EVAL, AUTH, CLIENT, CONFIG, …)
	// flagNodeAnswer: its answer is this node's own (RANDOMKEY, INFO,
	// LASTSAVE), so a script in a cluster, which every node runs, may not
	// call it. Never shown by COMMAND.
	flagNodeAnswer
	// flagPush: its replies are pub/sub's confirmations, pushes in RESP3
	// (SUBSCRIBE and the rest): CLIENT REPLY OFF does not silence them,
	// and RESP2's subscribed mode allows it. Never shown by COMMAND.
	flagPush
	// flagSubscribed: RESP2's subscribed mode allows it besides the
	// flagPush rows (PING, QUIT, RESET). Never shown by COMMAND.
	flagSubscribed
)

// command is one row of the command table, as in Redis's commands/*.json:
// arity and role are checked once, in dispatch, never in handlers; what
// the command does to the store is its Effect, and only there.
type command struct {
	Name   string // lowercase; "client|list" for a subcommand
	Arity  int    // exact when positive, a minimum when negative; counts the name
	Role   Role   // the least role that may run it
	Effect effect // what it does to the store; never zero
	Flags  commandFlags
	// FirstKey, LastKey and Step locate key arguments, for COMMAND INFO.
	FirstKey, LastKey, Step int
	Handler                 func(c *conn, args [][]byte)
	// drawn, when set, is what a script's call of a write whose outcome
	// is drawn at random replicates in a cluster instead of the call, given
	// its reply there: SPOP as SREM of what it popped (scripting.go).
	drawn func(args [][]byte, reply script.Reply) [][][]byte
	// Subcommands, when set, dispatch on args[1] (CLIENT, CONFIG, COMMAND).
	Subcommands map[string]*command
	Summary     string
	// Group is the family COMMAND DOCS names ("connection", "string", …),
	// the family file (table_<family>.go) that adds the row: a label for the
	// docs, which decides nothing (Effect does).
	Group string

	// For COMMAND DOCS, so that redis-cli shows hints: the version that
	// brought the command ("1.0.0" when empty), its cost, its arguments.
	Since      string
	Complexity string
	Args       []arg

	metrics *commandMetrics // set by Open: this server's counters for the row
}

// arg is one argument of a command as COMMAND DOCS describes it, in the
// shape of Redis's commands/*.json.
type arg struct {
	Name     string
	Type     string // "key", "string", "integer", "pure-token", "oneof", "block"
	Token    string // the word before the value, as in TTL ms
	Optional bool
	Multiple bool
	Args     []arg // of a oneof or block
}

// docs sets a row's COMMAND DOCS fields.
func docs(since, complexity string, args ...arg) func(*command) {
	return func(c *command) { c.Since, c.Complexity, c.Args = since, complexity, args }
}

// Helpers for arg lists.
func argString(name string) arg { return arg{Name: name, Type: "string"} }
func argOption(token, name string) arg {
	return arg{Name: name, Type: "integer", Token: token, Optional: true}
}

// argTokenInt is an integer after its token, as one choice of a oneof.
func argTokenInt(token, name string) arg { return arg{Name: name, Type: "integer", Token: token} }

// More helpers for arg lists, for the rows that are Redis's own.
func argKey(name string) arg { return arg{Name: name, Type: "key"} }
func argInt(name string) arg { return arg{Name: name, Type: "integer"} }
func argWord(token string) arg {
	return arg{Name: strings.ToLower(token), Type: "pure-token", Token: token}
}
func argToken(token string) arg {
	a := argWord(token)
	a.Optional = true
	return a
}
func argOneOf(name string, optional bool, args ...arg) arg {
	return arg{Name: name, Type: "oneof", Optional: optional, Args: args}
}

// keys is a helper for table rows: key positions for COMMAND INFO.
func keys(first, last, step int) func(*command) {
	return func(c *command) { c.FirstKey, c.LastKey, c.Step = first, last, step }
}

// commandTable builds the table. Adding a command touches its family's
// rows (table_<family>.go) and the handler's file, nothing else: its row
// says what it does to the store (effect), and routing, replication,
// batching and COMMAND INFO follow.
func commandTable() map[string]*command {
	t := &tableBuilder{rows: map[string]*command{}}
	t.connectionRows()
	t.serverRows()
	t.stringRows()
	t.bitmapRows()
	t.hashRows()
	t.setRows()
	t.keyRows()
	t.transactionRows()
	t.zsetRows()
	t.listRows()
	t.scriptingRows()
	t.pubsubRows()
	t.lockRows()
	return t.rows
}

// tableBuilder is the command table while each family's file adds its
// rows to it.
type tableBuilder struct {
	rows  map[string]*command
	group string // the family of the rows being added: their Group
}

// add adds a row of the current group.
func (t *tableBuilder) add(name string, arity int, role Role, e effect, flags commandFlags, h func(*conn, [][]byte), summary string, opts ...func(*command)) *command {
	c := &command{Name: name, Arity: arity, Role: role, Effect: e, Flags: flags, Handler: h, Summary: summary, Group: t.group}
	for _, o := range opts {
		o(c)
	}
	t.rows[name] = c
	return c
}

// sub adds a subcommand of parent, in parent's group.
func (t *tableBuilder) sub(parent *command, name string, arity int, role Role, e effect, flags commandFlags, h func(*conn, [][]byte), summary string, opts ...func(*command)) {
	if parent.Subcommands == nil {
		parent.Subcommands = map[string]*command{}
	}
	c := &command{Name: parent.Name + "|" + name, Arity: arity, Role: role, Effect: e, Flags: flags, Handler: h, Summary: summary, Group: parent.Group}
	for _, o := range opts {
		o(c)
	}
	parent.Subcommands[name] = c
}

// commands lists every row of the command table, subcommands included,
// sorted by name: for COMMAND-like tooling and for the role matrix test.
func commands() []*command {
	var list []*command
	for _, c := range commandTable() {
		list = append(list, c)
		for _, s := range c.Subcommands {
			list = append(list, s)
		}
	}
	slices.SortFunc(list, func(a, b *command) int { return strings.Compare(a.Name, b.Name) })
	return list
}

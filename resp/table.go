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
	// the section of commandTable the row is added in: a label for the
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

// bitRangeArgs are BITCOUNT's [start end [BYTE|BIT]].
func bitRangeArgs() arg {
	return arg{Name: "range", Type: "block", Optional: true, Args: []arg{argInt("start"), argInt("end"),
		argOneOf("unit", true, argWord("BYTE"), argWord("BIT"))}}
}

// condArgs are the compare-and-set conditions of SET and DELEX.
// SET's come after its NX and XX (first).
func condArgs(first ...arg) arg {
	tok := func(token, name string) arg { return arg{Name: name, Type: "string", Token: token} }
	return argOneOf("condition", true, append(first, tok("IFEQ", "ifeq-value"), tok("IFNE", "ifne-value"),
		tok("IFDEQ", "ifdeq-digest"), tok("IFDNE", "ifdne-digest"))...)
}

// keys is a helper for table rows: key positions for COMMAND INFO.
func keys(first, last, step int) func(*command) {
	return func(c *command) { c.FirstKey, c.LastKey, c.Step = first, last, step }
}

// commandTable builds the table. Adding a command touches this list and
// the handler's file, nothing else: its row says what it does to the store
// (effect), and routing, replication, batching and COMMAND INFO follow.
func commandTable() map[string]*command {
	t := map[string]*command{}
	var group string // the family of the rows that follow
	add := func(name string, arity int, role Role, e effect, flags commandFlags, h func(*conn, [][]byte), summary string, opts ...func(*command)) *command {
		c := &command{Name: name, Arity: arity, Role: role, Effect: e, Flags: flags, Handler: h, Summary: summary, Group: group}
		for _, o := range opts {
			o(c)
		}
		t[name] = c
		return c
	}
	sub := func(parent *command, name string, arity int, role Role, e effect, flags commandFlags, h func(*conn, [][]byte), summary string, opts ...func(*command)) {
		if parent.Subcommands == nil {
			parent.Subcommands = map[string]*command{}
		}
		c := &command{Name: parent.Name + "|" + name, Arity: arity, Role: role, Effect: e, Flags: flags, Handler: h, Summary: summary, Group: parent.Group}
		for _, o := range opts {
			o(c)
		}
		parent.Subcommands[name] = c
	}

	// connection: resp/connection.go
	group = "connection"
	add("ping", -1, RoleRead, effLocal, FlagNoAuth|FlagFast|flagSubscribed, cmdPing, "Returns the server's liveliness response.")
	add("echo", 2, RoleRead, effNone, FlagFast, cmdEcho, "Returns the given string.")
	add("hello", -1, RoleRead, effLocal, FlagNoAuth|FlagFast|FlagNoScript, cmdHello, "Handshakes with the server (protocol 2 only).")
	add("auth", -2, RoleRead, effLocal, FlagNoAuth|FlagFast|FlagNoScript, cmdAuth, "Authenticates the connection.")
	add("quit", -1, RoleRead, effLocal, FlagNoAuth|FlagFast|FlagNotQueued|flagSubscribed, cmdQuit, "Closes the connection.")
	add("select", 2, RoleRead, effNone, FlagFast, cmdSelect, "Changes the selected database (0 only).")
	// Redis lets RESET run before AUTH; SPEC §5 allows only AUTH, HELLO,
	// PING and QUIT there, so it does not here.
	add("reset", 1, RoleRead, effNone, FlagFast|FlagNotQueued|flagSubscribed, cmdReset, "Resets the connection.")
	client := add("client", -2, RoleRead, effLocal, FlagNoScript, nil, "A container for client connection commands.")
	sub(client, "id", 2, RoleRead, effLocal, FlagFast, cmdClientID, "Returns the unique client ID of the connection.")
	sub(client, "setname", 3, RoleRead, effLocal, FlagFast, cmdClientSetName, "Sets the connection name.")
	sub(client, "getname", 2, RoleRead, effLocal, FlagFast, cmdClientGetName, "Returns the name of the connection.")
	sub(client, "setinfo", 4, RoleRead, effLocal, FlagFast, cmdClientSetInfo, "Sets information specific to the client or connection.")
	sub(client, "info", 2, RoleRead, effLocal, 0, cmdClientInfo, "Returns information about the connection.")
	sub(client, "list", -2, RoleAdmin, effLocal, 0, cmdClientList, "Lists open connections.")
	sub(client, "kill", -3, RoleAdmin, effLocal, 0, cmdClientKill, "Terminates open connections.")
	sub(client, "unblock", -3, RoleAdmin, effLocal, 0, cmdClientUnblock, "Unblocks a client blocked by a blocking command from a different connection.",
		docs("5.0.0", "O(log N) where N is the number of client connections", argInt("client-id"), argOneOf("unblock-type", true, argWord("TIMEOUT"), argWord("ERROR"))))
	sub(client, "reply", 3, RoleRead, effLocal, 0, cmdClientReply, "Instructs the server whether to reply to commands.",
		docs("3.2.0", "O(1)", argOneOf("action", false, argWord("ON"), argWord("OFF"), argWord("SKIP"))))
	sub(client, "help", 2, RoleRead, effLocal, 0, cmdClientHelp, "Returns helpful text about the different subcommands.")
	sub(client, "no-evict", 3, RoleAdmin, effLocal, 0, cmdClientNoEvict, "Sets the client eviction mode of the connection.",
		docs("7.0.0", "O(1)", argOneOf("enabled", false, argWord("ON"), argWord("OFF"))))
	sub(client, "no-touch", 3, RoleRead, effLocal, FlagFast, cmdClientNoTouch, "Controls whether commands sent by the client affect the LRU/LFU of accessed keys.",
		docs("7.2.0", "O(1)", argOneOf("enabled", false, argWord("ON"), argWord("OFF"))))

	// server: resp/server.go, resp/info.go
	group = "server"
	add("info", -1, RoleRead, effLocal, flagNodeAnswer, cmdInfo, "Returns information and statistics about the server.")
	command := add("command", -1, RoleRead, effLocal, 0, cmdCommand, "Returns detailed information about all commands.")
	sub(command, "count", 2, RoleRead, effLocal, 0, cmdCommandCount, "Returns a count of commands.")
	sub(command, "info", -2, RoleRead, effLocal, 0, cmdCommandInfo, "Returns information about one, multiple or all commands.")
	sub(command, "docs", -2, RoleRead, effLocal, 0, cmdCommandDocs, "Returns documentary information about one, multiple or all commands.")
	sub(command, "list", -2, RoleRead, effLocal, 0, cmdCommandList, "Returns a list of command names.")
	sub(command, "help", 2, RoleRead, effLocal, 0, cmdCommandHelp, "Returns helpful text about the different subcommands.")
	sub(command, "getkeys", -4, RoleRead, effLocal, 0, cmdCommandGetKeys, "Extracts the key names from an arbitrary command.",
		docs("2.8.13", "O(N) where N is the number of arguments to the command", argString("command"), arg{Name: "arg", Type: "string", Optional: true, Multiple: true}))
	sub(command, "getkeysandflags", -4, RoleRead, effLocal, 0, cmdCommandGetKeysAndFlags, "Extracts the key names and access flags for an arbitrary command.",
		docs("7.0.0", "O(N) where N is the number of arguments to the command", argString("command"), arg{Name: "arg", Type: "string", Optional: true, Multiple: true}))
	config := add("config", -2, RoleRead, effNone, FlagNoScript, nil, "A container for server configuration commands.")
	sub(config, "get", -3, RoleRead, effNone, 0, cmdConfigGet, "Returns the effective values of configuration parameters.")
	sub(config, "set", -4, RoleAdmin, effNone, 0, cmdConfigSet, "Sets configuration parameters in-flight.")
	sub(config, "resetstat", 2, RoleAdmin, effNone, 0, cmdConfigResetStat, "Resets the server's statistics.")
	sub(config, "help", 2, RoleRead, effNone, 0, cmdConfigHelp, "Returns helpful text about the different subcommands.")
	add("dbsize", 1, RoleRead, effRead, FlagFast, cmdDBSize, "Returns the number of keys in the database.")
	add("flushdb", -1, RoleAdmin, effWrite, 0, cmdFlushAll, "Removes all keys from the current database.")
	add("flushall", -1, RoleAdmin, effWrite, 0, cmdFlushAll, "Removes all keys from all databases.")
	add("time", 1, RoleRead, effNone, FlagFast, cmdTime, "Returns the server time.")
	add("shutdown", -1, RoleAdmin, effNone, FlagNoMulti, cmdShutdown, "Stops the server cleanly.")
	add("save", 1, RoleAdmin, effLocal, FlagNoMulti|FlagNoScript, cmdSave, "Makes a durable point of the whole keyspace: flushes and syncs it to disk.",
		docs("1.0.0", "O(N) where N is the total number of keys in all databases"))
	add("bgsave", -1, RoleAdmin, effLocal, FlagNoScript, cmdBgSave, "Makes a durable point of the whole keyspace in the background.",
		docs("1.0.0", "O(N) where N is the total number of keys in all databases", argToken("SCHEDULE")))
	memory := add("memory", -2, RoleRead, effRead, 0, nil, "A container for memory diagnostics commands.")
	sub(memory, "usage", -3, RoleRead, effRead, 0, cmdMemoryUsage, "Estimates the memory usage of a key.", keys(2, 2, 1),
		docs("4.0.0", "O(N) where N is the number of samples.", argKey("key"), argOption("SAMPLES", "count")))
	sub(memory, "help", 2, RoleRead, effNone, 0, cmdMemoryHelp, "Returns helpful text about the different subcommands.")
	add("lastsave", 1, RoleRead, effNone, FlagFast|flagNodeAnswer, cmdLastSave, "Returns the Unix timestamp of the last fsync of the write-ahead log.",
		docs("1.0.0", "O(1)"))

	// cluster: resp/cluster.go (SPEC §10)
	add("role", 1, RoleRead, effLocal, FlagFast|FlagNoScript, cmdRole, "Returns the replication role.", docs("2.8.12", "O(1)"))
	cluster := add("cluster", -2, RoleRead, effLocal, FlagNoScript, nil, "A container for Redis Cluster commands.")
	sub(cluster, "info", 2, RoleRead, effLocal, 0, clusterOnly(cmdClusterInfo), "Returns information about the state of a node.")
	sub(cluster, "slots", 2, RoleRead, effLocal, 0, clusterOnly(cmdClusterSlots), "Returns the mapping of cluster slots to nodes.")
	sub(cluster, "shards", 2, RoleRead, effLocal, 0, clusterOnly(cmdClusterShards), "Returns the mapping of cluster slots to shards.")
	sub(cluster, "nodes", 2, RoleRead, effLocal, 0, clusterOnly(cmdClusterNodes), "Returns the cluster configuration for a node.")
	sub(cluster, "myid", 2, RoleRead, effLocal, 0, clusterOnly(cmdClusterMyID), "Returns the ID of a node.")
	sub(cluster, "keyslot", 3, RoleRead, effLocal, 0, clusterOnly(cmdClusterKeySlot), "Returns the hash slot for a key.")
	sub(cluster, "meet", -4, RoleAdmin, effLocal, 0, clusterOnly(cmdClusterMeet), "Adds the node at host port to the cluster as a voter.")
	sub(cluster, "forget", 3, RoleAdmin, effLocal, 0, clusterOnly(cmdClusterForget), "Removes a node from the cluster.")
	sub(cluster, "help", 2, RoleRead, effLocal, 0, cmdClusterHelp, "Returns helpful text about the different subcommands.")

	// strings: resp/strings.go
	group = "string"
	add("get", 2, RoleRead, effRead|effBatch, FlagFast, cmdGet, "Returns the string value of a key.", keys(1, 1, 1))
	add("set", -3, RoleWrite, effWrite|effBatch, 0, cmdSet, "Sets the string value of a key, with SET … FENCE f refusing older fences.", keys(1, 1, 1),
		docs("1.0.0", "O(1), O(N) with IFDEQ or IFDNE where N is the length of the string value", argKey("key"), argString("value"),
			condArgs(argWord("NX"), argWord("XX")),
			argToken("GET"),
			argOneOf("expiration", true, argTokenInt("EX", "seconds"), argTokenInt("PX", "milliseconds"),
				argTokenInt("EXAT", "unix-time-seconds"), argTokenInt("PXAT", "unix-time-milliseconds"), argWord("KEEPTTL")),
			argOption("FENCE", "fence")))
	add("setnx", 3, RoleWrite, effWrite|effBatch, FlagFast, cmdSetNX, "Set the string value of a key only when the key doesn't exist.", keys(1, 1, 1))
	add("setex", 4, RoleWrite, effWrite, 0, cmdSetEX, "Sets the string value and expiration time of a key.", keys(1, 1, 1))
	add("psetex", 4, RoleWrite, effWrite, 0, cmdPSetEX, "Sets both string value and expiration time in milliseconds of a key.", keys(1, 1, 1))
	add("getset", 3, RoleWrite, effWrite|effBatch, FlagFast, cmdGetSet, "Returns the previous string value of a key after setting it to a new value.", keys(1, 1, 1))
	add("getdel", 2, RoleWrite, effWrite|effBatch, FlagFast, cmdGetDel, "Returns the string value of a key after deleting the key.", keys(1, 1, 1))
	add("getex", -2, RoleWrite, effWrite, FlagFast, cmdGetEx, "Returns the string value of a key after setting its expiration time.", keys(1, 1, 1))
	add("mget", -2, RoleRead, effRead|effBatch, FlagFast, cmdMGet, "Atomically returns the string values of one or more keys.", keys(1, -1, 1))
	add("mset", -3, RoleWrite, effWrite|effBatch, 0, cmdMSet, "Atomically creates or modifies the string values of one or more keys.", keys(1, -1, 2))
	add("msetnx", -3, RoleWrite, effWrite, 0, cmdMSetNX, "Atomically modifies the string values of one or more keys only when all keys don't exist.", keys(1, -1, 2))
	add("incr", 2, RoleWrite, effWrite|effBatch, FlagFast, cmdIncr, "Increments the integer value of a key by one.", keys(1, 1, 1))
	add("decr", 2, RoleWrite, effWrite|effBatch, FlagFast, cmdDecr, "Decrements the integer value of a key by one.", keys(1, 1, 1))
	add("incrby", 3, RoleWrite, effWrite|effBatch, FlagFast, cmdIncrBy, "Increments the integer value of a key by a number.", keys(1, 1, 1))
	add("decrby", 3, RoleWrite, effWrite|effBatch, FlagFast, cmdDecrBy, "Decrements a number from the integer value of a key.", keys(1, 1, 1))
	add("incrbyfloat", 3, RoleWrite, effWrite, FlagFast, cmdIncrByFloat, "Increment the floating point value of a key by a number.", keys(1, 1, 1))
	add("append", 3, RoleWrite, effWrite|effBatch, FlagFast, cmdAppend, "Appends a string to the value of a key.", keys(1, 1, 1))
	add("strlen", 2, RoleRead, effRead|effBatch, FlagFast, cmdStrLen, "Returns the length of a string value.", keys(1, 1, 1))
	add("getrange", 4, RoleRead, effRead, 0, cmdGetRange, "Returns a substring of the string stored at a key.", keys(1, 1, 1))
	add("setrange", 4, RoleWrite, effWrite, 0, cmdSetRange, "Overwrites a part of a string value with another by an offset.", keys(1, 1, 1))
	add("substr", 4, RoleRead, effRead, 0, cmdGetRange, "Returns a substring from a string value.", keys(1, 1, 1),
		docs("1.0.0", "O(N) where N is the length of the returned string.", argKey("key"), argInt("start"), argInt("end")))
	add("lcs", -3, RoleRead, effRead, 0, cmdLCS, "Finds the longest common substring.", keys(1, 2, 1),
		docs("7.0.0", "O(N*M) where N and M are the lengths of s1 and s2, respectively",
			argKey("key1"), argKey("key2"), argToken("LEN"), argToken("IDX"),
			arg{Name: "min-match-len", Type: "integer", Token: "MINMATCHLEN", Optional: true}, argToken("WITHMATCHLEN")))
	// compare-and-set (SPEC §13): resp/compare.go; SET's IFEQ|IFNE|IFDEQ|IFDNE in cmdSet
	add("delex", -2, RoleWrite, effWrite, FlagFast, cmdDelEx, "Conditionally removes the specified key based on value or digest comparison.", keys(1, 1, 1),
		docs("8.4.0", "O(1) for IFEQ/IFNE, O(N) for IFDEQ/IFDNE where N is the length of the string value", argKey("key"), condArgs()))
	add("digest", 2, RoleRead, effRead, FlagFast, cmdDigest, "Returns the XXH3 hash of a string value.", keys(1, 1, 1),
		docs("8.4.0", "O(N) where N is the length of the string value", argKey("key")))
	add("delifeq", 3, RoleWrite, effWrite, FlagFast, cmdDelIfEq, "Deletes the key if its value is equal to the given value.", keys(1, 1, 1),
		docs("9.0.0", "O(1)", argKey("key"), argString("value")))
	group = "bitmap"
	add("setbit", 4, RoleWrite, effWrite, 0, cmdSetBit, "Sets or clears the bit at offset of the string value. Creates the key if it doesn't exist.", keys(1, 1, 1),
		docs("2.2.0", "O(1)", argKey("key"), argInt("offset"), argInt("value")))
	add("getbit", 3, RoleRead, effRead, FlagFast, cmdGetBit, "Returns a bit value by offset.", keys(1, 1, 1),
		docs("2.2.0", "O(1)", argKey("key"), argInt("offset")))
	add("bitcount", -2, RoleRead, effRead, 0, cmdBitCount, "Counts the number of set bits (population counting) in a string.", keys(1, 1, 1),
		docs("2.6.0", "O(N)", argKey("key"), bitRangeArgs()))
	add("bitpos", -3, RoleRead, effRead, 0, cmdBitPos, "Finds the first set (1) or clear (0) bit in a string.", keys(1, 1, 1),
		docs("2.8.7", "O(N)", argKey("key"), argInt("bit"), arg{Name: "range", Type: "block", Optional: true, Args: []arg{
			argInt("start"), {Name: "end-unit-block", Type: "block", Optional: true, Args: []arg{argInt("end"), bitRangeArgs().Args[2]}}}}))
	add("bitfield", -2, RoleWrite, effWrite, 0, cmdBitfield, "Performs arbitrary bitfield integer operations on strings.", keys(1, 1, 1),
		docs("3.2.0", "O(1) for each subcommand specified", argKey("key"), arg{Name: "operation", Type: "oneof", Optional: true, Multiple: true, Args: []arg{
			{Name: "get-block", Type: "block", Token: "GET", Args: []arg{argString("encoding"), argInt("offset")}},
			{Name: "write", Type: "block", Args: []arg{
				{Name: "overflow-block", Type: "oneof", Token: "OVERFLOW", Optional: true, Args: []arg{argWord("WRAP"), argWord("SAT"), argWord("FAIL")}},
				{Name: "write-operation", Type: "oneof", Args: []arg{
					{Name: "set-block", Type: "block", Token: "SET", Args: []arg{argString("encoding"), argInt("offset"), argInt("value")}},
					{Name: "incrby-block", Type: "block", Token: "INCRBY", Args: []arg{argString("encoding"), argInt("offset"), argInt("increment")}}}}}}}}))
	add("bitfield_ro", -2, RoleRead, effRead, FlagFast, cmdBitfieldRO, "Performs arbitrary read-only bitfield integer operations on strings.", keys(1, 1, 1),
		docs("6.0.0", "O(1) for each subcommand specified", argKey("key"), arg{Name: "get-block", Type: "block", Token: "GET", Optional: true, Multiple: true, Args: []arg{argString("encoding"), argInt("offset")}}))
	add("bitop", -4, RoleWrite, effWrite, 0, cmdBitOp, "Performs bitwise operations on multiple strings, and stores the result.", keys(2, -1, 1),
		docs("2.6.0", "O(N)", argOneOf("operation", false, argWord("AND"), argWord("OR"),
			argWord("XOR"), argWord("NOT")),
			argKey("destkey"), arg{Name: "key", Type: "key", Multiple: true}))

	// hashes: resp/hashes.go (SPEC §13)
	group = "hash"
	k1 := keys(1, 1, 1)
	add("hset", -4, RoleWrite, effWrite|effBatch, FlagFast, cmdHSet, "Creates or modifies the value of a field in a hash.", k1,
		docs("2.0.0", "O(1) for each field/value pair added", argKey("key"), arg{Name: "data", Type: "block", Multiple: true, Args: []arg{argString("field"), argString("value")}}))
	add("hmset", -4, RoleWrite, effWrite|effBatch, FlagFast, cmdHSet, "Sets the values of multiple fields.", k1,
		docs("2.0.0", "O(N) where N is the number of fields being set.", argKey("key"), arg{Name: "data", Type: "block", Multiple: true, Args: []arg{argString("field"), argString("value")}}))
	add("hsetnx", 4, RoleWrite, effWrite|effBatch, FlagFast, cmdHSetNX, "Sets the value of a field in a hash only when the field doesn't exist.", k1,
		docs("2.0.0", "O(1)", argKey("key"), argString("field"), argString("value")))
	add("hget", 3, RoleRead, effRead|effBatch, FlagFast, cmdHGet, "Returns the value of a field in a hash.", k1,
		docs("2.0.0", "O(1)", argKey("key"), argString("field")))
	add("hmget", -3, RoleRead, effRead|effBatch, FlagFast, cmdHMGet, "Returns the values of all fields in a hash.", k1,
		docs("2.0.0", "O(N) where N is the number of fields being requested.", argKey("key"), arg{Name: "field", Type: "string", Multiple: true}))
	add("hgetall", 2, RoleRead, effRead, 0, cmdHGetAll, "Returns all fields and values in a hash.", k1,
		docs("2.0.0", "O(N) where N is the size of the hash.", argKey("key")))
	add("hkeys", 2, RoleRead, effRead, 0, cmdHKeys, "Returns all fields in a hash.", k1,
		docs("2.0.0", "O(N) where N is the size of the hash.", argKey("key")))
	add("hvals", 2, RoleRead, effRead, 0, cmdHVals, "Returns all values in a hash.", k1,
		docs("2.0.0", "O(N) where N is the size of the hash.", argKey("key")))
	add("hlen", 2, RoleRead, effRead|effBatch, FlagFast, cmdHLen, "Returns the number of fields in a hash.", k1,
		docs("2.0.0", "O(1)", argKey("key")))
	add("hexists", 3, RoleRead, effRead|effBatch, FlagFast, cmdHExists, "Determines whether a field exists in a hash.", k1,
		docs("2.0.0", "O(1)", argKey("key"), argString("field")))
	add("hdel", -3, RoleWrite, effWrite|effBatch, FlagFast, cmdHDel, "Deletes one or more fields and their values from a hash. Deletes the hash if no fields remain.", k1,
		docs("2.0.0", "O(N) where N is the number of fields to be removed.", argKey("key"), arg{Name: "field", Type: "string", Multiple: true}))
	add("hincrby", 4, RoleWrite, effWrite|effBatch, FlagFast, cmdHIncrBy, "Increments the integer value of a field in a hash by a number. Uses 0 as initial value if the field doesn't exist.", k1,
		docs("2.0.0", "O(1)", argKey("key"), argString("field"), argInt("increment")))
	add("hincrbyfloat", 4, RoleWrite, effWrite, FlagFast, cmdHIncrByFloat, "Increments the floating point value of a field by a number. Uses 0 as initial value if the field doesn't exist.", k1,
		docs("2.6.0", "O(1)", argKey("key"), argString("field"), arg{Name: "increment", Type: "double"}))
	add("hstrlen", 3, RoleRead, effRead|effBatch, FlagFast, cmdHStrLen, "Returns the length of the value of a field.", k1,
		docs("3.2.0", "O(1)", argKey("key"), argString("field")))
	add("hrandfield", -2, RoleRead, effRead, 0, cmdHRandField, "Returns one or more random fields from a hash.", k1,
		docs("6.2.0", "O(N) where N is the number of fields returned", argKey("key"), arg{Name: "options", Type: "block", Optional: true, Args: []arg{argInt("count"), argToken("WITHVALUES")}}))
	add("hscan", -3, RoleRead, effRead, 0, cmdHScan, "Iterates over fields and values of a hash.", k1,
		docs("2.8.0", "O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection.",
			argKey("key"), argInt("cursor"), arg{Name: "pattern", Type: "pattern", Token: "MATCH", Optional: true}, argOption("COUNT", "count"), argToken("NOVALUES")))

	// sets: resp/sets.go (SPEC §13)
	group = "set"
	many := arg{Name: "member", Type: "string", Multiple: true}
	manyKeys := arg{Name: "key", Type: "key", Multiple: true}
	add("sadd", -3, RoleWrite, effWrite|effBatch, FlagFast, cmdSAdd, "Adds one or more members to a set. Creates the key if it doesn't exist.", k1,
		docs("1.0.0", "O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments.", argKey("key"), many))
	add("srem", -3, RoleWrite, effWrite|effBatch, FlagFast, cmdSRem, "Removes one or more members from a set. Deletes the set if the last member was removed.", k1,
		docs("1.0.0", "O(N) where N is the number of members to be removed.", argKey("key"), many))
	add("smembers", 2, RoleRead, effRead, 0, cmdSMembers, "Returns all members of a set.", k1,
		docs("1.0.0", "O(N) where N is the set cardinality.", argKey("key")))
	add("sismember", 3, RoleRead, effRead|effBatch, FlagFast, cmdSIsMember, "Determines whether a member belongs to a set.", k1,
		docs("1.0.0", "O(1)", argKey("key"), argString("member")))
	add("smismember", -3, RoleRead, effRead|effBatch, FlagFast, cmdSMIsMember, "Determines whether multiple members belong to a set.", k1,
		docs("6.2.0", "O(N) where N is the number of elements being checked for membership", argKey("key"), many))
	add("scard", 2, RoleRead, effRead|effBatch, FlagFast, cmdSCard, "Returns the number of members in a set.", k1,
		docs("1.0.0", "O(1)", argKey("key")))
	add("spop", -2, RoleWrite, effWrite, FlagFast, cmdSPop, "Returns one or more random members from a set after removing them. Deletes the set if the last member was popped.", k1, drawnAs(spopEffect),
		docs("1.0.0", "Without the count argument O(1), otherwise O(N) where N is the value of the passed count.", argKey("key"), arg{Name: "count", Type: "integer", Optional: true}))
	add("srandmember", -2, RoleRead, effRead, 0, cmdSRandMember, "Get one or multiple random members from a set", k1,
		docs("1.0.0", "Without the count argument O(1), otherwise O(N) where N is the absolute value of the passed count.", argKey("key"), arg{Name: "count", Type: "integer", Optional: true}))
	add("smove", 4, RoleWrite, effWrite, FlagFast, cmdSMove, "Moves a member from one set to another.", keys(1, 2, 1),
		docs("1.0.0", "O(1)", argKey("source"), argKey("destination"), argString("member")))
	add("sinter", -2, RoleRead, effRead, 0, cmdSInter, "Returns the intersect of multiple sets.", keys(1, -1, 1),
		docs("1.0.0", "O(N*M) worst case where N is the cardinality of the smallest set and M is the number of sets.", manyKeys))
	add("sintercard", -3, RoleRead, effRead, 0, cmdSInterCard, "Returns the number of members of the intersect of multiple sets.", keys(2, 2, 1),
		docs("7.0.0", "O(N*M) worst case where N is the cardinality of the smallest set and M is the number of sets.", argInt("numkeys"), manyKeys, argOption("LIMIT", "limit")))
	add("sinterstore", -3, RoleWrite, effWrite, 0, cmdSInterStore, "Stores the intersect of multiple sets in a key.", keys(1, -1, 1),
		docs("1.0.0", "O(N*M) worst case where N is the cardinality of the smallest set and M is the number of sets.", argKey("destination"), manyKeys))
	add("sunion", -2, RoleRead, effRead, 0, cmdSUnion, "Returns the union of multiple sets.", keys(1, -1, 1),
		docs("1.0.0", "O(N) where N is the total number of elements in all given sets.", manyKeys))
	add("sunionstore", -3, RoleWrite, effWrite, 0, cmdSUnionStore, "Stores the union of multiple sets in a key.", keys(1, -1, 1),
		docs("1.0.0", "O(N) where N is the total number of elements in all given sets.", argKey("destination"), manyKeys))
	add("sdiff", -2, RoleRead, effRead, 0, cmdSDiff, "Returns the difference of multiple sets.", keys(1, -1, 1),
		docs("1.0.0", "O(N) where N is the total number of elements in all given sets.", manyKeys))
	add("sdiffstore", -3, RoleWrite, effWrite, 0, cmdSDiffStore, "Stores the difference of multiple sets in a key.", keys(1, -1, 1),
		docs("1.0.0", "O(N) where N is the total number of elements in all given sets.", argKey("destination"), manyKeys))
	add("sscan", -3, RoleRead, effRead, 0, cmdSScan, "Iterates over members of a set.", k1,
		docs("2.0.0", "O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection.",
			argKey("key"), argInt("cursor"), arg{Name: "pattern", Type: "pattern", Token: "MATCH", Optional: true}, argOption("COUNT", "count")))

	// keys: resp/keys.go
	group = "generic"
	add("del", -2, RoleWrite, effWrite|effBatch, 0, cmdDel, "Deletes one or more keys.", keys(1, -1, 1))
	add("unlink", -2, RoleWrite, effWrite|effBatch, FlagFast, cmdDel, "Asynchronously deletes one or more keys.", keys(1, -1, 1))
	add("exists", -2, RoleRead, effRead, FlagFast, cmdExists, "Determines whether one or more keys exist.", keys(1, -1, 1))
	add("expire", -3, RoleWrite, effWrite, FlagFast, cmdExpire, "Sets the expiration time of a key in seconds.", keys(1, 1, 1))
	add("pexpire", -3, RoleWrite, effWrite, FlagFast, cmdPExpire, "Sets the expiration time of a key in milliseconds.", keys(1, 1, 1))
	add("expireat", -3, RoleWrite, effWrite, FlagFast, cmdExpireAt, "Sets the expiration time of a key to a Unix timestamp.", keys(1, 1, 1))
	add("pexpireat", -3, RoleWrite, effWrite, FlagFast, cmdPExpireAt, "Sets the expiration time of a key to a Unix milliseconds timestamp.", keys(1, 1, 1))
	add("ttl", 2, RoleRead, effRead, FlagFast, cmdTTL, "Returns the expiration time in seconds of a key.", keys(1, 1, 1))
	add("pttl", 2, RoleRead, effRead, FlagFast, cmdPTTL, "Returns the expiration time in milliseconds of a key.", keys(1, 1, 1))
	add("persist", 2, RoleWrite, effWrite, FlagFast, cmdPersist, "Removes the expiration time of a key.", keys(1, 1, 1))
	add("type", 2, RoleRead, effRead, FlagFast, cmdType, "Determines the type of value stored at a key.", keys(1, 1, 1))
	add("keys", 2, RoleRead, effRead, 0, cmdKeys, "Returns all key names that match a pattern.")
	add("scan", -2, RoleRead, effRead, 0, cmdScan, "Iterates over the key names in the database.")
	add("rename", 3, RoleWrite, effWrite, 0, cmdRename, "Renames a key and overwrites the destination.", keys(1, 2, 1))
	add("renamenx", 3, RoleWrite, effWrite, FlagFast, cmdRenameNX, "Renames a key only when the target key name doesn't exist.", keys(1, 2, 1))
	add("touch", -2, RoleRead, effRead, FlagFast, cmdTouch, "Returns the number of existing keys out of those specified after updating the time they were last accessed.", keys(1, -1, 1),
		docs("3.2.1", "O(N) where N is the number of keys that will be touched.", arg{Name: "key", Type: "key", Multiple: true}))
	add("expiretime", 2, RoleRead, effRead, FlagFast, cmdExpireTime, "Returns the expiration time of a key as a Unix timestamp.", keys(1, 1, 1),
		docs("7.0.0", "O(1)", argKey("key")))
	add("pexpiretime", 2, RoleRead, effRead, FlagFast, cmdPExpireTime, "Returns the expiration time of a key as a Unix milliseconds timestamp.", keys(1, 1, 1),
		docs("7.0.0", "O(1)", argKey("key")))
	add("randomkey", 1, RoleRead, effRead, flagNodeAnswer, cmdRandomKey, "Returns a random key name from the database.",
		docs("1.0.0", "O(1)"))
	add("copy", -3, RoleWrite, effWrite, 0, cmdCopy, "Copies the value of a key to a new key.", keys(1, 2, 1),
		docs("6.2.0", "O(N) worst case for collections, where N is the number of nested items. O(1) for string values.",
			argKey("source"), argKey("destination"), arg{Name: "destination-db", Type: "integer", Token: "DB", Optional: true}, argToken("REPLACE")))
	object := add("object", -2, RoleRead, effRead, 0, nil, "A container for object introspection commands.")
	sub(object, "encoding", 3, RoleRead, effRead, 0, cmdObjectEncoding, "Returns the internal encoding of a Redis object.", keys(2, 2, 1),
		docs("2.2.3", "O(1)", argKey("key")))
	sub(object, "freq", 3, RoleRead, effRead, 0, cmdObjectFreq, "Returns the logarithmic access frequency counter of a Redis object.", keys(2, 2, 1),
		docs("4.0.0", "O(1)", argKey("key")))
	sub(object, "refcount", 3, RoleRead, effRead, 0, cmdObjectRefCount, "Returns the reference count of a value of a key.", keys(2, 2, 1),
		docs("2.2.3", "O(1)", argKey("key")))
	sub(object, "help", 2, RoleRead, effNone, 0, cmdObjectHelp, "Returns helpful text about the different subcommands.")

	// transactions: resp/transactions.go
	group = "transactions"
	add("multi", 1, RoleRead, effNone, FlagFast|FlagNotQueued, cmdMulti, "Starts a transaction.")
	add("exec", 1, RoleRead, effQueue, FlagNotQueued, cmdExec, "Executes all commands in a transaction.")
	add("discard", 1, RoleRead, effNone, FlagFast|FlagNotQueued, cmdDiscard, "Discards a transaction.")
	add("watch", -2, RoleRead, effNone, FlagFast|FlagNotQueued, cmdWatch, "Monitors changes to keys to determine the execution of a transaction.", keys(1, -1, 1))
	add("unwatch", 1, RoleRead, effNone, FlagFast, cmdUnwatch, "Forgets about watched keys of a transaction.")

	// sorted sets: resp/zsets.go (SPEC §13)
	group = "sorted-set"
	W, R, B := effWrite, effRead, effWrite|effBlock
	add("zadd", -4, RoleWrite, W, FlagFast, cmdZAdd, "Adds one or more members to a sorted set, or updates their scores. Creates the key if it doesn't exist.", keys(1, 1, 1),
		docs("1.2.0", "O(log(N)) for each item added, where N is the number of elements in the sorted set.", argKey("key"),
			argOneOf("condition", true, argWord("NX"), argWord("XX")), argOneOf("comparison", true, argWord("GT"), argWord("LT")),
			argToken("CH"), argToken("INCR"), arg{Name: "data", Type: "block", Multiple: true, Args: []arg{argString("score"), argString("member")}}))
	add("zincrby", 4, RoleWrite, W, FlagFast, cmdZIncrBy, "Increments the score of a member in a sorted set.", keys(1, 1, 1))
	add("zrem", -3, RoleWrite, W, FlagFast, cmdZRem, "Removes one or more members from a sorted set. Deletes the sorted set if all members were removed.", keys(1, 1, 1))
	add("zcard", 2, RoleRead, R, FlagFast, cmdZCard, "Returns the number of members in a sorted set.", keys(1, 1, 1))
	add("zcount", 4, RoleRead, R, FlagFast, cmdZCount, "Returns the count of members in a sorted set that have scores within a range.", keys(1, 1, 1))
	add("zlexcount", 4, RoleRead, R, FlagFast, cmdZLexCount, "Returns the number of members in a sorted set within a lexicographical range.", keys(1, 1, 1))
	add("zscore", 3, RoleRead, R, FlagFast, cmdZScore, "Returns the score of a member in a sorted set.", keys(1, 1, 1))
	add("zmscore", -3, RoleRead, R, FlagFast, cmdZMScore, "Returns the score of one or more members in a sorted set.", keys(1, 1, 1))
	add("zrank", 3, RoleRead, R, FlagFast, cmdZRank, "Returns the index of a member in a sorted set ordered by ascending scores.", keys(1, 1, 1))
	add("zrevrank", 3, RoleRead, R, FlagFast, cmdZRevRank, "Returns the index of a member in a sorted set ordered by descending scores.", keys(1, 1, 1))
	add("zrange", -4, RoleRead, R, 0, cmdZRange, "Returns members in a sorted set within a range of indexes.", keys(1, 1, 1),
		docs("1.2.0", "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements returned.",
			argKey("key"), argString("start"), argString("stop"), argOneOf("sortby", true, argWord("BYSCORE"), argWord("BYLEX")), argToken("REV"),
			arg{Name: "limit", Type: "block", Token: "LIMIT", Optional: true, Args: []arg{argInt("offset"), argInt("count")}}, argToken("WITHSCORES")))
	add("zrangestore", -5, RoleWrite, W, 0, cmdZRangeStore, "Stores a range of members from sorted set in a key.", keys(1, 2, 1))
	add("zrevrange", -4, RoleRead, R, 0, cmdZRevRange, "Returns members in a sorted set within a range of indexes in reverse order.", keys(1, 1, 1))
	add("zrangebyscore", -4, RoleRead, R, 0, cmdZRangeByScore, "Returns members in a sorted set within a range of scores.", keys(1, 1, 1))
	add("zrevrangebyscore", -4, RoleRead, R, 0, cmdZRevRangeByScore, "Returns members in a sorted set within a range of scores in reverse order.", keys(1, 1, 1))
	add("zrangebylex", -4, RoleRead, R, 0, cmdZRangeByLex, "Returns members in a sorted set within a lexicographical range.", keys(1, 1, 1))
	add("zrevrangebylex", -4, RoleRead, R, 0, cmdZRevRangeByLex, "Returns members in a sorted set within a lexicographical range in reverse order.", keys(1, 1, 1))
	add("zremrangebyrank", 4, RoleWrite, W, 0, cmdZRemRangeByRank, "Removes members in a sorted set within a range of indexes. Deletes the sorted set if all members were removed.", keys(1, 1, 1))
	add("zremrangebyscore", 4, RoleWrite, W, 0, cmdZRemRangeByScore, "Removes members in a sorted set within a range of scores. Deletes the sorted set if all members were removed.", keys(1, 1, 1))
	add("zremrangebylex", 4, RoleWrite, W, 0, cmdZRemRangeByLex, "Removes members in a sorted set within a lexicographical range. Deletes the sorted set if all members were removed.", keys(1, 1, 1))
	add("zpopmin", -2, RoleWrite, W, FlagFast, cmdZPopMin, "Returns the lowest-scoring members from a sorted set after removing them. Deletes the sorted set if the last member was popped.", keys(1, 1, 1))
	add("zpopmax", -2, RoleWrite, W, FlagFast, cmdZPopMax, "Returns the highest-scoring members from a sorted set after removing them. Deletes the sorted set if the last member was popped.", keys(1, 1, 1))
	add("zmpop", -4, RoleWrite, W, 0, cmdZMPop, "Returns the highest- or lowest-scoring members from one or more sorted sets after removing them. Deletes the sorted set if the last member was popped.", keys(2, 2, 1))
	add("bzpopmin", -3, RoleWrite, B, FlagFast|FlagNoScript, cmdBZPopMin, "Removes and returns the member with the lowest score from one or more sorted sets. Blocks until a member is available otherwise. Deletes the sorted set if the last element was popped.", keys(1, -2, 1))
	add("bzpopmax", -3, RoleWrite, B, FlagFast|FlagNoScript, cmdBZPopMax, "Removes and returns the member with the highest score from one or more sorted sets. Blocks until a member available otherwise.  Deletes the sorted set if the last element was popped.", keys(1, -2, 1))
	add("bzmpop", -5, RoleWrite, B, 0, cmdBZMPop, "Removes and returns a member by score from one or more sorted sets. Blocks until a member is available otherwise. Deletes the sorted set if the last element was popped.", keys(3, 3, 1))
	add("zrandmember", -2, RoleRead, R, 0, cmdZRandMember, "Returns one or more random members from a sorted set.", keys(1, 1, 1))
	add("zunion", -3, RoleRead, R, 0, cmdZUnion, "Returns the union of multiple sorted sets.", keys(2, 2, 1))
	add("zinter", -3, RoleRead, R, 0, cmdZInter, "Returns the intersect of multiple sorted sets.", keys(2, 2, 1))
	add("zdiff", -3, RoleRead, R, 0, cmdZDiff, "Returns the difference between multiple sorted sets.", keys(2, 2, 1))
	add("zunionstore", -4, RoleWrite, W, 0, cmdZUnionStore, "Stores the union of multiple sorted sets in a key.", keys(1, 1, 1))
	add("zinterstore", -4, RoleWrite, W, 0, cmdZInterStore, "Stores the intersect of multiple sorted sets in a key.", keys(1, 1, 1))
	add("zdiffstore", -4, RoleWrite, W, 0, cmdZDiffStore, "Stores the difference of multiple sorted sets in a key.", keys(1, 1, 1))
	add("zintercard", -3, RoleRead, R, 0, cmdZInterCard, "Returns the number of members of the intersect of multiple sorted sets.", keys(2, 2, 1))
	add("zscan", -3, RoleRead, R, 0, cmdZScan, "Iterates over members and scores of a sorted set.", keys(1, 1, 1))

	// lists: resp/lists.go (SPEC §13)
	group = "list"
	add("lpush", -3, RoleWrite, W, FlagFast, cmdLPush, "Prepends one or more elements to a list. Creates the key if it doesn't exist.", keys(1, 1, 1))
	add("rpush", -3, RoleWrite, W, FlagFast, cmdRPush, "Appends one or more elements to a list. Creates the key if it doesn't exist.", keys(1, 1, 1))
	add("lpushx", -3, RoleWrite, W, FlagFast, cmdLPushX, "Prepends one or more elements to a list only when the list exists.", keys(1, 1, 1))
	add("rpushx", -3, RoleWrite, W, FlagFast, cmdRPushX, "Appends an element to a list only when the list exists.", keys(1, 1, 1))
	add("lpop", -2, RoleWrite, W, FlagFast, cmdLPop, "Returns the first elements in a list after removing it. Deletes the list if the last element was popped.", keys(1, 1, 1))
	add("rpop", -2, RoleWrite, W, FlagFast, cmdRPop, "Returns and removes the last elements of the list. Deletes the list if the last element was popped.", keys(1, 1, 1))
	add("llen", 2, RoleRead, R, FlagFast, cmdLLen, "Returns the length of a list.", keys(1, 1, 1))
	add("lrange", 4, RoleRead, R, 0, cmdLRange, "Returns a range of elements from a list.", keys(1, 1, 1))
	add("lindex", 3, RoleRead, R, 0, cmdLIndex, "Returns an element from a list by its index.", keys(1, 1, 1))
	add("lset", 4, RoleWrite, W, 0, cmdLSet, "Sets the value of an element in a list by its index.", keys(1, 1, 1))
	add("linsert", 5, RoleWrite, W, 0, cmdLInsert, "Inserts an element before or after another element in a list.", keys(1, 1, 1))
	add("lrem", 4, RoleWrite, W, 0, cmdLRem, "Removes elements from a list. Deletes the list if the last element was removed.", keys(1, 1, 1))
	add("ltrim", 4, RoleWrite, W, 0, cmdLTrim, "Removes elements from both ends a list. Deletes the list if all elements were trimmed.", keys(1, 1, 1))
	add("lpos", -3, RoleRead, R, 0, cmdLPos, "Returns the index of matching elements in a list.", keys(1, 1, 1))
	add("lmove", 5, RoleWrite, W, 0, cmdLMove, "Returns an element after popping it from one list and pushing it to another. Deletes the list if the last element was moved.", keys(1, 2, 1))
	add("rpoplpush", 3, RoleWrite, W, 0, cmdRPopLPush, "Returns the last element of a list after removing and pushing it to another list. Deletes the list if the last element was popped.", keys(1, 2, 1))
	add("lmpop", -4, RoleWrite, W, 0, cmdLMPop, "Returns multiple elements from a list after removing them. Deletes the list if the last element was popped.", keys(2, 2, 1))
	add("blpop", -3, RoleWrite, B, FlagNoScript, cmdBLPop, "Removes and returns the first element in a list. Blocks until an element is available otherwise. Deletes the list if the last element was popped.", keys(1, -2, 1))
	add("brpop", -3, RoleWrite, B, FlagNoScript, cmdBRPop, "Removes and returns the last element in a list. Blocks until an element is available otherwise. Deletes the list if the last element was popped.", keys(1, -2, 1))
	add("blmove", 6, RoleWrite, B, FlagNoScript, cmdBLMove, "Pops an element from a list, pushes it to another list and returns it. Blocks until an element is available otherwise. Deletes the list if the last element was moved.", keys(1, 2, 1))
	add("brpoplpush", 4, RoleWrite, B, FlagNoScript, cmdBRPopLPush, "Pops an element from a list, pushes it to another list and returns it. Block until an element is available otherwise. Deletes the list if the last element was popped.", keys(1, 2, 1))
	add("blmpop", -5, RoleWrite, B, 0, cmdBLMPop, "Pops the first element from one of multiple lists. Blocks until an element is available otherwise. Deletes the list if the last element was popped.", keys(3, 3, 1))
	add("sort", -2, RoleWrite, W, 0, cmdSort, "Sorts the elements in a list, a set, or a sorted set, optionally storing the result.", keys(1, 1, 1))
	add("sort_ro", -2, RoleRead, R, 0, cmdSortRO, "Returns the sorted elements of a list, a set, or a sorted set.", keys(1, 1, 1))

	// scripting: resp/scripting.go (SPEC §13). EVAL needs only the read
	// role: each command inside is checked against the caller's.
	group = "scripting"
	add("eval", -3, RoleRead, effScript, FlagNoScript, cmdEval, "Executes a server-side Lua script.", evalDocs("2.6.0", "script"))
	add("evalsha", -3, RoleRead, effScript, FlagNoScript, cmdEvalSHA, "Executes a server-side Lua script by SHA1 digest.", evalDocs("2.6.0", "sha1"))
	add("eval_ro", -3, RoleRead, effRead|effScript, FlagNoScript, cmdEvalRO, "Executes a read-only server-side Lua script.", evalDocs("7.0.0", "script"))
	add("evalsha_ro", -3, RoleRead, effRead|effScript, FlagNoScript, cmdEvalSHARO, "Executes a read-only server-side Lua script by SHA1 digest.", evalDocs("7.0.0", "sha1"))
	scriptCmd := add("script", -2, RoleRead, effNone, FlagNoScript, nil, "A container for Lua scripts management commands.")
	sub(scriptCmd, "load", 3, RoleRead, effNone, FlagNoScript, cmdScriptLoad, "Loads a server-side Lua script to the script cache.")
	sub(scriptCmd, "exists", -3, RoleRead, effNone, FlagNoScript, cmdScriptExists, "Determines whether server-side Lua scripts exist in the script cache.")
	sub(scriptCmd, "flush", -2, RoleAdmin, effNone, FlagNoScript, cmdScriptFlush, "Removes all server-side Lua scripts from the script cache.")
	sub(scriptCmd, "kill", 2, RoleAdmin, effNone, FlagNoScript, cmdScriptKill, "Terminates a server-side Lua script during execution.")
	sub(scriptCmd, "help", 2, RoleRead, effNone, FlagNoScript, cmdScriptHelp, "Returns helpful text about the different subcommands.")

	// pub/sub: resp/pubsub.go (SPEC §13). Subscribing reads, publishing
	// writes (the roles of SPEC §5); none of it touches the keyspace.
	group = "pubsub"
	chans := func(name string) arg { return arg{Name: name, Type: "string", Multiple: true} }
	optChans := func(name string) arg { return arg{Name: name, Type: "string", Optional: true, Multiple: true} }
	add("subscribe", -2, RoleRead, effRead|effPubSub, FlagNoScript|flagPush, cmdSubscribe, "Listens for messages published to channels.",
		docs("2.0.0", "O(N) where N is the number of channels to subscribe to.", chans("channel")))
	add("psubscribe", -2, RoleRead, effRead|effPubSub, FlagNoScript|flagPush, cmdPSubscribe, "Listens for messages published to channels that match one or more patterns.",
		docs("2.0.0", "O(N) where N is the number of patterns to subscribe to.", chans("pattern")))
	add("ssubscribe", -2, RoleRead, effRead|effPubSub, FlagNoScript|flagPush, cmdSSubscribe, "Listens for messages published to shard channels.", keys(1, -1, 1),
		docs("7.0.0", "O(N) where N is the number of shard channels to subscribe to.", chans("shardchannel")))
	add("unsubscribe", -1, RoleRead, effRead|effPubSub, FlagNoScript|flagPush, cmdUnsubscribe, "Stops listening to messages posted to channels.",
		docs("2.0.0", "O(N) where N is the number of channels to unsubscribe.", optChans("channel")))
	add("punsubscribe", -1, RoleRead, effRead|effPubSub, FlagNoScript|flagPush, cmdPUnsubscribe, "Stops listening to messages published to channels that match one or more patterns.",
		docs("2.0.0", "O(N) where N is the number of patterns to unsubscribe.", optChans("pattern")))
	add("sunsubscribe", -1, RoleRead, effRead|effPubSub, FlagNoScript|flagPush, cmdSUnsubscribe, "Stops listening to messages posted to shard channels.", keys(1, -1, 1),
		docs("7.0.0", "O(N) where N is the number of shard channels to unsubscribe.", optChans("shardchannel")))
	add("publish", 3, RoleWrite, effWrite|effPubSub, FlagFast, cmdPublish, "Posts a message to a channel.",
		docs("2.0.0", "O(N+M) where N is the number of clients subscribed to the receiving channel and M is the total number of subscribed patterns (by any client).",
			argString("channel"), argString("message")))
	add("spublish", 3, RoleWrite, effWrite|effPubSub, FlagFast, cmdSPublish, "Post a message to a shard channel", keys(1, 1, 1),
		docs("7.0.0", "O(N) where N is the number of clients subscribed to the receiving shard channel.",
			argString("shardchannel"), argString("message")))
	pubsubCmd := add("pubsub", -2, RoleRead, effRead|effPubSub, 0, nil, "A container for Pub/Sub commands.")
	sub(pubsubCmd, "channels", -2, RoleRead, effRead|effPubSub, 0, pubsubChannels(psChannel), "Returns the active channels.",
		docs("2.8.0", "O(N) where N is the number of active channels, and assuming constant time pattern matching (relatively short channels and patterns)",
			arg{Name: "pattern", Type: "pattern", Optional: true}))
	sub(pubsubCmd, "shardchannels", -2, RoleRead, effRead|effPubSub, 0, pubsubChannels(psShard), "Returns the active shard channels.",
		docs("7.0.0", "O(N) where N is the number of active shard channels, and assuming constant time pattern matching (relatively short shard channels).",
			arg{Name: "pattern", Type: "pattern", Optional: true}))
	sub(pubsubCmd, "numsub", -2, RoleRead, effRead|effPubSub, 0, pubsubNumSub(psChannel), "Returns a count of subscribers to channels.",
		docs("2.8.0", "O(N) for the NUMSUB subcommand, where N is the number of requested channels", optChans("channel")))
	sub(pubsubCmd, "shardnumsub", -2, RoleRead, effRead|effPubSub, 0, pubsubNumSub(psShard), "Returns the count of subscribers of shard channels.",
		docs("7.0.0", "O(N) for the SHARDNUMSUB subcommand, where N is the number of requested shard channels", optChans("shardchannel")))
	sub(pubsubCmd, "numpat", 2, RoleRead, effRead|effPubSub, 0, cmdPubSubNumPat, "Returns a count of unique pattern subscriptions.", docs("2.8.0", "O(1)"))
	sub(pubsubCmd, "help", 2, RoleRead, effRead|effPubSub, 0, cmdPubSubHelp, "Returns helpful text about the different subcommands.", docs("6.2.0", "O(1)"))

	// locks: resp/locks.go
	group = "module"
	//
	// For a cluster client the key of a LOCK.* command is its lock name:
	// HOLD, INFO, LIST, HOLDERS, WATCH and REVOKE name it first, so keys(1, 1, 1). A lock
	// is one family of keys, and LOCK.LIST walks all of a lock's keys in one
	// call, so all of them must live where one hash slot lives; hashing the
	// lock name puts them there, and a hash tag in it ("{chat}summaries")
	// places a lock beside the data its holders fence. RENEW and RELEASE
	// name only a lease id, which is no key: a cluster client sends them to
	// any node, and a node that does not lead answers -MOVED to the one
	// that does (SPEC §10).
	add("lock.hold", -4, RoleWrite, effWrite|effLocks|effBlock, 0, cmdLockHold, "Holds (lock, key) with a lease and a fence, waiting in line if it is held.", keys(1, 1, 1),
		docs(Version, "O(log N) where N is the number of leases and places in line.",
			argString("lock"), argString("key"), argString("reqid"),
			argOption("TTL", "ms"), argOption("WAIT", "ms"), argOption("MAXHOLD", "ms"),
			argOneOf("kind", true, arg{Name: "n", Type: "integer", Token: "LIMIT"}, argWord("SHARED")),
			arg{Name: "text", Type: "string", Token: "OWNER", Optional: true}))
	add("lock.renew", -2, RoleWrite, effWrite|effLocks, FlagFast, cmdLockRenew, "Moves a lease's deadline to now + ttl.",
		docs(Version, "O(log N) where N is the number of leases.", argString("leaseid"), argOption("TTL", "ms")))
	add("lock.release", 2, RoleWrite, effWrite|effLocks, FlagFast, cmdLockRelease, "Ends a lease now; the next in line is granted.",
		docs(Version, "O(log N) where N is the number of leases.", argString("leaseid")))
	add("lock.info", 3, RoleRead, effRead|effLocks, FlagFast, cmdLockInfo, "Shows the fence, ttl, waiters, holders, limit and owner of (lock, key); never a lease id.", keys(1, 1, 1),
		docs(Version, "O(1)", argString("lock"), argString("key")))
	add("lock.list", -2, RoleRead, effRead|effLocks, 0, cmdLockList, "Walks the held and waited-for keys of a lock, like SCAN; never a lease id.", keys(1, 1, 1),
		docs(Version, "O(log N + COUNT) for every call, N the number of keys held or waited for. O(N) for a complete walk.",
			argString("lock"), argOption("CURSOR", "cursor"), argOption("COUNT", "count")))
	add("lock.holders", 3, RoleRead, effRead|effLocks, 0, cmdLockHolders, "Lists every live lease of (lock, key), oldest first; never a lease id.", keys(1, 1, 1),
		docs(Version, "O(H) where H is the number of live leases of the key.", argString("lock"), argString("key")))
	add("lock.watch", -3, RoleRead, effRead|effLocks|effBlock, 0, cmdLockWatch, "Waits until the newest lease of (lock, key) is another than FENCE f, then shows the key as LOCK.INFO does; never a lease id.", keys(1, 1, 1),
		docs(Version, "O(1) to wait; O(W) for the change that answers W watchers of the key.",
			argString("lock"), argString("key"), argOption("FENCE", "f"), argOption("TIMEOUT", "ms")))
	add("lock.events", -1, RoleRead, effRead|effLocks, 0, cmdLockEvents, "Shows the newest lock events the audit keeps (grants, releases, expiries, revocations, losses, epochs), of one lock or of all, oldest first; never a lease id.",
		docs(Version, "O(N) where N is the number of events kept.", arg{Name: "lock", Type: "string", Optional: true}, argOption("COUNT", "count")))
	add("lock.revoke", -3, RoleAdmin, effWrite|effLocks, 0, cmdLockRevoke, "Ends the live leases of (lock, key) now, or only the one with FENCE f.", keys(1, 1, 1),
		docs(Version, "O(log N + H) where N is the number of leases and places in line, H the key's live leases.", argString("lock"), argString("key"), argOption("FENCE", "f")))
	return t
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

// Package resp is tenure's network side: it listens for RESP2 and RESP3
// clients (redis-cli, go-redis, redis-py, node-redis, …; HELLO 3 switches a
// connection, SPEC §6), reads their requests within SPEC §7's
// limits, and answers each with the handler of one row of the command table.
//
// It is for turning bytes on a connection into calls on the keyspace
// ([kv.Store]) and the lock module ([lockmod.Manager]) and their results into
// Redis's replies, and for deciding, from each command's row, where and how
// a request runs: on this node or the leader, through a cluster's log or
// not, in a read batch's pipeline or not. It is not where keys or leases
// are kept, and holds no rule of either beyond parsing arguments: a handler
// parses, calls one method, and spells the result. It is not where Raft
// lives: package cluster keeps the log and hands each entry back to
// [Server.Apply]. It does not open any of them: package tenure opens them
// and hands them to New (see [Backends]); a program embeds the store
// through package tenure, not through a [Server].
//
// # The command table
//
// Every fact about a command lives in its row (the command type in
// table.go, the rows in table_<family>.go): name, arity, role, key
// positions, docs, and its effect, which says what it does to the store
// (reads keys, writes keys, acts on the lock module, blocks, is about
// this node only, runs a transaction's queue, or touches nothing).
// Routing in a cluster, replication through the log, pipeline batching,
// MULTI's lock rows and COMMAND INFO's flags are all derived from the
// effect; no list of names is kept elsewhere. A row runs by one of two
// paths (dispatch.go): dispatch, for a client's request, which queues it
// inside MULTI and routes it in a cluster; and call, for a row run by a
// caller that has already decided where the whole runs, on a socketless
// conn (Server.caller) that records the replies: an entry of the log
// (Server.Apply), and a script's redis.call, which should refuse rows with
// effLocks (SPEC §13), and writes under EVAL_RO (command.writes), before
// it calls. In a cluster a script runs on the leader alone, in a
// transaction thrown away, and the writes its calls made (as a row's
// drawn field rewrites one drawn at random) are what goes through the log
// (scripting.go, routeScript).
//
// # Where things are
//
//	lifecycle.go   Config, Backends, New, Serve, Shutdown: the Server, its listeners and connections
//	conn.go        the conn type: read a batch, run it, flush; the watcher of a blocked client
//	reader.go      RESP requests read with bounded buffers (SPEC §7)
//	table.go       the command table: the command row (name, arity, role, effect, flags, handler), its builder
//	table_*.go     the rows, one file per family, as COMMAND DOCS groups them (table_strings.go, table_zsets.go, …)
//	dispatch.go    lookup in the table, arity and role checked once; dispatch and call
//	routing.go     a request in a cluster: -MOVED, a write through the log, a read barrier
//	apply.go       an entry of the log applied through the table (Server.Apply)
//	batch.go       a read batch's writes in one commit (kv.Pipeline)
//	inprocess.go   a request run in process, its reply as Go values (Server.Do)
//	replies.go     the reply encoder, RESP2 or RESP3 as the connection asked
//	options.go     the option parser the handlers share
//	collection_args.go   arguments read alike: two integers (a range, LIMIT), a pop's count, [B]LMPOP's and [B]ZMPOP's keys
//	connection.go  PING, ECHO, HELLO, AUTH, QUIT, SELECT, RESET, CLIENT
//	server.go      COMMAND, DBSIZE, FLUSHALL, TIME, SHUTDOWN, LASTSAVE, SAVE, BGSAVE, MEMORY
//	config.go      CONFIG GET, SET, RESETSTAT
//	info.go        INFO, one function per section
//	commanddocs.go COMMAND DOCS's argument lists
//	cluster.go     CLUSTER, ROLE, INFO's cluster sections (SPEC §10)
//	strings.go     GET, SET, INCR, APPEND, LCS, … (kv's strings)
//	compare.go     SET … IFEQ/IFNE/IFDEQ/IFDNE, DELEX, DIGEST, DELIFEQ
//	bitmaps.go     SETBIT, GETBIT, BITCOUNT, BITPOS, BITOP, BITFIELD, BITFIELD_RO
//	hashes.go      HSET, HGET, HGETALL, HINCRBY, HRANDFIELD, HSCAN, … (kv's hashes)
//	sets.go        SADD, SMEMBERS, SPOP, SINTER…, SSCAN, … (kv's sets)
//	zsets.go       ZADD, ZRANGE, ZCOUNT, ZREMRANGEBY…, ZRANDMEMBER, ZSCAN, … (kv's zsets)
//	zsets_ranges.go   a zset's ranges: scores, lex ends, ranks; ZRANGE's BYSCORE, BYLEX, REV, LIMIT
//	zsets_pops.go     ZPOPMIN, ZPOPMAX, ZMPOP, BZPOPMIN, BZPOPMAX, BZMPOP
//	zsets_combine.go  ZUNION, ZINTER, ZDIFF, their STORE forms, ZINTERCARD
//	lists.go       LPUSH, LRANGE, LPOS, LMOVE, LMPOP, BLPOP, BLMOVE, … (kv's lists)
//	sort.go        SORT and SORT_RO over lists, sets and zsets
//	blocking.go    blocked clients: lines per key, served in order; a blocked pop's attempt; CLIENT UNBLOCK
//	config_collections.go  CONFIG's zset and list encoding settings
//	keys.go        DEL, EXPIRE, TTL, SCAN, RENAME, … (kv's keys)
//	dump.go        DUMP, RESTORE: a value as Redis serializes it (internal/dump), so MIGRATE moves keys in
//	migrate.go     MIGRATE: keys out to another server, as RESTOREs of their DUMPs
//	transactions.go MULTI, EXEC, DISCARD, WATCH, UNWATCH (kv's Tx and Watch)
//	locks.go       LOCK.HOLD, LOCK.RENEW, LOCK.RELEASE, LOCK.INFO, LOCK.LIST, LOCK.HOLDERS, LOCK.REVOKE
//	lockwatch.go   LOCK.WATCH: a watcher waits on its connection's own read, no goroutine of its own
//	audit.go       the last lock events in memory, and LOCK.EVENTS (SPEC §14)
//	pubsub.go      SUBSCRIBE, PSUBSCRIBE, SSUBSCRIBE and UN-, PUBLISH, SPUBLISH, PUBSUB (SPEC §13)
//	pushqueue.go   a subscriber's bounded output and its writer; client-output-buffer-limit
//	notify.go      keyspace notifications (notify-keyspace-events) and lock events (L)
//	monitor.go     MONITOR: every command run, as a line pushed to the monitors
//	scripting.go   EVAL, EVALSHA, EVAL_RO, EVALSHA_RO: a script in one transaction (package script runs the Lua)
//	scripting_cache.go   the script cache by SHA1; SCRIPT LOAD, EXISTS, FLUSH, HELP
//	scripting_busy.go    a long script: other clients wait or get -BUSY (busy-reply-threshold); SCRIPT KILL
//	scripting_calls.go   a script's redis.call through the table with the caller's role; its reply in RESP
//	scripting_effects.go a script in a cluster: run once on the leader, its writes through the log; SPOP's drawn
//	users.go       the users file and its roles (SPEC §5)
//	tls.go         --tls-cert and --tls-key
//	metrics.go     the Prometheus metrics; ServeHTTP (/metrics and the dashboard, basic auth, TLS)
//	lockmetrics.go the lock metrics by lock: 1,000 names, then _other (SPEC §14)
//	node.go        what the dashboard reads of a server: a lock's keys, the node and its peers
//
// Adding a command is one row in its family's table_<family>.go and one
// handler in its family's file: dispatch checks arity and role, the row's
// effect decides the rest (TestEveryRowSaysWhatItDoes holds every row to
// one, and package cluster's TestClusterEveryRowReplicatesItsWrites wants
// a representative invocation of it), and a row is closed before AUTH
// unless it says FlagNoAuth. A handler acts on the keyspace through
// c.store, never the server's store directly: inside EXEC that is the
// transaction's view, and the server's store would wait for the stripes
// the transaction holds. A relative expiry counts from c.nowMs, never the
// wall clock: applying an entry of the log, that is the leader's clock in
// the entry.
//
// # Keyspace notifications
//
// A handler that changes a key tells subscribers with one call, after its
// write succeeded, as Redis's notifyKeyspaceEvent (notify.go):
//
//	c.notify(notifyHash, "hset", key)
//
// The class is the letter of notify-keyspace-events (notifyGeneric g,
// notifyString $, notifyList l, notifySet s, notifyHash h, notifyZset z)
// and the event Redis 7's name for what happened (src/t_*.c's calls say
// which: "hset", "lpush", "zadd", "srem", "del" when a collection's last
// member goes, …). It costs an atomic load when the class is off or
// nobody subscribes. "expired" and "new" come from the keyspace itself
// (kv.Store.SetKeyHook) and need no call.
package resp

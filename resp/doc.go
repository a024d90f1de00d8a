// Package resp is tenure's network side: it listens for RESP2 and RESP3
// clients (redis-cli, go-redis, redis-py, node-redis, …; HELLO 3 switches a
// connection, SPEC §6), reads their requests within SPEC §7's
// limits, and answers each with the handler of one row of the command table.
//
// It is for turning bytes on a connection into calls on the keyspace
// ([kv.Store]) and the lock module ([lockmod.Manager]) and their results into
// Redis's replies. It is not where keys or leases are kept, and holds no
// rule of either beyond parsing arguments: a handler parses, calls one
// method, and spells the result. It does not open either: package tenure
// opens them and hands them to New (see [Backends]); a program embeds the
// store through package tenure, not through a [Server].
//
// # Where things are
//
//	listener.go    Config, Backends, New, Serve, Shutdown: the listeners and their connections
//	connloop.go    one connection: read a batch, run it, flush; the watcher of a blocked client
//	reader.go      RESP requests read with bounded buffers (SPEC §7)
//	dispatch.go    lookup in the table, arity and role checked once
//	replies.go     the reply encoder, RESP2 or RESP3 as the connection asked
//	options.go     the option parser the handlers share
//	table.go       the command table: name, arity, role, flags, handler
//	connection.go  PING, ECHO, HELLO, AUTH, QUIT, SELECT, RESET, CLIENT
//	server.go      COMMAND, CONFIG, DBSIZE, FLUSHALL, TIME, SHUTDOWN
//	info.go        INFO, one function per section
//	commanddocs.go COMMAND DOCS's argument lists
//	strings.go     GET, SET, INCR, APPEND, LCS, … (kv's strings)
//	bitmaps.go     SETBIT, GETBIT, BITCOUNT, BITPOS, BITOP
//	keys.go        DEL, EXPIRE, TTL, SCAN, RENAME, … (kv's keys)
//	transactions.go MULTI, EXEC, DISCARD, WATCH, UNWATCH (kv's Tx and Watch)
//	locks.go       LOCK.HOLD, LOCK.RENEW, LOCK.RELEASE, LOCK.INFO, LOCK.LIST, LOCK.REVOKE
//	users.go       the users file and its roles (SPEC §5)
//	metrics.go     the Prometheus metrics
//
// Adding a command is one row in table.go and one handler in its family's
// file: dispatch checks arity and role, and a row is closed before AUTH
// unless it says FlagNoAuth. A handler acts on the keyspace through
// c.store, never the server's store directly: inside EXEC that is the
// transaction's view, and the server's store would wait for the stripes
// the transaction holds.
package resp

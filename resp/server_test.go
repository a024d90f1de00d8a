package resp_test

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tenure-db/tenure"
	"github.com/tenure-db/tenure/resp/resptest"
)

// prefix matches an array whose first elements match these.
func prefix(want ...any) match {
	return func(got any) string {
		a, ok := got.([]any)
		if !ok || len(a) < len(want) {
			return fmt.Sprintf("got %s, want an array starting %s", show(got, nil), show(want, nil))
		}
		return compareValue(a[:len(want)], want)
	}
}

// numeric matches a string of decimal digits.
func numeric() match {
	return func(got any) string {
		s, ok := got.(string)
		if _, err := strconv.ParseUint(s, 10, 64); !ok || err != nil {
			return fmt.Sprintf("got %s, want a decimal string", show(got, nil))
		}
		return ""
	}
}

// The server commands of SPEC §6 where tenure answers as Redis 7 does
// (checked against redis-server 7, see compatTranscript).
var serverSteps = []step{
	{"DBSIZE", 0},
	{"MSET a 1 b 2", "OK"},
	{"SET c 3 EX 100", "OK"},
	{"DBSIZE", 3},
	{"DBSIZE x", "ERR wrong number of arguments for 'dbsize' command"},
	{"INFO keyspace", containing("# Keyspace\r\ndb0:keys=3,expires=1,")},
	{"FLUSHDB x", "ERR syntax error"},
	{"FLUSHDB ASYNC", "OK"},
	{"DBSIZE", 0},
	{"INFO keyspace", "# Keyspace\r\n"},
	{"SET a 1", "OK"},
	{"FLUSHDB", "OK"},
	{"SET a 1", "OK"},
	{"flushall sync", "OK"},
	{"EXISTS a", 0},
	{"FLUSHALL async", "OK"},
	{"FLUSHALL", "OK"},
	{"FLUSHALL x", "ERR syntax error"},
	{"FLUSHALL x y", "ERR syntax error"},
	{"FLUSHALL ASYNC ASYNC", "ERR syntax error"},

	{"TIME", arrayOf(2, numeric())},
	{"TIME x", "ERR wrong number of arguments for 'time' command"},

	{"INFO server", containing("# Server\r\n", "\r\nredis_version:", "\r\ntcp_port:", "\r\nuptime_in_seconds:")},
	{"INFO SERVER", containing("# Server\r\n")},
	{"INFO clients", containing("# Clients\r\nconnected_clients:", "\r\nmaxclients:10000\r\n", "\r\nblocked_clients:0\r\n")},
	{"INFO stats", containing("# Stats\r\n", "\r\ntotal_connections_received:", "\r\ntotal_commands_processed:", "\r\nrejected_connections:", "\r\nexpired_keys:")},
	{"INFO nosuch", ""},
	{"INFO a b", ""},
	{"INFO server nosuch", containing("# Server\r\n")},

	{"COMMAND COUNT", intBetween(40, 1000)},
	{"COMMAND COUNT x", "ERR wrong number of arguments for 'command|count' command"},
	{"COMMAND FOO", "ERR unknown subcommand 'FOO'. Try COMMAND HELP."},
	{"COMMAND HELP", arrayOf(-1, anyString())},
	{"COMMAND INFO get", []any{prefix("get", 2, []any{"readonly", "fast"}, 1, 1, 1)}},
	{"COMMAND INFO GET set", []any{prefix("get", 2), prefix("set", -3, prefix("write"), 1, 1, 1)}},
	{"COMMAND INFO mset", []any{prefix("mset", -3, prefix("write"), 1, -1, 2)}},
	{"COMMAND INFO client|id", []any{prefix("client|id", 2)}},
	{"COMMAND INFO nosuch", []any{nil}},
	{"COMMAND INFO get nosuch", []any{prefix("get"), nil}},
	{"COMMAND DOCS nosuch", []any{}},
	{"COMMAND DOCS get", prefix("get", prefix("summary", anyString()))},
	{"COMMAND LIST", arrayOf(-1, anyString())},
	{"COMMAND LIST FILTERBY PATTERN client|setn*", []any{"client|setname"}},
	{"COMMAND LIST FILTERBY PATTERN CLIENT|SETN*", []any{"client|setname"}},
	{"COMMAND LIST FILTERBY ACLCAT nosuchcat", []any{}},
	{"COMMAND LIST FILTERBY MODULE nosuch", []any{}},
	{"COMMAND LIST FILTERBY FOO x", "ERR syntax error"},
	{"COMMAND LIST FILTERBY", "ERR syntax error"},
	{"COMMAND LIST FILTERBY PATTERN", "ERR syntax error"},
	{"COMMAND LIST FILTERBY PATTERN a b", "ERR syntax error"},
	{"COMMAND LIST FOO", "ERR syntax error"},

	{"CONFIG", "ERR wrong number of arguments for 'config' command"},
	{"CONFIG FOO", "ERR unknown subcommand 'FOO'. Try CONFIG HELP."},
	{"CONFIG HELP", arrayOf(-1, anyString())},
	{"CONFIG GET", "ERR wrong number of arguments for 'config|get' command"},
	{"CONFIG GET save", []any{"save", ""}}, // what redis-benchmark asks
	{"CONFIG GET SAVE", []any{"SAVE", ""}}, // as the client spelled it
	{"CONFIG GET save SAVE sav?", []any{"save", ""}},
	{"CONFIG GET nosuch", []any{}},
	{"CONFIG GET maxclient?", []any{"maxclients", "10000"}},
	{"CONFIG SET", "ERR wrong number of arguments for 'config|set' command"},
	{"CONFIG SET maxclients", "ERR wrong number of arguments for 'config|set' command"},
	{"CONFIG SET nosuch 1", "ERR Unknown option or number of arguments for CONFIG SET - 'nosuch'"},
	{"CONFIG SET maxclients abc", "ERR CONFIG SET failed (possibly related to argument 'maxclients') - argument couldn't be parsed into an integer"},
	{"CONFIG SET maxclients 0", "ERR CONFIG SET failed (possibly related to argument 'maxclients') - argument must be between 1 and 4294967295 inclusive"},
	{"CONFIG SET maxclients 4294967296", "ERR CONFIG SET failed (possibly related to argument 'maxclients') - argument must be between 1 and 4294967295 inclusive"},
	{"CONFIG SET maxclients 10000 maxclients 10000", "ERR CONFIG SET failed (possibly related to argument 'maxclients') - duplicate parameter"},
	{"CONFIG SET maxclients 10000 MAXCLIENTS 10000", "ERR CONFIG SET failed (possibly related to argument 'MAXCLIENTS') - duplicate parameter"},
	{"CONFIG SET maxclients 10000 loglevel", "ERR syntax error"},
	{"CONFIG SET maxclients 9999 nosuch 1", "ERR Unknown option or number of arguments for CONFIG SET - 'nosuch'"},
	{"CONFIG GET maxclients", []any{"maxclients", "10000"}}, // nothing was applied
	{"CONFIG SET maxclients 10000", "OK"},
	{"CONFIG RESETSTAT", "OK"},
	{"CONFIG RESETSTAT x", "ERR wrong number of arguments for 'config|resetstat' command"},

	{"SHUTDOWN SAVE NOSAVE", "ERR syntax error"},
	{"SHUTDOWN ABORT NOW", "ERR syntax error"},
	{"SHUTDOWN ABORT SAVE", "ERR syntax error"},
	{"SHUTDOWN FOO", "ERR syntax error"},
	{"SHUTDOWN ABORT", "ERR No shutdown in progress."},
	{"PING", "PONG"}, // none of them shut anything down

	// Unknown commands and subcommands, quoted as Redis quotes them: the
	// arguments cut at about 128 bytes, each at its first NUL.
	{"NOSUCH", "ERR unknown command 'NOSUCH', with args beginning with: "},
	{"nosuch a b", "ERR unknown command 'nosuch', with args beginning with: 'a' 'b' "},
	{`NOSUCH "a\x00b" ""`, "ERR unknown command 'NOSUCH', with args beginning with: 'a' '' "},
	{`""`, "ERR unknown command '', with args beginning with: "},
	{"NOSUCH " + strings.Repeat("abcdefghij ", 20), "ERR unknown command 'NOSUCH', with args beginning with: " + strings.Repeat("'abcdefghij' ", 10)},
	{"NOSUCH " + strings.Repeat("x", 200), "ERR unknown command 'NOSUCH', with args beginning with: '" + strings.Repeat("x", 128) + "' "},
	{strings.Repeat("Y", 200), "ERR unknown command '" + strings.Repeat("Y", 128) + "', with args beginning with: "},
	{"GETT k", "ERR unknown command 'GETT', with args beginning with: 'k' "},
	{"LOCK k", "ERR unknown command 'LOCK', with args beginning with: 'k' "},
	{"CLIENT NOSUCH x", "ERR unknown subcommand 'NOSUCH'. Try CLIENT HELP."},
	{"config nosuch", "ERR unknown subcommand 'nosuch'. Try CONFIG HELP."},
	{"COMMAND nosuch", "ERR unknown subcommand 'nosuch'. Try COMMAND HELP."},
	{"CLIENT " + strings.Repeat("z", 200), "ERR unknown subcommand '" + strings.Repeat("z", 128) + "'. Try CLIENT HELP."},
}

func TestServerCompat(t *testing.T) {
	s := start(t)
	compatTranscript(t, s, serverSteps)
}

// infoFields reads one INFO reply into its fields, by section.
func infoFields(t *testing.T, text string) map[string]map[string]string {
	t.Helper()
	sections := map[string]map[string]string{}
	var cur map[string]string
	for _, line := range strings.Split(text, "\r\n") {
		switch {
		case line == "":
		case strings.HasPrefix(line, "# "):
			cur = map[string]string{}
			sections[line[2:]] = cur
		default:
			k, v, ok := strings.Cut(line, ":")
			if !ok || cur == nil {
				t.Fatalf("INFO line %q is not field:value in a section", line)
			}
			cur[k] = v
		}
	}
	return sections
}

// INFO has every section, in Redis's form, and a # Locks section of the
// lock module's figures.
func TestServerInfo(t *testing.T) {
	s := start(t)
	rdb := s.Client()
	for _, arg := range [][]any{nil, {"default"}, {"all"}, {"everything"}} {
		text, err := rdb.Info(bg, toStrings(arg)...).Result()
		if err != nil {
			t.Fatal(err)
		}
		got := infoFields(t, text)
		for _, section := range []string{"Server", "Clients", "Memory", "Persistence", "Stats", "Keyspace", "Locks"} {
			if _, ok := got[section]; !ok {
				t.Errorf("INFO %v lacks # %s", arg, section)
			}
		}
	}
	wantLocks := func(want map[string]string) {
		t.Helper()
		text, err := rdb.Info(bg, "locks").Result()
		if err != nil {
			t.Fatal(err)
		}
		locks := infoFields(t, text)["Locks"]
		for _, f := range []string{"epoch", "leases", "waiters", "grants_total", "renewals_total", "released_total", "expired_total", "revoked_total"} {
			if _, ok := locks[f]; !ok {
				t.Errorf("# Locks lacks %s: %q", f, text)
			}
		}
		for k, v := range want {
			if locks[k] != v {
				t.Errorf("# Locks %s = %q, want %q (%q)", k, locks[k], v, text)
			}
		}
	}
	wantLocks(map[string]string{"epoch": "1", "leases": "0", "waiters": "0", "grants_total": "0"})

	lease, err := rdb.Do(bg, "LOCK.HOLD", "l", "k", "r1").Slice()
	if err != nil {
		t.Fatalf("LOCK.HOLD: %v", err)
	}
	if err := rdb.Do(bg, "LOCK.RENEW", lease[0]).Err(); err != nil {
		t.Fatalf("LOCK.RENEW: %v", err)
	}
	wantLocks(map[string]string{"leases": "1", "grants_total": "1", "renewals_total": "1"})
	// A waiter in line shows while it waits.
	waiting := make(chan error, 1)
	go func() { waiting <- rdb.Do(bg, "LOCK.HOLD", "l", "k", "r2", "WAIT", "5000").Err() }()
	eventually(t, 5*time.Second, "the waiter shows in INFO locks and clients", func() bool {
		text := rdb.Info(bg, "locks", "clients").Val()
		return strings.Contains(text, "\r\nwaiters:1\r\n") && strings.Contains(text, "\r\nblocked_clients:1\r\n")
	})
	if err := rdb.Do(bg, "LOCK.RELEASE", lease[0]).Err(); err != nil {
		t.Fatalf("LOCK.RELEASE: %v", err)
	}
	if err := <-waiting; err != nil {
		t.Fatalf("waiter: %v", err)
	}
	wantLocks(map[string]string{"leases": "1", "waiters": "0", "grants_total": "2", "released_total": "1"})
	if err := rdb.Do(bg, "LOCK.REVOKE", "l", "k").Err(); err != nil {
		t.Fatalf("LOCK.REVOKE: %v", err)
	}
	wantLocks(map[string]string{"leases": "0", "revoked_total": "1"})

	// Keyspace and persistence.
	rdb.Set(bg, "a", 1, 0)
	rdb.Set(bg, "b", 1, time.Hour)
	info := infoFields(t, rdb.Info(bg, "keyspace", "persistence").Val())
	if got := info["Keyspace"]["db0"]; !strings.HasPrefix(got, "keys=2,expires=1,") {
		t.Errorf("# Keyspace db0 = %q", got)
	}
	if got := info["Persistence"]["appendfsync"]; got != "everysec" {
		t.Errorf("appendfsync = %q", got)
	}
	// Each open is a new epoch (SPEC §2).
	s.Restart()
	rdb = s.Client()
	wantLocks(map[string]string{"epoch": "2", "leases": "0", "grants_total": "0"})
	info = infoFields(t, rdb.Info(bg, "server", "stats").Val())
	if info["Server"]["tcp_port"] != s.Addr[strings.LastIndexByte(s.Addr, ':')+1:] {
		t.Errorf("tcp_port = %q, listening on %s", info["Server"]["tcp_port"], s.Addr)
	}
	if n, _ := strconv.Atoi(info["Stats"]["total_commands_processed"]); n < 1 {
		t.Errorf("total_commands_processed = %q", info["Stats"]["total_commands_processed"])
	}
}

func toStrings(a []any) []string {
	var out []string
	for _, v := range a {
		out = append(out, v.(string))
	}
	return out
}

// Redis 7.2's arity of every command of SPEC §6 (src/commands/*.json);
// COMMAND INFO must report the same, and dispatch enforce it.
var redisArity = map[string]int{
	"ping": -1, "echo": 2, "hello": -1, "auth": -2, "quit": -1, "select": 2, "reset": 1,
	"client": -2, "client|id": 2, "client|setname": 3, "client|getname": 2, "client|setinfo": 4,
	"client|info": 2, "client|list": -2, "client|kill": -3,
	"info": -1, "command": -1, "command|count": 2, "command|info": -2, "command|docs": -2, "command|list": -2,
	"config": -2, "config|get": -3, "config|set": -4, "dbsize": 1, "flushdb": -1, "flushall": -1,
	"time": 1, "shutdown": -1,
	"get": 2, "set": -3, "setnx": 3, "setex": 4, "psetex": 4, "getset": 3, "getdel": 2, "getex": -2,
	"mget": -2, "mset": -3, "msetnx": -3, "incr": 2, "decr": 2, "incrby": 3, "decrby": 3,
	"incrbyfloat": 3, "append": 3, "strlen": 2, "getrange": 4, "setrange": 4,
	"del": -2, "unlink": -2, "exists": -2, "expire": -3, "pexpire": -3, "expireat": -3, "pexpireat": -3,
	"ttl": 2, "pttl": 2, "persist": 2, "type": 2, "keys": 2, "scan": -2, "rename": 3, "renamenx": 3,
}

// COMMAND describes the table: every command of SPEC §6 is there, with
// Redis's arity, and dispatch refuses one argument too few (or too many)
// with Redis's text. go-redis can read it all.
func TestServerCommandTable(t *testing.T) {
	s := start(t)
	rdb := s.Client()
	infos, err := rdb.Command(bg).Result()
	if err != nil {
		t.Fatalf("go-redis cannot read COMMAND: %v", err)
	}
	count, err := rdb.Do(bg, "COMMAND", "COUNT").Int()
	if err != nil || count != len(infos) {
		t.Fatalf("COMMAND COUNT %d, %v; COMMAND lists %d", count, err, len(infos))
	}
	list, err := rdb.Do(bg, "COMMAND", "LIST").StringSlice()
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, n := range list {
		listed[n] = true
	}
	for _, n := range []string{"lock.hold", "lock.renew", "lock.release", "lock.info", "lock.revoke"} {
		if !listed[n] || infos[n] == nil {
			t.Errorf("%s is not in COMMAND LIST / COMMAND", n)
		}
	}
	c := resp2Client(t, s).Conn() // COMMAND DOCS's maps in RESP2 shape, for the transcript below
	defer c.Close()
	for name, arity := range redisArity {
		if !listed[name] {
			t.Errorf("COMMAND LIST lacks %s", name)
			continue
		}
		got, err := rdb.Do(bg, "COMMAND", "INFO", name).Slice()
		if err != nil || len(got) != 1 {
			t.Errorf("COMMAND INFO %s: %v, %v", name, got, err)
			continue
		}
		entry, _ := got[0].([]any)
		if len(entry) != 10 || entry[0] != name || entry[1] != int64(arity) {
			t.Errorf("COMMAND INFO %s = %v, want arity %d", name, show(got[0], nil), arity)
		}
		// One argument short of the arity is refused by dispatch.
		top, sub, isSub := strings.Cut(name, "|")
		args := []any{top}
		if isSub {
			args = append(args, sub)
		}
		min := arity
		if min < 0 {
			min = -min
		}
		if len(args) > min-1 {
			continue // the name alone is enough
		}
		for len(args) < min-1 {
			args = append(args, "x")
		}
		want := "ERR wrong number of arguments for '" + name + "' command"
		if err := c.Do(bg, args...).Err(); err == nil || err.Error() != want {
			t.Errorf("%v: got %v, want %q", args, err, want)
		}
		if arity > 0 {
			args = append(args, "x", "y")
			if err := c.Do(bg, args...).Err(); err == nil || err.Error() != want {
				t.Errorf("%v: got %v, want %q", args, err, want)
			}
		}
	}
	transcript(t, c, []step{
		{"COMMAND DOCS get", []any{"get", []any{"summary", anyString(), "since", anyString(), "group", "string"}}},
		{"COMMAND DOCS lock.hold", []any{"lock.hold", prefix("summary", containing("fence"))}},
		{"COMMAND DOCS client", []any{"client", prefix("summary", anyString(), "since", anyString(), "group", "connection", "subcommands",
			prefix("client|getname", prefix("summary", anyString(), "since", anyString(), "group", "connection")))}},
		{"COMMAND INFO lock.hold", []any{prefix("lock.hold", -4, []any{"write", "blocking"})}},
		{"COMMAND INFO ping", []any{prefix("ping", -1, []any{"readonly", "noauth", "fast"})}},
		{"COMMAND LIST FILTERBY PATTERN lock.*", sameSet("lock.hold", "lock.renew", "lock.release", "lock.info", "lock.revoke", "lock.list", "lock.holders", "lock.watch", "lock.events")},
	})
}

// CONFIG GET answers the settings the server has; CONFIG SET changes the
// ones that can change while it runs.
func TestServerConfig(t *testing.T) {
	level := new(slog.LevelVar)
	s := resptest.Start(t, tenure.Options{LogLevel: level})
	host, port, _ := net.SplitHostPort(s.Addr)
	transcript(t, resp2Client(t, s), []step{
		{"CONFIG GET save", []any{"save", ""}},
		{"CONFIG GET appendonly", []any{"appendonly", "yes"}}, // every write is logged
		{"CONFIG GET save appendonly", sameSet("save", "", "appendonly", "yes")},
		{"CONFIG GET appendfsync", []any{"appendfsync", "everysec"}},
		{"CONFIG GET port", []any{"port", port}},
		{"CONFIG GET bind", []any{"bind", host}},
		{"CONFIG GET dir", []any{"dir", s.Dir}},
		{"CONFIG GET databases", []any{"databases", "1"}},
		{"CONFIG GET proto-max-bulk-len", []any{"proto-max-bulk-len", "536870912"}},
		{"CONFIG GET *", arrayOf(54, anyString())}, // + the encoding limits (kv.EncodingLimits), five names; the zset and list settings, seven
		{"CONFIG GET busy-reply-threshold", []any{"busy-reply-threshold", "5000"}},
		{"CONFIG SET lua-time-limit 100", "OK"}, // Redis's old name of busy-reply-threshold
		{"CONFIG GET busy-reply-threshold", []any{"busy-reply-threshold", "100"}},
		{"CONFIG SET busy-reply-threshold -1", "ERR CONFIG SET failed (possibly related to argument 'busy-reply-threshold') - argument must be between 0 and 9223372036854775807 inclusive"},
		{"CONFIG GET loglevel", []any{"loglevel", "info"}},
		{"CONFIG SET loglevel debug", "OK"},
		{"CONFIG GET loglevel", []any{"loglevel", "debug"}},
		{"CONFIG SET loglevel nope", "ERR CONFIG SET failed (possibly related to argument 'loglevel') - argument(s) must be one of the following: debug, info, warn, error"},
		{"CONFIG SET loglevel warning maxclients 50", "OK"},
		{"CONFIG GET loglevel maxclients", sameSet("loglevel", "warn", "maxclients", "50")},
		{"CONFIG SET appendonly no", "ERR Unknown option or number of arguments for CONFIG SET - 'appendonly'"},
	})
	if level.Level() != slog.LevelWarn {
		t.Errorf("log level is %v after CONFIG SET loglevel warning", level.Level())
	}
}

// TIME is the server's clock; FLUSHALL empties the keyspace and leaves
// leases alone (they are not keys).
func TestServerTimeAndFlush(t *testing.T) {
	s := start(t)
	rdb := s.Client()
	before := time.Now()
	now, err := rdb.Time(bg).Result()
	if err != nil {
		t.Fatal(err)
	}
	if now.Before(before.Add(-time.Second)) || now.After(time.Now().Add(time.Second)) {
		t.Fatalf("TIME %v, local clock %v", now, before)
	}
	lease, err := rdb.Do(bg, "LOCK.HOLD", "l", "k", "r").Slice()
	if err != nil {
		t.Fatal(err)
	}
	transcript(t, resp2Client(t, s), []step{
		{"MSET a 1 b 2", "OK"},
		{"FLUSHALL", "OK"},
		{"DBSIZE", 0},
		{"KEYS *", []any{}},
		{"LOCK.INFO l k", prefix("fence", lease[1])},
		{"MSET a 1 b 2", "OK"},
		{"FLUSHDB", "OK"},
		{"DBSIZE", 0},
	})
	s.Restart() // nothing flushed comes back
	transcript(t, s.Client(), []step{{"DBSIZE", 0}, {"KEYS *", []any{}}})
}

// SHUTDOWN stops the server cleanly: requests before it are answered, it
// sends no reply of its own, every connection closes, the listener goes,
// and what was written is there on the next open.
func TestServerShutdown(t *testing.T) {
	s := start(t)
	rdb := s.Client()
	if err := rdb.Set(bg, "kept", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	bystander := dialRaw(t, s)
	bystander.send("PING\r\n")
	bystander.line()

	r := dialRaw(t, s)
	r.send("SET before v\r\nSHUTDOWN NOSAVE NOW\r\nSET after v\r\n")
	if got := r.line(); got != "+OK" {
		t.Fatalf("SET before SHUTDOWN: got %q", got)
	}
	r.expectClosed()
	select {
	case <-s.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("server still running 10s after SHUTDOWN")
	}
	bystander.expectClosed()
	if nc, err := net.DialTimeout("tcp", s.Addr, time.Second); err == nil {
		nc.Close()
		t.Fatal("the server still accepts connections after SHUTDOWN")
	}
	ctx, cancel := context.WithTimeout(bg, 5*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil { // a second call just waits
		t.Fatal(err)
	}
	s.Restart()
	transcript(t, s.Client(), []step{
		{"GET kept", "v"},
		{"GET before", "v"},
		{"GET after", nil},
	})
}

// COMMAND GETKEYS, key specs, LASTSAVE and CLIENT NO-EVICT, as Redis 7.0
// answers them (checked against redis-server 7.0, see compatTranscript).
var getKeysSteps = []step{
	{"COMMAND GETKEYS get a", []any{"a"}},
	{"COMMAND GETKEYS set a b EX 10", []any{"a"}},
	{"COMMAND GETKEYS mset a 1 b 2", []any{"a", "b"}},
	{"COMMAND GETKEYS del a b c", []any{"a", "b", "c"}},
	{"COMMAND GETKEYS rename a b", []any{"a", "b"}},
	{"COMMAND GETKEYS COPY a b REPLACE", []any{"a", "b"}},
	{"COMMAND GETKEYS lcs a b", []any{"a", "b"}},
	{"COMMAND GETKEYS bitop and d a b", []any{"d", "a", "b"}},
	{"COMMAND GETKEYS object encoding k", []any{"k"}},
	{"COMMAND GETKEYS touch a b", []any{"a", "b"}},
	{"COMMAND GETKEYS foo a", "ERR Invalid command specified"},
	{"COMMAND GETKEYS object foo k", "ERR Invalid command specified"},
	{"COMMAND GETKEYS ping x", "ERR The command has no key arguments"},
	{"COMMAND GETKEYS randomkey x", "ERR The command has no key arguments"}, // before the arity
	{"COMMAND GETKEYS set a", "ERR Invalid number of arguments specified for command"},
	{"COMMAND GETKEYS get a b", "ERR Invalid number of arguments specified for command"},
	{"COMMAND GETKEYS get", "ERR wrong number of arguments for 'command|getkeys' command"},
	{"COMMAND GETKEYSANDFLAGS get a", []any{[]any{"a", []any{"RO", "access"}}}},
	{"COMMAND GETKEYSANDFLAGS ping x", "ERR The command has no key arguments"},
	{"COMMAND INFO get", []any{keySpecs([]any{"flags", []any{"RO", "access"},
		"begin_search", []any{"type", "index", "spec", []any{"index", 1}},
		"find_keys", []any{"type", "range", "spec", []any{"lastkey", 0, "keystep", 1, "limit", 0}}})}},
	{"COMMAND INFO mset", []any{keySpecs([]any{"flags", prefix(), // Redis: OW update
		"begin_search", []any{"type", "index", "spec", []any{"index", 1}},
		"find_keys", []any{"type", "range", "spec", []any{"lastkey", -1, "keystep", 2, "limit", 0}}})}},
	{"COMMAND INFO ping", []any{keySpecs()}},

	{"LASTSAVE", anyInt()},
	{"LASTSAVE x", "ERR wrong number of arguments for 'lastsave' command"},
	{"CLIENT NO-EVICT on", "OK"},
	{"CLIENT INFO", containing(" flags=e ")},
	{"CLIENT NO-EVICT OFF", "OK"},
	{"CLIENT INFO", containing(" flags=N ")},
	{"CLIENT NO-EVICT maybe", "ERR syntax error"},
	{"CLIENT NO-EVICT", "ERR wrong number of arguments for 'client|no-evict' command"},
}

// keySpecs matches the key specs of a COMMAND INFO entry (its 9th field).
func keySpecs(want ...any) match {
	return func(got any) string {
		a, ok := got.([]any)
		if !ok || len(a) < 9 {
			return fmt.Sprintf("got %s, want a COMMAND INFO entry", show(got, nil))
		}
		return compareValue(a[8], append([]any{}, want...))
	}
}

func TestServerKeysCompat(t *testing.T) {
	s := start(t)
	compatTranscript(t, s, getKeysSteps)
}

// The key of a LOCK.* command, for a cluster client, is its lock name
// (see the table); RENEW and RELEASE have none.
func TestLockCommandKeys(t *testing.T) {
	s := start(t)
	transcript(t, s.Client(), []step{
		{"COMMAND GETKEYS LOCK.HOLD summaries chat-1 req-1 TTL 5000", []any{"summaries"}},
		{"COMMAND GETKEYS lock.info summaries chat-1", []any{"summaries"}},
		{"COMMAND GETKEYS lock.list summaries COUNT 5", []any{"summaries"}},
		{"COMMAND GETKEYS lock.revoke summaries chat-1", []any{"summaries"}},
		{"COMMAND GETKEYS lock.renew 0123456789abcdef0123456789abcdef", "ERR The command has no key arguments"},
		{"COMMAND GETKEYS lock.release 0123456789abcdef0123456789abcdef", "ERR The command has no key arguments"},
		{"COMMAND GETKEYS lock.hold summaries chat-1", "ERR Invalid number of arguments specified for command"},
		{"COMMAND INFO lock.hold", []any{prefix("lock.hold", -4, []any{"write", "blocking"}, 1, 1, 1)}},
		{"COMMAND INFO lock.renew", []any{prefix("lock.renew", -2, []any{"write", "fast"}, 0, 0, 0)}},
	})
}

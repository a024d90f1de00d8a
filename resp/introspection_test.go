package resp_test

// COMMAND DOCS of the LOCK.* commands, as redis-cli reads them to build its
// hints, and the INFO fields tools read by Redis's names.

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tenure-db/tenure"
	"github.com/tenure-db/tenure/resp/resptest"
)

// respValue reads one RESP2 reply; simple strings come back as "+text",
// so that a test can tell them from bulk strings.
func respValue(t *testing.T, br *bufio.Reader) any {
	t.Helper()
	line, err := br.ReadString('\n')
	if err != nil {
		t.Fatalf("read reply: %v", err)
	}
	line = strings.TrimSuffix(line, "\r\n")
	switch line[0] {
	case '+', '-':
		return line
	case ':':
		n, _ := strconv.ParseInt(line[1:], 10, 64)
		return n
	case '$':
		n, _ := strconv.Atoi(line[1:])
		if n < 0 {
			return nil
		}
		b := make([]byte, n+2)
		if _, err := io.ReadFull(br, b); err != nil {
			t.Fatal(err)
		}
		return string(b[:n])
	case '*':
		n, _ := strconv.Atoi(line[1:])
		if n < 0 {
			return nil
		}
		a := make([]any, n)
		for i := range a {
			a[i] = respValue(t, br)
		}
		return a
	}
	t.Fatalf("bad reply line %q", line)
	return nil
}

// fields reads a flat RESP2 map.
func fields(t *testing.T, v any) map[string]any {
	t.Helper()
	a, ok := v.([]any)
	if !ok || len(a)%2 != 0 {
		t.Fatalf("not a flat map: %#v", v)
	}
	m := map[string]any{}
	for i := 0; i < len(a); i += 2 {
		m[a[i].(string)] = a[i+1]
	}
	return m
}

// hint builds the argument hint from COMMAND DOCS as redis-cli 7 does
// (cliAddArgument): [TOKEN name] for an optional argument with a token,
// a|b for a oneof, blocks in turn, "x [x ...]" for a multiple one.
func hint(t *testing.T, args []any) string {
	var parts []string
	for _, raw := range args {
		a := fields(t, raw)
		name, _ := a["name"].(string)
		typ, ok := a["type"].(string)
		if !ok || typ == "" || name == "" {
			t.Fatalf("argument without name or type: %v", a)
		}
		tok, hasToken := a["token"].(string)
		var part string
		switch typ {
		case "pure-token":
			part = tok
		case "oneof", "block":
			var sub []string
			for _, s := range a["arguments"].([]any) {
				sub = append(sub, hint(t, []any{s}))
			}
			sep := " "
			if typ == "oneof" {
				sep = "|"
			}
			part = strings.Join(sub, sep)
		default:
			part = name
			if hasToken {
				part = tok + " " + name
			}
		}
		if flags, ok := a["flags"].([]any); ok {
			optional := false
			for _, f := range flags {
				s, ok := f.(string)
				if !ok || !strings.HasPrefix(s, "+") {
					t.Fatalf("flag %#v is not a simple string: redis-cli asserts that", f)
				}
				if s == "+multiple" {
					part += " [" + part + " ...]"
				}
				optional = optional || s == "+optional"
			}
			if optional {
				part = "[" + part + "]"
			}
		}
		parts = append(parts, part)
	}
	return strings.Join(parts, " ")
}

// The commands of Redis's that tenure added have the hints redis-cli
// shows for them against Redis.
func TestCommandDocsHints(t *testing.T) {
	s := resptest.Start(t, tenure.Options{})
	nc := s.Dial()
	br := bufio.NewReader(nc)
	for name, want := range map[string]string{
		"setbit":          "key offset value",
		"getbit":          "key offset",
		"bitcount":        "key [start end [BYTE|BIT]]",
		"bitpos":          "key bit [start [end [BYTE|BIT]]]",
		"bitop":           "AND|OR|XOR|NOT destkey key [key ...]",
		"lcs":             "key1 key2 [LEN] [IDX] [MINMATCHLEN min-match-len] [WITHMATCHLEN]",
		"substr":          "key start end",
		"copy":            "source destination [DB destination-db] [REPLACE]",
		"touch":           "key [key ...]",
		"expiretime":      "key",
		"pexpiretime":     "key",
		"object|encoding": "key",
		"client|no-evict": "ON|OFF",
	} {
		fmt.Fprintf(nc, "COMMAND DOCS %s\r\n", name)
		reply, ok := respValue(t, br).([]any)
		if !ok || len(reply) != 2 || reply[0] != name {
			t.Fatalf("COMMAND DOCS %s: %#v", name, reply)
		}
		doc := fields(t, reply[1])
		args, _ := doc["arguments"].([]any)
		if got := hint(t, args); got != want {
			t.Errorf("%s hint: %q, want %q", name, got, want)
		}
	}
}

func TestCommandDocsOfLocks(t *testing.T) {
	s := resptest.Start(t, tenure.Options{})
	nc := s.Dial()
	br := bufio.NewReader(nc)
	want := map[string]string{
		"lock.hold":    "lock key reqid [TTL ms] [WAIT ms] [MAXHOLD ms] [LIMIT n|SHARED] [OWNER text]",
		"lock.renew":   "leaseid [TTL ms]",
		"lock.release": "leaseid",
		"lock.info":    "lock key",
		"lock.list":    "lock [CURSOR cursor] [COUNT count]",
		"lock.revoke":  "lock key [FENCE f]",
		"lock.holders": "lock key",
		"lock.events":  "[lock] [COUNT count]",
	}
	for name, wantHint := range want {
		fmt.Fprintf(nc, "COMMAND DOCS %s\r\n", name)
		reply, ok := respValue(t, br).([]any)
		if !ok || len(reply) != 2 || reply[0] != name {
			t.Fatalf("COMMAND DOCS %s: %#v", name, reply)
		}
		doc := fields(t, reply[1])
		for _, f := range []string{"summary", "since", "group", "complexity"} {
			if v, ok := doc[f].(string); !ok || v == "" {
				t.Errorf("%s: %s is %#v, want a bulk string", name, f, doc[f])
			}
		}
		args, ok := doc["arguments"].([]any)
		if !ok {
			t.Fatalf("%s: no arguments: %v", name, doc)
		}
		if got := hint(t, args); got != wantHint {
			t.Errorf("%s hint: %q, want %q", name, got, wantHint)
		}
	}
	// Every command in one reply, as redis-cli asks at start.
	fmt.Fprintf(nc, "COMMAND DOCS\r\n")
	all := fields(t, respValue(t, br))
	for name := range want {
		if _, ok := all[name]; !ok {
			t.Errorf("COMMAND DOCS lacks %s", name)
		}
	}
}

func TestInfoFields(t *testing.T) {
	s := resptest.Start(t, tenure.Options{})
	c := s.Client()
	bg := context.Background()
	var sections []string
	read := func() map[string]string {
		text, err := c.Info(bg, "everything").Result()
		if err != nil {
			t.Fatal(err)
		}
		info := map[string]string{}
		sections = nil
		for _, line := range strings.Split(text, "\r\n") {
			if strings.HasPrefix(line, "# ") {
				sections = append(sections, line[2:])
			} else if k, v, ok := strings.Cut(line, ":"); ok {
				info[k] = v
			}
		}
		return info
	}
	errorsBefore, _ := strconv.Atoi(read()["total_error_replies"])
	c.Do(bg, "NOSUCH")
	c.Set(bg, "k", "v", 0)
	info := read()
	if got := strings.Join(sections, ","); got != "Server,Clients,Memory,Persistence,Stats,Replication,CPU,Commandstats,Errorstats,Cluster,Keyspace,Locks" || info["cluster_enabled"] != "0" {
		t.Errorf("sections %s", got)
	}
	for _, f := range []string{"redis_version", "redis_mode", "os", "process_id", "run_id", "tcp_port",
		"uptime_in_seconds", "connected_clients", "blocked_clients", "maxclients", "used_memory",
		"used_memory_human", "maxmemory", "maxmemory_policy", "mem_allocator", "loading", "aof_enabled",
		"rdb_bgsave_in_progress", "total_connections_received", "total_commands_processed",
		"instantaneous_ops_per_sec", "total_net_input_bytes", "total_net_output_bytes", "rejected_connections",
		"expired_keys", "evicted_keys", "total_error_replies", "role", "connected_slaves", "db0", "epoch",
		"leases", "waiters", "grants_total"} {
		if _, ok := info[f]; !ok {
			t.Errorf("INFO has no %s", f)
		}
	}
	if len(info["run_id"]) != 40 || info["role"] != "master" || info["total_error_replies"] != strconv.Itoa(errorsBefore+1) ||
		info["total_net_input_bytes"] == "0" || info["total_net_output_bytes"] == "0" {
		t.Errorf("run_id %q role %q total_error_replies %q net in %q out %q", info["run_id"], info["role"],
			info["total_error_replies"], info["total_net_input_bytes"], info["total_net_output_bytes"])
	}
}

// The INFO fields Redis tools read beyond the basics: CPU times, the
// memory peak, keyspace hits and misses (reset by CONFIG RESETSTAT), the
// Keyspace line's avg_ttl, commandstats only when asked for.
func TestInfoToolFields(t *testing.T) {
	s := resptest.Start(t, tenure.Options{})
	c := s.Client()
	bg := context.Background()
	read := func(section string) map[string]string {
		text, err := c.Info(bg, section).Result()
		if err != nil {
			t.Fatal(err)
		}
		info := map[string]string{}
		for _, line := range strings.Split(text, "\r\n") {
			if k, v, ok := strings.Cut(line, ":"); ok {
				info[k] = v
			}
		}
		return info
	}
	num := func(info map[string]string, f string) float64 {
		t.Helper()
		n, err := strconv.ParseFloat(info[f], 64)
		if err != nil {
			t.Fatalf("INFO %s = %q: %v", f, info[f], err)
		}
		return n
	}
	if err := c.ConfigResetStat(bg).Err(); err != nil {
		t.Fatal(err)
	}
	c.Set(bg, "k", "v", 0)
	c.Set(bg, "t1", "v", 100*time.Second)
	c.Set(bg, "t2", "v", 200*time.Second)
	c.Get(bg, "k")
	c.Get(bg, "nokey")
	c.Exists(bg, "k", "nokey", "t1")
	c.GetBit(bg, "nokey", 1)
	info := read("everything")
	if hits, misses := num(info, "keyspace_hits"), num(info, "keyspace_misses"); hits != 3 || misses != 3 {
		t.Errorf("keyspace_hits %v, keyspace_misses %v; want 3 and 3", hits, misses)
	}
	if user, sys := num(info, "used_cpu_user"), num(info, "used_cpu_sys"); user+sys <= 0 {
		t.Errorf("used_cpu_user %v + used_cpu_sys %v: want some CPU time", user, sys)
	}
	num(info, "used_cpu_user_children")
	if peak, used := num(info, "used_memory_peak"), num(info, "used_memory"); peak < used || peak == 0 {
		t.Errorf("used_memory_peak %v below used_memory %v", peak, used)
	}
	if num(info, "uptime_in_seconds") < 0 || num(info, "rdb_last_save_time") <= 0 {
		t.Errorf("uptime_in_seconds %q rdb_last_save_time %q", info["uptime_in_seconds"], info["rdb_last_save_time"])
	}
	// Two keys with TTLs of 100 and 200 s: 150 s on average, less what passed.
	var keys, expires, avg int64
	if _, err := fmt.Sscanf(info["db0"], "keys=%d,expires=%d,avg_ttl=%d", &keys, &expires, &avg); err != nil {
		t.Fatalf("db0:%s: %v", info["db0"], err)
	}
	if keys != 3 || expires != 2 || avg < 140000 || avg > 150000 {
		t.Errorf("db0:%s, want keys=3,expires=2,avg_ttl about 150000", info["db0"])
	}
	if st := info["cmdstat_get"]; !strings.HasPrefix(st, "calls=2,") || !strings.Contains(st, ",rejected_calls=0,failed_calls=0") {
		t.Errorf("cmdstat_get:%s", st)
	}
	c.Do(bg, "GET")
	if st := read("commandstats")["cmdstat_get"]; !strings.HasPrefix(st, "calls=2,") || !strings.Contains(st, ",rejected_calls=1,") {
		t.Errorf("after a GET of wrong arity: cmdstat_get:%s", st)
	}
	if _, ok := read("default")["cmdstat_get"]; ok {
		t.Error("INFO default shows commandstats; Redis leaves them to INFO all")
	}
	if err := c.ConfigResetStat(bg).Err(); err != nil {
		t.Fatal(err)
	}
	if info := read("stats"); num(info, "keyspace_hits") != 0 || num(info, "keyspace_misses") != 0 {
		t.Errorf("after CONFIG RESETSTAT: keyspace_hits %s, keyspace_misses %s", info["keyspace_hits"], info["keyspace_misses"])
	}
	c.Get(bg, "k")
	if st := read("commandstats")["cmdstat_get"]; !strings.HasPrefix(st, "calls=1,") || !strings.Contains(st, ",rejected_calls=0,failed_calls=0") {
		t.Errorf("a GET after CONFIG RESETSTAT: cmdstat_get:%s", st)
	}
}

// CLIENT NO-TOUCH is Redis 7.2's; 7.0 has no such subcommand, so it is
// checked here alone. tenure keeps no access times: the mode only shows.
func TestClientNoTouch(t *testing.T) {
	s := start(t)
	conn := s.Client().Conn()
	defer conn.Close()
	transcript(t, conn, []step{
		{"CLIENT NO-TOUCH on", "OK"},
		{"CLIENT INFO", containing(" flags=T ")},
		{"CLIENT NO-EVICT on", "OK"},
		{"CLIENT INFO", containing(" flags=eT ")},
		{"CLIENT NO-TOUCH off", "OK"},
		{"CLIENT NO-EVICT off", "OK"},
		{"CLIENT INFO", containing(" flags=N ")},
		{"CLIENT NO-TOUCH x", "ERR syntax error"},
		{"CLIENT NO-TOUCH", "ERR wrong number of arguments for 'client|no-touch' command"},
		{"CLIENT NO-TOUCH on", "OK"},
		{"RESET", "RESET"},
		{"CLIENT INFO", containing(" flags=N ")},
	})
}

// INFO errorstats counts error replies by their code, as redis-server
// 7.0.15 does (the expected text is what it printed for these commands):
// the word before the first space within the first 32 bytes, else ERR;
// characters an INFO line cannot hold become '_'. CONFIG RESETSTAT clears
// it, and at most 128 codes are kept.
func TestInfoErrorstats(t *testing.T) {
	s := resptest.Start(t, tenure.Options{})
	c := s.Client()
	bg := context.Background()
	info := func() string {
		t.Helper()
		v, err := c.Info(bg, "errorstats").Result()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	if err := c.ConfigResetStat(bg).Err(); err != nil {
		t.Fatal(err)
	}
	c.Set(bg, "s", "v", 0)
	c.LPush(bg, "s", "x")
	c.Do(bg, "nosuchcmd")
	c.Eval(bg, `return redis.error_reply("MY_ERR_CODE custom msg")`, nil)
	c.Eval(bg, `return redis.error_reply("")`, nil)
	c.Eval(bg, `return redis.error_reply("a:b#c x")`, nil)
	c.Eval(bg, `return redis.error_reply("NOSPACEINTHEFIRSTTHIRTYTWOBYTESOFTHEREPLY")`, nil)
	c.EvalSha(bg, strings.Repeat("0", 40), nil)
	c.Incr(bg, "s")
	want := "# Errorstats\r\n" +
		"errorstat_ERR:count=4\r\n" +
		"errorstat_MY_ERR_CODE:count=1\r\n" +
		"errorstat_NOSCRIPT:count=1\r\n" +
		"errorstat_WRONGTYPE:count=1\r\n" +
		"errorstat_a_b_c:count=1\r\n"
	if got := info(); got != want {
		t.Fatalf("INFO errorstats:\n%q\nwant\n%q", got, want)
	}
	if all, err := c.Info(bg).Result(); err != nil || !strings.Contains(all, "\r\n# Errorstats\r\nerrorstat_ERR:count=4\r\n") {
		t.Fatalf("INFO (default sections) has no Errorstats: %v\n%s", err, all)
	}

	if err := c.ConfigResetStat(bg).Err(); err != nil {
		t.Fatal(err)
	}
	if got := info(); got != "# Errorstats\r\n" {
		t.Fatalf("INFO errorstats after CONFIG RESETSTAT: %q", got)
	}
	for i := range 200 {
		c.Eval(bg, fmt.Sprintf(`return redis.error_reply("CODE%03d x")`, i), nil)
	}
	got := info()
	if n := strings.Count(got, "errorstat_"); n != 128 {
		t.Fatalf("%d codes kept of 200, want 128", n)
	}
	if !strings.Contains(got, "errorstat_CODE127:count=1") || strings.Contains(got, "CODE128") {
		t.Fatalf("not the first 128 codes:\n%s", got)
	}
	if stats, _ := c.Info(bg, "stats").Result(); !strings.Contains(stats, "total_error_replies:200\r\n") {
		t.Fatalf("total_error_replies does not count every error:\n%s", stats)
	}
}

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

	"github.com/tenure-db/tenure/resp"
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
// (cliAddArgument): [TOKEN name] for an optional argument with a token.
func hint(t *testing.T, args []any) string {
	var parts []string
	for _, raw := range args {
		a := fields(t, raw)
		name, _ := a["name"].(string)
		if typ, ok := a["type"].(string); !ok || typ == "" || name == "" {
			t.Fatalf("argument without name or type: %v", a)
		}
		part := name
		if tok, ok := a["token"].(string); ok {
			part = tok + " " + name
		}
		if flags, ok := a["flags"].([]any); ok {
			for _, f := range flags {
				s, ok := f.(string)
				if !ok || !strings.HasPrefix(s, "+") {
					t.Fatalf("flag %#v is not a simple string: redis-cli asserts that", f)
				}
				if s == "+optional" {
					part = "[" + part + "]"
				}
			}
		}
		parts = append(parts, part)
	}
	return strings.Join(parts, " ")
}

func TestCommandDocsOfLocks(t *testing.T) {
	s := resptest.Start(t, resp.Config{})
	nc := s.Dial()
	br := bufio.NewReader(nc)
	want := map[string]string{
		"lock.hold":    "lock key reqid [TTL ms] [WAIT ms] [MAXHOLD ms]",
		"lock.renew":   "leaseid [TTL ms]",
		"lock.release": "leaseid",
		"lock.info":    "lock key",
		"lock.list":    "lock [CURSOR cursor] [COUNT count]",
		"lock.revoke":  "lock key",
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
	s := resptest.Start(t, resp.Config{})
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
	if got := strings.Join(sections, ","); got != "Server,Clients,Memory,Persistence,Stats,Replication,Keyspace,Locks" {
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

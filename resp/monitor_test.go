package resp_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/tenure-db/tenure"
	"github.com/tenure-db/tenure/resp/resptest"
)

// monitorLine is a MONITOR line: the time, the database and peer, the
// quoted arguments.
var monitorLine = regexp.MustCompile(`^\+(\d{10})\.(\d{6}) \[0 ([^\]]+)\] (.*)$`)

// monitorNext reads m's next line and returns its peer and arguments.
func monitorNext(t *testing.T, m *respConn) (peer, args string) {
	t.Helper()
	l := m.reply()
	g := monitorLine.FindStringSubmatch(l)
	if g == nil {
		t.Fatalf("monitor line %q", l)
	}
	if g[1] < fmt.Sprint(time.Now().Add(-time.Minute).Unix()) {
		t.Fatalf("monitor line %q: not now", l)
	}
	return g[3], g[4]
}

// MONITOR shows each command once it has run, in Redis's format: the
// client's address, or "lua" for what a script called after the EVAL
// itself; MULTI, the queued commands as EXEC runs them, then EXEC;
// arguments quoted as Redis quotes them; passwords and lease ids redacted;
// nothing of admin commands or of refused ones.
func TestMonitor(t *testing.T) {
	s := start(t)
	m := dialResp(t, s.Addr)
	m.send("MONITOR")
	if got := m.reply(); got != "+OK" {
		t.Fatalf("MONITOR: %q", got)
	}
	ctx := context.Background()
	client := redis.NewClient(&redis.Options{Addr: s.Addr})
	defer client.Close()
	c := client.Conn() // one connection, whose address the lines show
	defer c.Close()
	var mine string
	for _, line := range strings.Split(c.ClientList(ctx).Val(), "\n") {
		if strings.Contains(line, "cmd=client|list") {
			mine = strings.TrimPrefix(strings.Fields(line)[1], "addr=")
		}
	}
	lease := c.Do(ctx, "LOCK.HOLD", "jobs", "k1", "r1").Val().([]any)[0].(string)
	// What the client sent so far (HELLO, CLIENT SETINFO, …) ends at this.
	c.Echo(ctx, "start")
	for {
		if _, args := monitorNext(t, m); args == `"echo" "start"` {
			break
		}
	}
	steps := []struct {
		run  func()
		want []string // peer and arguments, each "peer args"
	}{
		{func() { c.Set(ctx, "k", "a b\"c\\\n\r\t\x00\xff", 0) }, []string{`"set" "k" "a b\"c\\\n\r\t\x00\xff"`}},
		{func() { c.Eval(ctx, "return redis.call('INCR', KEYS[1])", []string{"n"}) },
			[]string{`"eval" "return redis.call('INCR', KEYS[1])" "1" "n"`, `lua "INCR" "n"`}},
		{func() {
			c.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.Set(ctx, "a", "1", 0)
				p.Get(ctx, "a")
				return nil
			})
		}, []string{`"multi"`, `"set" "a" "1"`, `"get" "a"`, `"exec"`}},
		{func() { c.Do(ctx, "LOCK.RENEW", lease, "TTL", "5000") }, []string{`"LOCK.RENEW" "(redacted)" "TTL" "5000"`}},
		{func() { c.Do(ctx, "LOCK.RELEASE", lease) }, []string{`"LOCK.RELEASE" "(redacted)"`}},
		{func() { c.Do(ctx, "AUTH", "user", "secret") }, []string{`"AUTH" "(redacted)" "(redacted)"`}},
		{func() { c.Do(ctx, "HELLO", "2", "AUTH", "user", "secret", "SETNAME", "x") },
			[]string{`"HELLO" "2" "AUTH" "(redacted)" "(redacted)" "SETNAME" "x"`}},
		{func() { c.Do(ctx, "MIGRATE", "127.0.0.1", "1", "k", "0", "10", "COPY", "AUTH2", "u", "secret", "KEYS") },
			[]string{`"MIGRATE" "127.0.0.1" "1" "k" "0" "10" "COPY" "AUTH2" "(redacted)" "(redacted)" "KEYS"`}},
		// Not shown: an admin command, an unknown one, a wrong arity.
		// The ECHO after them is the next line.
		{func() {
			c.ConfigSet(ctx, "maxclients", "1000")
			c.Do(ctx, "NOSUCH")
			c.Do(ctx, "GET")
			c.Echo(ctx, "after")
		}, []string{`"echo" "after"`}},
	}
	for _, st := range steps {
		st.run()
		for _, w := range st.want {
			peer, args := monitorNext(t, m)
			wantPeer, wantArgs := mine, w
			if strings.HasPrefix(w, "lua ") {
				wantPeer, wantArgs = "lua", strings.TrimPrefix(w, "lua ")
			}
			if peer != wantPeer || args != wantArgs {
				t.Fatalf("monitor showed [%s] %s; want [%s] %s", peer, args, wantPeer, wantArgs)
			}
		}
	}

	// The monitor itself: flags=O in CLIENT LIST; a keyspace command
	// refused, as Redis refuses a replica; a second MONITOR unanswered;
	// RESET ends it.
	if !strings.Contains(c.ClientList(ctx).Val(), "flags=O") {
		t.Errorf("CLIENT LIST shows no monitor (flags=O):\n%s", c.ClientList(ctx).Val())
	}
	m.send("GET k")
	if got := m.reply(); got != "-ERR Replica can't interact with the keyspace" {
		t.Errorf("GET from the monitor: %q", got)
	}
	m.send("MONITOR", "PING")
	if got := m.reply(); got != "+PONG" {
		t.Errorf("a second MONITOR then PING: %q, want +PONG alone", got)
	}
	if peer, args := monitorNext(t, m); args != `"PING"` {
		t.Errorf("the monitor's own PING shown as [%s] %s", peer, args)
	}
	m.send("RESET")
	if got := m.reply(); got != "+RESET" {
		t.Fatalf("RESET: %q", got)
	}
	c.Echo(ctx, "unseen")
	m.send("PING")
	if got := m.reply(); got != "+PONG" {
		t.Fatalf("after RESET, PING: %q (a monitor line?)", got)
	}
}

// MONITOR inside MULTI is refused at EXEC, and through Server.Do, as
// Redis refuses it to a client that cannot block.
func TestMonitorRefused(t *testing.T) {
	s := start(t)
	compatTranscript(t, s, []step{
		{"MULTI", "OK"},
		{"MONITOR", "QUEUED"},
		{"EXEC", []any{"ERR MONITOR isn't allowed for DENY BLOCKING client"}},
	})
	if err := s.DB.Do(bg, "MONITOR").Err(); err == nil || !strings.Contains(err.Error(), "DENY BLOCKING") {
		t.Fatalf("MONITOR in process: %v", err)
	}
}

// A monitor that does not read is cut off at the pubsub class's output
// limit, and the server goes on.
func TestMonitorThatDoesNotReadIsCut(t *testing.T) {
	s := resptest.Start(t, tenure.Options{})
	c := s.Client()
	if err := c.ConfigSet(bg, "client-output-buffer-limit", "pubsub 262144 0 0").Err(); err != nil {
		t.Fatal(err)
	}
	m := dialResp(t, s.Addr)
	m.send("MONITOR")
	if got := m.reply(); got != "+OK" {
		t.Fatalf("MONITOR: %q", got)
	}
	big := strings.Repeat("x", 64<<10)
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(c.Info(bg, "stats").Val(), "client_output_buffer_limit_disconnections:1") {
		if time.Now().After(deadline) {
			t.Fatalf("the monitor was not cut:\n%s", c.Info(bg, "stats").Val())
		}
		if err := c.Set(bg, "k", big, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Set(bg, "after", "1", 0).Err(); err != nil {
		t.Fatalf("the server after the cut: %v", err)
	}
}

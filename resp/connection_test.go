package resp_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tenure-db/tenure"
	"github.com/tenure-db/tenure/resp"
	"github.com/tenure-db/tenure/resp/resptest"
)

// helloReply is HELLO's reply in RESP2, whoever the server is.
var helloReply = []any{
	"server", anyString(), "version", anyString(), "proto", 2, "id", anyInt(),
	"mode", "standalone", "role", "master", "modules", []any{},
}

// The connection commands of SPEC §6 where tenure answers as Redis 7 does
// (checked against redis-server 7, see compatTranscript).
var connectionSteps = []step{
	{"PING", "PONG"},
	{"ping hello", "hello"},
	{`PING ""`, ""},
	{"PING a b", "ERR wrong number of arguments for 'ping' command"},
	{"ECHO hi", "hi"},
	{`ECHO "a\x00b"`, "a\x00b"},
	{"ECHO", "ERR wrong number of arguments for 'echo' command"},
	{"ECHO a b", "ERR wrong number of arguments for 'echo' command"},

	{"HELLO 2", helloReply},
	{"HELLO", helloReply},
	{"HELLO 1", "NOPROTO unsupported protocol version"},
	{"HELLO 4", "NOPROTO unsupported protocol version"},
	{"HELLO -1", "NOPROTO unsupported protocol version"},
	{"HELLO abc", "ERR Protocol version is not an integer or out of range"},
	{"HELLO 02", "ERR Protocol version is not an integer or out of range"},
	{"HELLO 2 FOO", "ERR Syntax error in HELLO option 'FOO'"},
	{"HELLO 2 SETNAME", "ERR Syntax error in HELLO option 'SETNAME'"},
	{"HELLO 2 AUTH default", "ERR Syntax error in HELLO option 'AUTH'"},
	{"HELLO 2 AUTH default x FOO", "ERR Syntax error in HELLO option 'FOO'"},
	{`HELLO 2 SETNAME "a b"`, "ERR Client names cannot contain spaces, newlines or special characters."},
	{"HELLO 2 SETNAME myname", helloReply},
	{"CLIENT GETNAME", "myname"},
	{"HELLO 2 AUTH default anything", helloReply}, // the default user takes any password
	{"HELLO 2 AUTH nobody x", "WRONGPASS invalid username-password pair or user is disabled."},
	{"HELLO 2 AUTH nobody x SETNAME other", "WRONGPASS invalid username-password pair or user is disabled."},
	{"CLIENT GETNAME", "myname"},

	{"AUTH x", "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?"},
	{"AUTH default x", "OK"},
	{"AUTH nobody x", "WRONGPASS invalid username-password pair or user is disabled."},
	{"AUTH a b c", "ERR syntax error"},
	{"AUTH", "ERR wrong number of arguments for 'auth' command"},

	{"SELECT 0", "OK"},
	{"SELECT -1", "ERR DB index is out of range"},
	{"SELECT abc", "ERR value is not an integer or out of range"},
	{"SELECT 00", "ERR value is not an integer or out of range"},
	{"SELECT 9999999999", "ERR value is out of range, value must between -2147483648 and 2147483647"},
	{"SELECT", "ERR wrong number of arguments for 'select' command"},
	{"SELECT 0 1", "ERR wrong number of arguments for 'select' command"},

	{"CLIENT SETNAME foo", "OK"},
	{"CLIENT GETNAME", "foo"},
	{`CLIENT SETNAME ""`, "OK"}, // an empty name removes it
	{"CLIENT GETNAME", nil},
	{`CLIENT SETNAME "a b"`, "ERR Client names cannot contain spaces, newlines or special characters."},
	{`CLIENT SETNAME "a\nb"`, "ERR Client names cannot contain spaces, newlines or special characters."},
	{`CLIENT SETNAME "caf\u00e9"`, "ERR Client names cannot contain spaces, newlines or special characters."},
	{"CLIENT SETNAME a b", "ERR wrong number of arguments for 'client|setname' command"},
	{"CLIENT SETNAME", "ERR wrong number of arguments for 'client|setname' command"},
	{"CLIENT GETNAME x", "ERR wrong number of arguments for 'client|getname' command"},
	{"client setname Mixed-Case_1", "OK"},
	{"CLIENT GETNAME", "Mixed-Case_1"},
	{"CLIENT ID", intBetween(1, 1<<40)},
	{"CLIENT ID x", "ERR wrong number of arguments for 'client|id' command"},
	{"CLIENT INFO", containing("id=", " addr=127.0.0.1:", " laddr=127.0.0.1:", " name=Mixed-Case_1 ", " db=0 ", " cmd=client|info ", " user=default ", " resp=2", "\n")},
	{"CLIENT INFO x", "ERR wrong number of arguments for 'client|info' command"},
	{"CLIENT FOO", "ERR unknown subcommand 'FOO'. Try CLIENT HELP."},
	{"CLIENT", "ERR wrong number of arguments for 'client' command"},
	{"CLIENT HELP", arrayOf(-1, anyString())},

	{"CLIENT LIST", containing("name=Mixed-Case_1 ", " cmd=client|list ")},
	{"CLIENT LIST TYPE normal", containing("name=Mixed-Case_1 ")},
	{"CLIENT LIST TYPE NORMAL", containing("name=Mixed-Case_1 ")},
	{"CLIENT LIST TYPE pubsub", ""},
	{"CLIENT LIST TYPE master", ""},
	{"CLIENT LIST TYPE replica", ""},
	{"CLIENT LIST TYPE foo", "ERR Unknown client type 'foo'"},
	{"CLIENT LIST ID abc", "ERR Invalid client ID"},
	{"CLIENT LIST ID 1 abc", "ERR Invalid client ID"},
	{"CLIENT LIST ID 0", ""},
	{"CLIENT LIST ID -5 999999999", ""},
	{"CLIENT LIST FOO", "ERR syntax error"},
	{"CLIENT LIST TYPE", "ERR syntax error"},
	{"CLIENT LIST ID", "ERR syntax error"},
	{"CLIENT LIST TYPE normal ID 1", "ERR syntax error"},
	{"CLIENT LIST TYPE normal extra", "ERR syntax error"},

	{"CLIENT KILL 1.2.3.4:5", "ERR No such client"},
	{"CLIENT KILL ID abc", "ERR client-id should be greater than 0"},
	{"CLIENT KILL ID 0", "ERR client-id should be greater than 0"},
	{"CLIENT KILL ID 999999999", 0},
	{"CLIENT KILL ADDR 1.2.3.4:5", 0},
	{"CLIENT KILL LADDR 1.2.3.4:5", 0},
	{"CLIENT KILL TYPE pubsub SKIPME no", 0},
	{"CLIENT KILL ID 999999999 ADDR 1.2.3.4:5 SKIPME yes", 0},
	{"CLIENT KILL FOO bar", "ERR syntax error"},
	{"CLIENT KILL ID 1 ADDR", "ERR syntax error"},
	{"CLIENT KILL SKIPME maybe", "ERR syntax error"},
	{"CLIENT KILL MAXAGE 100", "ERR syntax error"},
	{"CLIENT KILL TYPE foo", "ERR Unknown client type 'foo'"},
	{"CLIENT KILL USER nobody", "ERR No such user 'nobody'"},
	{"CLIENT KILL", "ERR wrong number of arguments for 'client|kill' command"},

	{"RESET x", "ERR wrong number of arguments for 'reset' command"},
	{"RESET", "RESET"},
	{"CLIENT GETNAME", nil}, // RESET forgot the name
	{"QUIT x y", "OK"},      // QUIT takes and ignores arguments… and closes
}

func TestConnectionCompat(t *testing.T) {
	s := start(t)
	compatTranscript(t, s, connectionSteps)
}

// Where tenure differs from Redis by design (SPEC §6): its name in HELLO,
// database 0 only, and Redis 7.2's CLIENT SETINFO.
func TestConnectionTenure(t *testing.T) {
	s := start(t)
	c := resp2Client(t, s).Conn()
	defer c.Close()
	id, err := c.ClientID(bg).Result()
	if err != nil {
		t.Fatal(err)
	}
	transcript(t, c, []step{
		{"HELLO 2", []any{"server", "tenure", "version", resp.RedisVersion, "proto", 2, "id", int(id),
			"mode", "standalone", "role", "master", "modules", []any{}}},
		{"HELLO 3 FOO", "ERR Syntax error in HELLO option 'FOO'"},
		{"SELECT 1", "ERR DB index is out of range"},
		{"SELECT 15", "ERR DB index is out of range"},

		{"CLIENT SETINFO lib-name mylib", "OK"},
		{"CLIENT SETINFO LIB-VER 1.2.3", "OK"},
		{"CLIENT INFO", containing(" lib-name=mylib lib-ver=1.2.3")},
		{`CLIENT SETINFO lib-name "my lib"`, "ERR lib-name cannot contain spaces, newlines or special characters."},
		{`CLIENT SETINFO LIB-VER "1\n2"`, "ERR LIB-VER cannot contain spaces, newlines or special characters."},
		{"CLIENT SETINFO lib-foo x", "ERR Unrecognized option 'lib-foo'"},
		{"CLIENT SETINFO lib-name", "ERR wrong number of arguments for 'client|setinfo' command"},
		{"CLIENT SETINFO lib-name a b", "ERR wrong number of arguments for 'client|setinfo' command"},
		{`CLIENT SETINFO lib-name ""`, "OK"},
		{"CLIENT INFO", containing(" lib-name= lib-ver=1.2.3")},
		// Redis 7.2's line, plus the role the connection was admitted with.
		{"CLIENT INFO", containing(fmt.Sprintf("id=%d ", id), " user=default role=admin ", " resp=2 ")},
		{fmt.Sprintf("CLIENT LIST ID %d", id), containing(fmt.Sprintf("id=%d ", id), " cmd=client|list ")},
		{fmt.Sprintf("CLIENT LIST ID 999999 %d", id), containing(fmt.Sprintf("id=%d ", id))},
		{"CLIENT KILL USER default SKIPME yes", anyInt()},
	})
}

// go-redis at its default options sends HELLO 3 and goes on in RESP3,
// then sends CLIENT MAINT_NOTIFICATIONS (refused, as Redis 7 refuses it:
// go-redis then goes on without) and CLIENT SETINFO twice: nothing else
// may fail, and the server must know the library afterwards.
func TestConnectionGoRedisHandshake(t *testing.T) {
	s := start(t)
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr})
	defer rdb.Close()
	hook := &errorHook{}
	rdb.AddHook(hook)
	if err := rdb.Set(bg, "k", "v", 0).Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}
	info, err := rdb.ClientInfo(bg).Result()
	if err != nil {
		t.Fatalf("CLIENT INFO: %v", err)
	}
	if !strings.HasPrefix(info.LibName, "go-redis(") || info.LibVer != redis.Version() {
		t.Fatalf("CLIENT SETINFO did not take: lib-name=%q lib-ver=%q", info.LibName, info.LibVer)
	}
	if info.Resp != 3 {
		t.Fatalf("CLIENT INFO says resp=%d, want 3", info.Resp)
	}
	hook.mu.Lock()
	defer hook.mu.Unlock()
	t.Logf("go-redis sent %q: %v", hook.cmds, hook.errs)
	if len(hook.cmds) < 3 || hook.cmds[0] != "hello" {
		t.Fatalf("the hook saw only %q", hook.cmds)
	}
	for i, err := range hook.errs {
		if err != nil && err.Error() != "ERR unknown subcommand 'maint_notifications'. Try CLIENT HELP." {
			t.Errorf("%s failed: %v", hook.cmds[i], err)
		}
	}
	// A client that asks for RESP2 outright works as well.
	r2 := redis.NewClient(&redis.Options{Addr: s.Addr, Protocol: 2})
	defer r2.Close()
	if got, err := r2.Get(bg, "k").Result(); err != nil || got != "v" {
		t.Fatalf("RESP2 client: %q, %v", got, err)
	}
}

// errorHook records every command go-redis sends, the handshake's
// included, and how each ended.
type errorHook struct {
	mu   sync.Mutex
	cmds []string
	errs []error
}

func (h *errorHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *errorHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		// go-redis leaves a failed HELLO's own Err empty; the error is
		// what the chain returns.
		err := next(ctx, cmd)
		h.record(cmd.Name(), err)
		return err
	}
}

func (h *errorHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		for _, c := range cmds {
			h.record(c.Name(), c.Err())
		}
		return err
	}
}

func (h *errorHook) record(name string, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err == redis.Nil {
		err = nil
	}
	h.cmds = append(h.cmds, name)
	h.errs = append(h.errs, err)
}

// Replies carry Redis's types, which go-redis does not show: a status is
// "+", a bulk string "$", a null "$-1".
func TestConnectionReplyTypes(t *testing.T) {
	s := start(t)
	r := dialRaw(t, s)
	for _, tc := range []struct{ send, want string }{
		{"PING\r\n", "+PONG"},
		{"PING x\r\n", "$1\r\nx"},
		{"ECHO PONG\r\n", "$4\r\nPONG"},
		{"SET k v\r\n", "+OK"},
		{"TYPE k\r\n", "+string"},
		{"TYPE nokey\r\n", "+none"},
		{"GET nokey\r\n", "$-1"},
		{"CLIENT GETNAME\r\n", "$-1"},
		{"SET k v NX\r\n", "$-1"},
		{"EXISTS k\r\n", ":1"},
		{"INCRBYFLOAT f 1.5\r\n", "$3\r\n1.5"},
		{"MGET k nokey\r\n", "*2\r\n$1\r\nv\r\n$-1"},
		{"SCAN 0 MATCH nomatch\r\n", "*2\r\n$1\r\n0\r\n*0"},
		{"KEYS nomatch\r\n", "*0"},
		{"HELLO 4\r\n", "-NOPROTO unsupported protocol version"},
		{"NOSUCH\r\n", "-ERR unknown command 'NOSUCH', with args beginning with: "},
		{"COMMAND INFO nosuch\r\n", "*1\r\n$-1"},
		{"RESET\r\n", "+RESET"},
		{"QUIT\r\n", "+OK"},
	} {
		r.send(tc.send)
		var got []string
		for range strings.Count(tc.want, "\r\n") + 1 {
			got = append(got, r.line())
		}
		if g := strings.Join(got, "\r\n"); g != tc.want {
			t.Errorf("%q: got %q, want %q", tc.send, g, tc.want)
		}
	}
	r.expectClosed() // after QUIT
}

// CLIENT KILL closes the connections it names, and only those; the old
// form and SKIPME no may close the asking connection itself, after its
// reply.
func TestConnectionClientKill(t *testing.T) {
	s := start(t)
	admin := s.Client().Conn()
	defer admin.Close()

	victim := dialRaw(t, s)
	victim.send("CLIENT ID\r\n")
	victimID := strings.TrimPrefix(victim.line(), ":")
	transcript(t, admin, []step{{"CLIENT KILL ID " + victimID, 1}})
	victim.expectClosed()
	transcript(t, admin, []step{{"CLIENT KILL ID " + victimID, 0}})

	byAddr := dialRaw(t, s)
	byAddr.send("PING\r\n")
	byAddr.line()
	transcript(t, admin, []step{{"CLIENT KILL " + byAddr.nc.LocalAddr().String(), "OK"}})
	byAddr.expectClosed()

	byNewAddr := dialRaw(t, s)
	byNewAddr.send("PING\r\n")
	byNewAddr.line()
	transcript(t, admin, []step{{"CLIENT KILL ADDR " + byNewAddr.nc.LocalAddr().String() + " SKIPME yes", 1}})
	byNewAddr.expectClosed()

	// USER default kills every other connection, skipping the asker.
	a, b := dialRaw(t, s), dialRaw(t, s)
	for _, r := range []*rawConn{a, b} {
		r.send("PING\r\n")
		r.line()
	}
	transcript(t, admin, []step{{"CLIENT KILL USER default", intBetween(2, 100)}, {"PING", "PONG"}})
	a.expectClosed()
	b.expectClosed()

	// Killing oneself: the reply comes first, then the close.
	self := dialRaw(t, s)
	self.send("CLIENT ID\r\n")
	selfID := strings.TrimPrefix(self.line(), ":")
	self.send("CLIENT KILL ID " + selfID + " SKIPME no\r\n")
	if got := self.line(); got != ":1" {
		t.Fatalf("self kill: got %q", got)
	}
	self.expectClosed()
	old := dialRaw(t, s)
	old.send("CLIENT KILL " + old.nc.LocalAddr().String() + "\r\nPING\r\n")
	if got := old.line(); got != "+OK" {
		t.Fatalf("old-form self kill: got %q", got)
	}
	old.expectClosed()
}

// With a users file (SPEC §5): before AUTH only AUTH, HELLO, PING and QUIT
// run; each user's role bounds what it may run afterwards.
func TestConnectionUsers(t *testing.T) {
	users, err := resp.ParseUsers(strings.NewReader(strings.Join([]string{
		"# name role sha256 of the password",
		"user reader read sha256:" + sha256hex("r-pw"),
		"",
		"user writer write sha256:" + sha256hex("w-pw"),
		"user boss admin sha256:" + sha256hex("a-pw"),
	}, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	s := resptest.Start(t, tenure.Options{Users: users})
	noauth := "NOAUTH Authentication required."
	wrongpass := "WRONGPASS invalid username-password pair or user is disabled."
	noperm := func(cmd string) string {
		return "NOPERM this user has no permissions to run the '" + cmd + "' command"
	}
	// go-redis without credentials: its handshake fails quietly, and then
	// every command but these four is refused.
	c := s.Client().Conn()
	defer c.Close()
	transcript(t, c, []step{
		{"PING", "PONG"},
		{"GET k", noauth},
		{"SET k v", noauth},
		{"ECHO x", noauth},
		{"CLIENT ID", noauth},
		{"CLIENT SETNAME x", noauth},
		{"SELECT 0", noauth},
		{"INFO", noauth},
		{"RESET", noauth}, // Redis allows RESET here; SPEC §5 does not
		{"LOCK.INFO l k", noauth},
		{"NOSUCH x", "ERR unknown command 'NOSUCH', with args beginning with: 'x' "},
		{"GET", "ERR wrong number of arguments for 'get' command"}, // arity is checked first, as in Redis
		{"CLIENT NOSUCH", "ERR unknown subcommand 'NOSUCH'. Try CLIENT HELP."},
		{"HELLO", "NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time"},
		{"HELLO 2 SETNAME x", "NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time"},
		{"AUTH wrong", wrongpass},
		{"AUTH reader wrong", wrongpass},
		{"AUTH nobody r-pw", wrongpass},
		{"AUTH default r-pw", wrongpass},
		{"HELLO 2 AUTH reader wrong", wrongpass},
		{"HELLO 2 AUTH reader r-pw FOO", "ERR Syntax error in HELLO option 'FOO'"},
		{"GET k", noauth}, // a HELLO that failed admitted nobody
		{"AUTH a b c", "ERR syntax error"},

		// reader: read commands only.
		{"AUTH reader r-pw", "OK"},
		{"GET k", nil},
		{"MGET k", []any{nil}},
		{"EXISTS k", 0},
		{"SCAN 0", []any{"0", []any{}}},
		{"INFO server", containing("# Server")},
		{"LOCK.INFO l k", nil},
		{"CLIENT ID", anyInt()},
		{"SET k v", noperm("set")},
		{"DEL k", noperm("del")},
		{"INCR k", noperm("incr")},
		{"EXPIRE k 10", noperm("expire")},
		{"LOCK.HOLD l k r", noperm("lock.hold")},
		{"LOCK.RELEASE x", noperm("lock.release")},
		{"FLUSHALL", noperm("flushall")},
		{"CLIENT KILL ID 1", noperm("client|kill")},
		{"CLIENT LIST", noperm("client|list")},
		{"CONFIG SET maxclients 5", noperm("config|set")},
		{"CONFIG GET maxclients", []any{"maxclients", "10000"}},
		{"SHUTDOWN", noperm("shutdown")},
		{"CLIENT INFO", containing(" user=reader role=read ")},

		// writer: + writes and leases, not admin.
		{"HELLO 2 AUTH writer w-pw SETNAME w", helloReply},
		{"CLIENT GETNAME", "w"},
		{"SET k v", "OK"},
		{"DEL k", 1},
		{"LOCK.REVOKE l k", noperm("lock.revoke")},
		{"FLUSHDB", noperm("flushdb")},
		{"CONFIG SET maxclients 5", noperm("config|set")},
		{"CONFIG RESETSTAT", noperm("config|resetstat")},
		{"CLIENT KILL ID 1", noperm("client|kill")},
		{"SHUTDOWN", noperm("shutdown")},

		// boss: everything.
		{"AUTH boss a-pw", "OK"},
		{"FLUSHALL", "OK"},
		{"CLIENT LIST", containing(" user=boss role=admin ")},
		{"CLIENT KILL USER nobody", "ERR No such user 'nobody'"},
		{"CLIENT KILL USER default", anyInt()},
		{"CLIENT KILL USER reader", 0},
		{"LOCK.REVOKE l k", 0},

		// A wrong password leaves the connection as it was.
		{"AUTH boss wrong", wrongpass},
		{"FLUSHALL", "OK"},
		// RESET logs the connection out.
		{"RESET", "RESET"},
		{"GET k", noauth},
		{"CLIENT GETNAME", noauth},
		{"QUIT", "OK"},
	})

	// go-redis with credentials sends HELLO 3 AUTH user password.
	for _, tc := range []struct{ user, pw string }{{"writer", "w-pw"}, {"", "bad"}} {
		rdb := redis.NewClient(&redis.Options{Addr: s.Addr, Username: tc.user, Password: tc.pw})
		err := rdb.Set(bg, "k", "v", 0).Err()
		rdb.Close()
		if tc.pw == "bad" {
			if err == nil || !strings.Contains(err.Error(), "WRONGPASS") {
				t.Errorf("go-redis with a bad password: %v", err)
			}
		} else if err != nil {
			t.Errorf("go-redis as %s: %v", tc.user, err)
		}
	}
	// Before AUTH, at most 10 arguments are read (SPEC §7).
	r := dialRaw(t, s)
	r.send("*11\r\n")
	if got := r.line(); got != "-ERR Protocol error: unauthenticated multibulk length" {
		t.Fatalf("11 arguments before AUTH: got %q", got)
	}
	r.expectClosed()
	// The same after RESET.
	r = dialRaw(t, s)
	r.send("AUTH boss a-pw\r\nRESET\r\n*2\r\n$4\r\nECHO\r\n$16385\r\n")
	for _, want := range []string{"+OK", "+RESET", "-ERR Protocol error: unauthenticated bulk length"} {
		if got := r.line(); got != want {
			t.Fatalf("got %q, want %q", got, want)
		}
	}
	r.expectClosed()
}

// --max-clients: a connection over the limit is told so and closed; once
// one leaves, another may come.
func TestConnectionMaxClients(t *testing.T) {
	s := resptest.Start(t, tenure.Options{MaxClients: 2})
	a, b := dialRaw(t, s), dialRaw(t, s)
	for _, r := range []*rawConn{a, b} {
		r.send("PING\r\n")
		if got := r.line(); got != "+PONG" {
			t.Fatalf("got %q", got)
		}
	}
	over := dialRaw(t, s)
	if got := over.line(); got != "-ERR max number of clients reached" {
		t.Fatalf("third connection: got %q", got)
	}
	over.expectClosed()

	// go-redis fails too: with that error, or with a broken pipe when the
	// close beats its handshake's write, as with Redis.
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1})
	defer rdb.Close()
	if err := rdb.Ping(bg).Err(); err == nil {
		t.Fatalf("go-redis over the limit: no error")
	}
	a.nc.Close()
	eventually(t, 5*time.Second, "a place frees up", func() bool {
		nc, err := net.Dial("tcp", s.Addr)
		if err != nil {
			return false
		}
		defer nc.Close()
		nc.SetDeadline(time.Now().Add(time.Second))
		io.WriteString(nc, "PING\r\n")
		buf := make([]byte, 7)
		n, _ := io.ReadFull(nc, buf)
		return string(buf[:n]) == "+PONG\r\n"
	})
	// CONFIG SET maxclients moves the limit while running; b is still
	// admitted and asks.
	b.send("CONFIG SET maxclients 3\r\n")
	if got := b.line(); got != "+OK" {
		t.Fatalf("CONFIG SET maxclients 3: got %q", got)
	}
	var rejected int
	for range 3 {
		r := dialRaw(t, s)
		r.send("PING\r\n")
		if r.line() != "+PONG" {
			rejected++
		}
	}
	if rejected == 0 {
		t.Fatalf("with maxclients 3, three more connections were all accepted")
	}
}

// A closed connection is forgotten: CLIENT LIST and INFO count it out.
func TestConnectionForgotten(t *testing.T) {
	s := start(t)
	admin := s.Client()
	r := dialRaw(t, s)
	r.send("CLIENT SETNAME gone-soon\r\n")
	r.line()
	if list := admin.ClientList(bg).Val(); !strings.Contains(list, "name=gone-soon ") {
		t.Fatalf("CLIENT LIST lacks the connection: %q", list)
	}
	r.nc.Close()
	eventually(t, 5*time.Second, "the closed connection leaves CLIENT LIST", func() bool {
		return !strings.Contains(admin.ClientList(bg).Val(), "name=gone-soon ")
	})
}

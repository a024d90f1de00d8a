package resp_test

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tenure-db/tenure"
)

// scriptSteps are Redis 7's scripting behaviour as a transcript (SPEC
// §13): the redis.* API, the conversions between Lua and RESP2, KEYS and
// ARGV, NOSCRIPT and the SCRIPT subcommands.
var scriptSteps = []step{
	{`EVAL "return 'hello'" 0`, "hello"},
	{`EVAL "return 100.5" 0`, 100},
	{`EVAL "return true" 0`, 1},
	{`EVAL "return false" 0`, nil},
	{`EVAL "return {ok='fine'}" 0`, "fine"},
	{`EVAL "return {err='ERR this is an error'}" 0`, "ERR this is an error"},
	{`EVAL "return {1,2,3,'ciao',{1,2}}" 0`, []any{1, 2, 3, "ciao", []any{1, 2}}},
	{`EVAL "return {1,2,nil,4}" 0`, []any{1, 2}},
	{`EVAL "return {KEYS[1],KEYS[2],ARGV[1],ARGV[2]}" 2 a b c d`, []any{"a", "b", "c", "d"}},
	{`EVAL "return 1" -1`, "ERR Number of keys can't be negative"},
	{`EVAL "return 1" 2 a`, "ERR Number of keys can't be greater than number of args"},
	{`EVAL "return 1" x`, "ERR value is not an integer or out of range"},
	{`EVAL "redis.call('set', KEYS[1], ARGV[1]); return redis.call('get', KEYS[1])" 1 k v`, "v"},
	{`EVAL "return redis.call('incr', KEYS[1])" 1 n`, 1},
	{`EVAL "return redis.call('get', 'missing')" 0`, nil},
	{`EVAL "return type(redis.call('get', 'missing'))" 0`, "boolean"},
	{`EVAL "return redis.call('set', 'k', 'v')" 0`, "OK"},
	{`EVAL "return redis.pcall('incr', 'k')" 0`, "ERR value is not an integer or out of range"},
	{`EVAL "local t = redis.pcall('incr', 'k'); return string.sub(t['err'], 1, 3)" 0`, "ERR"},
	{`EVAL "return redis.call('incr', 'k')" 0`, scriptErr(`return redis.call('incr', 'k')`, "ERR value is not an integer or out of range")},
	{`EVAL "return redis.call('nosuch')" 0`, scriptErr(`return redis.call('nosuch')`, "ERR Unknown Redis command called from script")},
	{`EVAL "return redis.call('get')" 0`, scriptErr(`return redis.call('get')`, "ERR Wrong number of args calling Redis command from script")},
	{`EVAL "return redis.call('lock.hold', 'l', 'k', 'r')" 0`, scriptErr(`return redis.call('lock.hold', 'l', 'k', 'r')`, "ERR This Redis command is not allowed from script")},
	{`EVAL "return redis.call('multi')" 0`, scriptErr(`return redis.call('multi')`, "ERR This Redis command is not allowed from script")},
	{`EVAL "return redis.call('eval', 'return 1', 0)" 0`, scriptErr(`return redis.call('eval', 'return 1', 0)`, "ERR This Redis command is not allowed from script")},
	{`EVAL "return redis.status_reply('fine')" 0`, "fine"},
	{`EVAL "return redis.sha1hex('Pizza & Mandolino')" 0`, "74822d82031af7493c20eefa13bd07ec4fada82f"},
	{`EVAL "return a" 0`, scriptErr(`return a`, "ERR user_script:1: Script attempted to access nonexistent global variable 'a'")},
	{`EVAL "a = 1" 0`, scriptErr(`a = 1`, "ERR user_script:1: Attempt to modify a readonly table")},
	// What error() raises, as redis-server 7.0.15 answers each (its script
	// named by the bare SHA1: Redis 6's f_ prefix is gone).
	{`EVAL "error({})" 0`, scriptErr(`error({})`, "ERR ")},
	{`EVAL "error(nil)" 0`, scriptErr(`error(nil)`, "ERR nil")},
	{`EVAL "error(12)" 0`, scriptErr(`error(12)`, "ERR 12")},
	{`EVAL "error({err='ERR x'})" 0`, scriptErr(`error({err='ERR x'})`, "ERR x")},
	// A reply that reaches the script as a table (SET's {ok='OK'}) is a
	// table it may add to; the main chunk has no arg (Lua 5.1's).
	{`EVAL "local t = redis.call('set', 'a', 'b'); t.x = 1; t[1] = 2; return {t.ok, t.x, t[1]}" 0`, []any{"OK", 1, 2}},
	{`EVAL "return type(arg)" 0`, scriptErr(`return type(arg)`, "ERR user_script:1: Script attempted to access nonexistent global variable 'arg'")},
	{`EVAL "return select('#', ...)" 0`, 0},
	{`EVAL "return cjson.encode({a={1,2}})" 0`, `{"a":[1,2]}`},
	{`EVAL "return cjson.decode(ARGV[1]).b" 0 "{\"b\":\"x\"}"`, "x"},
	{`EVAL "return bit.band(7, 3)" 0`, 3},
	{`EVAL "return 'x" 0`, "ERR Error compiling script (new function): user_script:1: unterminated string"},
	{`EVAL "return 'hello' --trailing comment" 0`, "hello"},
	{`SCRIPT LOAD "return 'loaded'"`, "9b4a4a4b7b9e9e6c3a3b8f2b0c4b6b0f8e2e0c5d"},
	{`SCRIPT FLUSH`, "OK"},
	{`SCRIPT LOAD "return 1"`, "e0e1f9fabfc9d4800c877a703b823ac0578ff8db"},
	{`EVALSHA e0e1f9fabfc9d4800c877a703b823ac0578ff8db 0`, 1},
	{`EVALSHA E0E1F9FABFC9D4800C877A703B823AC0578FF8DB 0`, 1},
	{`EVALSHA_RO e0e1f9fabfc9d4800c877a703b823ac0578ff8db 0`, 1},
	{`EVALSHA ffffffffffffffffffffffffffffffffffffffff 0`, "NOSCRIPT No matching script. Please use EVAL."},
	{`EVALSHA short 0`, "NOSCRIPT No matching script. Please use EVAL."},
	{`SCRIPT EXISTS e0e1f9fabfc9d4800c877a703b823ac0578ff8db ffffffffffffffffffffffffffffffffffffffff`, []any{1, 0}},
	{`SCRIPT FLUSH ASYNC`, "OK"},
	{`SCRIPT EXISTS e0e1f9fabfc9d4800c877a703b823ac0578ff8db`, []any{0}},
	{`SCRIPT FLUSH bad`, "ERR SCRIPT FLUSH only support SYNC|ASYNC option"},
	{`SCRIPT KILL`, "NOTBUSY No scripts in execution right now."},
	{`EVAL_RO "return redis.call('get', 'k')" 0`, "v"},
	{`EVAL_RO "return redis.call('set', 'k', 'w')" 0`, scriptErr(`return redis.call('set', 'k', 'w')`, "ERR Write commands are not allowed from read-only scripts.")},
	{`EVAL "#!lua flags=no-writes\nreturn redis.call('del', 'k')" 0`, scriptErrAt("#!lua flags=no-writes\nreturn redis.call('del', 'k')", "ERR Write commands are not allowed from read-only scripts.", 2)},
	{`EVAL "#!lua flags=bogus\nreturn 1" 0`, "ERR Unexpected flag in script shebang: bogus"},
	{`GET k`, "v"},
}

// scriptErr is the error of a script that failed at its line 1, as Redis
// 7 spells it: the error, the script's function name and where.
func scriptErr(body, msg string) string { return scriptErrAt(body, msg, 1) }

func scriptErrAt(body, msg string, line int) string {
	sum := sha1.Sum([]byte(body))
	return fmt.Sprintf("%s script: %s, on @user_script:%d.", msg, hex.EncodeToString(sum[:]), line)
}

func TestCompatScripts(t *testing.T) {
	s := start(t)
	// The SHA of "return 'loaded'", as redis.sha1hex computes it.
	steps := append([]step(nil), scriptSteps...)
	for i := range steps {
		if strings.HasPrefix(steps[i].cmd, `SCRIPT LOAD "return 'loaded'"`) {
			sha, err := s.Client().Eval(bg, "return redis.sha1hex(ARGV[1])", nil, "return 'loaded'").Text()
			if err != nil {
				t.Fatal(err)
			}
			steps[i].want = sha
		}
	}
	compatTranscript(t, s, steps)
}

// TestScriptErrorCodes: an error a script returns keeps its code word.
func TestScriptErrorCodes(t *testing.T) {
	rdb := start(t).Client()
	for body, want := range map[string]string{
		"return {err='MY_CODE custom'}":                 "MY_CODE custom",
		"return redis.error_reply('MY_ERR custom msg')": "MY_ERR custom msg",
		"return redis.error_reply('-X y')":              "X y",
		"return redis.pcall('nosuch')":                  "ERR Unknown Redis command called from script",
	} {
		if err := rdb.Eval(bg, body, nil).Err(); err == nil || err.Error() != want {
			t.Errorf("%s: got %v, want %q", body, err, want)
		}
	}
}

// TestScriptsRESP3: with redis.setresp(3) a script sees RESP3's replies
// and returns RESP3's types (maps, sets, doubles, booleans, big numbers),
// which a RESP2 client gets in RESP2's shapes (SPEC §13).
func TestScriptsRESP3(t *testing.T) {
	s := start(t)
	r3 := redis.NewClient(&redis.Options{Addr: s.Addr, Protocol: 3})
	defer r3.Close()
	r2 := resp2Client(t, s)
	for _, tc := range []struct {
		body   string
		r3, r2 any
	}{
		{"redis.setresp(3); return {map={a=1}}", map[any]any{"a": 1}, []any{"a", 1}},
		{"redis.setresp(3); return {set={a=true}}", []any{"a"}, []any{"a"}},
		{"redis.setresp(3); return {double=3.5}", 3.5, "3.5"},
		{"redis.setresp(3); return true", true, 1},
		{"redis.setresp(3); return false", false, 0},
		{"return false", nil, nil},
		{"redis.setresp(3); return {big_number='123456789012345678901234567890'}", "123456789012345678901234567890", "123456789012345678901234567890"},
		{"redis.setresp(3); return redis.call('config', 'get', 'x') == nil", nil, nil},
		{"redis.setresp(3); local t = redis.call('hello', '3'); return 1", nil, nil},
		{"redis.setresp(3); return type(redis.call('get', 'nokey'))", "nil", "nil"},
		{"redis.setresp(2); return type(redis.call('get', 'nokey'))", "boolean", "boolean"},
		{"redis.setresp(3); return redis.call('lock.info', 'l', 'k')", nil, nil},
	} {
		if strings.Contains(tc.body, "config") || strings.Contains(tc.body, "hello") || strings.Contains(tc.body, "lock.info") {
			// Refused from a script: an error in either protocol.
			if err := r3.Eval(bg, tc.body, nil).Err(); err == nil || !strings.Contains(err.Error(), "not allowed from script") {
				t.Errorf("%s: got %v", tc.body, err)
			}
			continue
		}
		for _, c := range []struct {
			name string
			rdb  *redis.Client
			want any
		}{{"resp3", r3, tc.r3}, {"resp2", r2, tc.r2}} {
			got, err := c.rdb.Eval(bg, tc.body, nil).Result()
			if errors.Is(err, redis.Nil) {
				got, err = nil, nil
			}
			if err != nil || fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Errorf("%s %s: got %#v, %v; want %#v", c.name, tc.body, got, err, c.want)
			}
		}
	}
}

// TestScriptRoles: every command inside a script is checked against the
// caller's role (SPEC §5, §13), with NOPERM as dispatch answers it.
func TestScriptRoles(t *testing.T) {
	s := startWithUsers(t, tenure.Options{})
	c := s.Client().Conn()
	defer c.Close()
	transcript(t, c, []step{
		{"AUTH writer writer-pass", "OK"},
		{`EVAL "return redis.call('set', 'k', 'v')" 0`, "OK"},
		{"AUTH reader reader-pass", "OK"},
		{`EVAL "return redis.call('get', 'k')" 0`, "v"},
		{`EVAL "return redis.call('set', 'k', 'w')" 0`, scriptErr(`return redis.call('set', 'k', 'w')`, "NOPERM this user has no permissions to run the 'set' command")},
		{`EVAL "return redis.pcall('del', 'k')" 0`, "NOPERM this user has no permissions to run the 'del' command"},
		{`EVAL "return redis.acl_check_cmd('set', 'k', 'w')" 0`, nil},
		{`EVAL "return redis.acl_check_cmd('get', 'k')" 0`, 1},
		{`EVAL "return redis.acl_check_cmd('nosuch')" 0`, scriptErr(`return redis.acl_check_cmd('nosuch')`, "ERR Invalid command passed to redis.acl_check_cmd()")},
		{`EVAL "return redis.call('flushall')" 0`, scriptErr(`return redis.call('flushall')`, "NOPERM this user has no permissions to run the 'flushall' command")},
		{"SCRIPT FLUSH", "NOPERM this user has no permissions to run the 'script|flush' command"},
		{"GET k", "v"},
	})
}

// TestScriptSandbox: a script cannot read a file, the environment, or
// load code that could (SPEC §13).
func TestScriptSandbox(t *testing.T) {
	s := start(t)
	rdb := s.Client()
	for _, body := range []string{
		"return io.open('/etc/passwd'):read('*a')",
		"return os.getenv('HOME')",
		"return os.execute('true')",
		"return loadfile('/etc/passwd')",
		"return dofile('/etc/passwd')",
		"return require('io')",
		"return package.loadlib('x', 'y')",
		"return debug.getregistry()",
		"return loadstring('return io')()",
		"return getfenv(0).io.open('/etc/passwd')",
		"return string.dump(print)",
		"rawset(_G, 'io', 1)",
		"redis.call = nil",
	} {
		if got, err := rdb.Eval(bg, body, nil).Result(); err == nil {
			t.Errorf("%s: answered %v", body, got)
		}
	}
}

// TestScriptInMulti: EVAL queued in MULTI runs at EXEC with the others, and
// a script's write breaks another client's WATCH (SPEC §6, §13).
func TestScriptInMulti(t *testing.T) {
	s := start(t)
	a, b := s.Client().Conn(), s.Client()
	defer a.Close()
	transcript(t, a, []step{
		{"MULTI", "OK"},
		{"SET k 1", "QUEUED"},
		{`EVAL "return redis.call('incr', KEYS[1])" 1 k`, "QUEUED"},
		{"GET k", "QUEUED"},
		{"EXEC", []any{"OK", 2, "2"}},
		{"WATCH k", "OK"},
	})
	transcript(t, b, []step{{`EVAL "return redis.call('set', KEYS[1], 'x')" 1 k`, "OK"}})
	transcript(t, a, []step{{"MULTI", "OK"}, {"SET k mine", "QUEUED"}, {"EXEC", nil}, {"GET k", "x"}})
	// A script that only reads breaks no WATCH.
	transcript(t, a, []step{{"WATCH k", "OK"}})
	transcript(t, b, []step{{`EVAL "return redis.call('get', KEYS[1])" 1 k`, "x"}})
	transcript(t, a, []step{{"MULTI", "OK"}, {"SET k mine", "QUEUED"}, {"EXEC", []any{"OK"}}})
}

// TestScriptAtomic (LOCK-18): no other client sees a script half done,
// and a script that fails half-way keeps what it wrote before, as Redis.
func TestScriptAtomic(t *testing.T) {
	s := start(t)
	rdb := s.Client()
	keys := make([]string, 20)
	for i := range keys {
		keys[i] = fmt.Sprintf("{a}%d", i)
	}
	const body = "for i, k in ipairs(KEYS) do redis.call('set', k, ARGV[1]) end return #KEYS"
	ctx, cancel := context.WithTimeout(bg, 2*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ctx.Err() == nil && i < 300; i++ {
			if err := rdb.Eval(ctx, body, keys, i).Err(); err != nil && ctx.Err() == nil {
				errs <- err
				return
			}
		}
		cancel()
	}()
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				vals, err := rdb.MGet(ctx, keys...).Result()
				if err != nil {
					if ctx.Err() == nil {
						errs <- err
					}
					return
				}
				for _, v := range vals[1:] {
					if v != vals[0] {
						errs <- fmt.Errorf("torn read: %v", vals)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// A failure half-way: the SET before it stays, the one after never ran.
	c := rdb.Conn()
	defer c.Close()
	transcript(t, c, []step{
		{"SET notnum abc", "OK"},
		{`EVAL "redis.call('set', 'before', '1'); redis.call('incr', 'notnum'); redis.call('set', 'after', '1')" 0`, scriptErr(`redis.call('set', 'before', '1'); redis.call('incr', 'notnum'); redis.call('set', 'after', '1')`, "ERR value is not an integer or out of range")},
		{"GET before", "1"},
		{"GET after", nil},
	})
}

// TestScriptBusyAndKill: past busy-reply-threshold other clients get
// -BUSY; SCRIPT KILL stops a script that has not written, -UNKILLABLE one
// that has; a shutdown stops it and commits none of it (LOCK-18).
func TestScriptBusyAndKill(t *testing.T) {
	s := start(t)
	admin := s.Client()
	if err := admin.ConfigSet(bg, "busy-reply-threshold", "50").Err(); err != nil {
		t.Fatal(err)
	}
	if got := admin.ConfigGet(bg, "lua-time-limit").Val(); got["lua-time-limit"] != "50" {
		t.Fatalf("lua-time-limit: %v", got)
	}
	runLoop := func(body string) chan error {
		done := make(chan error, 1)
		c := redis.NewClient(&redis.Options{Addr: s.Addr, ReadTimeout: -1})
		go func() {
			defer c.Close()
			done <- c.Eval(bg, body, nil).Err()
		}()
		return done
	}
	waitBusy := func() {
		t.Helper()
		eventually(t, 5*time.Second, "BUSY", func() bool {
			err := admin.Ping(bg).Err()
			return err != nil && strings.HasPrefix(err.Error(), "BUSY Redis is busy running a script.")
		})
	}
	for _, body := range []string{
		"while true do end",
		"local f = function() while 1 do redis.call('ping') end end while 1 do pcall(f) end",
	} {
		done := runLoop(body)
		waitBusy()
		if err := admin.Do(bg, "SCRIPT", "KILL").Err(); err != nil {
			t.Fatalf("SCRIPT KILL: %v", err)
		}
		if err := <-done; err == nil || !strings.Contains(err.Error(), "Script killed by user with SCRIPT KILL") {
			t.Fatalf("%s: %v", body, err)
		}
		if err := admin.Ping(bg).Err(); err != nil {
			t.Fatalf("after the kill: %v", err)
		}
	}
	// A transaction that meets a busy script is discarded whole, as
	// Redis's: a command queued meanwhile gets BUSY, and EXEC itself, had
	// nothing been refused, gets EXECABORT with BUSY as the reason.
	for _, queueDuringBusy := range []bool{true, false} {
		tx := redis.NewClient(&redis.Options{Addr: s.Addr, PoolSize: 1, MaxRetries: -1})
		if err := tx.Set(bg, "xx", "1", 0).Err(); err != nil {
			t.Fatal(err)
		}
		if err := tx.Do(bg, "MULTI").Err(); err != nil {
			t.Fatal(err)
		}
		if !queueDuringBusy {
			if err := tx.Do(bg, "INCR", "xx").Err(); err != nil {
				t.Fatalf("INCR queued: %v", err)
			}
		}
		done := runLoop("while true do end")
		waitBusy()
		if queueDuringBusy {
			if err := tx.Do(bg, "INCR", "xx").Err(); err == nil || !strings.HasPrefix(err.Error(), "BUSY ") {
				t.Fatalf("INCR while busy: %v", err)
			}
		}
		err := tx.Do(bg, "EXEC").Err()
		if err == nil || !strings.HasPrefix(err.Error(), "EXECABORT") {
			t.Fatalf("EXEC while busy (queued during busy: %v): %v", queueDuringBusy, err)
		}
		if err := admin.Do(bg, "SCRIPT", "KILL").Err(); err != nil {
			t.Fatalf("SCRIPT KILL: %v", err)
		}
		<-done
		if got := admin.Get(bg, "xx").Val(); got != "1" {
			t.Fatalf("xx after an aborted transaction: %q", got)
		}
		if got, err := tx.Echo(bg, "out of MULTI").Result(); err != nil || got != "out of MULTI" {
			t.Fatalf("the connection is still in MULTI: %q, %v", got, err)
		}
		tx.Close()
	}
	done := runLoop("redis.call('set', 'x', '1'); while true do end")
	waitBusy()
	if err := admin.Do(bg, "SCRIPT", "KILL").Err(); err == nil || !strings.HasPrefix(err.Error(), "UNKILLABLE Sorry the script already executed write commands") {
		t.Fatalf("SCRIPT KILL of a script that wrote: %v", err)
	}
	s.Restart() // SHUTDOWN's path: the script is stopped and nothing of it committed
	if err := <-done; err == nil {
		t.Fatal("the script ended well")
	}
	if got, err := s.Client().Get(bg, "x").Result(); !errors.Is(err, redis.Nil) {
		t.Fatalf("x after a script stopped by shutdown: %q, %v", got, err)
	}
}

// TestScriptsDeterministic: TIME and math.random inside a script read the
// script's instant, so a cluster's nodes, applying it at the same
// instant, decide alike (SPEC §13).
func TestScriptsDeterministic(t *testing.T) {
	s := start(t)
	rdb := s.Client()
	got, err := rdb.Eval(bg, "local a = redis.call('time'); local b = redis.call('time'); return {a[1], a[2], b[1], b[2]}", nil).StringSlice()
	if err != nil || got[0] != got[2] || got[1] != got[3] {
		t.Fatalf("TIME twice in a script: %v, %v", got, err)
	}
	seeded, err := rdb.Eval(bg, "math.randomseed(ARGV[1]); return tostring(math.random())", nil, 10).Text()
	again, _ := rdb.Eval(bg, "math.randomseed(ARGV[1]); return tostring(math.random())", nil, 10).Text()
	if err != nil || seeded != again {
		t.Fatalf("randomseed(10): %q then %q (%v)", seeded, again, err)
	}
}

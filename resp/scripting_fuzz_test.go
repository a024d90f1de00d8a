package resp_test

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tenure-db/tenure"
	"github.com/tenure-db/tenure/resp/resptest"
)

// slowPattern: Lua's pattern matching (string.find, match, gmatch, gsub)
// runs as one step of the interpreter, which SCRIPT KILL cannot stop, as
// in Redis, whose Lua is the same C: a pattern that backtracks over a long
// string runs for as long as it takes. The fuzz targets leave those out.
func slowPattern(body string) bool {
	return strings.Contains(body, "find") || strings.Contains(body, "match") || strings.Contains(body, "gsub")
}

// FuzzEvalRO feeds scripts and arguments to a real server, as EVAL_RO (so
// that SCRIPT KILL can always stop one that runs away), to clients of
// both protocols: the server never crashes, answers PING after every
// script, and keeps no goroutine per script (SPEC §7, §13).
func FuzzEvalRO(f *testing.F) {
	for _, seed := range []string{
		"return 1", "return {1, 'two', {3}}", "return redis.call('get', KEYS[1])",
		"return redis.pcall('nosuch')", "while true do end", "local t = {} t[1] = t return t",
		"redis.setresp(3) return {map={a={set={b=true}}}, double=1.5}",
		"redis.setresp(3) return redis.call('command', 'info', 'get')",
		"return {err=ARGV[1]}", "return {ok=ARGV[1]}", "return redis.status_reply(ARGV[1])",
		"return cjson.decode(ARGV[1])", "return cmsgpack.unpack(ARGV[1])",
		"return redis.call('set', KEYS[1], ARGV[1])", "error(ARGV[1])", "return {big_number=ARGV[1]}",
		"redis.setresp(3) return {verbatim_string={format='txt', string=ARGV[1]}}",
	} {
		f.Add(seed, "k", true)
	}
	s := resptest.Start(f, tenure.Options{})
	admin := s.Client()
	if err := admin.ConfigSet(context.Background(), "busy-reply-threshold", "10").Err(); err != nil {
		f.Fatal(err)
	}
	r3 := redis.NewClient(&redis.Options{Addr: s.Addr, Protocol: 3, MaxRetries: -1})
	r2 := redis.NewClient(&redis.Options{Addr: s.Addr, Protocol: 2, MaxRetries: -1})
	f.Cleanup(func() { r3.Close(); r2.Close() })
	base := runtime.NumGoroutine()
	f.Fuzz(func(t *testing.T, body, arg string, resp3 bool) {
		if slowPattern(body) {
			t.Skip()
		}
		rdb := r2
		if resp3 {
			rdb = r3
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		done := make(chan struct{})
		go func() { // the watchdog: a script that outlives 50 ms is killed
			select {
			case <-done:
				return
			case <-time.After(50 * time.Millisecond):
			}
			for {
				admin.Do(ctx, "SCRIPT", "KILL")
				select {
				case <-done:
					return
				case <-time.After(10 * time.Millisecond):
				}
			}
		}()
		rdb.EvalRO(ctx, body, []string{arg}, arg) // any answer will do
		close(done)
		if err := rdb.Ping(ctx).Err(); err != nil {
			t.Fatalf("PING after %q: %v", body, err)
		}
		if n := runtime.NumGoroutine(); n > base+20 {
			t.Fatalf("%d goroutines, %d at the start", n, base)
		}
	})
}

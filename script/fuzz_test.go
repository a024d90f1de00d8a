package script

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"
)

// FuzzRun feeds scripts and arguments to one engine: it never panics, a
// run always ends (a runaway script is stopped through its context, as
// SCRIPT KILL stops one), every result is a reply the server can send,
// and no run leaves a goroutine behind.
func FuzzRun(f *testing.F) {
	for _, seed := range []string{
		"return 1", "return {1,2,{3,'x'}}", "return redis.call('echo', ARGV[1])",
		"return redis.pcall('fail')", "while true do end", "local t = {} t[1] = t return t",
		"return cjson.decode(ARGV[1])", "return cjson.encode(cjson.decode(ARGV[1]))",
		"return cmsgpack.unpack(ARGV[1])", "return struct.unpack(ARGV[1], ARGV[2])",
		"return bit.tohex(ARGV[1], ARGV[2])", "redis.setresp(3) return {map={a={set={b=true}}}}",
		"return string.rep(ARGV[1], 1e9)", "return setmetatable({}, {__index=function() error('x') end})",
		"return coroutine.wrap(function() redis.call('echo', 'x') end)()",
		"return loadstring(ARGV[1])()", "error({err=ARGV[1]})", "return {err=1}",
		"return math.random(ARGV[1], ARGV[2])", "return tostring(getfenv(0))",
	} {
		f.Add(seed, "[1,{\"a\":null}]", "x")
	}
	e := New(Options{})
	f.Cleanup(e.Close)
	goroutines := runtime.NumGoroutine()
	f.Fuzz(func(t *testing.T, body, arg1, arg2 string) {
		// Lua's pattern matching is one step of the interpreter that a
		// kill cannot stop, as in Redis: left out.
		if strings.Contains(body, "find") || strings.Contains(body, "match") || strings.Contains(body, "gsub") {
			t.Skip()
		}
		s, err := Compile([]byte(body))
		if err != nil {
			if !strings.HasPrefix(err.Error(), "Error compiling script") && !strings.HasPrefix(err.Error(), "Un") {
				t.Fatalf("compile error %q", err)
			}
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		done := make(chan Reply, 1)
		go func() {
			done <- e.Run(ctx, s, [][]byte{[]byte(arg1)}, [][]byte{[]byte(arg1), []byte(arg2)}, &echoCaller{}, 1)
		}()
		select {
		case r := <-done:
			checkReply(t, r, 0)
		case <-time.After(5 * time.Second):
			t.Fatalf("a run went on 5 s past its kill: %q %q %q", body, arg1, arg2)
		}
		if n := runtime.NumGoroutine(); n > goroutines+5 {
			t.Fatalf("%d goroutines after a run, %d before the first", n, goroutines)
		}
	})
}

// checkReply fails on a reply the server could not send: an error without
// a code word, or an aggregate nested deeper than a script's result may.
func checkReply(t *testing.T, r Reply, depth int) {
	t.Helper()
	if depth > maxDepth+1 {
		t.Fatalf("reply nested %d deep", depth)
	}
	if r.Kind == Error && (r.Str == "" || strings.HasPrefix(r.Str, " ")) {
		t.Fatalf("error reply %q has no code", r.Str)
	}
	if r.Kind == Map && len(r.Elems)%2 != 0 {
		t.Fatalf("map of %d elements", len(r.Elems))
	}
	for _, e := range r.Elems {
		checkReply(t, e, depth+1)
	}
}

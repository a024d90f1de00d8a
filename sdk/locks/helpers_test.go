package locks_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tenure-db/tenure"
	"github.com/tenure-db/tenure/resp/resptest"
	"github.com/tenure-db/tenure/sdk/locks"
)

// helperEnv selects a helper mode when the test binary is run as a child
// process (see frozen_test.go).
const helperEnv = "TENURE_LOCKS_TEST_HELPER"

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(runHelper(mode))
	}
	code := m.Run()
	if code == 0 {
		// Every Hold waits for the goroutines it started (go.uber.org/goleak
		// is not a dependency; this looks for the SDK's own frames).
		if leaked := sdkGoroutines(2 * time.Second); leaked != "" {
			fmt.Fprintf(os.Stderr, "goroutines of sdk/locks still running after the tests:\n%s\n", leaked)
			code = 1
		}
	}
	os.Exit(code)
}

// sdkGoroutines waits up to patience for every goroutine running code of
// the package (not its tests) to end, and returns the stacks of those left.
func sdkGoroutines(patience time.Duration) string {
	deadline := time.Now().Add(patience)
	for {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		var left []string
		for _, g := range strings.Split(string(buf), "\n\n") {
			for _, line := range strings.Split(g, "\n") {
				if strings.Contains(line, "/sdk/locks/") && !strings.Contains(line, "_test.go:") {
					left = append(left, g)
					break
				}
			}
		}
		if len(left) == 0 || time.Now().After(deadline) {
			return strings.Join(left, "\n\n")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// noLeaks fails t if goroutines of the SDK outlive the Holds that started them.
func noLeaks(t *testing.T) {
	t.Helper()
	if leaked := sdkGoroutines(2 * time.Second); leaked != "" {
		t.Fatalf("goroutines of sdk/locks still running after Hold returned:\n%s", leaked)
	}
}

func startServer(t *testing.T) *resptest.Server {
	t.Helper()
	return resptest.Start(t, tenure.Options{})
}

// newClient is a go-redis client for addr, with the default options unless
// changed, closed by t.Cleanup.
func newClient(t *testing.T, addr string, change ...func(*redis.Options)) *redis.Client {
	t.Helper()
	o := &redis.Options{Addr: addr}
	for _, f := range change {
		f(o)
	}
	c := redis.NewClient(o)
	t.Cleanup(func() { c.Close() })
	return c
}

func openLock(t *testing.T, c locks.Store, name string, opts ...locks.Option) *locks.Lock {
	t.Helper()
	l, err := locks.OpenLock(c, name, opts...)
	if err != nil {
		t.Fatalf("OpenLock(%q): %v", name, err)
	}
	return l
}

// lockStats is the # Locks section of INFO.
func lockStats(t *testing.T, c *redis.Client) map[string]int64 {
	t.Helper()
	s, err := c.Info(context.Background(), "locks").Result()
	if err != nil {
		t.Fatalf("INFO locks: %v", err)
	}
	out := map[string]int64{}
	for _, line := range strings.Split(s, "\r\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err == nil {
				out[k] = n
			}
		}
	}
	return out
}

// keyInfo is LOCK.INFO lock key as a map; nil when the key is free and
// nobody waits.
func keyInfo(t *testing.T, c *redis.Client, lock, key string) map[string]int64 {
	t.Helper()
	v, err := c.Do(context.Background(), "LOCK.INFO", lock, key).Result()
	if err == redis.Nil {
		return nil
	}
	if err != nil {
		t.Fatalf("LOCK.INFO %s %s: %v", lock, key, err)
	}
	out := map[string]int64{}
	switch v := v.(type) {
	case map[any]any: // RESP3, go-redis's default
		for f, n := range v {
			if n, ok := n.(int64); ok { // all but the owner, see keyOwner
				out[f.(string)] = n
			}
		}
	case []any: // RESP2: field, value, …
		for i := 0; i+1 < len(v); i += 2 {
			if n, ok := v[i+1].(int64); ok {
				out[v[i].(string)] = n
			}
		}
	default:
		t.Fatalf("LOCK.INFO %s %s: %v", lock, key, v)
	}
	return out
}

// waitFor polls cond until it holds or timeout passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// waitersAre waits until (lock, key) has n places in line.
func waitersAre(t *testing.T, c *redis.Client, lock, key string, n int64) {
	t.Helper()
	waitFor(t, 5*time.Second, fmt.Sprintf("%d waiters on %s/%s", n, lock, key), func() bool {
		info := keyInfo(t, c, lock, key)
		return info != nil && info["waiters"] == n
	})
}

// recv receives from ch or fails after timeout.
func recv[T any](t *testing.T, ch <-chan T, timeout time.Duration, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(timeout):
		t.Fatalf("timed out after %v waiting for %s", timeout, what)
		panic("unreachable")
	}
}

// lostReason returns the Reason of the *LostError in err, or "".
func lostReason(err error) string {
	var le *locks.LostError
	if !errors.As(err, &le) {
		return ""
	}
	return le.Reason
}

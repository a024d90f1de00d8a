package resp_test

// Semaphores, readers and writers, owners (SPEC §12) over the wire, with
// go-redis against the real server: LIMIT, SHARED and OWNER on LOCK.HOLD,
// LOCK.HOLDERS, LOCK.REVOKE … FENCE, and LOCK.INFO's and LOCK.LIST's new
// fields, in RESP2 and RESP3.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tenure-db/tenure"
	"github.com/tenure-db/tenure/resp/resptest"
)

// kvFields reads a map reply (RESP3) or a flat field/value array (RESP2).
func kvFields(t *testing.T, v any) map[string]any {
	t.Helper()
	out := map[string]any{}
	switch v := v.(type) {
	case map[any]any:
		for f, x := range v {
			out[f.(string)] = x
		}
	case []any:
		if len(v)%2 != 0 {
			t.Fatalf("odd field/value array %v", v)
		}
		for i := 0; i < len(v); i += 2 {
			out[v[i].(string)] = v[i+1]
		}
	default:
		t.Fatalf("not a map or a field/value array: %#v", v)
	}
	return out
}

// holdOK holds and insists on a grant; it returns the lease id and fence.
func holdOK(t *testing.T, c *redis.Client, args ...any) (string, int64) {
	t.Helper()
	v, err := c.Do(context.Background(), append([]any{"LOCK.HOLD"}, args...)...).Slice()
	if err != nil || len(v) != 3 {
		t.Fatalf("LOCK.HOLD %v: %v %v", args, v, err)
	}
	return v[0].(string), v[1].(int64)
}

func lockInfo(t *testing.T, c *redis.Client, lock, key string) map[string]any {
	t.Helper()
	v, err := c.Do(context.Background(), "LOCK.INFO", lock, key).Result()
	if errors.Is(err, redis.Nil) {
		return nil
	}
	if err != nil {
		t.Fatalf("LOCK.INFO: %v", err)
	}
	return kvFields(t, v)
}

func lockHolders(t *testing.T, c *redis.Client, lock, key string) []map[string]any {
	t.Helper()
	v, err := c.Do(context.Background(), "LOCK.HOLDERS", lock, key).Slice()
	if err != nil {
		t.Fatalf("LOCK.HOLDERS: %v", err)
	}
	var out []map[string]any
	for _, e := range v {
		m := kvFields(t, e)
		if len(m) != 6 {
			t.Fatalf("LOCK.HOLDERS entry %v, want fence, ttl, held, maxhold, shared, owner", m)
		}
		out = append(out, m)
	}
	return out
}

// blockedHold sends a LOCK.HOLD that waits, on its own client, and
// returns its answer later.
func blockedHold(s *resptest.Server, args ...any) <-chan *redis.Cmd {
	c := s.Client()
	ch := make(chan *redis.Cmd, 1)
	go func() { ch <- c.Do(context.Background(), append([]any{"LOCK.HOLD"}, args...)...) }()
	return ch
}

func waitersAre(t *testing.T, c *redis.Client, lock, key string, n int64) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if info := lockInfo(t, c, lock, key); info != nil && info["waiters"] == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s/%s: never %d waiters", lock, key, n)
		}
		time.Sleep(time.Millisecond)
	}
}

func granted(t *testing.T, ch <-chan *redis.Cmd) int64 {
	t.Helper()
	select {
	case cmd := <-ch:
		v, err := cmd.Slice()
		if err != nil || len(v) != 3 {
			t.Fatalf("blocked HOLD: %v %v", v, err)
		}
		return v[1].(int64)
	case <-time.After(5 * time.Second):
		t.Fatal("blocked HOLD never granted")
		return 0
	}
}

func notYet(t *testing.T, ch <-chan *redis.Cmd) {
	t.Helper()
	select {
	case cmd := <-ch:
		t.Fatalf("HOLD answered %v, want it waiting", cmd)
	case <-time.After(20 * time.Millisecond):
	}
}

// LOCK-01: a key held with LIMIT n admits n leases, each its own.
func TestLOCK01_LimitAdmitsNPermits(t *testing.T) {
	s := resptest.Start(t, tenure.Options{})
	c := s.Client()
	ctx := context.Background()
	var ids []string
	var fences []int64
	for i := range 3 {
		id, f := holdOK(t, c, "llm", "openai", fmt.Sprint("p", i), "LIMIT", 3, "TTL", 60000)
		ids, fences = append(ids, id), append(fences, f)
	}
	if ids[0] == ids[1] || fences[1] <= fences[0] || fences[2] <= fences[1] {
		t.Fatalf("permits share an id or a fence: %v %v", ids, fences)
	}
	if v, err := c.Do(ctx, "LOCK.HOLD", "llm", "openai", "p3", "LIMIT", 3, "WAIT", 0).Result(); !errors.Is(err, redis.Nil) {
		t.Fatalf("a fourth permit: %v %v, want null", v, err)
	}
	info := lockInfo(t, c, "llm", "openai")
	if info["holders"] != int64(3) || info["limit"] != int64(3) || info["shared"] != int64(0) || info["fence"] != fences[2] {
		t.Fatalf("LOCK.INFO %v", info)
	}
	hs := lockHolders(t, c, "llm", "openai")
	if len(hs) != 3 || hs[0]["fence"] != fences[0] || hs[2]["fence"] != fences[2] || hs[0]["maxhold"] != int64(-1) {
		t.Fatalf("LOCK.HOLDERS %v", hs)
	}
	// LOCK-08: the freed permit goes to the first in line.
	first := blockedHold(s, "llm", "openai", "w1", "LIMIT", 3)
	waitersAre(t, c, "llm", "openai", 1)
	second := blockedHold(s, "llm", "openai", "w2", "LIMIT", 3)
	waitersAre(t, c, "llm", "openai", 2)
	if n, err := c.Do(ctx, "LOCK.RELEASE", ids[1]).Int(); n != 1 || err != nil {
		t.Fatalf("release: %d %v", n, err)
	}
	if f := granted(t, first); f <= fences[2] {
		t.Fatalf("fence %x", f)
	}
	notYet(t, second)
	// Renewing one permit leaves the others be.
	if n, err := c.Do(ctx, "LOCK.RENEW", ids[0]).Int(); n <= 0 || err != nil {
		t.Fatalf("renew: %d %v", n, err)
	}
	c.Do(ctx, "LOCK.REVOKE", "llm", "openai")
	granted(t, second)
}

// LOCK-01, LOCK-08: readers share a key; a writer waits for them to go,
// and holds back the readers that come after it.
func TestLOCK01_LOCK08_ReadersAndAWriter(t *testing.T) {
	s := resptest.Start(t, tenure.Options{})
	c := s.Client()
	ctx := context.Background()
	r1, _ := holdOK(t, c, "reports", "q3", "r1", "SHARED", "OWNER", "reader-1")
	r2, _ := holdOK(t, c, "reports", "q3", "r2", "SHARED", "OWNER", "reader-2")
	if info := lockInfo(t, c, "reports", "q3"); info["holders"] != int64(2) || info["shared"] != int64(1) || info["owner"] != "reader-2" {
		t.Fatalf("LOCK.INFO %v", info)
	}
	writer := blockedHold(s, "reports", "q3", "w", "OWNER", "migration")
	waitersAre(t, c, "reports", "q3", 1)
	// A reader would fit beside the others, but the writer came first.
	if v, err := c.Do(ctx, "LOCK.HOLD", "reports", "q3", "r3", "SHARED", "WAIT", 0).Result(); !errors.Is(err, redis.Nil) {
		t.Fatalf("a reader behind a waiting writer: %v %v, want null", v, err)
	}
	later := blockedHold(s, "reports", "q3", "r4", "SHARED")
	waitersAre(t, c, "reports", "q3", 2)
	c.Do(ctx, "LOCK.RELEASE", r1)
	notYet(t, writer)
	c.Do(ctx, "LOCK.RELEASE", r2)
	wf := granted(t, writer)
	notYet(t, later)
	hs := lockHolders(t, c, "reports", "q3")
	if len(hs) != 1 || hs[0]["fence"] != wf || hs[0]["shared"] != int64(0) || hs[0]["owner"] != "migration" {
		t.Fatalf("LOCK.HOLDERS %v", hs)
	}
	if n, err := c.Do(ctx, "LOCK.REVOKE", "reports", "q3", "FENCE", wf).Int(); n != 1 || err != nil {
		t.Fatalf("revoke: %d %v", n, err)
	}
	granted(t, later)
}

// LOCK-15: while a key is in use, a request with another LIMIT, or none,
// is refused and changes nothing.
func TestLOCK15_LimitMismatchRefused(t *testing.T) {
	s := resptest.Start(t, tenure.Options{})
	c := s.Client()
	ctx := context.Background()
	holdOK(t, c, "llm", "sem", "a", "LIMIT", 5)
	holdOK(t, c, "llm", "mutex", "b")
	holdOK(t, c, "llm", "rw", "c", "SHARED")
	for _, tc := range []struct {
		args []any
		want string
	}{
		{[]any{"sem", "x"}, "ERR this key is in use with LIMIT 5"},
		{[]any{"sem", "x", "LIMIT", 4}, "ERR this key is in use with LIMIT 5"},
		{[]any{"sem", "x", "SHARED"}, "ERR this key is in use with LIMIT 5"},
		{[]any{"sem", "a", "LIMIT", 2}, "ERR this key is in use with LIMIT 5"}, // a retry too
		{[]any{"mutex", "x", "LIMIT", 2}, "ERR this key is in use without LIMIT"},
		{[]any{"rw", "x", "LIMIT", 3, "WAIT", 0}, "ERR this key is in use without LIMIT"},
	} {
		key := tc.args[0].(string)
		before := lockInfo(t, c, "llm", key)
		args := append([]any{"LOCK.HOLD", "llm"}, tc.args...)
		if err := c.Do(ctx, args...).Err(); err == nil || err.Error() != tc.want {
			t.Fatalf("%v: %v, want %q", args, err, tc.want)
		}
		if after := lockInfo(t, c, "llm", key); fmt.Sprint(after["fence"], after["holders"], after["waiters"], after["limit"]) !=
			fmt.Sprint(before["fence"], before["holders"], before["waiters"], before["limit"]) {
			t.Fatalf("%v changed %v into %v", args, before, after)
		}
	}
	// LIMIT 1 is the same as none; the refused reqid "x" is free to use.
	if v, err := c.Do(ctx, "LOCK.HOLD", "llm", "mutex", "x", "LIMIT", 1, "WAIT", 0).Result(); !errors.Is(err, redis.Nil) {
		t.Fatalf("LIMIT 1 on a mutex: %v %v, want null (held)", v, err)
	}
}

// LOCK-16: OWNER is shown by LOCK.INFO, LOCK.LIST and LOCK.HOLDERS, kept
// across a retry of the reqid, and never a lease id.
func TestLOCK16_OwnerShownNeverALeaseID(t *testing.T) {
	s := resptest.Start(t, tenure.Options{})
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprint("RESP", proto), func(t *testing.T) {
			c := redis.NewClient(&redis.Options{Addr: s.Addr, Protocol: proto})
			defer c.Close()
			ctx := context.Background()
			key := fmt.Sprint("chat-", proto)
			id, fence := holdOK(t, c, "summaries", key, "req-"+key, "OWNER", "worker-7:4242")
			again, f2 := holdOK(t, c, "summaries", key, "req-"+key, "OWNER", "someone-else")
			if again != id || f2 != fence {
				t.Fatalf("retry: %s %d", again, f2)
			}
			if info := lockInfo(t, c, "summaries", key); info["owner"] != "worker-7:4242" || info["limit"] != int64(1) {
				t.Fatalf("LOCK.INFO %v", info)
			}
			if hs := lockHolders(t, c, "summaries", key); len(hs) != 1 || hs[0]["owner"] != "worker-7:4242" || hs[0]["fence"] != fence {
				t.Fatalf("LOCK.HOLDERS %v", hs)
			}
			v, err := c.Do(ctx, "LOCK.LIST", "summaries", "COUNT", 100).Slice()
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, e := range v[1].([]any) {
				e := e.([]any)
				if e[0] == key {
					found = true
					if len(e) != 6 || e[1] != fence || e[3] != int64(0) || e[4] != int64(1) || e[5] != "worker-7:4242" {
						t.Fatalf("LOCK.LIST entry %v", e)
					}
				}
			}
			if !found {
				t.Fatalf("LOCK.LIST %v: no %s", v, key)
			}
			for _, cmd := range [][]any{{"LOCK.INFO", "summaries", key}, {"LOCK.HOLDERS", "summaries", key}, {"LOCK.LIST", "summaries"}} {
				if text := fmt.Sprint(c.Do(ctx, cmd...).Val()); strings.Contains(text, id) {
					t.Fatalf("%v shows the lease id: %s", cmd, text)
				}
			}
		})
	}
}

// LOCK.REVOKE … FENCE ends one lease; without FENCE, all; :0 when none.
func TestLockRevokeFence(t *testing.T) {
	s := resptest.Start(t, tenure.Options{})
	c := s.Client()
	ctx := context.Background()
	a, fa := holdOK(t, c, "l", "k", "a", "LIMIT", 3)
	b, _ := holdOK(t, c, "l", "k", "b", "LIMIT", 3)
	holdOK(t, c, "l", "k", "c", "LIMIT", 3)
	for _, tc := range []struct {
		args []any
		want int64
	}{
		{[]any{"FENCE", fa + 100}, 0},
		{[]any{"FENCE", fa}, 1},
		{[]any{"fence", fa}, 0}, // gone already
		{nil, 2},
		{nil, 0},
	} {
		if n, err := c.Do(ctx, append([]any{"LOCK.REVOKE", "l", "k"}, tc.args...)...).Int64(); n != tc.want || err != nil {
			t.Fatalf("LOCK.REVOKE l k %v: %d %v, want %d", tc.args, n, err, tc.want)
		}
	}
	for _, id := range []string{a, b} {
		if err := c.Do(ctx, "LOCK.RENEW", id).Err(); err == nil || err.Error() != "LOST revoked by admin" {
			t.Fatalf("renew of a revoked permit: %v", err)
		}
	}
	if hs := lockHolders(t, c, "l", "k"); len(hs) != 0 {
		t.Fatalf("LOCK.HOLDERS after revoking all: %v", hs)
	}
}

// SPEC §7: bad input is a clear error and changes nothing.
func TestLockKindsBadInput(t *testing.T) {
	s := resptest.Start(t, tenure.Options{})
	c := s.Client()
	ctx := context.Background()
	_, fence := holdOK(t, c, "l", "held", "h", "LIMIT", 2)
	long := strings.Repeat("o", 257)
	for _, tc := range []struct {
		args []any
		want string
	}{
		{[]any{"LOCK.HOLD", "l", "k", "r", "LIMIT", 2, "SHARED"}, "ERR syntax error"},
		{[]any{"LOCK.HOLD", "l", "k", "r", "SHARED", "LIMIT", 1}, "ERR syntax error"},
		{[]any{"LOCK.HOLD", "l", "k", "r", "SHARED", "SHARED"}, "ERR syntax error"},
		{[]any{"LOCK.HOLD", "l", "k", "r", "LIMIT", 2, "LIMIT", 2}, "ERR syntax error"},
		{[]any{"LOCK.HOLD", "l", "k", "r", "LIMIT"}, "ERR syntax error"},
		{[]any{"LOCK.HOLD", "l", "k", "r", "LIMIT", 0}, "ERR limit must be an integer from 1 to 65536"},
		{[]any{"LOCK.HOLD", "l", "k", "r", "LIMIT", 65537}, "ERR limit must be an integer from 1 to 65536"},
		{[]any{"LOCK.HOLD", "l", "k", "r", "LIMIT", -1}, "ERR limit must be an integer from 1 to 65536"},
		{[]any{"LOCK.HOLD", "l", "k", "r", "LIMIT", "five"}, "ERR limit must be an integer from 1 to 65536"},
		{[]any{"LOCK.HOLD", "l", "k", "r", "OWNER"}, "ERR syntax error"},
		{[]any{"LOCK.HOLD", "l", "k", "r", "OWNER", ""}, "ERR owner must be 1 to 256 bytes"},
		{[]any{"LOCK.HOLD", "l", "k", "r", "OWNER", long}, "ERR owner must be 1 to 256 bytes"},
		{[]any{"LOCK.HOLD", "l", "k", "r", "OWNER", "a", "OWNER", "b"}, "ERR syntax error"},
		{[]any{"LOCK.HOLD", "l", "held", "r", "LIMIT", 3}, "ERR this key is in use with LIMIT 2"},
		{[]any{"LOCK.HOLDERS", "l"}, "ERR wrong number of arguments for 'lock.holders' command"},
		{[]any{"LOCK.HOLDERS", "l", "k", "x"}, "ERR wrong number of arguments for 'lock.holders' command"},
		{[]any{"LOCK.REVOKE", "l", "held", "FENCE"}, "ERR syntax error"},
		{[]any{"LOCK.REVOKE", "l", "held", "FENCE", 0}, "ERR fence must be a positive integer"},
		{[]any{"LOCK.REVOKE", "l", "held", "FENCE", "x"}, "ERR fence must be a positive integer"},
		{[]any{"LOCK.REVOKE", "l", "held", "FENCE", fence, "FENCE", fence}, "ERR syntax error"},
		{[]any{"LOCK.REVOKE", "l", "held", "NOW"}, "ERR syntax error"},
	} {
		if err := c.Do(ctx, tc.args...).Err(); err == nil || err.Error() != tc.want {
			t.Errorf("%v: %v, want %q", tc.args, err, tc.want)
		}
	}
	if info := lockInfo(t, c, "l", "k"); info != nil {
		t.Fatalf("a refused HOLD changed the key: %v", info)
	}
	if info := lockInfo(t, c, "l", "held"); info["holders"] != int64(1) || info["fence"] != fence || info["waiters"] != int64(0) {
		t.Fatalf("refused commands changed the held key: %v", info)
	}
	// The edges are in range; "r" was never remembered.
	holdOK(t, c, "l", "k", "r", "LIMIT", 65536, "OWNER", strings.Repeat("o", 256))
}

// SPEC §5: LOCK.HOLDERS is for readers; LOCK.REVOKE … FENCE for admins.
func TestLockHoldersRoles(t *testing.T) {
	s := startWithUsers(t, tenure.Options{})
	ctx := context.Background()
	writer := redis.NewClient(&redis.Options{Addr: s.Addr, Username: "writer", Password: "writer-pass"})
	reader := redis.NewClient(&redis.Options{Addr: s.Addr, Username: "reader", Password: "reader-pass"})
	defer writer.Close()
	defer reader.Close()
	_, fence := holdOK(t, writer, "l", "k", "r", "SHARED", "OWNER", "w")
	if hs := lockHolders(t, reader, "l", "k"); len(hs) != 1 || hs[0]["owner"] != "w" {
		t.Fatalf("LOCK.HOLDERS as reader: %v", hs)
	}
	if err := writer.Do(ctx, "LOCK.REVOKE", "l", "k", "FENCE", fence).Err(); err == nil || !strings.HasPrefix(err.Error(), "NOPERM") {
		t.Fatalf("LOCK.REVOKE as writer: %v", err)
	}
}

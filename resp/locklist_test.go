package resp_test

// LOCK.LIST over the wire (SPEC §3): the reply's shape, bad input, the read
// role, and a walk while other clients hold and release keys.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tenure-db/tenure"
	"github.com/tenure-db/tenure/resp"
	"github.com/tenure-db/tenure/resp/resptest"
)

// listEntry is one entry of a LOCK.LIST reply.
type listEntry struct {
	key                            string
	fence, ttl, waiterCnt, holders int64
	owner                          string
}

// lockList runs one LOCK.LIST step and checks the reply's shape.
func lockList(t *testing.T, c *redis.Client, args ...any) (string, []listEntry) {
	t.Helper()
	v, err := c.Do(context.Background(), append([]any{"LOCK.LIST"}, args...)...).Slice()
	if err != nil {
		t.Fatalf("LOCK.LIST %v: %v", args, err)
	}
	if len(v) != 2 {
		t.Fatalf("LOCK.LIST %v: %d elements, want 2", args, len(v))
	}
	cursor, ok := v[0].(string) // a bulk string, as SCAN's
	if !ok {
		t.Fatalf("LOCK.LIST %v: cursor %#v is not a bulk string", args, v[0])
	}
	var out []listEntry
	for _, raw := range v[1].([]any) {
		e, ok := raw.([]any)
		if !ok || len(e) != 6 {
			t.Fatalf("LOCK.LIST %v: entry %#v, want [key fence ttl waiters holders owner]", args, raw)
		}
		key, ok0 := e[0].(string)
		fence, ok1 := e[1].(int64)
		ttl, ok2 := e[2].(int64)
		waiters, ok3 := e[3].(int64)
		holders, ok4 := e[4].(int64)
		owner, ok5 := e[5].(string)
		if !ok0 || !ok1 || !ok2 || !ok3 || !ok4 || !ok5 {
			t.Fatalf("LOCK.LIST %v: entry %#v, want bulk, integer, integer, integer, integer, bulk", args, e)
		}
		out = append(out, listEntry{key, fence, ttl, waiters, holders, owner})
	}
	return cursor, out
}

func TestLockList(t *testing.T) {
	s := resptest.Start(t, tenure.Options{})
	c := s.Client()
	bg := context.Background()

	if cursor, entries := lockList(t, c, "jobs"); cursor != "0" || len(entries) != 0 {
		t.Fatalf("empty lock: %q %v", cursor, entries)
	}
	var ids []string
	fences := map[string]int64{}
	for i := range 25 {
		key := fmt.Sprint("job-", i)
		v, err := c.Do(bg, "LOCK.HOLD", "jobs", key, "req-"+key, "TTL", 60000).Slice()
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, v[0].(string))
		fences[key] = v[1].(int64)
	}
	c.Do(bg, "LOCK.HOLD", "other", "job-0", "req-other")
	// A waiter in line behind job-3, from another connection.
	waiter := s.Client()
	go waiter.Do(bg, "LOCK.HOLD", "jobs", "job-3", "req-waiter", "WAIT", 5000)
	deadline := time.Now().Add(5 * time.Second)
	for {
		v, _ := c.Do(bg, "LOCK.INFO", "jobs", "job-3").Result()
		info, _ := lockInfoFields(v)
		if info["waiters"] == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the waiter never joined the line: %v", info)
		}
		time.Sleep(time.Millisecond)
	}

	// Walk with COUNT 4: every key once, with its fence, ttl and waiters.
	seen := map[string]listEntry{}
	cursor, steps := "0", 0
	for {
		var entries []listEntry
		cursor, entries = lockList(t, c, "jobs", "CURSOR", cursor, "count", 4)
		steps++
		for _, e := range entries {
			if _, dup := seen[e.key]; dup {
				t.Fatalf("%q listed twice in a quiet walk", e.key)
			}
			seen[e.key] = e
		}
		if cursor == "0" {
			break
		}
	}
	if len(seen) != 25 || steps < 5 {
		t.Fatalf("%d keys in %d steps, want 25 in at least 5", len(seen), steps)
	}
	for key, e := range seen {
		want := int64(0)
		if key == "job-3" {
			want = 1
		}
		if e.fence != fences[key] || e.ttl <= 50000 || e.ttl > 60000 || e.waiterCnt != want {
			t.Fatalf("%q: %+v, want fence %d, ttl ~60000, %d waiters", key, e, fences[key], want)
		}
	}
	// Never a lease id (LOCK-04), in any form.
	raw, _ := c.Do(bg, "LOCK.LIST", "jobs", "COUNT", 100).Slice()
	text := fmt.Sprint(raw)
	for _, id := range ids {
		if strings.Contains(text, id) {
			t.Fatalf("LOCK.LIST shows lease id %s: %s", id, text)
		}
	}
	if regexp.MustCompile(`[0-9a-f]{32}`).MatchString(text) {
		t.Fatalf("LOCK.LIST shows something like a lease id: %s", text)
	}
	// Options in any case, in any order, COUNT a hint.
	if _, entries := lockList(t, c, "jobs", "count", 1000, "Cursor", 0); len(entries) != 25 {
		t.Fatalf("COUNT 1000: %d entries", len(entries))
	}
}

func TestLockListBadInput(t *testing.T) {
	s := resptest.Start(t, tenure.Options{})
	c := s.Client()
	bg := context.Background()
	for _, tc := range []struct {
		args []any
		want string
	}{
		{[]any{"LOCK.LIST"}, "ERR wrong number of arguments for 'lock.list' command"},
		{[]any{"LOCK.LIST", "l", "CURSOR"}, "ERR syntax error"},
		{[]any{"LOCK.LIST", "l", "CURSOR", "x"}, "ERR invalid cursor"},
		{[]any{"LOCK.LIST", "l", "CURSOR", "-1"}, "ERR invalid cursor"},
		{[]any{"LOCK.LIST", "l", "CURSOR", "+1"}, "ERR invalid cursor"},
		{[]any{"LOCK.LIST", "l", "CURSOR", "1.5"}, "ERR invalid cursor"},
		{[]any{"LOCK.LIST", "l", "CURSOR", ""}, "ERR invalid cursor"},
		{[]any{"LOCK.LIST", "l", "CURSOR", "18446744073709551616"}, "ERR invalid cursor"},
		{[]any{"LOCK.LIST", "l", "COUNT", "0"}, "ERR syntax error"},
		{[]any{"LOCK.LIST", "l", "COUNT", "-3"}, "ERR syntax error"},
		{[]any{"LOCK.LIST", "l", "COUNT", "ten"}, "ERR value is not an integer or out of range"},
		{[]any{"LOCK.LIST", "l", "COUNT", "10", "COUNT", "10"}, "ERR syntax error"},
		{[]any{"LOCK.LIST", "l", "CURSOR", "0", "CURSOR", "0"}, "ERR syntax error"},
		{[]any{"LOCK.LIST", "l", "MATCH", "*"}, "ERR syntax error"},
		{[]any{"LOCK.LIST", "l", "COUNT"}, "ERR syntax error"},
	} {
		if err := c.Do(bg, tc.args...).Err(); err == nil || err.Error() != tc.want {
			t.Errorf("%v: got %v, want %q", tc.args, err, tc.want)
		}
	}
	// The largest cursor is valid, and past every key hash.
	if cursor, entries := lockList(t, c, "l", "CURSOR", "18446744073709551615"); cursor != "0" || len(entries) != 0 {
		t.Fatalf("max cursor: %q %v", cursor, entries)
	}
}

// LOCK.LIST is a read command: a read-only user may list, not hold.
func TestLockListReadRole(t *testing.T) {
	sum := sha256.Sum256([]byte("r-pass"))
	users, err := resp.ParseUsers(strings.NewReader("user reader read sha256:" + hex.EncodeToString(sum[:]) + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	s := resptest.Start(t, tenure.Options{Users: users})
	c := redis.NewClient(&redis.Options{Addr: s.Addr, Username: "reader", Password: "r-pass"})
	t.Cleanup(func() { c.Close() })
	if cursor, _ := lockList(t, c, "l"); cursor != "0" {
		t.Fatalf("cursor %q", cursor)
	}
	err = c.Do(context.Background(), "LOCK.HOLD", "l", "k", "r").Err()
	if err == nil || !strings.HasPrefix(err.Error(), "NOPERM") {
		t.Fatalf("LOCK.HOLD as reader: %v", err)
	}
}

// A key held for the whole walk is listed at least once, while other
// clients hold and release keys of the same lock between the steps.
func TestLockListDuringChurn(t *testing.T) {
	s := resptest.Start(t, tenure.Options{})
	c := s.Client()
	bg := context.Background()
	steady := map[string]bool{}
	for i := range 40 {
		key := "steady-" + strconv.Itoa(i)
		if err := c.Do(bg, "LOCK.HOLD", "jobs", key, "r-"+key, "TTL", 60000).Err(); err != nil {
			t.Fatal(err)
		}
		steady[key] = true
	}
	ctx, stop := context.WithCancel(bg)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cc := s.Client()
			for i := 0; ctx.Err() == nil && i < 5000; i++ {
				key := fmt.Sprintf("churn-%d-%d", w, i%50)
				v, err := cc.Do(ctx, "LOCK.HOLD", "jobs", key, fmt.Sprint("c-", w, "-", i), "WAIT", 0).Slice()
				if err != nil {
					continue
				}
				cc.Do(ctx, "LOCK.RELEASE", v[0])
			}
		}()
	}
	for walk := range 5 {
		seen := map[string]bool{}
		cursor := "0"
		for {
			var entries []listEntry
			cursor, entries = lockList(t, c, "jobs", "CURSOR", cursor, "COUNT", 3)
			for _, e := range entries {
				seen[e.key] = true
				if e.fence == 0 && e.waiterCnt == 0 {
					t.Errorf("walk %d: %q listed, neither held nor waited for", walk, e.key)
				}
			}
			if cursor == "0" {
				break
			}
		}
		for key := range steady {
			if !seen[key] {
				t.Fatalf("walk %d: %q, held for the whole walk, was not listed", walk, key)
			}
		}
	}
	stop()
	wg.Wait()
}

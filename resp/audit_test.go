package resp_test

// LOCK.EVENTS (SPEC §14's audit): the newest lock events in memory, of one
// lock or of all, oldest first, in RESP2 and RESP3; never a lease id.

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/tenure-db/tenure"
	"github.com/tenure-db/tenure/resp/resptest"
)

// eventFields reads one LOCK.EVENTS entry, a flat array (RESP2) or a map
// (RESP3), as field -> value.
func eventFields(t *testing.T, v any) map[string]any {
	t.Helper()
	out := map[string]any{}
	switch e := v.(type) {
	case []any:
		for i := 0; i+1 < len(e); i += 2 {
			out[e[i].(string)] = e[i+1]
		}
	case map[any]any:
		for k, v := range e {
			out[k.(string)] = v
		}
	default:
		t.Fatalf("an event is a %T: %v", v, v)
	}
	return out
}

func TestLockEventsCommand(t *testing.T) {
	s := resptest.Start(t, tenure.Options{})
	bg := context.Background()
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			c := redis.NewClient(&redis.Options{Addr: s.Addr, Protocol: proto})
			t.Cleanup(func() { c.Close() })
			lock := fmt.Sprintf("audit%d", proto)
			a, err := c.Do(bg, "LOCK.HOLD", lock, "a", lock+"r1", "OWNER", "worker-7").Slice()
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Do(bg, "LOCK.RELEASE", a[0]).Err(); err != nil {
				t.Fatal(err)
			}
			b, _ := c.Do(bg, "LOCK.HOLD", lock, "b", lock+"r2").Slice()
			c.Do(bg, "LOCK.REVOKE", lock, "b")
			if err := c.Do(bg, "LOCK.RENEW", b[0]).Err(); err == nil || !strings.HasPrefix(err.Error(), "LOST") {
				t.Fatalf("renew of a revoked lease: %v", err)
			}
			c.Do(bg, "LOCK.HOLD", "elsewhere", lock, lock+"r3")

			got, err := c.Do(bg, "LOCK.EVENTS", lock).Slice()
			if err != nil {
				t.Fatal(err)
			}
			want := []string{"granted a worker-7 ", "released a worker-7 released", "granted b  ", "revoked b  revoked by admin", "lost b  revoked by admin"}
			if len(got) != len(want) {
				t.Fatalf("LOCK.EVENTS %s: %d events %v, want %d", lock, len(got), got, len(want))
			}
			for i, v := range got {
				e := eventFields(t, v)
				line := fmt.Sprint(e["event"], " ", e["key"], " ", e["owner"], " ", e["reason"])
				if line != want[i] || e["lock"] != lock || e["time"].(int64) <= 0 {
					t.Errorf("event %d: %v, want %q", i, e, want[i])
				}
				if f := e["fence"].(int64); i < 2 && f != a[1].(int64) || i >= 2 && f != b[1].(int64) {
					t.Errorf("event %d: fence %d", i, f)
				}
			}
			for _, id := range []any{a[0], b[0]} {
				if strings.Contains(fmt.Sprint(got), id.(string)) {
					t.Fatalf("LOCK.EVENTS shows lease id %s", id)
				}
			}
			// COUNT takes the newest; with no lock, every lock's.
			last, err := c.Do(bg, "LOCK.EVENTS", "COUNT", 2).Slice()
			if err != nil || len(last) != 2 || eventFields(t, last[0])["event"] != "lost" || eventFields(t, last[1])["lock"] != "elsewhere" {
				t.Fatalf("LOCK.EVENTS COUNT 2: %v %v", last, err)
			}
		})
	}
	c := s.Client()
	for _, bad := range [][]any{{"LOCK.EVENTS", "l", "COUNT", 0}, {"LOCK.EVENTS", "l", "COUNT", "x"}, {"LOCK.EVENTS", "l", "LIMIT", 1}, {"LOCK.EVENTS", ""}} {
		if err := c.Do(bg, bad...).Err(); err == nil || !strings.HasPrefix(err.Error(), "ERR") {
			t.Errorf("%v: %v, want an ERR", bad, err)
		}
	}
}

// The audit keeps the last --audit-events events; a negative number keeps
// none.
func TestLockEventsCommandKeepsTheLastN(t *testing.T) {
	bg := context.Background()
	s := resptest.Start(t, tenure.Options{AuditEvents: 3})
	c := s.Client()
	for i := range 4 {
		c.Do(bg, "LOCK.HOLD", "l", fmt.Sprint("k", i), fmt.Sprint("r", i))
	}
	got, err := c.Do(bg, "LOCK.EVENTS", "COUNT", 100).Slice()
	if err != nil || len(got) != 3 || eventFields(t, got[0])["key"] != "k1" || eventFields(t, got[2])["key"] != "k3" {
		t.Fatalf("LOCK.EVENTS of a ring of 3 after 4 grants: %v %v", got, err)
	}

	off := resptest.Start(t, tenure.Options{AuditEvents: -1})
	oc := off.Client()
	oc.Do(bg, "LOCK.HOLD", "l", "k", "r")
	if got, err := oc.Do(bg, "LOCK.EVENTS").Slice(); err != nil || len(got) != 0 {
		t.Fatalf("LOCK.EVENTS with the audit off: %v %v", got, err)
	}
}

package resp_test

// Integration tests of the lock module over the wire (SPEC §1–§4): a real
// server in-process, go-redis for the ordinary calls, raw TCP where a test
// must block, disconnect or pipeline by hand. Each test names the contract
// tag it checks. Helpers are prefixed lk so they do not clash with the
// other transcript tests of this package.

import (
	"bufio"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/redis/go-redis/v9"

	"github.com/tenure-db/tenure"
	"github.com/tenure-db/tenure/lockmod"
	"github.com/tenure-db/tenure/resp/resptest"
)

// lkConn is a raw RESP connection: it sends commands as multibulk and reads
// whole replies, formatted as a transcript shows them (see lkFormat).
type lkConn struct {
	t  testing.TB
	nc net.Conn
	br *bufio.Reader
}

func lkDial(t testing.TB, s *resptest.Server) *lkConn {
	t.Helper()
	nc := s.Dial()
	// No test here blocks that long: a reply that never comes fails the
	// test instead of hanging it.
	nc.SetDeadline(time.Now().Add(30 * time.Second))
	return &lkConn{t: t, nc: nc, br: bufio.NewReader(nc)}
}

func lkCommand(args ...string) []byte {
	b := fmt.Appendf(nil, "*%d\r\n", len(args))
	for _, a := range args {
		b = fmt.Appendf(b, "$%d\r\n%s\r\n", len(a), a)
	}
	return b
}

// send writes one command and does not wait for its reply.
func (c *lkConn) send(args ...string) {
	c.t.Helper()
	if _, err := c.nc.Write(lkCommand(args...)); err != nil {
		c.t.Fatalf("write %v: %v", args, err)
	}
}

// reply reads one whole reply.
func (c *lkConn) reply() any {
	c.t.Helper()
	v, err := lkRead(c.br)
	if err != nil {
		c.t.Fatalf("read reply: %v", err)
	}
	return v
}

func (c *lkConn) do(args ...string) any {
	c.t.Helper()
	c.send(args...)
	return c.reply()
}

// doS is do, formatted.
func (c *lkConn) doS(args ...string) string {
	c.t.Helper()
	return lkFormat(c.do(args...))
}

// Reply values as lkRead returns them: an error or a status keeps its
// type; an integer is an int64; a bulk string is a string; nulls have
// their own types; an array is a []any.
type (
	lkStatus    string
	lkError     string
	lkNullBulk  struct{}
	lkNullArray struct{}
)

func lkRead(br *bufio.Reader) (any, error) {
	line, err := br.ReadString('\n')
	if err != nil {
		return nil, err
	}
	if len(line) < 3 || !strings.HasSuffix(line, "\r\n") {
		return nil, fmt.Errorf("bad reply line %q", line)
	}
	body := line[1 : len(line)-2]
	switch line[0] {
	case '+':
		return lkStatus(body), nil
	case '-':
		return lkError(body), nil
	case ':':
		return strconv.ParseInt(body, 10, 64)
	case '$':
		n, err := strconv.Atoi(body)
		if err != nil {
			return nil, err
		}
		if n < 0 {
			return lkNullBulk{}, nil
		}
		b := make([]byte, n+2)
		if _, err := io.ReadFull(br, b); err != nil {
			return nil, err
		}
		return string(b[:n]), nil
	case '*':
		n, err := strconv.Atoi(body)
		if err != nil {
			return nil, err
		}
		if n < 0 {
			return lkNullArray{}, nil
		}
		a := make([]any, n)
		for i := range a {
			if a[i], err = lkRead(br); err != nil {
				return nil, err
			}
		}
		return a, nil
	}
	return nil, fmt.Errorf("bad reply type %q", line)
}

// lkFormat writes a reply as in a transcript: "+OK", "-ERR …", ":1",
// "$-1", "*-1", a bulk string quoted, an array in brackets.
func lkFormat(v any) string {
	switch v := v.(type) {
	case lkStatus:
		return "+" + string(v)
	case lkError:
		return "-" + string(v)
	case int64:
		return ":" + strconv.FormatInt(v, 10)
	case string:
		return strconv.Quote(v)
	case lkNullBulk:
		return "$-1"
	case lkNullArray:
		return "*-1"
	case []any:
		s := make([]string, len(v))
		for i, e := range v {
			s[i] = lkFormat(e)
		}
		return "[" + strings.Join(s, " ") + "]"
	}
	return fmt.Sprintf("?%T", v)
}

// lkLease is a granted HOLD's reply.
type lkLease struct {
	ID    string
	Fence int64
	TTL   int64 // ms left when granted
}

var lkLeaseIDForm = regexp.MustCompile(`^[0-9a-f]{32}$`)

// lkGranted insists that v is a grant: [lease id, fence, ttl left].
func lkGranted(t testing.TB, v any) lkLease {
	t.Helper()
	a, ok := v.([]any)
	if !ok || len(a) != 3 {
		t.Fatalf("want a grant [id fence ttl], got %s", lkFormat(v))
	}
	id, ok1 := a[0].(string)
	fence, ok2 := a[1].(int64)
	ttl, ok3 := a[2].(int64)
	if !ok1 || !ok2 || !ok3 || !lkLeaseIDForm.MatchString(id) || fence <= 0 || ttl <= 0 {
		t.Fatalf("want a grant [id fence ttl], got %s", lkFormat(v))
	}
	return lkLease{ID: id, Fence: fence, TTL: ttl}
}

// lkHold sends LOCK.HOLD through go-redis and insists on a grant.
func lkHold(t testing.TB, rdb *redis.Client, args ...any) lkLease {
	t.Helper()
	v, err := rdb.Do(context.Background(), append([]any{"LOCK.HOLD"}, args...)...).Result()
	if err != nil {
		t.Fatalf("LOCK.HOLD %v: %v", args, err)
	}
	return lkGranted(t, lkFromRedis(v))
}

// lkDo runs a command through go-redis and formats its reply like lkFormat,
// except that go-redis gives a status reply as a string ("OK"), and a null
// of either kind as "nil".
func lkDo(t testing.TB, rdb *redis.Client, args ...any) string {
	t.Helper()
	v, err := rdb.Do(context.Background(), args...).Result()
	switch {
	case errors.Is(err, redis.Nil):
		return "nil"
	case err != nil:
		var rerr redis.Error
		if errors.As(err, &rerr) {
			return "-" + err.Error()
		}
		t.Fatalf("%v: %v", args, err)
	}
	return lkFormat(lkFromRedis(v))
}

// lkFromRedis turns go-redis's reply values into lkRead's.
func lkFromRedis(v any) any {
	switch v := v.(type) {
	case []any:
		a := make([]any, len(v))
		for i, e := range v {
			a[i] = lkFromRedis(e)
		}
		return a
	case nil:
		return lkNullBulk{}
	}
	return v
}

// lkInfo reads one INFO section as a map of its fields.
func lkInfo(t testing.TB, rdb *redis.Client, section string) map[string]string {
	t.Helper()
	text, err := rdb.Info(context.Background(), section).Result()
	if err != nil {
		t.Fatalf("INFO %s: %v", section, err)
	}
	m := map[string]string{}
	for _, line := range strings.Split(text, "\r\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && !strings.HasPrefix(line, "#") {
			m[k] = v
		}
	}
	return m
}

// lkStat reads one integer field of INFO's section.
func lkStat(t testing.TB, rdb *redis.Client, section, field string) int64 {
	t.Helper()
	v, ok := lkInfo(t, rdb, section)[field]
	if !ok {
		t.Fatalf("INFO %s has no %s", section, field)
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		t.Fatalf("INFO %s %s=%q: %v", section, field, v, err)
	}
	return n
}

// lkKeyInfo is LOCK.INFO's reply as a map; nil when the reply is null.
func lkKeyInfo(t testing.TB, rdb *redis.Client, lock, key string) map[string]int64 {
	t.Helper()
	v, err := rdb.Do(context.Background(), "LOCK.INFO", lock, key).Result()
	if errors.Is(err, redis.Nil) {
		return nil
	}
	if err != nil {
		t.Fatalf("LOCK.INFO %s %s: %v", lock, key, err)
	}
	m, err := lockInfoFields(v)
	if err != nil {
		t.Fatalf("LOCK.INFO %s %s: %v", lock, key, err)
	}
	return m
}

// lockInfoFields reads LOCK.INFO's reply as go-redis gives it: a map from
// a RESP3 connection (go-redis's default), a flat array of field and value
// from a RESP2 one.
func lockInfoFields(v any) (map[string]int64, error) {
	var pairs []any
	switch v := v.(type) {
	case map[any]any:
		for f, n := range v {
			pairs = append(pairs, f, n)
		}
	case []any:
		pairs = v
	}
	if len(pairs) != 18 {
		return nil, fmt.Errorf("want 9 fields, got %v", v)
	}
	m := map[string]int64{}
	for i := 0; i < len(pairs); i += 2 {
		f, ok1 := pairs[i].(string)
		if f == "owner" { // a bulk string (LOCK-16), the only field that is not an integer
			if _, ok := pairs[i+1].(string); !ok {
				return nil, fmt.Errorf("owner is %T", pairs[i+1])
			}
			continue
		}
		n, ok2 := pairs[i+1].(int64)
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("field %v is %T", pairs[i], pairs[i+1])
		}
		m[f] = n
	}
	return m, nil
}

// lkWaiters is how many places LOCK.INFO counts in (lock, key)'s line.
func lkWaiters(t testing.TB, rdb *redis.Client, lock, key string) int64 {
	t.Helper()
	return lkKeyInfo(t, rdb, lock, key)["waiters"]
}

// lkUntil polls cond every millisecond until it holds, and returns how
// long that took; it fails the test after within. This is how a test waits
// for the server to reach a state it reports (a waiter in line, a client
// counted blocked): on the event, not on a guessed sleep.
func lkUntil(t testing.TB, within time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > within {
			t.Fatalf("not within %v: %s", within, what)
		}
		time.Sleep(time.Millisecond)
	}
	return time.Since(start)
}

// lkBlocked waits until INFO counts n blocked clients.
func lkBlocked(t testing.TB, rdb *redis.Client, n int64) time.Duration {
	t.Helper()
	return lkUntil(t, 5*time.Second, fmt.Sprintf("blocked_clients = %d", n), func() bool {
		return lkStat(t, rdb, "clients", "blocked_clients") == n
	})
}

// lkInLine waits until (lock, key) has n places in line.
func lkInLine(t testing.TB, rdb *redis.Client, lock, key string, n int64) {
	t.Helper()
	lkUntil(t, 5*time.Second, fmt.Sprintf("%d waiters on %s/%s", n, lock, key), func() bool {
		return lkWaiters(t, rdb, lock, key) == n
	})
}

func lkExpect(t testing.TB, what, got, want string) {
	t.Helper()
	if got != want {
		t.Fatalf("%s:\n got %s\nwant %s", what, got, want)
	}
}

// LOCK-03: a HOLD retried with the same reqid, on another connection, gets
// the lease already given; the store counts one grant.
func TestLOCK03RetryOnAnotherConnection(t *testing.T) {
	t.Parallel()
	s := resptest.Start(t, tenure.Options{})
	rdb := s.Client()
	a, b := lkDial(t, s), lkDial(t, s)

	first := lkGranted(t, a.do("LOCK.HOLD", "jobs", "k1", "req-1", "TTL", "60000"))
	again := lkGranted(t, b.do("LOCK.HOLD", "jobs", "k1", "req-1", "TTL", "60000"))
	if again.ID != first.ID || again.Fence != first.Fence || again.TTL > first.TTL {
		t.Fatalf("retry got %+v, first %+v", again, first)
	}
	// The first connection gone, the retry through go-redis finds it too.
	a.nc.Close()
	if g := lkHold(t, rdb, "jobs", "k1", "req-1"); g.ID != first.ID || g.Fence != first.Fence {
		t.Fatalf("retry after close got %+v, first %+v", g, first)
	}
	if n := lkStat(t, rdb, "locks", "grants_total"); n != 1 {
		t.Fatalf("grants_total = %d after one request retried twice, want 1", n)
	}

	// A waiter granted later: its retry gets the grant it was given.
	w := lkDial(t, s)
	w.send("LOCK.HOLD", "jobs", "k1", "req-2", "TTL", "60000")
	lkInLine(t, rdb, "jobs", "k1", 1)
	lkExpect(t, "release", lkDo(t, rdb, "LOCK.RELEASE", first.ID), ":1")
	second := lkGranted(t, w.reply())
	if g := lkGranted(t, b.do("LOCK.HOLD", "jobs", "k1", "req-2")); g.ID != second.ID || g.Fence != second.Fence {
		t.Fatalf("retry of the waiter got %+v, it was granted %+v", g, second)
	}
	if n := lkStat(t, rdb, "locks", "grants_total"); n != 2 {
		t.Fatalf("grants_total = %d, want 2", n)
	}

	// A grant whose reply was never read (the client sent HOLD and left)
	// stays a live lease, and a retry picks it up (SPEC §3).
	x := lkDial(t, s)
	x.send("LOCK.HOLD", "jobs", "k3", "req-3", "TTL", "60000")
	x.nc.Close()
	lkUntil(t, 5*time.Second, "the HOLD of the client that left is granted", func() bool {
		return lkStat(t, rdb, "locks", "grants_total") == 3
	})
	third := lkGranted(t, b.do("LOCK.HOLD", "jobs", "k3", "req-3"))
	if info := lkKeyInfo(t, rdb, "jobs", "k3"); info["fence"] != third.Fence {
		t.Fatalf("LOCK.INFO = %v, the retry got fence %d", info, third.Fence)
	}
	lkExpect(t, "release", lkDo(t, rdb, "LOCK.RELEASE", third.ID), ":1")
	if n := lkStat(t, rdb, "locks", "grants_total"); n != 3 {
		t.Fatalf("grants_total = %d, want 3", n)
	}

	// A reqid belongs to one (lock, key).
	const inUse = "-ERR request id is already used for another lock or key"
	lkExpect(t, "same reqid, other key", b.doS("LOCK.HOLD", "jobs", "k2", "req-1"), inUse)
	lkExpect(t, "same reqid, other lock", b.doS("LOCK.HOLD", "other", "k1", "req-1"), inUse)
	lkExpect(t, "waiter's reqid, other key", lkDo(t, rdb, "LOCK.HOLD", "jobs", "k2", "req-2"), inUse)
	// Its lease ended, the reqid answers how (LOCK-05), and grants nothing.
	lkExpect(t, "retry after release", b.doS("LOCK.HOLD", "jobs", "k1", "req-1"), "-LOST released")
	if n := lkStat(t, rdb, "locks", "grants_total"); n != 3 {
		t.Fatalf("grants_total = %d, want 3", n)
	}
}

// SPEC §3: a waiting client that goes away is noticed within 100 ms and
// never granted; its place lingers and is passed over.
func TestHoldClosedWaiterIsNeverGranted(t *testing.T) {
	t.Parallel()
	s := resptest.Start(t, tenure.Options{})
	rdb := s.Client()
	holder := lkHold(t, rdb, "L", "k", "holder", "TTL", 60000)

	gone := lkDial(t, s)
	gone.send("LOCK.HOLD", "L", "k", "gone")
	lkBlocked(t, rdb, 1)
	lkInLine(t, rdb, "L", "k", 1)
	gone.nc.Close()
	// blocked_clients drops once the request is withdrawn: the watcher saw
	// the close and the place was turned lingering.
	if took := lkBlocked(t, rdb, 0); took > 100*time.Millisecond {
		t.Fatalf("the store noticed the closed waiter after %v, want within 100ms", took)
	}
	lkExpect(t, "line after close", fmt.Sprint(lkKeyInfo(t, rdb, "L", "k")["waiters"]), "1") // lingering

	grants := lkStat(t, rdb, "locks", "grants_total")
	lkExpect(t, "release", lkDo(t, rdb, "LOCK.RELEASE", holder.ID), ":1")
	info := lkKeyInfo(t, rdb, "L", "k")
	if info["fence"] != 0 || info["ttl"] != -1 || info["waiters"] != 1 {
		t.Fatalf("after release LOCK.INFO = %v, want free (fence 0, ttl -1) with 1 lingering place", info)
	}
	if n := lkStat(t, rdb, "locks", "grants_total"); n != grants {
		t.Fatalf("grants_total went from %d to %d: the closed waiter was granted", grants, n)
	}
	if n := lkStat(t, rdb, "locks", "leases"); n != 0 {
		t.Fatalf("leases = %d, want 0", n)
	}

	// With an open waiter behind the closed one, the key goes to it.
	holder = lkHold(t, rdb, "L", "k2", "holder2", "TTL", 60000)
	gone2, open := lkDial(t, s), lkDial(t, s)
	gone2.send("LOCK.HOLD", "L", "k2", "gone2")
	lkInLine(t, rdb, "L", "k2", 1)
	open.send("LOCK.HOLD", "L", "k2", "open")
	lkInLine(t, rdb, "L", "k2", 2)
	gone2.nc.Close()
	if took := lkBlocked(t, rdb, 1); took > 100*time.Millisecond {
		t.Fatalf("the store noticed the closed waiter after %v, want within 100ms", took)
	}
	grants = lkStat(t, rdb, "locks", "grants_total")
	lkExpect(t, "release", lkDo(t, rdb, "LOCK.RELEASE", holder.ID), ":1")
	next := lkGranted(t, open.reply())
	if next.Fence <= holder.Fence {
		t.Fatalf("next fence %d, holder's %d", next.Fence, holder.Fence)
	}
	if info := lkKeyInfo(t, rdb, "L", "k2"); info["fence"] != next.Fence || info["waiters"] != 1 {
		t.Fatalf("LOCK.INFO = %v, want fence %d and the lingering place", info, next.Fence)
	}
	if n := lkStat(t, rdb, "locks", "grants_total"); n != grants+1 {
		t.Fatalf("grants_total went from %d to %d, want one grant", grants, n)
	}
}

// A client that pipelines two blocking HOLDs and goes away: neither joins
// for good nor is granted. (Found a bug: the second HOLD ran after the
// client was known gone, its watcher saw the reader's error and returned
// without saying so, and the request waited — and would have been granted —
// for a client that was long gone.)
func TestHoldPipelinedBehindClosedClientIsNeverGranted(t *testing.T) {
	t.Parallel()
	s := resptest.Start(t, tenure.Options{})
	rdb := s.Client()
	h1 := lkHold(t, rdb, "L", "k1", "h1", "TTL", 60000)
	h2 := lkHold(t, rdb, "L", "k2", "h2", "TTL", 60000)
	conns := lkStat(t, rdb, "clients", "connected_clients")

	c := lkDial(t, s)
	if _, err := c.nc.Write(append(lkCommand("LOCK.HOLD", "L", "k1", "a"), lkCommand("LOCK.HOLD", "L", "k2", "b")...)); err != nil {
		t.Fatal(err)
	}
	lkInLine(t, rdb, "L", "k1", 1)
	c.nc.Close()
	lkUntil(t, 5*time.Second, "the server drops the closed connection", func() bool {
		return lkStat(t, rdb, "clients", "connected_clients") == conns
	})
	lkBlocked(t, rdb, 0)
	grants := lkStat(t, rdb, "locks", "grants_total")
	lkExpect(t, "release k1", lkDo(t, rdb, "LOCK.RELEASE", h1.ID), ":1")
	lkExpect(t, "release k2", lkDo(t, rdb, "LOCK.RELEASE", h2.ID), ":1")
	if n := lkStat(t, rdb, "locks", "grants_total"); n != grants {
		t.Fatalf("grants_total went from %d to %d: a gone client was granted", grants, n)
	}
	lkExpect(t, "k2 after release", lkDo(t, rdb, "LOCK.INFO", "L", "k2"), "nil")
}

// CLIENT KILL of a waiting connection is a client gone: withdrawn at once,
// never granted.
func TestHoldKilledWaiterIsNeverGranted(t *testing.T) {
	t.Parallel()
	s := resptest.Start(t, tenure.Options{})
	rdb := s.Client()
	holder := lkHold(t, rdb, "L", "k", "holder", "TTL", 60000)
	w := lkDial(t, s)
	w.send("LOCK.HOLD", "L", "k", "w")
	lkBlocked(t, rdb, 1)
	lkExpect(t, "kill", lkDo(t, rdb, "CLIENT", "KILL", w.nc.LocalAddr().String()), `"OK"`)
	if took := lkBlocked(t, rdb, 0); took > 100*time.Millisecond {
		t.Fatalf("the killed waiter was withdrawn after %v", took)
	}
	grants := lkStat(t, rdb, "locks", "grants_total")
	lkExpect(t, "release", lkDo(t, rdb, "LOCK.RELEASE", holder.ID), ":1")
	if n := lkStat(t, rdb, "locks", "grants_total"); n != grants {
		t.Fatalf("grants_total went from %d to %d: the killed waiter was granted", grants, n)
	}
}

// A blocked client that pipelines more than the read-ahead limit behind its
// HOLD is closed and withdrawn, never granted: the server cannot both stop
// reading and notice that it went away.
func TestHoldPipelinedOverReadAheadLimitIsClosed(t *testing.T) {
	t.Parallel()
	s := resptest.Start(t, tenure.Options{})
	rdb := s.Client()
	holder := lkHold(t, rdb, "L", "k", "holder", "TTL", 60000)
	c := lkDial(t, s)
	c.send("LOCK.HOLD", "L", "k", "w")
	lkBlocked(t, rdb, 1)
	big := strings.Repeat("x", 2<<20)
	go c.nc.Write(lkCommand("SET", "big", big)) // blocks once the server stops reading
	lkBlocked(t, rdb, 0)
	grants := lkStat(t, rdb, "locks", "grants_total")
	lkExpect(t, "release", lkDo(t, rdb, "LOCK.RELEASE", holder.ID), ":1")
	if n := lkStat(t, rdb, "locks", "grants_total"); n != grants {
		t.Fatalf("grants_total went from %d to %d: the closed client was granted", grants, n)
	}
	c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.br.ReadByte(); err == nil {
		t.Fatal("the client over the limit got a reply instead of a close")
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatal("the client over the limit was not closed")
	}
	lkExpect(t, "big was not written", lkDo(t, rdb, "EXISTS", "big"), ":0")
}

// What a client pipelines behind a blocked HOLD is read while it waits (to
// notice a close) and served, intact, once the HOLD is answered: here a
// SET of a value larger than the read buffer, so that the read-ahead has
// to grow it.
func TestHoldPipelinedBehindBlockedHold(t *testing.T) {
	t.Parallel()
	s := resptest.Start(t, tenure.Options{})
	rdb := s.Client()
	holder := lkHold(t, rdb, "L", "k", "holder", "TTL", 60000)
	big := strings.Repeat("0123456789abcdef", 100<<10/16) // 100 KB
	c := lkDial(t, s)
	var b []byte
	b = append(b, lkCommand("LOCK.HOLD", "L", "k", "w")...)
	b = append(b, lkCommand("SET", "big", big)...)
	b = append(b, lkCommand("PING")...)
	go c.nc.Write(b) // 100 KB may not fit the socket buffers before the server reads it
	lkBlocked(t, rdb, 1)
	lkExpect(t, "EXISTS while the HOLD waits", lkDo(t, rdb, "EXISTS", "big"), ":0")
	lkExpect(t, "release", lkDo(t, rdb, "LOCK.RELEASE", holder.ID), ":1")
	lkGranted(t, c.reply())
	lkExpect(t, "SET behind the HOLD", lkFormat(c.reply()), "+OK")
	lkExpect(t, "PING behind the HOLD", lkFormat(c.reply()), "+PONG")
	if got, err := rdb.Get(context.Background(), "big").Result(); err != nil || got != big {
		t.Fatalf("GET big: %d bytes, %v; want the 100 KB sent", len(got), err)
	}
}

// A HOLD waiting when the server shuts down is answered, not dropped.
func TestHoldBlockedAtShutdown(t *testing.T) {
	t.Parallel()
	s := resptest.Start(t, tenure.Options{})
	rdb := s.Client()
	lkHold(t, rdb, "L", "k", "holder", "TTL", 60000)
	w := lkDial(t, s)
	w.send("LOCK.HOLD", "L", "k", "w")
	lkBlocked(t, rdb, 1)
	rdb.Close()
	s.Stop()
	lkExpect(t, "waiter at shutdown", lkFormat(w.reply()), "-ERR server is shutting down")
}

// LOCK-08: a waiter that went away and retries with the same reqid within
// the linger second resumes its place, ahead of a later waiter.
func TestLOCK08LingerResumesPlace(t *testing.T) {
	t.Parallel()
	s := resptest.Start(t, tenure.Options{})
	rdb := s.Client()
	holder := lkHold(t, rdb, "L", "k", "holder", "TTL", 60000)

	a, b := lkDial(t, s), lkDial(t, s)
	a.send("LOCK.HOLD", "L", "k", "req-a", "TTL", "60000")
	lkInLine(t, rdb, "L", "k", 1)
	b.send("LOCK.HOLD", "L", "k", "req-b", "TTL", "60000")
	lkInLine(t, rdb, "L", "k", 2)
	a.nc.Close()
	closed := time.Now()
	lkBlocked(t, rdb, 1)

	a2 := lkDial(t, s)
	a2.send("LOCK.HOLD", "L", "k", "req-a", "TTL", "60000")
	lkBlocked(t, rdb, 2)
	if since := time.Since(closed); since >= time.Second {
		t.Fatalf("the retry came %v after the close, past the linger: the test was too slow", since)
	}
	lkExpect(t, "places", fmt.Sprint(lkWaiters(t, rdb, "L", "k")), "2") // resumed, not a third place

	lkExpect(t, "release", lkDo(t, rdb, "LOCK.RELEASE", holder.ID), ":1")
	ga := lkGranted(t, a2.reply())
	if info := lkKeyInfo(t, rdb, "L", "k"); info["fence"] != ga.Fence || info["waiters"] != 1 {
		t.Fatalf("LOCK.INFO = %v, want a's fence %d and b still in line", info, ga.Fence)
	}
	lkExpect(t, "release a", lkDo(t, rdb, "LOCK.RELEASE", ga.ID), ":1")
	if gb := lkGranted(t, b.reply()); gb.Fence <= ga.Fence {
		t.Fatalf("b's fence %d not after a's %d", gb.Fence, ga.Fence)
	}
}

// LOCK-08, SPEC §3: a lingering place is gone after one second; the same
// reqid then joins at the tail, behind the waiter that was after it.
func TestLOCK08LingerEndsAfterOneSecond(t *testing.T) {
	t.Parallel()
	s := resptest.Start(t, tenure.Options{})
	rdb := s.Client()
	holder := lkHold(t, rdb, "L", "k", "holder", "TTL", 60000)

	a, b := lkDial(t, s), lkDial(t, s)
	a.send("LOCK.HOLD", "L", "k", "req-a", "TTL", "60000")
	lkInLine(t, rdb, "L", "k", 1)
	b.send("LOCK.HOLD", "L", "k", "req-b", "TTL", "60000")
	lkInLine(t, rdb, "L", "k", 2)
	a.nc.Close()
	closed := time.Now()
	lkBlocked(t, rdb, 1)
	// The place lingers from the moment the store noticed the close, which
	// is after closed: it cannot be gone before a second has passed.
	lkUntil(t, 3*time.Second, "the lingering place is gone", func() bool {
		return lkWaiters(t, rdb, "L", "k") == 1
	})
	if took := time.Since(closed); took < time.Second || took > 1300*time.Millisecond {
		t.Fatalf("the place lingered %v after the close, want a second (and not much more)", took)
	}

	a2 := lkDial(t, s)
	a2.send("LOCK.HOLD", "L", "k", "req-a", "TTL", "60000")
	lkInLine(t, rdb, "L", "k", 2)
	lkExpect(t, "release", lkDo(t, rdb, "LOCK.RELEASE", holder.ID), ":1")
	gb := lkGranted(t, b.reply())
	lkExpect(t, "release b", lkDo(t, rdb, "LOCK.RELEASE", gb.ID), ":1")
	if ga := lkGranted(t, a2.reply()); ga.Fence <= gb.Fence {
		t.Fatalf("a's fence %d not after b's %d", ga.Fence, gb.Fence)
	}
}

// LOCK-08, SPEC §8: waiting in chunks — HOLDs with a WAIT, retried with
// the same reqid when one runs out — keeps the place in line.
func TestLOCK08ChunkedWaitKeepsPlace(t *testing.T) {
	t.Parallel()
	s := resptest.Start(t, tenure.Options{})
	rdb := s.Client()
	holder := lkHold(t, rdb, "L", "k", "holder", "TTL", 60000)

	a, b := lkDial(t, s), lkDial(t, s)
	lkExpect(t, "first chunk", a.doS("LOCK.HOLD", "L", "k", "req-a", "WAIT", "20"), "*-1")
	b.send("LOCK.HOLD", "L", "k", "req-b")
	lkInLine(t, rdb, "L", "k", 2) // a's lingering place and b
	a.send("LOCK.HOLD", "L", "k", "req-a", "WAIT", "5000")
	lkBlocked(t, rdb, 2)
	lkExpect(t, "release", lkDo(t, rdb, "LOCK.RELEASE", holder.ID), ":1")
	ga := lkGranted(t, a.reply())
	lkExpect(t, "release a", lkDo(t, rdb, "LOCK.RELEASE", ga.ID), ":1")
	if gb := lkGranted(t, b.reply()); gb.Fence <= ga.Fence {
		t.Fatalf("b's fence %d not after a's %d", gb.Fence, ga.Fence)
	}
}

// LOCK-03, SPEC §3: a HOLD still blocked on one connection, retried with
// the same reqid on another, is answered "superseded"; the retry takes its
// place and is granted.
func TestLOCK03SupersededByRetry(t *testing.T) {
	t.Parallel()
	s := resptest.Start(t, tenure.Options{})
	rdb := s.Client()
	holder := lkHold(t, rdb, "L", "k", "holder", "TTL", 60000)

	a, b := lkDial(t, s), lkDial(t, s)
	a.send("LOCK.HOLD", "L", "k", "req", "TTL", "60000")
	lkBlocked(t, rdb, 1)
	b.send("LOCK.HOLD", "L", "k", "req", "TTL", "60000")
	lkExpect(t, "first request", lkFormat(a.reply()), "-ERR superseded by a retry of the same request")
	lkBlocked(t, rdb, 1)
	lkExpect(t, "places", fmt.Sprint(lkWaiters(t, rdb, "L", "k")), "1")
	lkExpect(t, "superseded connection goes on", a.doS("PING"), "+PONG")

	lkExpect(t, "release", lkDo(t, rdb, "LOCK.RELEASE", holder.ID), ":1")
	g := lkGranted(t, b.reply())
	if info := lkKeyInfo(t, rdb, "L", "k"); info["fence"] != g.Fence || info["waiters"] != 0 {
		t.Fatalf("LOCK.INFO = %v, want the retry's fence %d and nobody in line", info, g.Fence)
	}
}

// LOCK-07: a lease held with MAXHOLD is revoked at grant + MAXHOLD however
// often it is renewed, and the key goes to the next in line.
func TestLOCK07MaxHoldRevokes(t *testing.T) {
	t.Parallel()
	s := resptest.Start(t, tenure.Options{})
	rdb := s.Client()
	start := time.Now()
	g := lkHold(t, rdb, "L", "k", "r", "TTL", 1000, "MAXHOLD", 1000)
	if info := lkKeyInfo(t, rdb, "L", "k"); info["maxhold"] <= 0 || info["maxhold"] > 1000 {
		t.Fatalf("LOCK.INFO = %v, want maxhold left in (0, 1000]", info)
	}
	w := lkDial(t, s)
	w.send("LOCK.HOLD", "L", "k", "w", "TTL", "60000")
	lkInLine(t, rdb, "L", "k", 1)

	// Renew every 200 ms, with and without a TTL: each answer is capped by
	// the MAXHOLD deadline, so what is left only shrinks.
	prev := int64(1000)
	for i := 0; ; i++ {
		time.Sleep(200 * time.Millisecond)
		args := []any{"LOCK.RENEW", g.ID}
		if i%2 == 1 {
			args = append(args, "TTL", 3600000)
		}
		left, err := rdb.Do(context.Background(), args...).Int64()
		if err != nil {
			if time.Since(start) < 900*time.Millisecond {
				t.Fatalf("renewal %d at %v: %v", i, time.Since(start), err)
			}
			lkExpect(t, "renewal past MAXHOLD", "-"+err.Error(), "-LOST revoked maxhold")
			break
		}
		if left >= prev {
			t.Fatalf("renewal %d left %d ms, the one before %d: MAXHOLD does not cap it", i, left, prev)
		}
		prev = left
	}
	ng := lkGranted(t, w.reply())
	if ng.Fence <= g.Fence {
		t.Fatalf("next fence %d, revoked %d", ng.Fence, g.Fence)
	}
	if took := time.Since(start); took > 1500*time.Millisecond {
		t.Fatalf("the waiter was granted %v after the MAXHOLD 1000 grant", took)
	}
	lkExpect(t, "renew", lkDo(t, rdb, "LOCK.RENEW", g.ID), "-LOST revoked maxhold")
	lkExpect(t, "release", lkDo(t, rdb, "LOCK.RELEASE", g.ID), "-LOST revoked maxhold")
	lkExpect(t, "retry", lkDo(t, rdb, "LOCK.HOLD", "L", "k", "r"), "-LOST revoked maxhold")
	if n := lkStat(t, rdb, "locks", "revoked_total"); n != 1 {
		t.Fatalf("revoked_total = %d, want 1", n)
	}
}

// LOCK-11: a lease outlives the connection that got it, and another
// connection renews and releases it.
func TestLOCK11LeaseOutlivesConnection(t *testing.T) {
	t.Parallel()
	s := resptest.Start(t, tenure.Options{})
	rdb := s.Client()
	conns := lkStat(t, rdb, "clients", "connected_clients")
	a := lkDial(t, s)
	g := lkGranted(t, a.do("LOCK.HOLD", "L", "k", "r", "TTL", "60000"))
	a.nc.Close()
	lkUntil(t, 5*time.Second, "the server drops the closed connection", func() bool {
		return lkStat(t, rdb, "clients", "connected_clients") == conns
	})
	if info := lkKeyInfo(t, rdb, "L", "k"); info["fence"] != g.Fence {
		t.Fatalf("LOCK.INFO = %v after the holder's connection closed, want fence %d", info, g.Fence)
	}
	// CLIENT KILL of a holder's connection leaves the lease too.
	b := lkDial(t, s)
	lkExpect(t, "renew from another connection", b.doS("LOCK.RENEW", g.ID, "TTL", "30000"), ":30000")
	lkExpect(t, "kill", lkDo(t, rdb, "CLIENT", "KILL", b.nc.LocalAddr().String()), `"OK"`)
	if info := lkKeyInfo(t, rdb, "L", "k"); info["fence"] != g.Fence {
		t.Fatalf("LOCK.INFO = %v after CLIENT KILL, want fence %d", info, g.Fence)
	}
	lkExpect(t, "release from another connection", lkDo(t, rdb, "LOCK.RELEASE", g.ID), ":1")
	lkExpect(t, "LOCK.INFO", lkDo(t, rdb, "LOCK.INFO", "L", "k"), "nil")
}

// lkServerTime reads the store's clock and LOCK.INFO in one pipeline, so
// both are read within microseconds of each other.
func lkServerTime(t testing.TB, c *lkConn, lock, key string) (time.Time, map[string]int64) {
	t.Helper()
	if _, err := c.nc.Write(append(lkCommand("TIME"), lkCommand("LOCK.INFO", lock, key)...)); err != nil {
		t.Fatal(err)
	}
	tv, ok := c.reply().([]any)
	if !ok || len(tv) != 2 {
		t.Fatalf("TIME: %v", tv)
	}
	sec, _ := strconv.ParseInt(tv[0].(string), 10, 64)
	usec, _ := strconv.ParseInt(tv[1].(string), 10, 64)
	info, ok := c.reply().([]any)
	if !ok {
		t.Fatalf("LOCK.INFO %s %s: %s", lock, key, lkFormat(info))
	}
	m := map[string]int64{}
	for i := 0; i < len(info); i += 2 {
		if n, ok := info[i+1].(int64); ok { // all but the owner
			m[info[i].(string)] = n
		}
	}
	return time.Unix(sec, usec*1000), m
}

// LOCK-06: a lease ends at its deadline and the next waiter is granted
// within 10 ms of it. Measured with the store's own clock: the holder's
// deadline is TIME + LOCK.INFO's ttl read right after the grant, the
// waiter's grant time is TIME - LOCK.INFO's held read right after its
// grant. Both readings are truncated to whole milliseconds, which can only
// make a handoff look up to 2 ms later than it was, never earlier.
//
// Five keys run at once. None may be granted early (LOCK-01). A machine
// busy with other work wakes every timer late, the store's as much as any:
// so beside each deadline the test arms a timer of its own, in the same
// process, and holds the store to 10 ms past what that timer managed. The
// median of the five must meet it.
func TestLOCK06ExpiryHandsToNextWaiter(t *testing.T) {
	t.Parallel()
	s := resptest.Start(t, tenure.Options{})
	const keys = 5
	type waiting struct {
		key      string
		conn     *lkConn
		deadline time.Time
		control  chan time.Duration
		granted  chan error
	}
	var all []waiting
	for i := range keys {
		key := fmt.Sprint("k", i)
		holder, waiter := lkDial(t, s), lkDial(t, s)
		lkGranted(t, holder.do("LOCK.HOLD", "L", key, "holder-"+key, "TTL", "1000"))
		now, info := lkServerTime(t, holder, "L", key)
		w := waiting{key: key, conn: waiter, deadline: now.Add(time.Duration(info["ttl"]) * time.Millisecond),
			control: make(chan time.Duration, 1), granted: make(chan error, 1)}
		waiter.send("LOCK.HOLD", "L", key, "waiter-"+key, "TTL", "60000")
		time.AfterFunc(time.Until(w.deadline), func() { w.control <- time.Since(w.deadline) })
		go func() {
			v, err := lkRead(waiter.br)
			if a, ok := v.([]any); err == nil && (!ok || len(a) != 3) {
				err = fmt.Errorf("want a grant, got %s", lkFormat(v))
			}
			w.granted <- err
		}()
		all = append(all, w)
	}
	var late, excess []time.Duration
	for _, w := range all {
		if err := <-w.granted; err != nil {
			t.Fatalf("waiter on %s: %v", w.key, err)
		}
		// held counts from the grant, so it may be read at leisure: the
		// waiter's lease has a long ttl.
		now, info := lkServerTime(t, w.conn, "L", w.key)
		l := now.Add(-time.Duration(info["held"]) * time.Millisecond).Sub(w.deadline)
		late = append(late, l)
		excess = append(excess, l-<-w.control)
	}
	slices.Sort(late)
	slices.Sort(excess)
	t.Logf("grants after the deadline: %v; beyond the test's own timers: %v", late, excess)
	if late[0] < -time.Millisecond {
		t.Fatalf("a waiter was granted %v before the holder's deadline", -late[0])
	}
	if med := excess[keys/2]; med > 10*time.Millisecond {
		t.Fatalf("median handoff %v after the deadline beyond a timer of the test's own, want within 10ms (after the deadline: %v)", med, late)
	}
	if excess[keys-1] > 100*time.Millisecond {
		t.Fatalf("a handoff came %v after the deadline beyond a timer of the test's own (all: %v)", excess[keys-1], late)
	}
}

// LOCK-12 over the wire: SET … FENCE refuses a smaller fence than the key
// remembers.
func TestLOCK12SetFence(t *testing.T) {
	t.Parallel()
	s := resptest.Start(t, tenure.Options{})
	rdb := s.Client()
	g1 := lkHold(t, rdb, "L", "k", "r1")
	f1 := strconv.FormatInt(g1.Fence, 10)
	lkExpect(t, "first write", lkDo(t, rdb, "SET", "res", "v1", "FENCE", f1), `"OK"`)
	lkExpect(t, "release", lkDo(t, rdb, "LOCK.RELEASE", g1.ID), ":1")
	g2 := lkHold(t, rdb, "L", "k", "r2")
	f2 := strconv.FormatInt(g2.Fence, 10)
	lkExpect(t, "newer holder", lkDo(t, rdb, "SET", "res", "v2", "FENCE", f2), `"OK"`)
	const fenced = "-FENCED a newer fence has written this key"
	lkExpect(t, "stale holder", lkDo(t, rdb, "SET", "res", "stale", "FENCE", f1), fenced)
	lkExpect(t, "value", lkDo(t, rdb, "GET", "res"), `"v2"`)
	lkExpect(t, "same fence again", lkDo(t, rdb, "SET", "res", "v3", "FENCE", f2), `"OK"`)
	lkExpect(t, "plain SET", lkDo(t, rdb, "SET", "res", "plain"), `"OK"`)
	lkExpect(t, "plain SET keeps the fence", lkDo(t, rdb, "SET", "res", "stale", "FENCE", f1), fenced)
	lkExpect(t, "value", lkDo(t, rdb, "GET", "res"), `"plain"`)
	lkExpect(t, "DEL", lkDo(t, rdb, "DEL", "res"), ":1")
	lkExpect(t, "DEL forgets the fence", lkDo(t, rdb, "SET", "res", "old", "FENCE", f1), `"OK"`)
	// The remembered fence survives a restart, as the value does.
	lkExpect(t, "newer again", lkDo(t, rdb, "SET", "res", "v4", "FENCE", f2), `"OK"`)
	s.Restart()
	rdb = s.Client()
	lkExpect(t, "stale after restart", lkDo(t, rdb, "SET", "res", "stale", "FENCE", f1), fenced)
}

// SPEC §3, LOCK.HOLD: every row of the reply table but superseded (see
// TestLOCK03SupersededByRetry) and the roles' (see the roles tests), and
// the argument checks.
func TestLockHoldReplies(t *testing.T) {
	t.Parallel()
	s := resptest.Start(t, tenure.Options{})
	c := lkDial(t, s)

	// Granted: [32 hex chars, fence, ttl left]; the first fence of a new
	// store is epoch 1, n 1; ttl defaults to 10 s.
	g := lkGranted(t, c.do("LOCK.HOLD", "L", "k", "r1"))
	if g.Fence != 1<<32+1 || g.TTL != 10000 {
		t.Fatalf("first grant %+v, want fence %d and ttl 10000", g, int64(1<<32+1))
	}
	// Same reqid, lease live: the same lease, ttl left now.
	again := lkGranted(t, c.do("LOCK.HOLD", "L", "k", "r1", "TTL", "5000", "WAIT", "0"))
	if again.ID != g.ID || again.Fence != g.Fence || again.TTL > g.TTL || again.TTL < 9000 {
		t.Fatalf("retry %+v, first %+v", again, g)
	}
	// Not granted within WAIT: a null array, WAIT 0 at once.
	lkExpect(t, "WAIT 0 on a held key", c.doS("LOCK.HOLD", "L", "k", "r2", "WAIT", "0"), "*-1")
	start := time.Now()
	lkExpect(t, "WAIT 50 on a held key", c.doS("LOCK.HOLD", "L", "k", "r3", "WAIT", "50"), "*-1")
	if took := time.Since(start); took < 50*time.Millisecond {
		t.Fatalf("WAIT 50 answered after %v", took)
	}
	// Same reqid, lease ended.
	lkExpect(t, "release", c.doS("LOCK.RELEASE", g.ID), ":1")
	lkExpect(t, "retry after release", c.doS("LOCK.HOLD", "L", "k", "r1"), "-LOST released")
	// Same reqid for another lock or key.
	lkExpect(t, "reqid in use", c.doS("LOCK.HOLD", "L", "other", "r1"), "-ERR request id is already used for another lock or key")
	// The options, in any order and any case; a TTL is what the lease gets.
	g4 := lkGranted(t, c.do("lock.hold", "L", "k4", "r4", "maxHold", "86400000", "wait", "0", "Ttl", "3600000"))
	if g4.TTL != 3600000 {
		t.Fatalf("TTL 3600000 granted %d", g4.TTL)
	}
	lkGranted(t, c.do("LOCK.HOLD", "L", "k5", "r5", "TTL", "1000", "MAXHOLD", "1000"))

	// Lengths of lock, key and reqid, in bytes; any bytes.
	long := func(n int) string { return strings.Repeat("x", n) }
	lkGranted(t, c.do("LOCK.HOLD", long(256), long(1024), long(64)))
	lkGranted(t, c.do("LOCK.HOLD", "a\x00\r\nb", "\xff\xfe", "\x00"))

	const (
		ttlRange     = "-ERR ttl must be an integer from 1000 to 3600000"
		waitRange    = "-ERR wait must be an integer from 0 to 1099511627776"
		maxHoldRange = "-ERR maxhold must be an integer from 1000 to 86400000"
		syntax       = "-ERR syntax error"
	)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"L", "k", "x", "TTL", "999"}, ttlRange},
		{[]string{"L", "k", "x", "TTL", "3600001"}, ttlRange},
		{[]string{"L", "k", "x", "TTL", "-1"}, ttlRange},
		{[]string{"L", "k", "x", "TTL", "1.5"}, ttlRange},
		{[]string{"L", "k", "x", "TTL", "ten"}, ttlRange},
		{[]string{"L", "k", "x", "TTL", ""}, ttlRange},
		{[]string{"L", "k", "x", "TTL", "01000"}, ttlRange},
		{[]string{"L", "k", "x", "TTL", "99999999999999999999"}, ttlRange},
		{[]string{"L", "k", "x", "WAIT", "-1"}, waitRange},
		{[]string{"L", "k", "x", "WAIT", "soon"}, waitRange},
		{[]string{"L", "k", "x", "WAIT", "1099511627777"}, waitRange},
		{[]string{"L", "k", "x", "MAXHOLD", "999"}, maxHoldRange},
		{[]string{"L", "k", "x", "MAXHOLD", "86400001"}, maxHoldRange},
		{[]string{"L", "k", "x", "MAXHOLD", "0"}, maxHoldRange},
		{[]string{"L", "k", "x", "FOREVER", "1"}, syntax},
		{[]string{"L", "k", "x", "TTL"}, syntax},
		{[]string{"L", "k", "x", "TTL", "1000", "WAIT"}, syntax},
		{[]string{"L", "k", "x", "TTL", "1000", "TTL", "2000"}, syntax},
		{[]string{"L", "k", "x", "wait", "0", "WAIT", "0"}, syntax},
		{[]string{"L", "k", "x", "MAXHOLD", "1000", "maxhold", "1000"}, syntax},
		{[]string{"", "k", "x"}, "-ERR lock must be 1 to 256 bytes"},
		{[]string{long(257), "k", "x"}, "-ERR lock must be 1 to 256 bytes"},
		{[]string{"L", "", "x"}, "-ERR key must be 1 to 1024 bytes"},
		{[]string{"L", long(1025), "x"}, "-ERR key must be 1 to 1024 bytes"},
		{[]string{"L", "k", ""}, "-ERR reqid must be 1 to 64 bytes"},
		{[]string{"L", "k", long(65)}, "-ERR reqid must be 1 to 64 bytes"},
		{[]string{"L", "k"}, "-ERR wrong number of arguments for 'lock.hold' command"},
	} {
		lkExpect(t, fmt.Sprintf("LOCK.HOLD %q", tc.args), c.doS(append([]string{"LOCK.HOLD"}, tc.args...)...), tc.want)
	}
	// None of the refused requests was granted or remembered.
	rdb := s.Client()
	if n := lkStat(t, rdb, "locks", "grants_total"); n != 5 {
		t.Fatalf("grants_total = %d, want 5", n)
	}
	// Lock keys are their own namespace (SPEC: GET never sees them).
	lkExpect(t, "GET of a lock's name", lkDo(t, rdb, "GET", "L"), "nil")
	lkExpect(t, "DBSIZE", lkDo(t, rdb, "DBSIZE"), ":0")
}

// SPEC §3, LOCK.RENEW.
func TestLockRenewReplies(t *testing.T) {
	t.Parallel()
	s := resptest.Start(t, tenure.Options{})
	c := lkDial(t, s)
	g := lkGranted(t, c.do("LOCK.HOLD", "L", "k", "r", "TTL", "5000"))
	// The new deadline is now + TTL; default the granted ttl. The reply is
	// the time left in ms, truncated, so a millisecond may be lost.
	lkExpectNear(t, "renew", c.do("LOCK.RENEW", g.ID), 5000)
	lkExpectNear(t, "renew with TTL", c.do("LOCK.RENEW", g.ID, "ttl", "20000"), 20000)
	lkExpectNear(t, "renew again: the granted ttl", c.do("LOCK.RENEW", g.ID), 5000)
	lkExpectNear(t, "renew with TTL 1000", c.do("LOCK.RENEW", g.ID, "TTL", "1000"), 1000)
	lkExpectNear(t, "renew with TTL 3600000", c.do("LOCK.RENEW", g.ID, "TTL", "3600000"), 3600000)

	// MAXHOLD caps it: less than TTL.
	m := lkGranted(t, c.do("LOCK.HOLD", "L", "m", "rm", "TTL", "5000", "MAXHOLD", "3000"))
	if m.TTL != 3000 {
		t.Fatalf("TTL 5000 MAXHOLD 3000 granted %d ms", m.TTL)
	}
	if v, ok := c.do("LOCK.RENEW", m.ID).(int64); !ok || v > 3000 || v < 2900 {
		t.Fatalf("renew under MAXHOLD 3000: %v", v)
	}

	upper := strings.ToUpper(g.ID)
	made := hex.EncodeToString([]byte("never granted!!!"))
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{g.ID, "TTL", "999"}, "-ERR ttl must be an integer from 1000 to 3600000"},
		{[]string{g.ID, "TTL", "3600001"}, "-ERR ttl must be an integer from 1000 to 3600000"},
		{[]string{g.ID, "TTL", "x"}, "-ERR ttl must be an integer from 1000 to 3600000"},
		{[]string{g.ID, "TTL"}, "-ERR syntax error"},
		{[]string{g.ID, "WAIT", "1000"}, "-ERR syntax error"},
		{[]string{g.ID, "TTL", "1000", "TTL", "1000"}, "-ERR syntax error"},
		{[]string{made}, "-LOST unknown lease"},
		{[]string{"not-a-lease"}, "-LOST unknown lease"},
		{[]string{upper}, "-LOST unknown lease"}, // one spelling per id
		{[]string{}, "-ERR wrong number of arguments for 'lock.renew' command"},
	} {
		lkExpect(t, fmt.Sprintf("LOCK.RENEW %q", tc.args), c.doS(append([]string{"LOCK.RENEW"}, tc.args...)...), tc.want)
	}
	lkExpect(t, "release", c.doS("LOCK.RELEASE", g.ID), ":1")
	lkExpect(t, "renew after release (LOCK-05)", c.doS("LOCK.RENEW", g.ID), "-LOST released")
	lkExpect(t, "renew with TTL after release", c.doS("LOCK.RENEW", g.ID, "TTL", "1000"), "-LOST released")
}

func lkExpectNear(t testing.TB, what string, v any, want int64) {
	t.Helper()
	if n, ok := v.(int64); !ok || n > want || n < want-1 {
		t.Fatalf("%s: got %s, want :%d", what, lkFormat(v), want)
	}
}

// SPEC §3, LOCK.RELEASE: :1 for a live lease and again for a retried
// release; the next in line is granted in the same step.
func TestLockReleaseReplies(t *testing.T) {
	t.Parallel()
	s := resptest.Start(t, tenure.Options{})
	rdb := s.Client()
	g := lkHold(t, rdb, "L", "k", "r", "TTL", 60000)
	w := lkDial(t, s)
	w.send("LOCK.HOLD", "L", "k", "w", "TTL", "60000")
	lkInLine(t, rdb, "L", "k", 1)
	lkExpect(t, "release", lkDo(t, rdb, "LOCK.RELEASE", g.ID), ":1")
	next := lkGranted(t, w.reply())
	if next.Fence != g.Fence+1 {
		t.Fatalf("next fence %d, want %d: no grant between", next.Fence, g.Fence+1)
	}
	lkExpect(t, "retried release", lkDo(t, rdb, "LOCK.RELEASE", g.ID), ":1")
	if info := lkKeyInfo(t, rdb, "L", "k"); info["fence"] != next.Fence {
		t.Fatalf("a retried release touched the next lease: %v", info)
	}
	lkExpect(t, "unknown", lkDo(t, rdb, "LOCK.RELEASE", "0123456789abcdef0123456789abcdef"), "-LOST unknown lease")
	lkExpect(t, "not an id", lkDo(t, rdb, "LOCK.RELEASE", "x"), "-LOST unknown lease")
	lkExpect(t, "arity", lkDo(t, rdb, "LOCK.RELEASE"), "-ERR wrong number of arguments for 'lock.release' command")
	lkExpect(t, "arity", lkDo(t, rdb, "LOCK.RELEASE", next.ID, "x"), "-ERR wrong number of arguments for 'lock.release' command")
	lkExpect(t, "revoke", lkDo(t, rdb, "LOCK.REVOKE", "L", "k"), ":1")
	lkExpect(t, "release after revoke", lkDo(t, rdb, "LOCK.RELEASE", next.ID), "-LOST revoked by admin")
}

// lkFakeServer starts a server whose lock module runs on a fake clock.
func lkFakeServer(t *testing.T) (*resptest.Server, *lockmod.FakeClock) {
	clock := lockmod.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	return resptest.Start(t, tenure.Options{Clock: clock}), clock
}

// SPEC §4: every -LOST reason over the wire, from RENEW, RELEASE and a
// retried HOLD. Store time is a fake clock, so nothing sleeps.
func TestLockLostReasons(t *testing.T) {
	t.Parallel()
	s, clock := lkFakeServer(t)
	c := lkDial(t, s)
	lost := func(what, id, reqid, key, want string) {
		t.Helper()
		lkExpect(t, what+": renew", c.doS("LOCK.RENEW", id), want)
		if want != "-LOST released" {
			lkExpect(t, what+": release", c.doS("LOCK.RELEASE", id), want)
		}
		if reqid != "" {
			lkExpect(t, what+": retried hold", c.doS("LOCK.HOLD", "L", key, reqid), want)
		}
	}

	exp := lkGranted(t, c.do("LOCK.HOLD", "L", "exp", "r-exp", "TTL", "1000"))
	mh := lkGranted(t, c.do("LOCK.HOLD", "L", "mh", "r-mh", "TTL", "1000", "MAXHOLD", "2000"))
	adm := lkGranted(t, c.do("LOCK.HOLD", "L", "adm", "r-adm", "TTL", "60000"))
	rel := lkGranted(t, c.do("LOCK.HOLD", "L", "rel", "r-rel", "TTL", "60000"))

	clock.Advance(900 * time.Millisecond)
	lkExpect(t, "renew under MAXHOLD", c.doS("LOCK.RENEW", mh.ID), ":1000")
	clock.Advance(100 * time.Millisecond) // exp's deadline: it ends at it, inclusive
	lost("expired", exp.ID, "r-exp", "exp", "-LOST expired")
	clock.Advance(800 * time.Millisecond)
	lkExpect(t, "renew capped by MAXHOLD", c.doS("LOCK.RENEW", mh.ID), ":200")
	clock.Advance(200 * time.Millisecond)
	lost("MAXHOLD", mh.ID, "r-mh", "mh", "-LOST revoked maxhold")
	lkExpect(t, "revoke", c.doS("LOCK.REVOKE", "L", "adm"), ":1")
	lost("revoked", adm.ID, "r-adm", "adm", "-LOST revoked by admin")
	lkExpect(t, "release", c.doS("LOCK.RELEASE", rel.ID), ":1")
	lost("released", rel.ID, "r-rel", "rel", "-LOST released")
	lkExpect(t, "release again", c.doS("LOCK.RELEASE", rel.ID), ":1")
	lost("never granted", "00000000000000000000000000000000", "", "", "-LOST unknown lease")

	// Granted before the store restarted: unknown (LOCK-10: a store that
	// opens holds no lease).
	live := lkGranted(t, c.do("LOCK.HOLD", "L", "live", "r-live", "TTL", "60000"))
	s.Restart()
	c = lkDial(t, s)
	lkExpect(t, "renew after restart", c.doS("LOCK.RENEW", live.ID), "-LOST unknown lease")
	lkExpect(t, "release after restart", c.doS("LOCK.RELEASE", live.ID), "-LOST unknown lease")
	lkExpect(t, "LOCK.INFO after restart", c.doS("LOCK.INFO", "L", "live"), "*-1")
}

// SPEC §3, LOCK.INFO: the fields, exact on a fake clock, and never a
// lease id.
func TestLockInfoFields(t *testing.T) {
	t.Parallel()
	s, clock := lkFakeServer(t)
	c := lkDial(t, s)
	lkExpect(t, "free key", c.doS("LOCK.INFO", "L", "k"), "*-1")
	g := lkGranted(t, c.do("LOCK.HOLD", "L", "k", "r", "TTL", "5000", "MAXHOLD", "8000"))
	clock.Advance(1200 * time.Millisecond)
	want := fmt.Sprintf(`["fence" :%d "ttl" :3800 "held" :1200 "maxhold" :6800 "waiters" :0 "holders" :1 "limit" :1 "shared" :0 "owner" ""]`, g.Fence)
	lkExpect(t, "held key", c.doS("LOCK.INFO", "L", "k"), want)

	// Two waiters, one of whose WAIT runs out: both places counted.
	w1, w2 := lkDial(t, s), lkDial(t, s)
	w1.send("LOCK.HOLD", "L", "k", "w1", "WAIT", "100")
	w2.send("LOCK.HOLD", "L", "k", "w2")
	rdb := s.Client()
	lkInLine(t, rdb, "L", "k", 2)
	clock.Advance(100 * time.Millisecond)
	lkExpect(t, "WAIT ran out", lkFormat(w1.reply()), "*-1")
	info := c.do("LOCK.INFO", "L", "k")
	want = fmt.Sprintf(`["fence" :%d "ttl" :3700 "held" :1300 "maxhold" :6700 "waiters" :2 "holders" :1 "limit" :1 "shared" :0 "owner" ""]`, g.Fence)
	lkExpect(t, "held key with a line", lkFormat(info), want)
	if strings.Contains(lkFormat(info), g.ID) {
		t.Fatalf("LOCK.INFO shows the lease id: %s", lkFormat(info))
	}
	// No MAXHOLD: -1.
	g2 := lkGranted(t, c.do("LOCK.HOLD", "L", "k2", "r2", "TTL", "5000"))
	want = fmt.Sprintf(`["fence" :%d "ttl" :5000 "held" :0 "maxhold" :-1 "waiters" :0 "holders" :1 "limit" :1 "shared" :0 "owner" ""]`, g2.Fence)
	lkExpect(t, "no MAXHOLD", c.doS("LOCK.INFO", "L", "k2"), want)

	// The waiter gets the key; then w2 closes while it waits on k2, its
	// place lingers: a free key with a lingering place shows fence 0, ttl -1.
	lkExpect(t, "release", c.doS("LOCK.RELEASE", g.ID), ":1")
	lkGranted(t, w2.reply())
	w2.send("LOCK.HOLD", "L", "k2", "w2b")
	lkInLine(t, rdb, "L", "k2", 1)
	w2.nc.Close()
	lkBlocked(t, rdb, 0)
	lkExpect(t, "release k2", c.doS("LOCK.RELEASE", g2.ID), ":1")
	lkExpect(t, "free key with a lingering place", c.doS("LOCK.INFO", "L", "k2"), `["fence" :0 "ttl" :-1 "held" :-1 "maxhold" :-1 "waiters" :1 "holders" :0 "limit" :1 "shared" :0 "owner" ""]`)
	clock.Advance(time.Second)
	lkExpect(t, "after the linger", c.doS("LOCK.INFO", "L", "k2"), "*-1")
	lkExpect(t, "arity", c.doS("LOCK.INFO", "L"), "-ERR wrong number of arguments for 'lock.info' command")
}

// SPEC §3, LOCK.REVOKE: :1 when a lease was revoked (reason "revoked by
// admin"), :0 when none was live; the next in line is granted.
func TestLockRevoke(t *testing.T) {
	t.Parallel()
	s := resptest.Start(t, tenure.Options{})
	rdb := s.Client()
	lkExpect(t, "free key", lkDo(t, rdb, "LOCK.REVOKE", "L", "k"), ":0")
	g := lkHold(t, rdb, "L", "k", "r", "TTL", 60000)
	w := lkDial(t, s)
	w.send("LOCK.HOLD", "L", "k", "w", "TTL", "60000")
	lkInLine(t, rdb, "L", "k", 1)
	lkExpect(t, "held key", lkDo(t, rdb, "LOCK.REVOKE", "L", "k"), ":1")
	next := lkGranted(t, w.reply())
	if next.Fence <= g.Fence {
		t.Fatalf("next fence %d, revoked %d", next.Fence, g.Fence)
	}
	lkExpect(t, "revoked lease", lkDo(t, rdb, "LOCK.RENEW", g.ID), "-LOST revoked by admin")
	lkExpect(t, "revoke the next", lkDo(t, rdb, "LOCK.REVOKE", "L", "k"), ":1")
	lkExpect(t, "nothing left", lkDo(t, rdb, "LOCK.REVOKE", "L", "k"), ":0")
	lkExpect(t, "arity", lkDo(t, rdb, "LOCK.REVOKE", "L"), "-ERR wrong number of arguments for 'lock.revoke' command")
	if n := lkStat(t, rdb, "locks", "revoked_total"); n != 2 {
		t.Fatalf("revoked_total = %d, want 2", n)
	}
}

// INFO's # Locks section counts what happened, on a fake clock.
func TestInfoLocksSection(t *testing.T) {
	t.Parallel()
	s, clock := lkFakeServer(t)
	rdb := s.Client()
	text, err := rdb.Info(context.Background(), "locks").Result()
	if err != nil {
		t.Fatal(err)
	}
	want := "# Locks\r\nepoch:1\r\nleases:0\r\nwaiters:0\r\nwatchers:0\r\ngrants_total:0\r\nrenewals_total:0\r\n" +
		"released_total:0\r\nexpired_total:0\r\nrevoked_total:0\r\n"
	lkExpect(t, "INFO locks of a new store", strconv.Quote(text), strconv.Quote(want))

	a := lkHold(t, rdb, "L", "a", "ra", "TTL", 1000)
	b := lkHold(t, rdb, "L", "b", "rb", "TTL", 5000, "MAXHOLD", 2000)
	c := lkHold(t, rdb, "L", "c", "rc", "TTL", 5000)
	lkHold(t, rdb, "L", "d", "rd", "TTL", 5000)
	w := lkDial(t, s)
	w.send("LOCK.HOLD", "L", "d", "wd", "TTL", "60000")
	lkInLine(t, rdb, "L", "d", 1)
	lkExpect(t, "renew", lkDo(t, rdb, "LOCK.RENEW", b.ID), ":2000")
	lkExpect(t, "renew", lkDo(t, rdb, "LOCK.RENEW", c.ID), ":5000")
	lkExpect(t, "release", lkDo(t, rdb, "LOCK.RELEASE", c.ID), ":1")
	lkExpect(t, "retried release", lkDo(t, rdb, "LOCK.RELEASE", c.ID), ":1")
	lkExpect(t, "revoke", lkDo(t, rdb, "LOCK.REVOKE", "L", "d"), ":1")
	lkGranted(t, w.reply())
	clock.Advance(time.Second)
	lkExpect(t, "a", lkDo(t, rdb, "LOCK.RENEW", a.ID), "-LOST expired")
	clock.Advance(time.Second)
	lkExpect(t, "b", lkDo(t, rdb, "LOCK.RENEW", b.ID), "-LOST revoked maxhold")
	got := lkInfo(t, rdb, "locks")
	for field, want := range map[string]string{
		"epoch": "1", "leases": "1", "waiters": "0", "grants_total": "5", "renewals_total": "2",
		"released_total": "1", "expired_total": "1", "revoked_total": "2",
	} {
		if got[field] != want {
			t.Errorf("INFO locks %s = %q, want %q", field, got[field], want)
		}
	}
	s.Restart()
	rdb = s.Client()
	got = lkInfo(t, rdb, "locks")
	if got["epoch"] != "2" || got["leases"] != "0" || got["waiters"] != "0" || got["grants_total"] != "0" {
		t.Fatalf("INFO locks after a restart: %v", got)
	}
}

// LOCK-02, LOCK-10: the epoch survives a crash. On Pebble's crashable
// in-memory FS, each round takes fences, then keeps only what was synced
// (or that plus a random part of the rest) and opens a new server on it:
// its fences are larger than every fence before, and it holds no lease.
func TestLOCK02EpochSurvivesCrash(t *testing.T) {
	t.Parallel()
	fs := vfs.NewCrashableMem()
	var maxFence int64
	var lastID string
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 6 {
		s := resptest.StartIn(t, "/data", tenure.Options{FS: fs})
		rdb := s.Client()
		if lastID != "" {
			lkExpect(t, "lease from before the crash", lkDo(t, rdb, "LOCK.RENEW", lastID), "-LOST unknown lease")
			if st := lkInfo(t, rdb, "locks"); st["leases"] != "0" || st["waiters"] != "0" {
				t.Fatalf("round %d: a store that opens holds nothing (LOCK-10), INFO locks: %v", round, st)
			}
		}
		for i := range 3 {
			g := lkHold(t, rdb, "L", fmt.Sprint("k", i), fmt.Sprint("r", i), "TTL", 60000)
			if g.Fence <= maxFence {
				t.Fatalf("round %d: fence %d (epoch %d) not above %d (epoch %d) from before the crash",
					round, g.Fence, g.Fence>>32, maxFence, maxFence>>32)
			}
			maxFence, lastID = g.Fence, g.ID
		}
		// Writes that were never synced must not matter.
		lkExpect(t, "SET", lkDo(t, rdb, "SET", "x", fmt.Sprint(round)), `"OK"`)
		cfg := vfs.CrashCloneCfg{}
		if round%2 == 1 {
			cfg = vfs.CrashCloneCfg{UnsyncedDataPercent: 50, RNG: rng}
		}
		fs = fs.CrashClone(cfg)
	}
}

package resp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tenure-db/tenure"
	"github.com/tenure-db/tenure/lockmod"
	"github.com/tenure-db/tenure/resp/resptest"
)

// Pub/sub, keyspace notifications and lock events (SPEC §13), with
// go-redis and raw RESP against a real server. Replies in the raw
// transcripts were checked against redis-server 7.0.15.

// TestPubSubBasics: channels, patterns and shard channels, PUBLISH's
// counts, PUBSUB's introspection and CLIENT LIST's sub/psub/ssub.
func TestPubSubBasics(t *testing.T) {
	s := resptest.Start(t, tenure.Options{})
	ctx := context.Background()
	pub := s.Client()

	sub := s.Client().Subscribe(ctx, "news.art", "news.music")
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil { // the first confirmation
		t.Fatal(err)
	}
	psub := s.Client().PSubscribe(ctx, "news.*")
	defer psub.Close()
	if _, err := psub.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	ssub := s.Client().SSubscribe(ctx, "orders")
	defer ssub.Close()
	if _, err := ssub.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return pub.PubSubNumPat(ctx).Val() == 1 && len(pub.PubSubChannels(ctx, "*").Val()) == 2 })

	if n := pub.Publish(ctx, "news.art", "monet").Val(); n != 2 {
		t.Fatalf("PUBLISH news.art: %d receivers, want 2 (a channel and a pattern)", n)
	}
	if n := pub.Publish(ctx, "news.sport", "goal").Val(); n != 1 {
		t.Fatalf("PUBLISH news.sport: %d, want 1 (the pattern)", n)
	}
	if n := pub.Publish(ctx, "other", "x").Val(); n != 0 {
		t.Fatalf("PUBLISH other: %d, want 0", n)
	}
	if n := pub.SPublish(ctx, "orders", "o-1").Val(); n != 1 {
		t.Fatalf("SPUBLISH orders: %d, want 1", n)
	}
	if n := pub.Publish(ctx, "orders", "not shard").Val(); n != 0 {
		t.Fatalf("PUBLISH on a shard channel's name: %d, want 0 (another namespace)", n)
	}

	m := recv(t, sub)
	if m.Channel != "news.art" || m.Payload != "monet" || m.Pattern != "" {
		t.Fatalf("subscriber got %+v", m)
	}
	for _, want := range []redis.Message{{Pattern: "news.*", Channel: "news.art", Payload: "monet"},
		{Pattern: "news.*", Channel: "news.sport", Payload: "goal"}} {
		if m := recv(t, psub); m.Pattern != want.Pattern || m.Channel != want.Channel || m.Payload != want.Payload {
			t.Fatalf("pattern subscriber got %+v, want %+v", m, want)
		}
	}
	if m := recv(t, ssub); m.Channel != "orders" || m.Payload != "o-1" {
		t.Fatalf("shard subscriber got %+v", m)
	}

	if got := pub.PubSubChannels(ctx, "news.m*").Val(); !slices.Equal(got, []string{"news.music"}) {
		t.Errorf("PUBSUB CHANNELS news.m*: %q", got)
	}
	if got := pub.PubSubNumSub(ctx, "news.art", "nobody").Val(); got["news.art"] != 1 || got["nobody"] != 0 {
		t.Errorf("PUBSUB NUMSUB: %v", got)
	}
	if got := pub.PubSubShardChannels(ctx, "*").Val(); !slices.Equal(got, []string{"orders"}) {
		t.Errorf("PUBSUB SHARDCHANNELS: %q", got)
	}
	if got := pub.PubSubShardNumSub(ctx, "orders").Val(); got["orders"] != 1 {
		t.Errorf("PUBSUB SHARDNUMSUB: %v", got)
	}
	list := pub.ClientList(ctx).Val()
	for _, want := range []string{"sub=2 psub=0 ssub=0", "sub=0 psub=1 ssub=0", "sub=0 psub=0 ssub=1"} {
		if !strings.Contains(list, want) {
			t.Errorf("CLIENT LIST has no line with %q:\n%s", want, list)
		}
	}
	info := pub.Info(ctx, "stats", "clients").Val()
	for _, want := range []string{"pubsub_channels:2", "pubsub_patterns:1", "pubsubshard_channels:1", "pubsub_clients:3"} {
		if !strings.Contains(info, want+"\r\n") {
			t.Errorf("INFO has no %q", want)
		}
	}

	// Unsubscribing from one channel leaves the other.
	if err := sub.Unsubscribe(ctx, "news.art"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return pub.PubSubNumSub(ctx, "news.art").Val()["news.art"] == 0 })
	if n := pub.Publish(ctx, "news.music", "bach").Val(); n != 2 {
		t.Fatalf("PUBLISH news.music after unsubscribing news.art: %d, want 2", n)
	}
}

// TestPubSubRESP2SubscribedMode: Redis 7's subscribed mode in RESP2 — only
// (P|S)(UN)SUBSCRIBE, PING, QUIT and RESET; PING's reply; RESET leaving it;
// the confirmations' counts; UNSUBSCRIBE with none.
func TestPubSubRESP2SubscribedMode(t *testing.T) {
	s := resptest.Start(t, tenure.Options{})
	rawTranscript(t, dialRaw(t, s), []rawStep{
		{"UNSUBSCRIBE", []string{"*3", "$11", "unsubscribe", "$-1", ":0"}},
		{"PUNSUBSCRIBE", []string{"*3", "$12", "punsubscribe", "$-1", ":0"}},
		{"SUNSUBSCRIBE", []string{"*3", "$12", "sunsubscribe", "$-1", ":0"}},
		{"PING", []string{"+PONG"}},
		{"SUBSCRIBE a", []string{"*3", "$9", "subscribe", "$1", "a", ":1"}},
		{"PSUBSCRIBE a*", []string{"*3", "$10", "psubscribe", "$2", "a*", ":2"}},
		{"SSUBSCRIBE s", []string{"*3", "$10", "ssubscribe", "$1", "s", ":1"}},
		{"GET k", []string{"-ERR Can't execute 'get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context"}},
		{"CLIENT ID", []string{"-ERR Can't execute 'client|id': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context"}},
		{"PING", []string{"*2", "$4", "pong", "$0", ""}},
		{"PING hi", []string{"*2", "$4", "pong", "$2", "hi"}},
		{"UNSUBSCRIBE a", []string{"*3", "$11", "unsubscribe", "$1", "a", ":1"}},
		{"SUNSUBSCRIBE s", []string{"*3", "$12", "sunsubscribe", "$1", "s", ":0"}},
		{"GET k", []string{"-ERR Can't execute 'get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context"}},
		{"RESET", []string{"+RESET"}},
		{"GET k", []string{"$-1"}},
		{"PUBSUB NUMPAT", []string{":0"}},
		{"SUBSCRIBE a a", []string{"*3", "$9", "subscribe", "$1", "a", ":1"}},
	})
}

// TestPubSubRESP3Pushes: in RESP3 a subscriber may run any command; the
// confirmations and messages are pushes, interleaved with its replies in
// the order they happened.
func TestPubSubRESP3Pushes(t *testing.T) {
	s := resptest.Start(t, tenure.Options{})
	r := dialRaw(t, s)
	r.send("HELLO 3\r\n")
	r.reply()
	rawTranscript(t, r, []rawStep{
		{"SUBSCRIBE a", []string{">3", "$9", "subscribe", "$1", "a", ":1"}},
		{"SET k v", []string{"+OK"}},
		{"GET k", []string{"$1", "v"}},
		{"PING", []string{"+PONG"}},
	})
	pub := s.Client()
	if n := pub.Publish(context.Background(), "a", "hello").Val(); n != 1 {
		t.Fatalf("PUBLISH: %d", n)
	}
	// The message was queued before this GET's reply: it comes first.
	r.send("GET k\r\n")
	if got := r.reply(); !slices.Equal(got, []string{">3", "$7", "message", "$1", "a", "$5", "hello"}) {
		t.Fatalf("push: %q", got)
	}
	if got := r.reply(); !slices.Equal(got, []string{"$1", "v"}) {
		t.Fatalf("GET after the push: %q", got)
	}
	// CLIENT REPLY OFF silences replies, not pushes.
	rawTranscript(t, r, []rawStep{
		{"CLIENT REPLY OFF\r\nSET k w\r\nUNSUBSCRIBE a", []string{">3", "$11", "unsubscribe", "$1", "a", ":0"}},
		{"CLIENT REPLY ON", []string{"+OK"}},
		{"CLIENT REPLY SKIP\r\nGET k\r\nGET k", []string{"$1", "w"}},
	})
}

// TestPubSubRoles (SPEC §5, §13): subscribing needs the read role,
// publishing the write role, and an unauthenticated connection neither.
func TestPubSubRoles(t *testing.T) {
	s := startWithUsers(t, tenure.Options{})
	ctx := context.Background()
	reader := redis.NewClient(&redis.Options{Addr: s.Addr, Username: "reader", Password: "reader-pass"})
	writer := redis.NewClient(&redis.Options{Addr: s.Addr, Username: "writer", Password: "writer-pass"})
	defer reader.Close()
	defer writer.Close()
	sub := reader.Subscribe(ctx, "c")
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatalf("SUBSCRIBE as reader: %v", err)
	}
	if err := reader.Publish(ctx, "c", "x").Err(); err == nil || !strings.HasPrefix(err.Error(), "NOPERM") {
		t.Fatalf("PUBLISH as reader: %v, want NOPERM", err)
	}
	if n, err := writer.Publish(ctx, "c", "x").Result(); err != nil || n != 1 {
		t.Fatalf("PUBLISH as writer: %d %v", n, err)
	}
	r := dialRaw(t, s)
	for _, cmd := range []string{"SUBSCRIBE c", "PSUBSCRIBE *", "PUBLISH c x", "PUBSUB CHANNELS"} {
		r.send(cmd + "\r\n")
		if got := r.line(); got != "-NOAUTH Authentication required." {
			t.Errorf("%s unauthenticated: %q", cmd, got)
		}
	}
}

// TestPubSubSlowSubscriberCut (SPEC §13): a subscriber that does not read
// is disconnected once its pending output passes the pubsub class of
// client-output-buffer-limit, and counted; the publisher never waits for
// it, and a subscriber that reads gets every message.
func TestPubSubSlowSubscriberCut(t *testing.T) {
	s := resptest.Start(t, tenure.Options{})
	ctx := context.Background()
	admin := s.Client()
	if err := admin.ConfigSet(ctx, "client-output-buffer-limit", "pubsub 2mb 1mb 60").Err(); err != nil {
		t.Fatal(err)
	}
	if got := admin.ConfigGet(ctx, "client-output-buffer-limit").Val()["client-output-buffer-limit"]; got !=
		"normal 0 0 0 slave 268435456 67108864 60 pubsub 2097152 1048576 60" {
		t.Fatalf("CONFIG GET client-output-buffer-limit: %q", got)
	}

	// The slow one: a raw connection with a small receive buffer that
	// subscribes and never reads again.
	slow, err := net.Dial("tcp", s.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	slow.(*net.TCPConn).SetReadBuffer(16 << 10)
	io.WriteString(slow, "SUBSCRIBE feed\r\n")
	// The fast one reads everything, in a goroutine of its own.
	fast := s.Client().Subscribe(ctx, "feed")
	defer fast.Close()
	if _, err := fast.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return admin.PubSubNumSub(ctx, "feed").Val()["feed"] == 2 })
	const msgs, size = 600, 64 << 10 // 38 MB: far past the limit and the sockets' buffers
	got := make(chan int)
	go func() {
		n := 0
		for n < msgs {
			if _, err := fast.ReceiveMessage(ctx); err != nil {
				break
			}
			n++
		}
		got <- n
	}()
	payload := strings.Repeat("x", size)
	pubc := s.Client()
	var slowest time.Duration
	for i := range msgs {
		start := time.Now()
		n, err := pubc.Publish(ctx, "feed", payload).Result()
		if err != nil {
			t.Fatalf("PUBLISH %d: %v", i, err)
		}
		slowest = max(slowest, time.Since(start))
		if i == msgs-1 && n != 1 {
			t.Errorf("the last PUBLISH reached %d subscribers, want 1: the slow one should be gone", n)
		}
	}
	if n := <-got; n != msgs {
		t.Fatalf("the reading subscriber got %d of %d messages", n, msgs)
	}
	// The slow connection was closed: past what its buffers hold, a read
	// ends.
	slow.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.Copy(io.Discard, slow); err != nil {
		t.Fatalf("the slow subscriber was not disconnected: %v", err)
	}
	info := admin.Info(ctx, "stats").Val()
	if !strings.Contains(info, "client_output_buffer_limit_disconnections:1\r\n") {
		t.Fatalf("INFO stats does not count the disconnection:\n%s", info)
	}
	t.Logf("slowest PUBLISH of %d KB: %v", size>>10, slowest)
}

// TestPubSubSoftLimit: past the soft limit for its seconds, a subscriber
// is cut too.
func TestPubSubSoftLimit(t *testing.T) {
	s := resptest.Start(t, tenure.Options{})
	ctx := context.Background()
	admin := s.Client()
	if err := admin.ConfigSet(ctx, "client-output-buffer-limit", "pubsub 0 256kb 1").Err(); err != nil {
		t.Fatal(err)
	}
	slow := s.Dial()
	slow.(*net.TCPConn).SetReadBuffer(16 << 10)
	io.WriteString(slow, "SUBSCRIBE feed\r\n")
	waitFor(t, func() bool { return admin.PubSubNumSub(ctx, "feed").Val()["feed"] == 1 })
	payload := strings.Repeat("y", 64<<10)
	deadline := time.Now().Add(20 * time.Second)
	for admin.PubSubNumSub(ctx, "feed").Val()["feed"] == 1 {
		if time.Now().After(deadline) {
			t.Fatal("the subscriber past the soft limit was never cut")
		}
		admin.Publish(ctx, "feed", payload)
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.Contains(admin.Info(ctx, "stats").Val(), "client_output_buffer_limit_disconnections:1\r\n") {
		t.Fatal("not counted")
	}
}

// TestPubSubConfigErrors: CONFIG SET's checks, with Redis's texts.
func TestPubSubConfigErrors(t *testing.T) {
	s := resptest.Start(t, tenure.Options{})
	ctx := context.Background()
	c := s.Client()
	for _, tc := range []struct{ name, value, want string }{
		{"client-output-buffer-limit", "pubsub 1mb 1mb", "Wrong number of arguments in buffer limit configuration."},
		{"client-output-buffer-limit", "master 1 1 1", "Invalid client class specified in buffer limit configuration."},
		{"client-output-buffer-limit", "pubsub 1xb 1 1", "Error in hard, soft or soft_seconds setting in buffer limit configuration."},
		{"client-output-buffer-limit", "pubsub 1 1 -1", "Error in hard, soft or soft_seconds setting in buffer limit configuration."},
		{"notify-keyspace-events", "KEQ", "Invalid event class character. Use 'Ag$lshzxeKEtmdnL'."},
	} {
		err := c.ConfigSet(ctx, tc.name, tc.value).Err()
		want := "ERR CONFIG SET failed (possibly related to argument '" + tc.name + "') - " + tc.want
		if err == nil || err.Error() != want {
			t.Errorf("CONFIG SET %s %q: %v, want %q", tc.name, tc.value, err, want)
		}
	}
	for set, want := range map[string]string{"gKE": "gKE", "$lshzxeKE": "$lshzxeKE", "KA": "AK", "EA": "AE",
		"AKEmnL": "AnKEmL", "": "", "Kx": "xK", "LK": "KL"} {
		c.ConfigSet(ctx, "notify-keyspace-events", set)
		if got := c.ConfigGet(ctx, "notify-keyspace-events").Val()["notify-keyspace-events"]; got != want {
			t.Errorf("notify-keyspace-events %q reads back %q, want %q", set, got, want)
		}
	}
}

// TestKeyspaceNotifications (SPEC §13): Redis 7's events for strings and
// generic commands on __keyspace@0__ and __keyevent@0__, the classes
// masking them, "new" and "expired".
func TestKeyspaceNotifications(t *testing.T) {
	s := resptest.Start(t, tenure.Options{})
	ctx := context.Background()
	c := s.Client()
	sub := s.Client().PSubscribe(ctx, "__key*__:*")
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	expect := func(want ...string) {
		t.Helper()
		for _, w := range want {
			m := recv(t, sub)
			if got := m.Channel + " " + m.Payload; got != w {
				t.Fatalf("got %q, want %q", got, w)
			}
		}
	}
	c.ConfigSet(ctx, "notify-keyspace-events", "KEA")
	c.Set(ctx, "foo", "bar", 0)
	expect("__keyspace@0__:foo set", "__keyevent@0__:set foo")
	c.Set(ctx, "foo", "bar", time.Hour)
	expect("__keyspace@0__:foo set", "__keyevent@0__:set foo", "__keyspace@0__:foo expire", "__keyevent@0__:expire foo")
	c.Incr(ctx, "n")
	c.Append(ctx, "foo", "!")
	c.Rename(ctx, "foo", "bar")
	c.Del(ctx, "bar", "missing", "n")
	expect("__keyspace@0__:n incrby", "__keyevent@0__:incrby n",
		"__keyspace@0__:foo append", "__keyevent@0__:append foo",
		"__keyspace@0__:foo rename_from", "__keyevent@0__:rename_from foo",
		"__keyspace@0__:bar rename_to", "__keyevent@0__:rename_to bar",
		"__keyspace@0__:bar del", "__keyevent@0__:del bar",
		"__keyspace@0__:n del", "__keyevent@0__:del n")

	// Masked: strings only, keyevent only; then new keys only.
	c.ConfigSet(ctx, "notify-keyspace-events", "E$")
	c.Expire(ctx, "x", time.Hour) // generic, and x is missing: nothing
	c.Set(ctx, "a", "1", 0)
	expect("__keyevent@0__:set a")
	c.ConfigSet(ctx, "notify-keyspace-events", "En")
	c.Set(ctx, "a", "2", 0) // not new
	c.Set(ctx, "b", "1", 0)
	expect("__keyevent@0__:new b")

	// Expired, by the sweep and on access.
	c.ConfigSet(ctx, "notify-keyspace-events", "Ex")
	c.Set(ctx, "short", "v", 50*time.Millisecond)
	expect("__keyevent@0__:expired short")
	c.ConfigSet(ctx, "notify-keyspace-events", "Em")
	c.Get(ctx, "nokey")
	c.MGet(ctx, "a", "nokey2")
	expect("__keyevent@0__:keymiss nokey", "__keyevent@0__:keymiss nokey2")
	c.ConfigSet(ctx, "notify-keyspace-events", "")
	c.Set(ctx, "quiet", "v", 0)
	c.Publish(ctx, "__keyevent@0__:marker", "m") // the next message must be this one
	expect("__keyevent@0__:marker m")
}

// TestLockEvents (SPEC §13 "Lock events"): with L on, each grant,
// release, expiry and revocation, and a lost answer, is one JSON message
// on __lock@0__:<lock>, in order, each with the fence it was granted with;
// with L off, none.
func TestLockEvents(t *testing.T) {
	clock := lockmod.NewFakeClock(time.Now())
	s := resptest.Start(t, tenure.Options{Clock: clock})
	ctx := context.Background()
	c := s.Client()
	sub := s.Client().PSubscribe(ctx, "__lock@0__:*")
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	hold := func(reqid string, extra ...any) (string, int64) {
		t.Helper()
		r, err := c.Do(ctx, append([]any{"LOCK.HOLD", "jobs", "k", reqid, "TTL", "1000"}, extra...)...).Slice()
		if err != nil {
			t.Fatalf("LOCK.HOLD %s: %v", reqid, err)
		}
		return r[0].(string), r[1].(int64)
	}

	// L off: a grant and a release tell nothing.
	id, _ := hold("r0")
	c.Do(ctx, "LOCK.RELEASE", id)
	c.ConfigSet(ctx, "notify-keyspace-events", "L")
	id, f1 := hold("r1", "OWNER", "alice")
	c.Do(ctx, "LOCK.RELEASE", id)
	_, f2 := hold("r2")
	clock.Advance(1500 * time.Millisecond) // r2 expires
	c.Do(ctx, "LOCK.RENEW", "00000000000000000000000000000000")
	_, f3 := hold("r3")
	c.Do(ctx, "LOCK.REVOKE", "jobs", "k")
	c.Do(ctx, "LOCK.HOLD", "jobs", "k", "r3") // a retry of a revoked lease: -LOST
	c.ConfigSet(ctx, "notify-keyspace-events", "")
	hold("r4") // L off again
	c.Publish(ctx, "__lock@0__:jobs", "end")

	d := func(f int64) string { return strconv.FormatInt(f, 10) }
	want := []map[string]string{
		{"event": "granted", "key": "k", "fence": d(f1), "owner": "alice", "reason": ""},
		{"event": "released", "key": "k", "fence": d(f1), "owner": "alice", "reason": "released"},
		{"event": "granted", "key": "k", "fence": d(f2), "owner": "", "reason": ""},
		{"event": "expired", "key": "k", "fence": d(f2), "owner": "", "reason": "expired"},
		{"event": "granted", "key": "k", "fence": d(f3), "owner": "", "reason": ""},
		{"event": "revoked", "key": "k", "fence": d(f3), "owner": "", "reason": "revoked by admin"},
		{"event": "lost", "key": "k", "fence": d(f3), "owner": "", "reason": "revoked by admin"},
	}
	for i, w := range want {
		m := recv(t, sub)
		var got map[string]string
		if err := json.Unmarshal([]byte(m.Payload), &got); err != nil || m.Channel != "__lock@0__:jobs" {
			t.Fatalf("event %d: %s %q: %v", i, m.Channel, m.Payload, err)
		}
		if fmt.Sprint(got) != fmt.Sprint(w) {
			t.Fatalf("event %d: %v, want %v", i, got, w)
		}
	}
	if m := recv(t, sub); m.Payload != "end" {
		t.Fatalf("after L was turned off: %q", m.Payload)
	}
}

// TestPubSubNoGoroutineLeak: subscribers that come and go, read or not,
// leave no goroutine behind.
func TestPubSubNoGoroutineLeak(t *testing.T) {
	s := resptest.Start(t, tenure.Options{})
	ctx := context.Background()
	pub := s.Client()
	pub.Ping(ctx)
	before := runtime.NumGoroutine()
	for i := range 20 {
		nc := s.Dial()
		fmt.Fprintf(nc, "SUBSCRIBE c%d\r\nPSUBSCRIBE *\r\n", i)
		waitFor(t, func() bool { return pub.PubSubNumSub(ctx, "c"+strconv.Itoa(i)).Val()["c"+strconv.Itoa(i)] == 1 })
		pub.Publish(ctx, "c"+strconv.Itoa(i), "x")
		if i%2 == 0 {
			io.WriteString(nc, "QUIT\r\n")
		}
		nc.Close()
	}
	waitFor(t, func() bool { return pub.PubSubNumPat(ctx).Val() == 0 && runtime.NumGoroutine() <= before+2 })
}

func recv(t *testing.T, ps *redis.PubSub) *redis.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m, err := ps.ReceiveMessage(ctx)
	if err != nil {
		t.Fatalf("receive: %v", err)
	}
	return m
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestLockEventsUnderLoad (SPEC §13, LOCK-01, LOCK-02): with clients
// holding and releasing a few keys at once, every grant a client was
// answered appears among the events with its fence; per key the events
// alternate, a grant then the end of that same fence; and fences only
// grow in the order the events come.
func TestLockEventsUnderLoad(t *testing.T) {
	s := resptest.Start(t, tenure.Options{})
	ctx := context.Background()
	admin := s.Client()
	admin.ConfigSet(ctx, "notify-keyspace-events", "L")
	sub := s.Client().Subscribe(ctx, "__lock@0__:load")
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	const clients, cycles, keys = 8, 100, 3
	granted := make(chan int64, clients*cycles)
	errs := make(chan error, clients)
	for i := range clients {
		go func() {
			c := s.Client()
			for j := range cycles {
				r, err := c.Do(ctx, "LOCK.HOLD", "load", "k"+strconv.Itoa(j%keys), fmt.Sprintf("c%d-%d", i, j), "TTL", "10000").Slice()
				if err != nil {
					errs <- err
					return
				}
				granted <- r[1].(int64)
				if err := c.Do(ctx, "LOCK.RELEASE", r[0]).Err(); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range clients {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	close(granted)
	held := map[string]string{} // key -> fence of its live grant
	seen := map[string]bool{}
	var last int64
	for range 2 * clients * cycles {
		m := recv(t, sub)
		var e map[string]string
		if err := json.Unmarshal([]byte(m.Payload), &e); err != nil {
			t.Fatal(err)
		}
		switch e["event"] {
		case "granted":
			f, _ := strconv.ParseInt(e["fence"], 10, 64)
			if f <= last {
				t.Fatalf("fence %d granted after %d", f, last)
			}
			if held[e["key"]] != "" {
				t.Fatalf("%s granted fence %s while %s lives", e["key"], e["fence"], held[e["key"]])
			}
			last, held[e["key"]], seen[e["fence"]] = f, e["fence"], true
		case "released":
			if held[e["key"]] != e["fence"] {
				t.Fatalf("%s released fence %s; the live one is %q", e["key"], e["fence"], held[e["key"]])
			}
			held[e["key"]] = ""
		default:
			t.Fatalf("unexpected event %v", e)
		}
	}
	for f := range granted {
		if !seen[strconv.FormatInt(f, 10)] {
			t.Fatalf("grant of fence %d has no event", f)
		}
	}
}

package resp_test

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// Hashes, sets, BITFIELD and SAVE (SPEC §13), replies and error texts as
// Redis 7 gives them. Run against Redis too with TENURE_TEST_REDIS (see
// compatTranscript); every step here answers alike there.
var hashSteps = []step{
	{"HSET h a 1 b 2", 2},
	{"HSET h a 3 c 4", 1},
	{"HMSET h d 5", "OK"},
	{"HSETNX h a 9", 0},
	{"HSETNX h e x", 1},
	{"HGET h a", "3"},
	{"HGET h nofield", nil},
	{"HGET nokey a", nil},
	{"HMGET h a nofield b", []any{"3", nil, "2"}},
	{"HMGET nokey a", []any{nil}},
	{"HLEN h", 5},
	{"HLEN nokey", 0},
	{"HEXISTS h a", 1},
	{"HEXISTS h zz", 0},
	{"HSTRLEN h e", 1},
	{"HSTRLEN h zz", 0},
	{"HKEYS h", sameSet("a", "b", "c", "d", "e")},
	{"HVALS h", sameSet("3", "2", "4", "5", "x")},
	{"HKEYS nokey", []any{}},
	{"HGETALL nokey", []any{}},
	{"HDEL h a zz a", 1},
	{"HINCRBY h n 5", 5},
	{"HINCRBY h n -7", -2},
	{"HINCRBY h e 1", "ERR hash value is not an integer"},
	{"HINCRBY h n x", "ERR value is not an integer or out of range"},
	{"HSET h big 9223372036854775807", 1},
	{"HINCRBY h big 1", "ERR increment or decrement would overflow"},
	{"HINCRBYFLOAT h f 10.5", "10.5"},
	{"HINCRBYFLOAT h f 5.0e3", "5010.5"},
	{"HINCRBYFLOAT h g 0.1", "0.1"}, // Redis sums in long double, tenure in float64: fractions' last digits can differ
	{"HINCRBYFLOAT h e 1", "ERR hash value is not a float"},
	{"HINCRBYFLOAT h f x", "ERR value is not a valid float"},
	{"HINCRBYFLOAT h f +inf", "ERR value is NaN or Infinity"},
	{"HRANDFIELD nokey", nil},
	{"HRANDFIELD nokey 3", []any{}},
	{"HRANDFIELD h 0", []any{}},
	{"HRANDFIELD h -9223372036854775808", "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807"},
	{"HRANDFIELD h -9223372036854775807 WITHVALUES", "ERR value is out of range"},
	{"HRANDFIELD h 1 WITHVALUE", "ERR syntax error"},
	{"HRANDFIELD h 100", arrayOf(8, anyString())},
	{"HRANDFIELD h 100 WITHVALUES", arrayOf(16, anyString())},
	{"HRANDFIELD h -10", arrayOf(10, anyString())},
	{"HSET h a", "ERR wrong number of arguments for 'hset' command"},
	{"HMSET h a 1 b", "ERR wrong number of arguments for 'hmset' command"},
	{"HDEL h", "ERR wrong number of arguments for 'hdel' command"},
	{"HSCAN h x", "ERR invalid cursor"},
	{"HSCAN h 0 COUNT 0", "ERR syntax error"},
	{"HSCAN h 0 FOO", "ERR syntax error"},
	{"DEL h", 1},
	{"HSET h a 1", 1},
	{"HSCAN h 0", []any{"0", []any{"a", "1"}}},
	{"HSCAN h 0 MATCH z*", []any{"0", []any{}}},
	{"HSCAN nokey 0", []any{"0", []any{}}},
	{"OBJECT ENCODING h", "listpack"},
	{"TYPE h", "hash"},
	{"SET s str", "OK"},
	{"HSET s a 1", "WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"HGET s a", "WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"HLEN s", "WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"GET h", "WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"HDEL h a", 1},
	{"EXISTS h", 0}, // the hash went with its last field
}

var setSteps = []step{
	{"SADD s 1 2 3 2", 3},
	{"SADD s 3 4", 1},
	{"SCARD s", 4},
	{"SCARD nokey", 0},
	{"SMEMBERS s", []any{"1", "2", "3", "4"}}, // an intset's order
	{"SISMEMBER s 1", 1},
	{"SISMEMBER s 9", 0},
	{"SMISMEMBER s 1 9 4", []any{1, 0, 1}},
	{"SMISMEMBER nokey 1", []any{0}},
	{"OBJECT ENCODING s", "intset"},
	{"SADD s a", 1},
	{"OBJECT ENCODING s", "hashtable"},
	{"SREM s a a 9", 1},
	{"OBJECT ENCODING s", "hashtable"}, // never back, as in Redis
	{"SMOVE s t 1", 1},
	{"SMOVE s t 1", 0},
	{"SMOVE nokey t 1", 0},
	{"SMEMBERS t", []any{"1"}},
	{"SADD a x y z", 3},
	{"SADD b y z w", 3},
	{"SINTER a b", sameSet("y", "z")},
	{"SINTER a nokey", []any{}},
	{"SUNION a b nokey", sameSet("x", "y", "z", "w")},
	{"SDIFF a b", []any{"x"}},
	{"SDIFF nokey a", []any{}},
	{"SINTERCARD 2 a b", 2},
	{"SINTERCARD 2 a b LIMIT 1", 1},
	{"SINTERCARD 2 a b LIMIT 0", 2},
	{"SINTERCARD 0 a", "ERR numkeys should be greater than 0"},
	{"SINTERCARD 3 a b", "ERR Number of keys can't be greater than number of args"},
	{"SINTERCARD 2 a b LIMIT -1", "ERR LIMIT can't be negative"},
	{"SINTERCARD 2 a b FOO 1", "ERR syntax error"},
	{"SINTERSTORE d a b", 2},
	{"SMEMBERS d", sameSet("y", "z")},
	{"SUNIONSTORE d a b", 4},
	{"SDIFFSTORE d a b", 1},
	{"SMEMBERS d", []any{"x"}},
	{"SET str v", "OK"},
	{"SINTERSTORE str a b", 2}, // over a string
	{"TYPE str", "set"},
	{"SINTERSTORE d a nokey", 0},
	{"EXISTS d", 0},
	{"SINTER a s2", []any{}},
}

func init() {
	setSteps = append(setSteps,
		step{"SET s2 v", "OK"},
		step{"SINTER a s2", "WRONGTYPE Operation against a key holding the wrong kind of value"},
		step{"SUNIONSTORE d a s2", "WRONGTYPE Operation against a key holding the wrong kind of value"},
		step{"SMOVE a s2 x", "WRONGTYPE Operation against a key holding the wrong kind of value"},
		step{"SPOP nokey", nil},
		step{"SPOP nokey 2", []any{}},
		step{"SPOP a -1", "ERR value is out of range, must be positive"},
		step{"SPOP a 1 2", "ERR syntax error"},
		step{"SPOP a 0", []any{}},
		step{"SPOP a 10", sameSet("x", "y", "z")},
		step{"EXISTS a", 0},
		step{"SRANDMEMBER nokey", nil},
		step{"SRANDMEMBER nokey 5", []any{}},
		step{"SRANDMEMBER b 10", sameSet("y", "z", "w")},
		step{"SRANDMEMBER b -5", arrayOf(5, anyString())},
		step{"SRANDMEMBER b 1 2", "ERR syntax error"},
		step{"SSCAN b 0 MATCH w", []any{"0", []any{"w"}}},
		step{"SSCAN b 0 NOVALUES", "ERR syntax error"},
		step{"SADD b", "ERR wrong number of arguments for 'sadd' command"},
	)
}

var bitfieldSteps = []step{
	{"BITFIELD bf SET u8 0 255 GET u8 0 GET i8 0", []any{0, 255, -1}},
	{"BITFIELD bf INCRBY u2 100 1 OVERFLOW SAT INCRBY u2 102 10", []any{1, 3}},
	{"BITFIELD bf OVERFLOW FAIL INCRBY i8 #2 200", []any{nil}},
	{"BITFIELD bf OVERFLOW WRAP INCRBY i8 #2 200", []any{-56}},
	{"BITFIELD bf2 SET i64 0 -1 GET u63 0", []any{0, 9223372036854775807}},
	{"BITFIELD nokey GET u8 0", []any{0}},
	{"EXISTS nokey", 0},
	{"BITFIELD_RO bf GET u8 0", []any{255}},
	{"BITFIELD_RO bf SET u8 0 1", "ERR BITFIELD_RO only supports the GET subcommand"},
	{"BITFIELD bf GET u64 0", "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is."},
	{"BITFIELD bf GET i0 0", "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is."},
	{"BITFIELD bf GET u8 -1", "ERR bit offset is not an integer or out of range"},
	{"BITFIELD bf OVERFLOW FOO", "ERR Invalid OVERFLOW type specified"},
	{"BITFIELD bf FOO", "ERR syntax error"},
	{"BITFIELD bf SET u8 0 x", "ERR value is not an integer or out of range"},
	{"HSET hh a 1", 1},
	{"BITFIELD hh GET u8 0", "WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"BITFIELD bf", []any{}},
}

func TestHashesCompat(t *testing.T)   { compatTranscript(t, start(t), hashSteps) }
func TestSetsCompat(t *testing.T)     { compatTranscript(t, start(t), setSteps) }
func TestBitfieldCompat(t *testing.T) { compatTranscript(t, start(t), bitfieldSteps) }

// RESP3: HGETALL is a map, SMEMBERS and the set algebra sets, SPOP with a
// count a set, HRANDFIELD … WITHVALUES pairs; RESP2 the same flat.
func TestCollectionsRESP3(t *testing.T) {
	s := start(t)
	r := dialRaw(t, s)
	rawTranscript(t, r, []rawStep{
		{"HELLO 3", helloLines},
		{"HSET h a 1", []string{":1"}},
		{"HGETALL h", []string{"%1", "$1", "a", "$1", "1"}},
		{"HGETALL nokey", []string{"%0"}},
		{"HRANDFIELD h 1 WITHVALUES", []string{"*1", "*2", "$1", "a", "$1", "1"}},
		{"HGET h zz", []string{"_"}},
		{"SADD s 5", []string{":1"}},
		{"SMEMBERS s", []string{"~1", "$1", "5"}},
		{"SINTER s s", []string{"~1", "$1", "5"}},
		{"SMEMBERS nokey", []string{"~0"}},
		{"SPOP s 5", []string{"~1", "$1", "5"}},
		{"SPOP s", []string{"_"}},
		{"BITFIELD b OVERFLOW FAIL INCRBY u2 0 9", []string{"*1", "_"}},
		{"HELLO 2", helloLines2},
		{"HGETALL h", []string{"*2", "$1", "a", "$1", "1"}},
		{"HRANDFIELD h 1 WITHVALUES", []string{"*2", "$1", "a", "$1", "1"}},
	})
}

// SAVE is a durable point that LASTSAVE shows; inside MULTI it is refused
// as Redis refuses it. BGSAVE answers at once and moves LASTSAVE too.
func TestSave(t *testing.T) {
	s := start(t)
	rdb := resp2Client(t, s)
	ctx := context.Background()
	before, err := rdb.LastSave(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond) // LASTSAVE counts seconds
	if err := rdb.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Save(ctx).Err(); err != nil {
		t.Fatalf("SAVE: %v", err)
	}
	if after, _ := rdb.LastSave(ctx).Result(); after <= before {
		t.Errorf("LASTSAVE %d after SAVE, %d before", after, before)
	}
	transcript(t, rdb.Conn(), []step{
		{"MULTI", "OK"},
		{"SAVE", "ERR Command not allowed inside a transaction"},
		{"EXEC", "EXECABORT Transaction discarded because of previous errors."},
		{"BGSAVE", "Background saving started"},
		{"BGSAVE FOO", "ERR syntax error"},
	})
}

// TestBigDelAnswersAtOnce: DEL of a big set costs what DEL of a
// small one does (SPEC §13 Storage); its members go in the background.
func TestBigDelAnswersAtOnce(t *testing.T) {
	s := start(t)
	rdb := resp2Client(t, s)
	ctx := context.Background()
	const n = 100_000
	for i := 0; i < n; i += 1000 {
		args := make([]any, 1000)
		for j := range args {
			args[j] = i + j
		}
		if err := rdb.SAdd(ctx, "big", args...).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := rdb.SAdd(ctx, "small", 1).Err(); err != nil {
		t.Fatal(err)
	}
	timeDel := func(key string) time.Duration {
		start := time.Now()
		if err := rdb.Del(ctx, key).Err(); err != nil {
			t.Fatal(err)
		}
		return time.Since(start)
	}
	big, small := timeDel("big"), timeDel("small")
	t.Logf("DEL of %d members: %v; of 1: %v", n, big, small)
	if big > 50*time.Millisecond && big > 20*small {
		t.Errorf("DEL of %d members took %v, of one %v", n, big, small)
	}
	if got := rdb.SCard(ctx, "big").Val(); got != 0 {
		t.Errorf("SCARD after DEL = %d", got)
	}
	// Made again at once: none of the old members shows.
	rdb.SAdd(ctx, "big", "new")
	if ms := rdb.SMembers(ctx, "big").Val(); fmt.Sprint(ms) != "[new]" {
		t.Errorf("after DEL and SADD: %d members", len(ms))
	}
}

// Keyspace notifications of hashes and sets (SPEC §13), Redis 7's events:
// hset, hdel and "del" when the last field goes, hincrby; sadd, srem,
// spop, SMOVE's srem and sadd, the STORE forms' events or "del";
// BITFIELD's setbit.
func TestCollectionNotifications(t *testing.T) {
	s := start(t)
	ctx := context.Background()
	c := s.Client()
	sub := s.Client().PSubscribe(ctx, "__keyevent@0__:*")
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	c.ConfigSet(ctx, "notify-keyspace-events", "EA")
	c.HSet(ctx, "h", "a", "1")
	c.HSetNX(ctx, "h", "a", "2") // nothing set: no event
	c.HIncrBy(ctx, "h", "n", 1)
	c.HDel(ctx, "h", "a", "n")
	c.SAdd(ctx, "s", "x", "y")
	c.SAdd(ctx, "s", "x") // nothing added: no event
	c.SMove(ctx, "s", "t", "x")
	c.SInterStore(ctx, "d", "s", "t") // empty, d missing: no event
	c.SUnionStore(ctx, "d", "s", "t")
	c.SInterStore(ctx, "d", "s", "t") // empty: d deleted
	c.SPop(ctx, "s")
	c.BitField(ctx, "b", "SET", "u8", "0", "1")
	for _, want := range []string{"hset h", "hincrby h", "hdel h", "del h", "sadd s", "srem s", "sadd t",
		"sunionstore d", "del d", "spop s", "del s", "setbit b"} {
		m := recv(t, sub)
		if got := m.Channel[len("__keyevent@0__:"):] + " " + m.Payload; got != want {
			t.Fatalf("got %q, want %q", got, want)
		}
	}
}

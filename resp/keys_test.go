package resp_test

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
	"time"
)

// The key commands of SPEC §6, as Redis 7 answers them. Every reply here
// was checked against redis-server 7 (see compatTranscript).

var delExistsSteps = []step{
	{"MSET a 1 b 2 c 3", "OK"},
	{"DEL a b nokey", 2},
	{"DEL a", 0},
	{"DEL c c", 1}, // a key named twice counts once
	{"DEL", "ERR wrong number of arguments for 'del' command"},
	{"MSET a 1 b 2", "OK"},
	{"UNLINK a a b nokey", 2},
	{"UNLINK", "ERR wrong number of arguments for 'unlink' command"},
	{"SET a 1", "OK"},
	{"EXISTS a", 1},
	{"EXISTS a a nokey", 2}, // a key named twice counts twice
	{"EXISTS nokey", 0},
	{"EXISTS", "ERR wrong number of arguments for 'exists' command"},
	{"TYPE a", "string"},
	{"TYPE nokey", "none"},
	{"TYPE", "ERR wrong number of arguments for 'type' command"},
	{"TYPE a b", "ERR wrong number of arguments for 'type' command"},
}

var expireSteps = []step{
	{"SET a 1", "OK"},
	{"TTL a", -1},
	{"PTTL a", -1},
	{"TTL nokey", -2},
	{"PTTL nokey", -2},
	{"EXPIRE a 100", 1},
	{"TTL a", intBetween(95, 100)},
	{"PTTL a", intBetween(95000, 100000)},
	{"EXPIRE nokey 100", 0},
	{"PEXPIRE a 200000", 1},
	{"TTL a", intBetween(195, 200)},
	{"EXPIREAT a 4102444800", 1},
	{"TTL a", intBetween(2000000000, 3000000000)},
	{"PEXPIREAT a 4102444800000", 1},
	{"PERSIST a", 1},
	{"PERSIST a", 0},
	{"PERSIST nokey", 0},
	{"TTL a", -1},
	{"PERSIST", "ERR wrong number of arguments for 'persist' command"},

	// NX, XX, GT, LT
	{"EXPIRE a 100 XX", 0}, // no TTL yet
	{"EXPIRE a 100 GT", 0}, // no TTL counts as infinite
	{"EXPIRE a 100 NX", 1},
	{"EXPIRE a 200 NX", 0},
	{"EXPIRE a 200 XX", 1},
	{"EXPIRE a 100 GT", 0},
	{"EXPIRE a 300 GT", 1},
	{"EXPIRE a 400 LT", 0},
	{"EXPIRE a 50 LT", 1},
	{"TTL a", intBetween(45, 50)},
	{"EXPIRE a 60 XX GT", 1},
	{"EXPIRE a 40 XX LT", 1},
	{"EXPIRE a 40 nx", 0},
	{"EXPIRE a 40 NX NX", 0},
	{"EXPIRE a 100 GT GT", 1},
	{"PERSIST a", 1},
	{"EXPIRE a 40 LT", 1}, // no TTL is infinite: any TTL is less
	{"PERSIST a", 1},
	{"EXPIRE a 100 NX XX", "ERR NX and XX, GT or LT options at the same time are not compatible"},
	{"EXPIRE a 100 NX GT", "ERR NX and XX, GT or LT options at the same time are not compatible"},
	{"EXPIRE a 100 LT NX", "ERR NX and XX, GT or LT options at the same time are not compatible"},
	{"EXPIRE a 100 GT LT", "ERR GT and LT options at the same time are not compatible"},
	{"EXPIRE a 100 FOO", "ERR Unsupported option FOO"},
	{"PEXPIRE a 100 xx bar", "ERR Unsupported option bar"},
	{"EXPIRE a abc FOO", "ERR Unsupported option FOO"},                                                // options first
	{"EXPIRE nokey abc NX XX", "ERR NX and XX, GT or LT options at the same time are not compatible"}, // likewise

	// The time: any integer, but no overflow.
	{"EXPIRE a abc", "ERR value is not an integer or out of range"},
	{"EXPIRE a 1.5", "ERR value is not an integer or out of range"},
	{"EXPIRE a 010", "ERR value is not an integer or out of range"},
	{"EXPIRE a -0", "ERR value is not an integer or out of range"},
	{"PEXPIRE a 9223372036854775808", "ERR value is not an integer or out of range"},
	{"EXPIRE nokey abc", "ERR value is not an integer or out of range"},
	{"EXPIRE a 9223372036854775807", "ERR invalid expire time in 'expire' command"},
	{"EXPIRE a 9223372036854775", "ERR invalid expire time in 'expire' command"},
	{"EXPIRE a -9223372036854775808", "ERR invalid expire time in 'expire' command"},
	{"PEXPIRE a 9223372036854775807", "ERR invalid expire time in 'pexpire' command"},
	{"EXPIREAT a 9223372036854775807", "ERR invalid expire time in 'expireat' command"},
	{"EXPIRE nokey 9223372036854775807", "ERR invalid expire time in 'expire' command"},
	{"TTL a", -1},
	{"PEXPIREAT a 9223372036854775807", 1}, // the far future is fine
	{"TTL a", intBetween(9223370000000000, 9223372036854775)},
	{"EXPIRE a", "ERR wrong number of arguments for 'expire' command"},
	{"PEXPIRE a", "ERR wrong number of arguments for 'pexpire' command"},
	{"EXPIREAT a", "ERR wrong number of arguments for 'expireat' command"},
	{"PEXPIREAT a", "ERR wrong number of arguments for 'pexpireat' command"},
	{"TTL", "ERR wrong number of arguments for 'ttl' command"},
	{"PTTL a b", "ERR wrong number of arguments for 'pttl' command"},

	// A time in the past deletes the key, and says it did.
	{"EXPIRE a -1", 1},
	{"EXISTS a", 0},
	{"SET a 1", "OK"},
	{"EXPIRE a 0", 1},
	{"EXISTS a", 0},
	{"SET a 1", "OK"},
	{"PEXPIREAT a 1", 1},
	{"EXISTS a", 0},
	{"SET a 1", "OK"},
	{"EXPIREAT a 1 NX", 1},
	{"EXISTS a", 0},
	{"SET a 1 EX 100", "OK"},
	{"EXPIRE a -100 GT", 0},
	{"EXPIRE a -100 LT", 1},
	{"EXISTS a", 0},
	{"SET a 1 EX 100", "OK"},
	{"SET a 2", "OK"},
	{"TTL a", -1}, // SET clears the TTL
}

var keysScanSteps = []step{
	{"MSET alpha 1 beta 2 gamma 3 a[1] 4", "OK"},
	{"KEYS *", sameSet("alpha", "beta", "gamma", "a[1]")},
	{"KEYS a*", sameSet("alpha", "a[1]")},
	{"KEYS ?eta", sameSet("beta")},
	{"KEYS [bg]*", sameSet("beta", "gamma")},
	{"KEYS [^a]*", sameSet("beta", "gamma")},
	{`KEYS a\[1\]`, sameSet("a[1]")},
	{"KEYS alpha", sameSet("alpha")},
	{"KEYS nokey", sameSet()},
	{"KEYS", "ERR wrong number of arguments for 'keys' command"},
	{"KEYS a b", "ERR wrong number of arguments for 'keys' command"},

	{"SCAN 0 COUNT 1000", []any{"0", sameSet("alpha", "beta", "gamma", "a[1]")}},
	{"SCAN 0 MATCH a* COUNT 1000", []any{"0", sameSet("alpha", "a[1]")}},
	{"SCAN 0 MATCH * COUNT 1000", []any{"0", sameSet("alpha", "beta", "gamma", "a[1]")}},
	{"SCAN 0 MATCH nomatch* COUNT 1000", []any{"0", sameSet()}},
	{"SCAN 0 COUNT 1000 TYPE string", []any{"0", sameSet("alpha", "beta", "gamma", "a[1]")}},
	{"SCAN 0 COUNT 1000 type STRING", []any{"0", sameSet("alpha", "beta", "gamma", "a[1]")}},
	{"SCAN 0 TYPE list", []any{"0", sameSet()}},
	{"SCAN 0 TYPE nosuchtype", []any{"0", sameSet()}},
	{"SCAN 0 COUNT 1000 MATCH x* MATCH b*", []any{"0", sameSet("beta")}}, // the last MATCH counts
	{"SCAN 0 COUNT 9223372036854775807", []any{"0", sameSet("alpha", "beta", "gamma", "a[1]")}},
	{"SCAN", "ERR wrong number of arguments for 'scan' command"},
	{"SCAN abc", "ERR invalid cursor"},
	{`SCAN " 0"`, "ERR invalid cursor"},
	{`SCAN "0 "`, "ERR invalid cursor"},
	{"SCAN 1.5", "ERR invalid cursor"},
	{"SCAN -", "ERR invalid cursor"},
	{"SCAN 18446744073709551616", "ERR invalid cursor"},
	{"SCAN 0 COUNT 0", "ERR syntax error"},
	{"SCAN 0 COUNT -1", "ERR syntax error"},
	{"SCAN 0 COUNT abc", "ERR value is not an integer or out of range"},
	{"SCAN 0 COUNT", "ERR syntax error"},
	{"SCAN 0 MATCH", "ERR syntax error"},
	{"SCAN 0 TYPE", "ERR syntax error"},
	{"SCAN 0 FOO bar", "ERR syntax error"},
	{"SCAN 0 COUNT 10 FOO", "ERR syntax error"},
}

var renameSteps = []step{
	{"SET a 1 EX 100", "OK"},
	{"RENAME a b", "OK"},
	{"EXISTS a", 0},
	{"GET b", "1"},
	{"TTL b", intBetween(95, 100)}, // the TTL moves with the value
	{"RENAME a b", "ERR no such key"},
	{"RENAME nokey nokey", "ERR no such key"},
	{"RENAME b b", "OK"},
	{"GET b", "1"},
	{"SET c 3", "OK"},
	{"RENAME b c", "OK"}, // overwrites
	{"GET c", "1"},
	{"SET d 4", "OK"},
	{"RENAMENX c d", 0},
	{"GET c", "1"},
	{"RENAMENX c e", 1},
	{"GET e", "1"},
	{"RENAMENX e e", 0},
	{"RENAMENX nokey z", "ERR no such key"},
	{"RENAME", "ERR wrong number of arguments for 'rename' command"},
	{"RENAME a", "ERR wrong number of arguments for 'rename' command"},
	{"RENAMENX a", "ERR wrong number of arguments for 'renamenx' command"},
	{"RENAME a b c", "ERR wrong number of arguments for 'rename' command"},
}

func TestKeysCompat(t *testing.T) {
	s := start(t)
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"DEL UNLINK EXISTS TYPE", delExistsSteps},
		{"EXPIRE TTL PERSIST", expireSteps},
		{"KEYS SCAN", keysScanSteps},
		{"RENAME RENAMENX", renameSteps},
	} {
		t.Run(tc.name, func(t *testing.T) { compatTranscript(t, s, tc.steps) })
	}
}

// Short TTLs run out: each way of setting one, waited for by polling
// with a deadline, never by sleeping a fixed time.
func TestKeysExpire(t *testing.T) {
	s := start(t)
	rdb := s.Client()
	transcript(t, rdb, []step{
		{"SET px v PX 50", "OK"},
		{"PSETEX psetex 50 v", "OK"},
		{"SET ex v", "OK"},
		{"PEXPIRE ex 50", 1},
		{"SET at v", "OK"},
		{"PEXPIREAT at " + fmt.Sprint(time.Now().Add(50*time.Millisecond).UnixMilli()), 1},
		{"SET getex v", "OK"},
		{"GETEX getex PX 50", "v"},
		{"SET keep v PX 50", "OK"},
		{"SET keep w KEEPTTL", "OK"},
		{"SET stays v", "OK"},
	})
	expiring := []string{"px", "psetex", "ex", "at", "getex", "keep"}
	for _, k := range expiring {
		eventually(t, 5*time.Second, k+" expires", func() bool {
			return rdb.Exists(bg, k).Val() == 0
		})
	}
	transcript(t, rdb, []step{
		{"GET keep", nil},
		{"TTL keep", -2},
		{"PTTL px", -2},
		{"GET stays", "v"},
		{"TTL stays", -1},
	})
	// The sweeper deletes expired keys no one asks about.
	transcript(t, rdb, []step{{"SET swept v PX 20", "OK"}})
	eventually(t, 5*time.Second, "the sweeper counts the key out", func() bool {
		return rdb.DBSize(bg).Val() == 1
	})
	if n := rdb.Exists(bg, "swept").Val(); n != 0 {
		t.Fatalf("swept still exists")
	}
}

// Keys that expired are gone after a restart, whoever noticed them first;
// keys that did not, and their TTLs, stay.
func TestKeysExpireAcrossRestart(t *testing.T) {
	s := start(t)
	rdb := s.Client()
	deadline := time.Now().Add(100 * time.Millisecond)
	transcript(t, rdb, []step{
		{"SET short v PX 100", "OK"},
		{"SET long v EX 1000", "OK"},
		{"SET forever v", "OK"},
	})
	// Wait on the clock, not on the key: asking about it would delete it.
	eventually(t, 5*time.Second, "the short TTL passes", func() bool {
		return time.Now().After(deadline.Add(10 * time.Millisecond))
	})
	s.Restart()
	rdb = s.Client()
	transcript(t, rdb, []step{
		{"DBSIZE", 2},
		{"EXISTS short", 0},
		{"KEYS *", sameSet("long", "forever")},
		{"TTL long", intBetween(985, 1000)},
		{"TTL forever", -1},
	})
	// And a TTL that runs out after the restart still runs out.
	transcript(t, rdb, []step{{"PEXPIRE long 30", 1}})
	s.Restart()
	rdb = s.Client()
	eventually(t, 5*time.Second, "long expires after a restart", func() bool {
		return rdb.Exists(bg, "long").Val() == 0
	})
}

// A SCAN walk with go-redis's iterator returns every key exactly once when
// nothing is written during the walk, whatever COUNT and MATCH say.
func TestKeysScanWalk(t *testing.T) {
	s := start(t)
	rdb := s.Client()
	const n = 2000
	pairs := make([]any, 0, 2*n)
	for i := range n {
		pairs = append(pairs, fmt.Sprintf("key:%04d", i), i)
	}
	if err := rdb.MSet(bg, pairs...).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Set(bg, "other", "x", 0).Err(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		match string
		count int64
		want  int
	}{
		{"", 0, n + 1},
		{"", 1, n + 1},
		{"", 7, n + 1},
		{"", 100, n + 1},
		{"", 10000, n + 1},
		{"key:*", 10, n},
		{"key:1*", 50, 1000},
		{"key:00?0", 10, 10},
		{"other", 3, 1},
		{"none*", 10, 0},
	} {
		t.Run(fmt.Sprintf("MATCH %q COUNT %d", tc.match, tc.count), func(t *testing.T) {
			seen := map[string]int{}
			it := rdb.Scan(bg, 0, tc.match, tc.count).Iterator()
			for it.Next(bg) {
				seen[it.Val()]++
			}
			if err := it.Err(); err != nil {
				t.Fatal(err)
			}
			var twice []string
			for k, c := range seen {
				if c > 1 {
					twice = append(twice, k)
				}
			}
			sort.Strings(twice)
			if len(seen) != tc.want || len(twice) > 0 {
				t.Fatalf("walk saw %d keys (want %d); %d more than once: %.10q", len(seen), tc.want, len(twice), twice)
			}
		})
	}
	// COUNT bounds each step of a plain walk: it is a hint, but not a
	// licence to return everything at once.
	keys, cursor, err := rdb.Scan(bg, 0, "", 10).Result()
	if err != nil {
		t.Fatal(err)
	}
	if cursor == 0 || len(keys) > 100 {
		t.Fatalf("SCAN 0 COUNT 10 on %d keys: %d keys, cursor %d", n+1, len(keys), cursor)
	}
}

// A key present for the whole walk is returned even while others are
// written and deleted during it.
func TestKeysScanDuringWrites(t *testing.T) {
	s := start(t)
	rdb := s.Client()
	for i := range 500 {
		rdb.Set(bg, fmt.Sprintf("stable:%d", i), i, 0)
	}
	seen := map[string]bool{}
	var cursor uint64
	for i := 0; ; i++ {
		rdb.Set(bg, fmt.Sprintf("churn:%d", i), i, 0)
		rdb.Del(bg, fmt.Sprintf("churn:%d", i-3))
		keys, next, err := rdb.Scan(bg, cursor, "stable:*", 20).Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			seen[k] = true
		}
		if cursor = next; cursor == 0 {
			break
		}
	}
	if len(seen) != 500 {
		t.Fatalf("walk saw %d of 500 stable keys", len(seen))
	}
}

// Key commands take binary keys; a missing key and an empty one differ.
func TestKeysBinary(t *testing.T) {
	s := start(t)
	transcript(t, s.Client(), []step{
		{`SET "\x00\xff k\r\n" v`, "OK"},
		{`EXISTS "\x00\xff k\r\n"`, 1},
		{`RENAME "\x00\xff k\r\n" "\x01"`, "OK"},
		{`KEYS *`, sameSet("\x01")},
		{`SET "" empty-name`, "OK"},
		{`GET ""`, "empty-name"},
		{`DEL "" "\x01"`, 2},
	})
}

var touchExpireTimeSteps = []step{
	{"MSET a 1 b 2", "OK"},
	{"TOUCH a b nokey a", 3}, // a key named twice counts twice, as in EXISTS
	{"TOUCH nokey", 0},
	{"TOUCH", "ERR wrong number of arguments for 'touch' command"},
	{"EXPIRETIME a", -1},
	{"PEXPIRETIME a", -1},
	{"EXPIRETIME nokey", -2},
	{"PEXPIRETIME nokey", -2},
	{"PEXPIREAT a 4102444800123", 1},
	{"PEXPIRETIME a", 4102444800123},
	{"EXPIRETIME a", 4102444800},
	{"EXPIREAT a 4102444801", 1},
	{"EXPIRETIME a", 4102444801},
	{"PEXPIRETIME a", 4102444801000},
	{"SET a 1 PXAT 4102444800999", "OK"},
	{"EXPIRETIME a", 4102444801}, // rounded, as for TTL
	{"PERSIST a", 1},
	{"EXPIRETIME a", -1},
	{"EXPIRETIME", "ERR wrong number of arguments for 'expiretime' command"},
	{"PEXPIRETIME a b", "ERR wrong number of arguments for 'pexpiretime' command"},
}

// oneOf matches a string equal to one of want.
func oneOf(want ...string) match {
	return func(got any) string {
		for _, w := range want {
			if got == w {
				return ""
			}
		}
		return fmt.Sprintf("got %s, want one of %q", show(got, nil), want)
	}
}

var randomKeySteps = []step{
	{"RANDOMKEY", nil},
	{"SET a 1", "OK"},
	{"RANDOMKEY", "a"},
	{"SET b 2", "OK"},
	{"RANDOMKEY", oneOf("a", "b")},
	{"DEL a b", 2},
	{"RANDOMKEY", nil},
	{"RANDOMKEY x", "ERR wrong number of arguments for 'randomkey' command"},
}

var copySteps = []step{
	{"SET a hello EX 100", "OK"},
	{"COPY a b", 1},
	{"GET b", "hello"},
	{"TTL b", intBetween(95, 100)}, // the TTL goes with the value
	{"GET a", "hello"},
	{"COPY a b", 0}, // b exists
	{"SET c x", "OK"},
	{"COPY c b replace", 1},
	{"GET b", "x"},
	{"TTL b", -1},
	{"COPY nokey b", 0},
	{"COPY nokey b REPLACE", 0},
	{"GET b", "x"},
	{"COPY a b DB 0 REPLACE", 1},
	{"GET b", "hello"},
	{"SET n 12", "OK"},
	{"COPY n m", 1},
	{"OBJECT ENCODING m", "int"},
	{"COPY a a", "ERR source and destination objects are the same"},
	{"COPY a a REPLACE", "ERR source and destination objects are the same"},
	{"COPY a b DB x", "ERR value is not an integer or out of range"},
	{"COPY a b DB", "ERR syntax error"},
	{"COPY a b FOO", "ERR syntax error"},
	{"COPY a", "ERR wrong number of arguments for 'copy' command"},
}

var objectSteps = []step{
	{"SET i 12345", "OK"},
	{"OBJECT ENCODING i", "int"},
	{"SET i -9223372036854775808", "OK"},
	{"OBJECT ENCODING i", "int"},
	{"SET i 9223372036854775808", "OK"}, // past int64
	{"OBJECT ENCODING i", "embstr"},
	{"SET i 007", "OK"},
	{"OBJECT ENCODING i", "embstr"},
	{"SET e hello", "OK"},
	{"OBJECT encoding e", "embstr"},
	{"SET r 123456789012345678901234567890123456789012345", "OK"}, // 45 bytes
	{"OBJECT ENCODING r", "raw"},
	{"SET r 12345678901234567890123456789012345678901234", "OK"}, // 44
	{"OBJECT ENCODING r", "embstr"},
	{"APPEND e x", 6},
	{"OBJECT ENCODING e", "raw"}, // changed in place
	{"APPEND new 1", 1},
	{"OBJECT ENCODING new", "int"}, // a new key, encoded as SET would
	{"SET s 1234", "OK"},
	{"SETRANGE s 0 \"\"", 4},
	{"OBJECT ENCODING s", "int"},
	{"SETRANGE s 0 2", 4},
	{"OBJECT ENCODING s", "raw"},
	{"SETBIT b 0 1", 0},
	{"OBJECT ENCODING b", "raw"},
	{"SET b x", "OK"},
	{"OBJECT ENCODING b", "embstr"}, // a new value
	{"INCR counter", 1},
	{"OBJECT ENCODING counter", "int"},
	{"INCRBYFLOAT f 1.5", "1.5"},
	{"OBJECT ENCODING f", "embstr"},
	{"SET n -1", "OK"},
	{"OBJECT REFCOUNT n", 1},
	{"INCR n", 0},
	{"OBJECT REFCOUNT n", 2147483647}, // one of Redis's shared integers
	{"SET n 10000", "OK"},
	{"OBJECT REFCOUNT n", 1},
	{"OBJECT ENCODING nokey", nil},
	{"OBJECT REFCOUNT nokey", nil},
	{"OBJECT FREQ i", "ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust."},
	{"OBJECT foo i", "ERR unknown subcommand 'foo'. Try OBJECT HELP."},
	{"OBJECT ENCODING", "ERR wrong number of arguments for 'object|encoding' command"},
	{"OBJECT ENCODING a b", "ERR wrong number of arguments for 'object|encoding' command"},
	{"OBJECT", "ERR wrong number of arguments for 'object' command"},
}

func TestKeysMoreCompat(t *testing.T) {
	s := start(t)
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"TOUCH EXPIRETIME PEXPIRETIME", touchExpireTimeSteps},
		{"RANDOMKEY", randomKeySteps},
		{"COPY", copySteps},
		{"OBJECT", objectSteps},
	} {
		t.Run(tc.name, func(t *testing.T) { compatTranscript(t, s, tc.steps) })
	}
}

// COPY takes DB 0 only: there is one database, and any other index is
// answered as SELECT answers it (Redis, with 16, would copy there).
func TestCopyDB(t *testing.T) {
	s := start(t)
	transcript(t, s.Client(), []step{
		{"SET a 1", "OK"},
		{"COPY a b DB 1", "ERR DB index is out of range"},
		{"EXISTS b", 0},
		{"SELECT 1", "ERR DB index is out of range"},
	})
}

// OBJECT ENCODING and REFCOUNT after random writes, against Redis: the
// encoding follows a value's bytes and the way it was written.
func TestObjectAgainstRedis(t *testing.T) {
	ours, theirs := againstRedis(t)
	rng := rand.New(rand.NewPCG(3, 4))
	values := []string{"0", "1", "9999", "10000", "-1", "007", "+1", " 1", "1.5", "abc", "",
		"9223372036854775807", "9223372036854775808", "-9223372036854775808",
		strings.Repeat("x", 44), strings.Repeat("x", 45), strings.Repeat("7", 20)}
	pick := func() string { return values[rng.IntN(len(values))] }
	for round := 0; round < 500; round++ {
		var cmd []any
		switch rng.IntN(9) {
		case 0, 1:
			cmd = []any{"SET", "k", pick()}
		case 2:
			cmd = []any{"APPEND", "k", pick()}
		case 3:
			cmd = []any{"SETRANGE", "k", rng.IntN(3), pick()}
		case 4:
			cmd = []any{"INCR", "k"}
		case 5:
			cmd = []any{"SETBIT", "k", rng.IntN(16), rng.IntN(2)}
		case 6:
			cmd = []any{"COPY", "k", "c", "REPLACE"}
		case 7:
			cmd = []any{"MSET", "k", pick(), "c", pick()}
		default:
			cmd = []any{"DEL", "k"}
		}
		sameReplies(t, ours, theirs, [][]any{cmd,
			{"OBJECT", "ENCODING", "k"}, {"OBJECT", "REFCOUNT", "k"}, {"OBJECT", "ENCODING", "c"}})
	}
}

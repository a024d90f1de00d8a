package resp_test

import (
	"bufio"
	"context"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// stringPayload is redis-server 7.0.15's DUMP of the string "hello".
const stringPayload = "\x00\x05hello\n\x00cr\xdfve4 \n"

// DUMP and RESTORE's replies and errors, in Redis's order of checks
// (restoreCommand): options, the key, the TTL, the payload. Checked
// against redis-server 7.0.15 with TENURE_TEST_REDIS (SPEC §13).
var dumpRestoreSteps = []step{
	{"DUMP nokey", nil},
	{fmt.Sprintf("RESTORE s 0 %q", stringPayload), "OK"},
	{"GET s", "hello"},
	{"TTL s", -1},
	// The value as Redis encodes it; the footer's RDB version is tenure's
	// own (8, which every Redis since 4.0 reads), so the CRC differs too.
	{"DUMP s", match(func(got any) string {
		if p, ok := got.(string); !ok || len(p) != len(stringPayload) || p[:7] != stringPayload[:7] {
			return fmt.Sprintf("DUMP %q, want %q and a footer", got, stringPayload[:7])
		}
		return ""
	})},
	{fmt.Sprintf("RESTORE s 0 %q", stringPayload), "BUSYKEY Target key name already exists."},
	// The key is checked before the TTL and the payload.
	{"RESTORE s -1 junk", "BUSYKEY Target key name already exists."},
	{"RESTORE s2 -1 junk", "ERR Invalid TTL value, must be >= 0"},
	{"RESTORE s2 x junk", "ERR value is not an integer or out of range"},
	{"RESTORE s2 0 junk", "ERR DUMP payload version or checksum are wrong"},
	{"RESTORE s2 0 \"\\x00\\x05hello\\n\\x00cr\\xdfve4 \\x0b\"", "ERR DUMP payload version or checksum are wrong"},
	// Options come first of all.
	{"RESTORE s 0 junk FOO", "ERR syntax error"},
	{"RESTORE s 0 junk IDLETIME", "ERR syntax error"},
	{"RESTORE s 0 junk IDLETIME -1", "ERR Invalid IDLETIME value, must be >= 0"},
	{"RESTORE s 0 junk IDLETIME x", "ERR value is not an integer or out of range"},
	{"RESTORE s 0 junk FREQ 256", "ERR Invalid FREQ value, must be >= 0 and <= 255"},
	{"RESTORE s 0 junk FREQ -1", "ERR Invalid FREQ value, must be >= 0 and <= 255"},
	{"RESTORE s 0 junk IDLETIME 1 FREQ 1", "ERR syntax error"},
	{fmt.Sprintf("RESTORE s3 0 %q IDLETIME 1 IDLETIME 2", stringPayload), "OK"},
	{"RESTORE s 0 junk FREQ 1 IDLETIME 1", "ERR syntax error"},
	{fmt.Sprintf("RESTORE s 0 %q REPLACE IDLETIME 10", stringPayload), "OK"},
	{fmt.Sprintf("RESTORE s 0 %q replace absttl freq 5", stringPayload), "OK"},
	// A TTL already past: OK, and no key (the old one deleted by REPLACE).
	{fmt.Sprintf("RESTORE s 1 %q REPLACE ABSTTL", stringPayload), "OK"},
	{"EXISTS s", 0},
	{fmt.Sprintf("RESTORE s 5000 %q", stringPayload), "OK"},
	{"PTTL s", match(func(got any) string {
		if n, ok := got.(int64); !ok || n <= 4000 || n > 5000 {
			return fmt.Sprintf("PTTL %v, want about 5000", got)
		}
		return ""
	})},
	{"RESTORE", "ERR wrong number of arguments for 'restore' command"},
	{"RESTORE s 0", "ERR wrong number of arguments for 'restore' command"},
	{"DUMP", "ERR wrong number of arguments for 'dump' command"},
	{"DUMP a b", "ERR wrong number of arguments for 'dump' command"},
}

func TestDumpRestoreCompat(t *testing.T) {
	compatTranscript(t, start(t), dumpRestoreSteps)
}

// readValue is a key's type, contents (sorted where the type has no
// order) and PTTL, read with plain commands.
func readValue(t *testing.T, c *redis.Client, key string) (string, any, int64) {
	t.Helper()
	typ, err := c.Type(bg, key).Result()
	if err != nil {
		t.Fatal(err)
	}
	var v any
	switch typ {
	case "string":
		v, err = c.Get(bg, key).Result()
	case "list":
		v, err = c.LRange(bg, key, 0, -1).Result()
	case "set":
		var m []string
		m, err = c.SMembers(bg, key).Result()
		slices.Sort(m)
		v = m
	case "hash":
		v, err = c.HGetAll(bg, key).Result()
	case "zset":
		v, err = c.ZRangeWithScores(bg, key, 0, -1).Result()
	}
	if err != nil {
		t.Fatalf("%s: %v", key, err)
	}
	ttl, err := c.Do(bg, "PTTL", key).Int64()
	if err != nil {
		t.Fatal(err)
	}
	return typ, v, ttl
}

// fillRandom writes n keys of every type, of random sizes (small and past
// Redis's compact encodings' limits), some with a TTL, to c.
func fillRandom(t *testing.T, c *redis.Client, rng *rand.Rand, n int) []string {
	t.Helper()
	word := func() string {
		switch rng.IntN(5) {
		case 0:
			return fmt.Sprint(rng.Int64N(1<<40) - 1<<39) // Redis keeps these as integers
		case 1:
			return strings.Repeat("r", rng.IntN(300)) // compressible
		}
		b := make([]byte, rng.IntN(20))
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		return string(b)
	}
	var keys []string
	for i := range n {
		k := fmt.Sprintf("k%d", i)
		size := 1 + rng.IntN(5)
		if rng.IntN(4) == 0 {
			size = 200 + rng.IntN(300)
		}
		var err error
		switch i % 5 {
		case 0:
			err = c.Set(bg, k, word(), 0).Err()
		case 1:
			for range size {
				err = c.RPush(bg, k, word()).Err()
			}
		case 2:
			for range size {
				err = c.SAdd(bg, k, word()).Err()
			}
		case 3:
			for range size {
				err = c.HSet(bg, k, word(), word()).Err()
			}
		case 4:
			for range size {
				err = c.ZAdd(bg, k, redis.Z{Score: []float64{rng.NormFloat64(), float64(rng.IntN(10))}[rng.IntN(2)], Member: word()}).Err()
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		if rng.IntN(3) == 0 {
			c.PExpire(bg, k, time.Hour)
		}
		keys = append(keys, k)
	}
	return keys
}

// sameValue fails unless key on a and dst on b hold the same value, with
// TTLs within a second of each other.
func sameValue(t *testing.T, a *redis.Client, key string, b *redis.Client, dst string) {
	t.Helper()
	t1, v1, ttl1 := readValue(t, a, key)
	t2, v2, ttl2 := readValue(t, b, dst)
	if t1 != t2 || !reflect.DeepEqual(v1, v2) {
		t.Fatalf("%s is %s %.200v; %s is %s %.200v", key, t1, v1, dst, t2, v2)
	}
	if (ttl1 < 0) != (ttl2 < 0) || ttl1-ttl2 > 1000 || ttl2-ttl1 > 1000 {
		t.Fatalf("%s has PTTL %d, %s %d", key, ttl1, dst, ttl2)
	}
}

// TestDumpRestoreEveryType: each key DUMPed and RESTOREd under another
// name, its TTL passed as DUMP does not carry it, holds what it held.
func TestDumpRestoreEveryType(t *testing.T) {
	s := start(t)
	c := s.Client()
	for _, k := range fillRandom(t, c, rand.New(rand.NewPCG(5, 6)), 60) {
		p, err := c.Dump(bg, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		ttl := c.PTTL(bg, k).Val()
		if ttl < 0 {
			ttl = 0
		}
		if err := c.Restore(bg, "copy:"+k, ttl, p).Err(); err != nil {
			t.Fatalf("RESTORE of %s: %v", k, err)
		}
		sameValue(t, c, k, c, "copy:"+k)
		// REPLACE over a key of another type.
		if err := c.RestoreReplace(bg, "k0", ttl, p).Err(); err != nil {
			t.Fatal(err)
		}
		sameValue(t, c, k, c, "k0")
	}
}

// TestRestoreRedisPayloads: what redis-server 7.0.15 DUMPed, in each of
// its encodings (internal/dump/testdata), RESTOREs into tenure.
func TestRestoreRedisPayloads(t *testing.T) {
	f, err := os.Open("../internal/dump/testdata/redis-7.0.15.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c := start(t).Client()
	want := map[string]string{
		"str-lzf":        strings.Repeat("tenure", 40),
		"list-listpack":  "[a 1 -1 127 128 -4096 4095 4096 32767 -32768 8388607 2147483647 -2147483648 9223372036854775807 " + strings.Repeat("x", 70) + " " + strings.Repeat("y", 5000) + "]",
		"set-intset":     "[-3 -9000000000 2 5 70000]",
		"hash-small":     "map[f1:v1 n:12 neg:-7]",
		"zset-listpack":  "[{-Inf c} {1 a} {2.5 b} {1e+300 d}]",
		"hash-hashtable": "map[a:1 b:2 c:3 d:4 e:5 f:6]",
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	restored := 0
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) != 3 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		p, err := hex.DecodeString(fields[2])
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Restore(bg, fields[0], 0, string(p)).Err(); err != nil {
			t.Fatalf("RESTORE of Redis's %s (%s): %v", fields[0], fields[1], err)
		}
		restored++
		w, ok := want[fields[0]]
		if !ok {
			continue
		}
		_, v, _ := readValue(t, c, fields[0])
		if got := fmt.Sprint(v); got != w {
			t.Errorf("%s: %.300s, want %.300s", fields[0], got, w)
		}
	}
	if restored < 10 {
		t.Fatalf("restored %d payloads of the testdata", restored)
	}
}

// TestRestoreIsOneWrite: RESTORE in MULTI, a WATCH it breaks, the BLPOP it
// wakes and the keyspace event it sends ("restore", as Redis's).
func TestRestoreIsOneWrite(t *testing.T) {
	s := start(t)
	c := s.Client()
	if err := c.RPush(bg, "src", "a", "b").Err(); err != nil {
		t.Fatal(err)
	}
	p := c.Dump(bg, "src").Val()

	// In MULTI: queued, then run with the rest.
	cmds, err := c.TxPipelined(bg, func(pipe redis.Pipeliner) error {
		pipe.Restore(bg, "l1", 0, p)
		pipe.LLen(bg, "l1")
		return nil
	})
	if err != nil || cmds[1].(*redis.IntCmd).Val() != 2 {
		t.Fatalf("MULTI RESTORE, LLEN: %v %v", cmds, err)
	}

	// A WATCHed key RESTOREd by another client: EXEC does nothing.
	err = c.Watch(bg, func(tx *redis.Tx) error {
		if err := s.Client().RestoreReplace(bg, "l1", 0, p).Err(); err != nil {
			return err
		}
		_, err := tx.TxPipelined(bg, func(pipe redis.Pipeliner) error {
			pipe.Set(bg, "after", "1", 0)
			return nil
		})
		return err
	}, "l1")
	if err != redis.TxFailedErr {
		t.Fatalf("EXEC after a RESTORE of a watched key: %v, want it aborted", err)
	}

	// The event.
	if err := c.ConfigSet(bg, "notify-keyspace-events", "Eg").Err(); err != nil {
		t.Fatal(err)
	}
	sub := s.Client().Subscribe(bg, "__keyevent@0__:restore")
	defer sub.Close()
	if _, err := sub.Receive(bg); err != nil {
		t.Fatal(err)
	}

	// A client blocked on a missing list is woken by its RESTORE.
	popped := make(chan []string, 1)
	go func() { popped <- s.Client().BLPop(bg, 10*time.Second, "q").Val() }()
	for c.ClientList(bg).Val() == "" || !strings.Contains(c.ClientList(bg).Val(), "cmd=blpop") {
		time.Sleep(time.Millisecond)
	}
	if err := c.Restore(bg, "q", 0, p).Err(); err != nil {
		t.Fatal(err)
	}
	if got := <-popped; !reflect.DeepEqual(got, []string{"q", "a"}) {
		t.Fatalf("BLPOP woken by RESTORE: %q, want [q a]", got)
	}
	msg, err := sub.ReceiveMessage(bg)
	if err != nil || msg.Payload != "q" {
		t.Fatalf("keyspace event: %v %v, want restore of q", msg, err)
	}

	// REPLACE with a TTL already past: the old key is deleted, and told.
	if err := sub.Subscribe(bg, "__keyevent@0__:del"); err != nil {
		t.Fatal(err)
	}
	if err := c.Do(bg, "RESTORE", "q", "1", p, "REPLACE", "ABSTTL").Err(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(bg, 10*time.Second)
	defer cancel()
	for {
		msg, err := sub.Receive(ctx)
		if err != nil {
			t.Fatalf("waiting for the del event: %v", err)
		}
		if m, ok := msg.(*redis.Message); ok {
			if m.Channel != "__keyevent@0__:del" || m.Payload != "q" || c.Exists(bg, "q").Val() != 0 {
				t.Fatalf("after RESTORE … REPLACE with a past TTL: %s %s, EXISTS %d", m.Channel, m.Payload, c.Exists(bg, "q").Val())
			}
			break
		}
	}
}

// TestDumpRestoreAgainstRedis: random keys of every type move both ways
// between tenure and a real Redis (TENURE_TEST_REDIS): Redis's DUMP
// RESTOREd into tenure, tenure's DUMP RESTOREd into Redis.
func TestDumpRestoreAgainstRedis(t *testing.T) {
	ours, theirs := againstRedis(t)
	rng := rand.New(rand.NewPCG(7, 8))
	for _, k := range fillRandom(t, theirs, rng, 100) {
		p, err := theirs.Dump(bg, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		ttl := max(theirs.PTTL(bg, k).Val(), 0)
		if err := ours.Restore(bg, k, ttl, p).Err(); err != nil {
			t.Fatalf("tenure's RESTORE of Redis's %s: %v", k, err)
		}
		sameValue(t, theirs, k, ours, k)
		back, err := ours.Dump(bg, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		if err := theirs.Restore(bg, "back:"+k, ttl, back).Err(); err != nil {
			t.Fatalf("Redis's RESTORE of tenure's %s: %v", k, err)
		}
		sameValue(t, theirs, k, theirs, "back:"+k)
	}
}

// RESTORE … REPLACE keeps the fence the key remembered, as COPY … REPLACE
// does (SPEC §3: only DEL forgets a fence), so a holder with an older
// fence is still refused; a key it creates remembers none.
func TestRestoreReplaceKeepsTheFence(t *testing.T) {
	s := start(t)
	transcript(t, s.Client(), []step{
		{"SET fk v FENCE 100", "OK"},
		{"RPUSH src a b", 2},
		{fmt.Sprintf("RESTORE fresh 0 %q", stringPayload), "OK"},
		{"SET fresh x FENCE 1", "OK"},
	})
	c := s.Client()
	p := c.Dump(bg, "src").Val()
	if err := c.RestoreReplace(bg, "fk", 0, p).Err(); err != nil {
		t.Fatal(err)
	}
	transcript(t, c, []step{
		{"LRANGE fk 0 -1", []any{"a", "b"}},
		{"SET fk stale FENCE 50", "FENCED a newer fence has written this key"},
		{"SET fk fresh FENCE 100", "OK"},
	})
}

// A RESTORE … REPLACE of a key is one write: another client never finds
// the key missing between the old value and the new.
func TestRestoreReplaceIsAtomic(t *testing.T) {
	s := start(t)
	c := s.Client()
	if err := c.HSet(bg, "h", "f", "v").Err(); err != nil {
		t.Fatal(err)
	}
	p := c.Dump(bg, "h").Val()
	done := make(chan struct{})
	missing := make(chan int, 1)
	go func() {
		reader, n := s.Client(), 0
		for {
			select {
			case <-done:
				missing <- n
				return
			default:
			}
			if reader.Exists(bg, "h").Val() == 0 {
				n++
			}
		}
	}()
	for range 2000 {
		if err := c.RestoreReplace(bg, "h", 0, p).Err(); err != nil {
			t.Fatal(err)
		}
	}
	close(done)
	if n := <-missing; n > 0 {
		t.Fatalf("a reader found the key missing %d times during RESTORE … REPLACE", n)
	}
}

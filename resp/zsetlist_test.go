package resp_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tenure-db/tenure/resp/resptest"
)

// Sorted sets, lists and SORT (SPEC §13), replies and error texts as
// Redis 7.0 gives them. Run against Redis too with TENURE_TEST_REDIS (see
// compatTranscript); every step here answers alike there.
var zsetSteps = []step{
	{"ZADD z 1 a 2 b 3 c", 3},
	{"ZADD z NX 9 a 4 d", 1},
	{"ZADD z XX CH 5 a 9 nosuch", 1},
	{"ZADD z GT CH 1 a 6 b", 1},
	{"ZADD z LT 7 c 0 e", 1},
	{"ZADD z INCR 2 a", "7"},
	{"ZADD z NX INCR 2 a", nil},
	{"ZADD z GT INCR -1 a", nil},
	{"ZADD z NX XX 1 a", "ERR XX and NX options at the same time are not compatible"},
	{"ZADD z GT LT 1 a", "ERR GT, LT, and/or NX options at the same time are not compatible"},
	{"ZADD z NX GT 1 a", "ERR GT, LT, and/or NX options at the same time are not compatible"},
	{"ZADD z INCR 1 a 2 b", "ERR INCR option supports a single increment-element pair"},
	{"ZADD z 1 a 2", "ERR syntax error"},
	{"ZADD z nan a", "ERR value is not a valid float"},
	{"ZADD z x a", "ERR value is not a valid float"},
	{"ZADD inf +inf a", 1},
	{"ZINCRBY inf -inf a", "ERR resulting score is not a number (NaN)"},
	{"ZSCORE inf a", "inf"},
	{"ZINCRBY z 0.5 e", "0.5"},
	{"ZINCRBY z x e", "ERR value is not a valid float"},
	{"ZRANGE z 0 -1 WITHSCORES", []any{"e", "0.5", "c", "3", "d", "4", "b", "6", "a", "7"}},
	{"ZCARD z", 5},
	{"ZCARD nokey", 0},
	{"ZSCORE z b", "6"},
	{"ZSCORE z nosuch", nil},
	{"ZMSCORE z b nosuch a", []any{"6", nil, "7"}},
	{"ZMSCORE nokey a", []any{nil}},
	{"ZRANK z c", 1},
	{"ZREVRANK z c", 3},
	{"ZRANK z nosuch", nil},
	{"ZCOUNT z (3 6", 2},
	{"ZCOUNT z -inf +inf", 5},
	{"ZCOUNT z x 1", "ERR min or max is not a float"},
	{"ZRANGE z (3 +inf BYSCORE LIMIT 1 2", []any{"b", "a"}},
	{"ZRANGE z +inf (3 BYSCORE REV WITHSCORES", []any{"a", "7", "b", "6", "d", "4"}},
	{"ZRANGE z 0 1 LIMIT 0 1", "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX"},
	{"ZRANGE z - + BYLEX WITHSCORES", "ERR syntax error, WITHSCORES not supported in combination with BYLEX"},
	{"ZRANGE z 0 -1 REV REV", "ERR syntax error"},
	{"ZRANGE z 0 x", "ERR value is not an integer or out of range"},
	{"ZRANGE z -2 -1", []any{"b", "a"}},
	{"ZRANGE z 3 1", []any{}},
	{"ZRANGE z 1 100 REV", []any{"b", "d", "c", "e"}},
	{"ZREVRANGE z 0 1 WITHSCORES", []any{"a", "7", "b", "6"}},
	{"ZRANGEBYSCORE z 3 6", []any{"c", "d", "b"}},
	{"ZRANGEBYSCORE z 3 6 REV", "ERR syntax error"},
	{"ZREVRANGEBYSCORE z 6 3 LIMIT 1 -1", []any{"d", "c"}},
	{"ZRANGEBYSCORE z (a 3", "ERR min or max is not a float"},
	{"ZREMRANGEBYSCORE z -inf (1", 1},
	{"ZREMRANGEBYRANK z -1 -1", 1},
	{"ZRANGE z 0 -1", []any{"c", "d", "b"}},
	{"ZPOPMIN z", []any{"c", "3"}},
	{"ZPOPMAX z 5", []any{"b", "6", "d", "4"}},
	{"EXISTS z", 0},
	{"ZPOPMIN nokey", []any{}},
	{"ZPOPMIN z -1", "ERR value is out of range, must be positive"},
	{"ZADD lex 0 a 0 b 0 c 0 d 0 e", 5},
	{"ZRANGEBYLEX lex [b (d", []any{"b", "c"}},
	{"ZRANGEBYLEX lex - + LIMIT 1 2", []any{"b", "c"}},
	{"ZREVRANGEBYLEX lex + (c", []any{"e", "d"}},
	{"ZRANGE lex [d - BYLEX REV", []any{"d", "c", "b", "a"}},
	{"ZLEXCOUNT lex (a [c", 2},
	{"ZRANGEBYLEX lex b d", "ERR min or max not valid string range item"},
	{"ZREMRANGEBYLEX lex - [b", 2},
	{"ZRANGESTORE dst lex 0 0", 1},
	{"ZRANGE dst 0 -1", []any{"c"}},
	{"ZRANGESTORE dst lex 5 6", 0},
	{"EXISTS dst", 0},
	{"ZADD z1 1 a 2 b 3 c", 3},
	{"ZADD z2 10 b 20 c 30 d", 3},
	{"SADD s1 a d", 2},
	{"ZUNION 2 z1 z2 WITHSCORES", []any{"a", "1", "b", "12", "c", "23", "d", "30"}},
	{"ZUNION 2 z1 z2 WEIGHTS 2 1 AGGREGATE MAX WITHSCORES", []any{"a", "2", "b", "10", "c", "20", "d", "30"}},
	{"ZINTER 2 z1 z2 AGGREGATE MIN WITHSCORES", []any{"b", "2", "c", "3"}},
	{"ZINTER 2 z1 s1 WITHSCORES", []any{"a", "2"}},
	{"ZDIFF 2 z1 z2", []any{"a"}},
	{"ZDIFF 2 z1 z2 WEIGHTS 1 1", "ERR syntax error"},
	{"ZUNIONSTORE out 2 z1 z2 WEIGHTS 1", "ERR syntax error"},
	{"ZUNIONSTORE out 0 z1", "ERR at least 1 input key is needed for 'zunionstore' command"},
	{"ZUNIONSTORE out 3 z1 z2", "ERR syntax error"},
	{"ZUNION 2 z1 z2 WEIGHTS 1 x", "ERR weight value is not a float"},
	{"ZINTERSTORE out 2 z1 z2", 2},
	{"ZRANGE out 0 -1 WITHSCORES", []any{"b", "12", "c", "23"}},
	{"ZDIFFSTORE out 2 z2 z1", 1},
	{"ZINTERCARD 2 z1 z2", 2},
	{"ZINTERCARD 2 z1 z2 LIMIT 1", 1},
	{"ZINTERCARD 2 z1 z2 LIMIT -1", "ERR LIMIT can't be negative"},
	{"ZINTERCARD 0 z1", "ERR at least 1 input key is needed for 'zintercard' command"},
	{"ZMPOP 2 nokey z1 MIN COUNT 2", []any{"z1", []any{[]any{"a", "1"}, []any{"b", "2"}}}},
	{"ZMPOP 1 nokey MAX", nil},
	{"ZMPOP 0 z1 MAX", "ERR numkeys should be greater than 0"},
	{"ZMPOP 1 z1 MAX COUNT 0", "ERR count should be greater than 0"},
	{"ZMPOP 1 z1 SIDEWAYS", "ERR syntax error"},
	{"BZPOPMIN nokey z2 0", []any{"z2", "b", "10"}},
	{"BZMPOP 0 1 z2 MAX COUNT 10", []any{"z2", []any{[]any{"d", "30"}, []any{"c", "20"}}}},
	{"BZPOPMAX nokey 0.01", nil},
	{"BZPOPMAX nokey -1", "ERR timeout is negative"},
	{"BZPOPMAX nokey x", "ERR timeout is not a float or out of range"},
	{"ZRANDMEMBER nokey", nil},
	{"ZRANDMEMBER nokey 2", []any{}},
	{"ZRANDMEMBER z1 5 WITHSCORES", []any{"c", "3"}},
	{"ZRANDMEMBER z1 -3", []any{"c", "c", "c"}},
	{"ZRANDMEMBER z1 1 WITHSCORE", "ERR syntax error"},
	{"ZSCAN z1 0", []any{"0", []any{"c", "3"}}},
	{"ZADD fl 1.1 a", 1},
	{"ZSCAN fl 0", []any{"0", []any{"a", "1.1000000000000001"}}},
	{"ZSCORE fl a", "1.1000000000000001"},
	{"ZSCAN fl x", "ERR invalid cursor"},
	{"OBJECT ENCODING fl", "listpack"},
	{"ZADD long 1 abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyz", 1},
	{"OBJECT ENCODING long", "skiplist"},
	{"TYPE fl", "zset"},
	{"SET str v", "OK"},
	{"ZADD str 1 a", "WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"ZRANGE str 0 -1", "WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"ZUNION 2 z1 str", "WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"ZADD z", "ERR wrong number of arguments for 'zadd' command"},
}

var listSteps = []step{
	{"RPUSH l a b c", 3},
	{"LPUSH l z y", 5},
	{"LPUSHX nokey a", 0},
	{"RPUSHX l d", 6},
	{"LRANGE l 0 -1", []any{"y", "z", "a", "b", "c", "d"}},
	{"LRANGE l -2 100", []any{"c", "d"}},
	{"LRANGE l 4 2", []any{}},
	{"LRANGE nokey 0 -1", []any{}},
	{"LLEN l", 6},
	{"LINDEX l -1", "d"},
	{"LINDEX l 6", nil},
	{"LINDEX l x", "ERR value is not an integer or out of range"},
	{"LSET l 1 Z", "OK"},
	{"LSET l 6 x", "ERR index out of range"},
	{"LSET nokey 0 x", "ERR no such key"},
	{"LINSERT l BEFORE a x", 7},
	{"LINSERT l AFTER d e", 8},
	{"LINSERT l AFTER nosuch e", -1},
	{"LINSERT nokey AFTER a e", 0},
	{"LINSERT l SIDEWAYS a e", "ERR syntax error"},
	{"LRANGE l 0 -1", []any{"y", "Z", "x", "a", "b", "c", "d", "e"}},
	{"RPUSH l a b a", 11},
	{"LPOS l a", 3},
	{"LPOS l a RANK -1", 10},
	{"LPOS l a RANK 2 COUNT 0", []any{8, 10}},
	{"LPOS l a COUNT 0 MAXLEN 4", []any{3}},
	{"LPOS l nosuch", nil},
	{"LPOS l nosuch COUNT 2", []any{}},
	{"LPOS l a RANK 0", "ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list"},
	{"LPOS l a COUNT -1", "ERR COUNT can't be negative"},
	{"LPOS l a MAXLEN -1", "ERR MAXLEN can't be negative"},
	{"LREM l -2 a", 2},
	{"LREM l 0 b", 2},
	{"LRANGE l 0 -1", []any{"y", "Z", "x", "a", "c", "d", "e"}},
	{"LTRIM l 1 -2", "OK"},
	{"LRANGE l 0 -1", []any{"Z", "x", "a", "c", "d"}},
	{"LPOP l", "Z"},
	{"RPOP l 2", []any{"d", "c"}},
	{"LPOP l 0", []any{}},
	{"LPOP nokey", nil},
	{"LPOP nokey 2", nil},
	{"LPOP l -1", "ERR value is out of range, must be positive"},
	{"LPOP l 1 2", "ERR wrong number of arguments for 'lpop' command"},
	{"LMOVE l l2 LEFT RIGHT", "x"},
	{"RPOPLPUSH l l2", "a"},
	{"EXISTS l", 0},
	{"LMOVE l l2 LEFT RIGHT", nil},
	{"LMOVE l2 l2 RIGHT LEFT", "x"},
	{"LRANGE l2 0 -1", []any{"x", "a"}},
	{"LMOVE l2 l2 UP LEFT", "ERR syntax error"},
	{"LMPOP 2 nokey l2 RIGHT COUNT 5", []any{"l2", []any{"a", "x"}}},
	{"LMPOP 1 nokey LEFT", nil},
	{"LMPOP 1 l2 MIDDLE", "ERR syntax error"},
	{"RPUSH q 1 2", 2},
	{"BLPOP nokey q 0", []any{"q", "1"}},
	{"BRPOP q 0", []any{"q", "2"}},
	{"BRPOP q 0.01", nil},
	{"RPUSH q 1 2 3", 3},
	{"BLMPOP 0 1 q RIGHT COUNT 2", []any{"q", []any{"3", "2"}}},
	{"BLMOVE q q2 LEFT LEFT 0", "1"},
	{"BRPOPLPUSH q q2 0.01", nil},
	{"BLPOP q -1", "ERR timeout is negative"},
	{"OBJECT ENCODING q2", "quicklist"},
	{"TYPE q2", "list"},
	{"SET str v", "OK"},
	{"LPUSH str a", "WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"LRANGE str 0 -1", "WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"LMOVE q2 str LEFT LEFT", "WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"LMOVE nokey str LEFT LEFT", nil},
	{"LPUSH l", "ERR wrong number of arguments for 'lpush' command"},
}

var sortSteps = []step{
	{"RPUSH n 3 1 2 10", 4},
	{"SORT n", []any{"1", "2", "3", "10"}},
	{"SORT n DESC LIMIT 1 2", []any{"3", "2"}},
	{"SORT n ALPHA", []any{"1", "10", "2", "3"}},
	{"MSET w_1 30 w_2 20 w_3 10 w_10 40", "OK"},
	{"SORT n BY w_*", []any{"3", "2", "1", "10"}},
	{"SORT n BY nosort", []any{"3", "1", "2", "10"}},
	{"HSET h_1 f x", 1},
	{"HSET h_2 f y", 1},
	{"HSET h_3 f z", 1},
	{"SORT n GET # GET h_*->f", []any{"1", "x", "2", "y", "3", "z", "10", nil}},
	{"SORT n BY h_*->f ALPHA DESC", []any{"3", "2", "1", "10"}},
	{"SORT n LIMIT 0 2 STORE out", 2},
	{"LRANGE out 0 -1", []any{"1", "2"}},
	{"SORT_RO n STORE out", "ERR syntax error"},
	{"SORT_RO n DESC", []any{"10", "3", "2", "1"}},
	{"RPUSH bad a 1", 2},
	{"SORT bad", "ERR One or more scores can't be converted into double"},
	{"SORT bad ALPHA", []any{"1", "a"}},
	{"ZADD zs 3 a 1 b 2 c", 3},
	{"SORT zs BY nosort", []any{"b", "c", "a"}},
	{"SORT zs ALPHA", []any{"a", "b", "c"}},
	{"SADD ss 3 1 2", 3},
	{"SORT ss", []any{"1", "2", "3"}},
	{"SORT nokey", []any{}},
	{"SET str v", "OK"},
	{"SORT str", "WRONGTYPE Operation against a key holding the wrong kind of value"},
	{"SORT n FOO", "ERR syntax error"},
}

func TestZSetsCompat(t *testing.T) { compatTranscript(t, start(t), zsetSteps) }
func TestListsCompat(t *testing.T) { compatTranscript(t, start(t), listSteps) }
func TestSortCompat(t *testing.T)  { compatTranscript(t, start(t), sortSteps) }

// TestZSetsRESP3 checks the shapes RESP3 gives scores: doubles, and
// WITHSCORES as pairs.
func TestZSetsRESP3(t *testing.T) {
	s := start(t)
	nc, br := dialRESP3(t, s)
	for _, c := range []struct{ cmd, want string }{
		{"ZADD z 1.5 a 2 b", ":2\r\n"},
		{"ZSCORE z a", ",1.5\r\n"},
		{"ZINCRBY z 1 b", ",3\r\n"},
		{"ZRANGE z 0 -1 WITHSCORES", "*2\r\n*2\r\n$1\r\na\r\n,1.5\r\n*2\r\n$1\r\nb\r\n,3\r\n"},
		{"ZPOPMIN z", "*2\r\n$1\r\na\r\n,1.5\r\n"},
		{"ZADD z +inf c", ":1\r\n"},
		{"ZPOPMAX z 1", "*1\r\n*2\r\n$1\r\nc\r\n,inf\r\n"},
		{"ZSCORE z nosuch", "_\r\n"},
		{"BZPOPMIN z 0", "*3\r\n$1\r\nz\r\n$1\r\nb\r\n,3\r\n"},
		{"BLPOP nokey 0.01", "_\r\n"},
		{"LPOP nokey 1", "_\r\n"},
	} {
		fmt.Fprintf(nc, "%s\r\n", c.cmd)
		if got := readReply(t, br); got != c.want {
			t.Errorf("%s: %q, want %q", c.cmd, got, c.want)
		}
	}
}

func dialRESP3(t *testing.T, s *resptest.Server) (net.Conn, *bufio.Reader) {
	t.Helper()
	nc := s.Dial()
	br := bufio.NewReader(nc)
	fmt.Fprintf(nc, "HELLO 3\r\n")
	readReply(t, br)
	return nc, br
}

// readReply reads one whole RESP reply as raw text.
func readReply(t *testing.T, br *bufio.Reader) string {
	t.Helper()
	line, err := br.ReadString('\n')
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	switch line[0] {
	case '$', '=':
		n, _ := strconv.Atoi(strings.TrimSpace(line[1:]))
		if n < 0 {
			return line
		}
		buf := make([]byte, n+2)
		if _, err := ioReadFull(br, buf); err != nil {
			t.Fatalf("read: %v", err)
		}
		return line + string(buf)
	case '*', '%', '~':
		n, _ := strconv.Atoi(strings.TrimSpace(line[1:]))
		if line[0] == '%' {
			n *= 2
		}
		for range max(n, 0) {
			line += readReply(t, br)
		}
	}
	return line
}

func ioReadFull(br *bufio.Reader, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := br.Read(buf[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// blockedClients is INFO's blocked_clients.
func blockedClients(t *testing.T, c *redis.Client) int {
	t.Helper()
	info, err := c.Info(context.Background(), "clients").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "blocked_clients:"); ok {
			n, _ := strconv.Atoi(v)
			return n
		}
	}
	t.Fatal("no blocked_clients in INFO")
	return 0
}

// waitBlocked waits until n clients are blocked.
func waitBlocked(t *testing.T, c *redis.Client, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for blockedClients(t, c) != n {
		if time.Now().After(deadline) {
			t.Fatalf("blocked_clients stays %d, want %d", blockedClients(t, c), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestBlockingPopsServedInOrder (SPEC §13): clients blocked on a key are
// served in the order they blocked, under pushes from many clients at
// once. Consumers block one after another; then producers push batches
// concurrently, each an RPUSH of several tagged items: served in order,
// the items of one RPUSH go to consecutive consumers in the RPUSH's
// order, and every item goes to exactly one consumer.
func TestBlockingPopsServedInOrder(t *testing.T) {
	s := start(t)
	ctl := resp2Client(t, s)
	ctx := context.Background()
	const consumers, producers, batch = 60, 6, 10
	type got struct {
		consumer int
		item     string
	}
	results := make(chan got, consumers)
	for i := range consumers {
		c := redis.NewClient(&redis.Options{Addr: s.Addr, Protocol: 2, PoolSize: 1, ReadTimeout: -1})
		t.Cleanup(func() { c.Close() })
		go func() {
			v, err := c.BLPop(ctx, 0, "q").Result()
			if err != nil {
				t.Errorf("consumer %d: %v", i, err)
				results <- got{i, ""}
				return
			}
			results <- got{i, v[1]}
		}()
		waitBlocked(t, ctl, i+1)
	}
	var wg sync.WaitGroup
	for p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := redis.NewClient(&redis.Options{Addr: s.Addr, Protocol: 2})
			defer c.Close()
			items := make([]any, batch)
			for j := range items {
				items[j] = fmt.Sprintf("%d-%d", p, j)
			}
			if err := c.RPush(ctx, "q", items...).Err(); err != nil {
				t.Errorf("producer %d: %v", p, err)
			}
		}()
	}
	wg.Wait()
	byConsumer := make([]string, consumers)
	seen := map[string]bool{}
	for range consumers {
		r := <-results
		if seen[r.item] {
			t.Errorf("%s delivered twice", r.item)
		}
		seen[r.item] = true
		byConsumer[r.consumer] = r.item
	}
	for i := 0; i < consumers; i += batch {
		p := strings.SplitN(byConsumer[i], "-", 2)[0]
		for j := range batch {
			if want := fmt.Sprintf("%s-%d", p, j); byConsumer[i+j] != want {
				t.Fatalf("consumer %d got %q, want %q: not served in the order it blocked (%q)", i+j, byConsumer[i+j], want, byConsumer)
			}
		}
	}
	if n, _ := ctl.LLen(ctx, "q").Result(); n != 0 || blockedClients(t, ctl) != 0 {
		t.Errorf("after: %d items left, %d clients blocked", n, blockedClients(t, ctl))
	}
}

// TestBlockingPopWokenByAnyWrite: a blocked client is served by a push
// from another client, by MULTI/EXEC (once it commits, with all of it),
// by a script, by a RENAME of a list into place, by ZADD for BZPOPMIN, and
// a BLMOVE's push serves a client blocked on its destination before the
// pusher is answered (Redis's "Linked LMOVEs").
func TestBlockingPopWokenByAnyWrite(t *testing.T) {
	s := start(t)
	ctx := context.Background()
	ctl := resp2Client(t, s)
	blocked := func(args ...any) <-chan []any {
		ch := make(chan []any, 1)
		c := redis.NewClient(&redis.Options{Addr: s.Addr, Protocol: 2, PoolSize: 1, ReadTimeout: -1})
		t.Cleanup(func() { c.Close() })
		n := blockedClients(t, ctl)
		go func() {
			v, err := c.Do(ctx, args...).Result()
			if err != nil {
				ch <- []any{err.Error()}
				return
			}
			switch v := v.(type) {
			case []any:
				ch <- v
			default:
				ch <- []any{v}
			}
		}()
		waitBlocked(t, ctl, n+1)
		return ch
	}
	expect := func(ch <-chan []any, want string) {
		t.Helper()
		select {
		case v := <-ch:
			if got := fmt.Sprint(v); got != want {
				t.Errorf("got %s, want %s", got, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("not served; want %s", want)
		}
	}

	ch := blocked("BLPOP", "k", "0")
	pipe := ctl.TxPipeline()
	pipe.LPush(ctx, "k", "a")
	pipe.LPush(ctx, "k", "b")
	pipe.LPush(ctx, "k", "c")
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	expect(ch, "[k c]") // after EXEC, as Redis: the transaction whole

	ctl.Del(ctx, "k")
	ch = blocked("BRPOP", "k", "0")
	if err := ctl.Eval(ctx, "return redis.call('RPUSH', KEYS[1], 'x', 'y')", []string{"k"}).Err(); err != nil {
		t.Fatal(err)
	}
	expect(ch, "[k y]")

	ctl.Del(ctx, "k", "src")
	ch = blocked("BLPOP", "k", "0")
	ctl.RPush(ctx, "src", "moved")
	ctl.Rename(ctx, "src", "k")
	expect(ch, "[k moved]")

	ch = blocked("BZPOPMIN", "z", "0")
	ctl.ZAdd(ctx, "z", redis.Z{Score: 2, Member: "m"})
	expect(ch, "[z m 2]")

	ctl.Del(ctx, "l1", "l2", "l3")
	ch1 := blocked("BLMOVE", "l1", "l2", "RIGHT", "LEFT", "0")
	ch2 := blocked("BLMOVE", "l2", "l3", "LEFT", "RIGHT", "0")
	ctl.RPush(ctx, "l1", "foo")
	// Both served before RPUSH was answered.
	if l1, l2, l3 := ctl.LRange(ctx, "l1", 0, -1).Val(), ctl.LRange(ctx, "l2", 0, -1).Val(), ctl.LRange(ctx, "l3", 0, -1).Val(); len(l1) != 0 || len(l2) != 0 || fmt.Sprint(l3) != "[foo]" {
		t.Errorf("linked BLMOVEs: l1 %q l2 %q l3 %q, want [] [] [foo]", l1, l2, l3)
	}
	expect(ch1, "[foo]")
	expect(ch2, "[foo]")
}

// TestBlockingPopDoesNotBlockInMultiOrScript (SPEC §13): inside MULTI or
// a script a blocking pop answers at once, as its timeout would; in a
// script BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BZPOPMIN and BZPOPMAX are
// refused instead, as Redis 7.0 flags them noscript (its unit/scripting
// "Scripts can't run blpop command"), and BLMPOP and BZMPOP, which it does
// not, answer at once.
func TestBlockingPopDoesNotBlockInMultiOrScript(t *testing.T) {
	s := start(t)
	c := resp2Client(t, s)
	conn := c.Conn()
	defer conn.Close()
	transcript(t, conn, []step{
		{"MULTI", "OK"},
		{"BLPOP nokey 0", "QUEUED"},
		{"BLMOVE nokey dst LEFT LEFT 0", "QUEUED"},
		{"BZPOPMIN nokey 0", "QUEUED"},
		{"BLMPOP 0 1 nokey LEFT", "QUEUED"},
		{"EXEC", []any{nil, nil, nil, nil}},
		{"EVAL \"return redis.call('BLMPOP', 0, 1, KEYS[1], 'LEFT')\" 1 nokey", nil},
		{"RPUSH k a", 1},
		{"EVAL \"return redis.call('BLMPOP', 0, 1, KEYS[1], 'LEFT')\" 1 k", []any{"k", []any{"a"}}},
	})
	for _, pop := range []string{"'BLPOP', KEYS[1], 0", "'BRPOP', KEYS[1], 0", "'BLMOVE', KEYS[1], 'd', 'LEFT', 'LEFT', 0",
		"'BRPOPLPUSH', KEYS[1], 'd', 0", "'BZPOPMIN', KEYS[1], 0", "'BZPOPMAX', KEYS[1], 0"} {
		err := c.Do(context.Background(), "EVAL", "return redis.pcall("+pop+")", 1, "nokey").Err()
		if err == nil || !strings.Contains(err.Error(), "not allowed from script") {
			t.Errorf("EVAL of %s: %v, want not allowed from script", pop, err)
		}
	}
}

// TestBlockedClientGoneLeavesNoGhost: a blocked client that closes its
// connection is withdrawn: a push after it stays in the list, and the
// next client blocked is served.
func TestBlockedClientGoneLeavesNoGhost(t *testing.T) {
	s := start(t)
	ctx := context.Background()
	ctl := resp2Client(t, s)
	nc := s.Dial()
	fmt.Fprintf(nc, "BLPOP k 0\r\n")
	waitBlocked(t, ctl, 1)
	nc.Close()
	waitBlocked(t, ctl, 0)
	ctl.RPush(ctx, "k", "kept")
	if v := ctl.LRange(ctx, "k", 0, -1).Val(); fmt.Sprint(v) != "[kept]" {
		t.Fatalf("after the blocked client left, LRANGE = %q, want [kept]", v)
	}
	// The in-process path: a Do whose context ends is withdrawn too.
	dctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if err := s.DB.Do(dctx, "BLPOP", "other", "0").Err(); err == nil {
		t.Fatal("BLPOP in process answered after its context ended")
	}
	ctl.RPush(ctx, "other", "kept")
	if n := ctl.LLen(ctx, "other").Val(); n != 1 {
		t.Fatalf("LLEN other = %d, want 1: a withdrawn Do took the item", n)
	}
}

// TestClientUnblock: CLIENT UNBLOCK id [TIMEOUT|ERROR] answers a blocked
// pop as its timeout would, or with -UNBLOCKED; 0 for a client not
// blocked.
func TestClientUnblock(t *testing.T) {
	s := start(t)
	ctx := context.Background()
	ctl := resp2Client(t, s)
	for _, c := range []struct {
		how, want string
	}{
		{"TIMEOUT", "redis: nil"},
		{"ERROR", "UNBLOCKED client unblocked via CLIENT UNBLOCK"},
	} {
		b := redis.NewClient(&redis.Options{Addr: s.Addr, Protocol: 2, PoolSize: 1, ReadTimeout: -1})
		id := b.ClientID(ctx).Val()
		done := make(chan error, 1)
		go func() { done <- b.BLPop(ctx, 0, "k").Err() }()
		waitBlocked(t, ctl, 1)
		if n := ctl.Do(ctx, "CLIENT", "UNBLOCK", id, c.how).Val(); n != int64(1) {
			t.Errorf("CLIENT UNBLOCK %d %s = %v, want 1", id, c.how, n)
		}
		if err := <-done; err == nil || err.Error() != c.want {
			t.Errorf("unblocked by %s: %v, want %s", c.how, err, c.want)
		}
		if n := ctl.Do(ctx, "CLIENT", "UNBLOCK", id).Val(); n != int64(0) {
			t.Errorf("CLIENT UNBLOCK of a client not blocked = %v, want 0", n)
		}
		b.Close()
	}
	if err := ctl.Do(ctx, "CLIENT", "UNBLOCK", "1", "LATER").Err(); err == nil || err.Error() != "ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR" {
		t.Errorf("CLIENT UNBLOCK 1 LATER: %v", err)
	}
}

// TestBlockingPopTimeout: a timeout answers a null, and one of 0 waits
// for good (until served).
func TestBlockingPopTimeout(t *testing.T) {
	s := start(t)
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: s.Addr, Protocol: 2, ReadTimeout: -1})
	defer c.Close()
	begin := time.Now()
	if err := c.BRPop(ctx, 200*time.Millisecond, "k").Err(); err != redis.Nil {
		t.Fatalf("BRPOP k 0.2: %v, want nil", err)
	}
	if d := time.Since(begin); d < 200*time.Millisecond || d > 5*time.Second {
		t.Errorf("BRPOP k 0.2 answered after %v", d)
	}
}

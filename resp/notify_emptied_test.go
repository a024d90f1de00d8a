package resp_test

import (
	"context"
	"strings"
	"testing"
	"time"
)

// Keyspace notifications of a collection emptied (SPEC §13, issues 35 and
// 36): the command's own event, then the generic "del" of the key it
// deleted, as Redis 7 does: LPOP, RPOP with and without COUNT, BLPOP,
// BRPOP, LMPOP, BLMPOP, LMOVE (the push told before the pop, then "del"
// of the source), RPOPLPUSH, BLMOVE, LTRIM, LREM; ZREM, ZREMRANGEBY*,
// ZPOPMIN, ZPOPMAX, BZPOPMAX, ZMPOP, BZMPOP; a STORE form's empty result
// deleting its destination (ZINTERSTORE, ZRANGESTORE, ZDIFFSTORE, SORT …
// STORE; none when there was none); SPOP, SREM, SMOVE, HDEL, GETDEL. The
// events wanted are those redis-server 7.0.15 published for the same
// commands (notify-keyspace-events EA), in order.
func TestNotificationsOfCollectionsEmptied(t *testing.T) {
	s := start(t)
	ctx := context.Background()
	c := s.Client()
	sub := s.Client().PSubscribe(ctx, "__keyevent@0__:*")
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	c.ConfigSet(ctx, "notify-keyspace-events", "EA")
	for _, cmd := range []string{
		"RPUSH l a b",
		"LPOP l",
		"RPOP l",
		"RPUSH l a b",
		"LPOP l 2",
		"RPUSH l a",
		"BLPOP l 1",
		"RPUSH l a",
		"BRPOP l 1",
		"RPUSH l a",
		"LMPOP 1 l LEFT",
		"RPUSH l a",
		"BLMPOP 1 1 l RIGHT",
		"RPUSH l a",
		"LMOVE l d LEFT RIGHT",
		"RPOPLPUSH d l",
		"BLMOVE l d RIGHT LEFT 1",
		"RPUSH d b",
		"LMOVE d d LEFT RIGHT",
		"DEL d",
		"RPUSH l a b",
		"LTRIM l 5 6",
		"RPUSH l a",
		"LREM l 0 a",
		"ZADD z 1 a",
		"ZREM z a",
		"ZADD z 1 a 2 b",
		"ZREMRANGEBYSCORE z 0 5",
		"ZADD z 1 a",
		"ZREMRANGEBYRANK z 0 -1",
		"ZADD z 1 a",
		"ZREMRANGEBYLEX z - +",
		"ZADD z 1 a",
		"ZPOPMIN z",
		"ZADD z 1 a",
		"ZPOPMAX z 5",
		"ZADD z 1 a",
		"BZPOPMAX z 1",
		"ZADD z 1 a",
		"ZMPOP 1 z MIN",
		"ZADD z 1 a",
		"BZMPOP 1 1 z MAX",
		"ZADD z 1 a",
		"ZADD y 1 b",
		"ZINTERSTORE z 2 z y",
		"ZADD z 1 a",
		"ZRANGESTORE z y 5 6",
		"ZUNIONSTORE z 1 nothing",
		"ZADD z 1 a",
		"ZDIFFSTORE z 2 y y",
		"RPUSH l a",
		"SORT nothing STORE l",
		"SORT nothing STORE l",
		"SADD s a",
		"SPOP s",
		"SADD s a",
		"SREM s a",
		"SADD s a",
		"SMOVE s t a",
		"HSET h f v",
		"HDEL h f",
		"SET str v",
		"GETDEL str",
		"DEL y t",
	} {
		var args []any
		for _, a := range strings.Fields(cmd) {
			args = append(args, a)
		}
		if err := c.Do(ctx, args...).Err(); err != nil && err.Error() != "redis: nil" {
			t.Fatalf("%s: %v", cmd, err)
		}
	}
	// A client blocked in BLPOP, served by an RPUSH: the push, the pop,
	// then "del".
	done := make(chan error, 1)
	go func() { done <- s.Client().BLPop(ctx, 5*time.Second, "blocked").Err() }()
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(c.ClientList(ctx).Val(), "cmd=blpop"); {
		if time.Now().After(deadline) {
			t.Fatal("the BLPOP never blocked")
		}
		time.Sleep(5 * time.Millisecond)
	}
	c.RPush(ctx, "blocked", "v")
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	want := []string{
		"rpush l", "lpop l", "rpop l", "del l", "rpush l", "lpop l", "del l", "rpush l",
		"lpop l", "del l", "rpush l", "rpop l", "del l", "rpush l", "lpop l", "del l",
		"rpush l", "rpop l", "del l", "rpush l", "rpush d", "lpop l", "del l", "lpush l",
		"rpop d", "del d", "lpush d", "rpop l", "del l", "rpush d", "rpush d", "lpop d",
		"del d", "rpush l", "ltrim l", "del l", "rpush l", "lrem l", "del l", "zadd z",
		"zrem z", "del z", "zadd z", "zremrangebyscore z", "del z", "zadd z", "zremrangebyrank z", "del z",
		"zadd z", "zremrangebylex z", "del z", "zadd z", "zpopmin z", "del z", "zadd z", "zpopmax z",
		"del z", "zadd z", "zpopmax z", "del z", "zadd z", "zpopmin z", "del z", "zadd z",
		"zpopmax z", "del z", "zadd z", "zadd y", "del z", "zadd z", "del z", "zadd z",
		"del z", "rpush l", "del l", "sadd s", "spop s", "del s", "sadd s", "srem s",
		"del s", "sadd s", "srem s", "del s", "sadd t", "hset h", "hdel h", "del h",
		"set str", "del str", "del y", "del t",
		"rpush blocked", "lpop blocked", "del blocked",
	}
	for i, w := range want {
		m := recv(t, sub)
		if got := strings.TrimPrefix(m.Channel, "__keyevent@0__:") + " " + m.Payload; got != w {
			t.Fatalf("event %d: got %q, want %q", i, got, w)
		}
	}
}

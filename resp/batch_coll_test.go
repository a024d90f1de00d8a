package resp_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/tenure-db/tenure"
	"github.com/tenure-db/tenure/resp/resptest"
)

// Pipelines of collection commands (SPEC §13): their point reads and
// writes run on the read batch's pipeline (table.go's effBatch rows), yet
// each gets the reply it would get alone, the reply redis-server 7 gives.

// startRedisServer starts the installed redis-server on a free loopback
// port, without persistence, and returns its address; the test is
// skipped where there is none.
func startRedisServer(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("no redis-server to compare with")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, port, _ := net.SplitHostPort(addr)
	cmd := exec.Command(bin, "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	for deadline := time.Now().Add(10 * time.Second); ; {
		nc, err := net.Dial("tcp", addr)
		if err == nil {
			nc.Close()
			return addr
		}
		if time.Now().After(deadline) {
			t.Fatalf("redis-server on %s: %v", addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// respConn is a raw connection that reads whole replies.
type respConn struct {
	t  *testing.T
	nc net.Conn
	br *bufio.Reader
}

func dialResp(t *testing.T, addr string) *respConn {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	nc.SetDeadline(time.Now().Add(20 * time.Second))
	return &respConn{t: t, nc: nc, br: bufio.NewReader(nc)}
}

// send writes cmds, inline, in one write(2): one read batch.
func (r *respConn) send(cmds ...string) {
	r.t.Helper()
	if _, err := io.WriteString(r.nc, strings.Join(cmds, "\r\n")+"\r\n"); err != nil {
		r.t.Fatal(err)
	}
}

// reply reads one whole reply, its lines joined by spaces.
func (r *respConn) reply() string {
	r.t.Helper()
	l, err := r.br.ReadString('\n')
	if err != nil {
		r.t.Fatalf("read reply: %v", err)
	}
	l = strings.TrimSuffix(l, "\r\n")
	switch l[0] {
	case '*':
		n, _ := strconv.Atoi(l[1:])
		parts := []string{l}
		for range n {
			parts = append(parts, r.reply())
		}
		return strings.Join(parts, " ")
	case '$':
		n, _ := strconv.Atoi(l[1:])
		if n < 0 {
			return l
		}
		b := make([]byte, n+2)
		if _, err := io.ReadFull(r.br, b); err != nil {
			r.t.Fatalf("read bulk: %v", err)
		}
		return string(b[:n])
	}
	return l
}

// pipelinedColl is one pipeline of every batched collection command, with
// failures among them (WRONGTYPE, not an integer, out of range) and a few
// requests that are not batched (LRANGE, TYPE, PING) in between.
var pipelinedColl = []string{
	"HSET h f 1 g 2", "HGET h f", "HINCRBY h f 5", "HINCRBYFLOAT h f 1.5", "HMGET h f g nope",
	"HSET h w abc", "HINCRBY h w 1", "HDEL h g", "HLEN h", "HEXISTS h g", "HSETNX h f x", "HSTRLEN h f",
	"HMSET h a 1 b 2", "HGET h b",
	"SADD s a b c", "SREM s b", "SISMEMBER s a", "SMISMEMBER s a b", "SCARD s",
	"ZADD z 1 a 2 b", "ZADD z XX CH 5 a", "ZADD z NX 9 a 3 c", "ZADD z GT CH 1 a 7 b", "ZINCRBY z 2 b",
	"ZINCRBY z x b", "ZSCORE z b", "ZMSCORE z a b nope", "ZREM z c", "ZCARD z", "ZADD z INCR 1 a",
	"ZPOPMIN z", "ZPOPMAX z 5", "EXISTS z", "ZSCORE z a",
	"RPUSH l a b c", "LPUSH l z", "LPUSHX nope x", "RPUSHX l d", "LPOP l", "RPOP l 2", "LINDEX l 0",
	"LINDEX l 9", "LSET l 0 A", "LSET l 9 x", "LSET nope 0 x", "LLEN l", "LRANGE l 0 -1", "LPOP l 0",
	"RPUSH h x", "ZADD l 1 a", "HSET l f v", "SADD z m", "HGET s f", "LPUSH s x", "ZSCORE h f", "LINDEX h 0",
	"TYPE z", "PING",
	"RPUSH q 1", "RPOP q", "RPOP q", "EXISTS q", "RPUSH q 2", "LRANGE q 0 -1",
	"DEL h", "HGET h f", "HSET h f new", "HGETALL h",
	"SREM s a c", "EXISTS s", "SADD s again", "SMEMBERS s",
}

// A pipeline of mixed collection commands gets, reply for reply, what
// redis-server 7 answers to the same bytes.
func TestPipelinedCollectionsReplyAsRedis(t *testing.T) {
	redisAddr := startRedisServer(t)
	s := resptest.Start(t, tenure.Options{})
	replies := func(addr string) []string {
		c := dialResp(t, addr)
		c.send("FLUSHALL")
		if got := c.reply(); got != "+OK" {
			t.Fatalf("FLUSHALL on %s: %q", addr, got)
		}
		c.send(pipelinedColl...)
		out := make([]string, len(pipelinedColl))
		for i := range out {
			out[i] = c.reply()
		}
		return out
	}
	want, got := replies(redisAddr), replies(s.Addr)
	for i, cmd := range pipelinedColl {
		if got[i] != want[i] {
			t.Errorf("%s: tenure %q, redis-server %q", cmd, got[i], want[i])
		}
	}
	// And the store holds what the replies told of, for another client.
	c := s.Client()
	if v, err := c.HGet(bg, "h", "f").Result(); err != nil || v != "new" {
		t.Errorf("another client: HGET h f = %q, %v; want new", v, err)
	}
	if v, err := c.LRange(bg, "l", 0, -1).Result(); err != nil || strings.Join(v, ",") != "A,b" {
		t.Errorf("another client: LRANGE l = %q, %v; want [A b]", v, err)
	}
}

// A client blocked in BLPOP is woken by a pipelined RPUSH from another
// connection, once, by the first push (as redis-server 7 serves it, before
// the next command of the pipeline runs): the pusher's later commands see
// the list without the element the blocked client took. In tenure the
// push is committed before the blocked client is served (resp/batch.go).
func TestPipelinedPushWakesBlockedPop(t *testing.T) {
	redisAddr := startRedisServer(t)
	s := resptest.Start(t, tenure.Options{})
	pushes := []string{"SET other 1", "RPUSH q a", "RPUSH q b", "LLEN q", "LRANGE q 0 -1", "RPUSH r x", "GET other"}
	run := func(addr string) (popped string, replies []string) {
		c := dialResp(t, addr)
		c.send("FLUSHALL")
		c.reply()
		waiter := dialResp(t, addr)
		waiter.send("BLPOP q r 10")
		ctl := redis.NewClient(&redis.Options{Addr: addr})
		defer ctl.Close()
		waitBlocked(t, ctl, 1)
		c.send(pushes...)
		for range pushes {
			replies = append(replies, c.reply())
		}
		return waiter.reply(), replies
	}
	wantPop, want := run(redisAddr)
	gotPop, got := run(s.Addr)
	if gotPop != wantPop || wantPop != "*2 q a" {
		t.Errorf("the blocked BLPOP got %q from tenure, %q from redis-server; want *2 q a", gotPop, wantPop)
	}
	for i, cmd := range pushes {
		if got[i] != want[i] {
			t.Errorf("%s: tenure %q, redis-server %q", cmd, got[i], want[i])
		}
	}
	if got[3] != ":1" {
		t.Errorf("LLEN q after the woken pop = %s; want :1", got[3])
	}
	waitBlocked(t, s.Client(), 0)
	if n, err := s.Client().LLen(bg, "r").Result(); err != nil || n != 1 {
		t.Errorf("LLEN r = %d, %v; want 1 (nobody blocked on it any more)", n, err)
	}
}

// A keyspace notification of a pipelined write is published once the
// write is committed: a subscriber that reads the key on hearing of it
// finds the write, however many requests of the batch come after it.
func TestPipelinedWriteNotifiedOnceCommitted(t *testing.T) {
	s := resptest.Start(t, tenure.Options{})
	ctx := bg
	c := s.Client()
	if err := c.ConfigSet(ctx, "notify-keyspace-events", "Ehl").Err(); err != nil {
		t.Fatal(err)
	}
	sub := s.Client().PSubscribe(ctx, "__keyevent@0__:*")
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	writer := dialResp(t, s.Addr)
	const rounds, reads = 30, 300
	for i := range rounds {
		cmds := []string{fmt.Sprintf("HSET h%d f v", i), fmt.Sprintf("RPUSH l%d x", i)}
		for range reads {
			cmds = append(cmds, "HGET h0 f")
		}
		writer.send(cmds...)
		for _, want := range []string{fmt.Sprintf("h%d", i), fmt.Sprintf("l%d", i)} {
			msg, err := sub.ReceiveMessage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if msg.Payload != want {
				t.Fatalf("event %s %s; want one for %s", msg.Channel, msg.Payload, want)
			}
			if n, err := c.Exists(ctx, want).Result(); err != nil || n != 1 {
				t.Fatalf("round %d: notified of %s %s, which another client does not see yet (%d, %v)", i, msg.Channel, want, n, err)
			}
		}
		for range cmds {
			writer.reply()
		}
	}
}

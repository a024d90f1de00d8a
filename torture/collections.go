package main

// Hashes, sets and sorted sets under the nemesis (SPEC §13): clients send
// HSET, HDEL, HGET, SADD, SREM, SISMEMBER, ZADD, ZREM, ZINCRBY and ZSCORE
// of a few fields and members of a few keys through the proxies, and
// check (d) holds of them too: every (key, field) and (key, member) is a
// register, written by HSET (its value), SADD ("1") or ZADD (the score),
// added to by ZINCRBY, cleared by HDEL, SREM or ZREM, read by HGET,
// SISMEMBER and ZSCORE, linearizable across kills and restarts.

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/redis/go-redis/v9"
)

const collPrefix = "coll:"

// collTracked says whether a request is one of the collection clients':
// it then goes into the raw command history.
func collTracked(args []string) bool {
	if len(args) < 3 || !strings.HasPrefix(args[1], collPrefix) {
		return false
	}
	switch strings.ToLower(args[0]) {
	case "hset", "hdel", "hget", "sadd", "srem", "sismember", "zadd", "zrem", "zscore", "zincrby":
		return true
	}
	return false
}

// runCollectionClients runs n collection clients until ctx ends, each
// through addrs (the proxies), moving to the next address when one fails
// (a cluster's follower answers -MOVED).
func runCollectionClients(ctx context.Context, wg *sync.WaitGroup, addrs []string, n int, seed uint64) []func() {
	// Paced at 1 ms, so that the lock clients keep their share.
	return runDataClients(ctx, wg, addrs, n, seed, time.Millisecond, func(c *redis.Client, rng *rand.Rand, i, n int) error {
		kind := rng.IntN(3)
		hash, zset := kind == 0, kind == 2
		key := fmt.Sprintf("%s%s:%d", collPrefix, "hsz"[kind:kind+1], rng.IntN(3))
		m := fmt.Sprintf("m%d", rng.IntN(4))
		switch op := rng.IntN(4); {
		case zset && op == 0:
			return c.ZAdd(ctx, key, redis.Z{Score: float64(rng.IntN(100)), Member: m}).Err()
		case zset && op == 1:
			return c.ZRem(ctx, key, m).Err()
		case zset && op == 2:
			return c.ZIncrBy(ctx, key, float64(1+rng.IntN(5)), m).Err()
		case zset:
			return c.ZScore(ctx, key, m).Err()
		case hash && op == 0:
			return c.HSet(ctx, key, m, fmt.Sprintf("%d.%d", i, n)).Err()
		case hash && op == 1:
			return c.HDel(ctx, key, m).Err()
		case hash:
			return c.HGet(ctx, key, m).Err()
		case op == 0 || op == 3:
			return c.SAdd(ctx, key, m).Err()
		case op == 1:
			return c.SRem(ctx, key, m).Err()
		}
		return c.SIsMember(ctx, key, m).Err()
	})
}

// runDataClients runs n clients until ctx ends, each sending op's
// commands (op of client i's n-th turn) through addrs (the proxies), one
// turn every pace, moving to the next address, after 20 ms, when one
// fails (a cluster's follower answers -MOVED). It returns what closes
// their connections.
func runDataClients(ctx context.Context, wg *sync.WaitGroup, addrs []string, n int, seed uint64, pace time.Duration,
	op func(c *redis.Client, rng *rand.Rand, i, n int) error) []func() {
	var closers []func()
	for i := range n {
		clients, closeClients := proxyClients(addrs)
		closers = append(closers, closeClients)
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(i)))
			at := 0
			for n := 0; ctx.Err() == nil; n++ {
				pause := pace
				if err := op(clients[at%len(clients)], rng, i, n); err != nil && err != redis.Nil {
					at++
					pause = 20 * time.Millisecond
				}
				if !sleep(ctx, pause) {
					return
				}
			}
		}()
	}
	return closers
}

// proxyClients are a data client's connections, one through each of addrs
// (the proxies), and what closes them. A read times out after 2 s, past
// the queue's BRPOP of a second.
func proxyClients(addrs []string) ([]*redis.Client, func()) {
	clients := make([]*redis.Client, len(addrs))
	for j, a := range addrs {
		clients[j] = redis.NewClient(&redis.Options{Addr: a, MaxRetries: -1, PoolSize: 1, DialTimeout: time.Second, ReadTimeout: 2 * time.Second})
	}
	return clients, func() {
		for _, c := range clients {
			c.Close()
		}
	}
}

// collInput is one command on one (key, member) register; Value "" is
// absent. Incr is a ZINCRBY's increment: it adds to the score (absent: 0)
// and answers the sum.
type collInput struct {
	Reg   string // key, NUL, field or member
	Write bool
	Value string
	Incr  int64
}

// collOutput is its reply: a read's value ("" absent), or Unknown.
type collOutput struct {
	Unknown bool
	Value   string
}

// memberRegister is the sequential specification of a (key, member):
// absent at first; a write sets it (HSET: its value, SADD: "1", ZADD: the
// score, HDEL, SREM and ZREM: absent); ZINCRBY adds to the score and
// answers it; a read sees the last write. The sorted sets' scores are
// integers, which Redis writes without a decimal point.
var memberRegister = porcupine.Model{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		by := map[string][]porcupine.Operation{}
		var order []string
		for _, op := range history {
			r := op.Input.(collInput).Reg
			if _, ok := by[r]; !ok {
				order = append(order, r)
			}
			by[r] = append(by[r], op)
		}
		out := make([][]porcupine.Operation, 0, len(order))
		for _, r := range order {
			out = append(out, by[r])
		}
		return out
	},
	Init: func() any { return "" },
	Step: func(state, input, output any) (bool, any) {
		st, in, out := state.(string), input.(collInput), output.(collOutput)
		if in.Incr != 0 {
			cur, _ := strconv.ParseInt(st, 10, 64)
			next := strconv.FormatInt(cur+in.Incr, 10)
			return out.Unknown || out.Value == next, next
		}
		if in.Write {
			return true, in.Value
		}
		return out.Unknown || out.Value == st, st
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(collInput), output.(collOutput)
		if in.Incr != 0 {
			if out.Unknown {
				return fmt.Sprintf("incr %d → ?", in.Incr)
			}
			return fmt.Sprintf("incr %d → %q", in.Incr, out.Value)
		}
		if in.Write {
			return fmt.Sprintf("write %q", in.Value)
		}
		if out.Unknown {
			return "read ?"
		}
		return fmt.Sprintf("read %q", out.Value)
	},
}

// collectionHistory is every collection command on the wire as operations
// of memberRegister, and how many were left out: reads not answered, and
// commands a cluster's follower redirected.
func collectionHistory(events []Event) ([]porcupine.Operation, int) {
	var ops []porcupine.Operation
	dropped := 0
	for _, e := range events {
		if e.Kind != evWire || !collTracked(e.Args) {
			continue
		}
		name := strings.ToLower(e.Args[0])
		in := collInput{Reg: e.Args[1] + "\x00" + e.Args[2]}
		switch name {
		case "hset":
			if len(e.Args) != 4 {
				continue
			}
			in.Write, in.Value = true, e.Args[3]
		case "sadd":
			in.Write, in.Value = true, "1"
		case "zadd":
			if len(e.Args) != 4 {
				continue
			}
			in = collInput{Reg: e.Args[1] + "\x00" + e.Args[3], Write: true, Value: e.Args[2]}
		case "zincrby":
			incr, err := strconv.ParseInt(e.Args[2], 10, 64)
			if len(e.Args) != 4 || err != nil || incr == 0 {
				continue
			}
			in = collInput{Reg: e.Args[1] + "\x00" + e.Args[3], Write: true, Incr: incr}
		case "hdel", "srem", "zrem":
			in.Write = true
		}
		out, ret := collOutput{}, e.End
		switch {
		case e.Result == "error" && (strings.HasPrefix(e.Reply, "MOVED ") || strings.HasPrefix(e.Reply, "CLUSTERDOWN")):
			dropped++
			continue
		case e.Result == "ok" || e.Result == "nil":
			if !in.Write || in.Incr != 0 {
				out.Value = e.Reply
				if name == "sismember" {
					out.Value = map[string]string{"1": "1", "0": ""}[e.Reply]
				}
			}
		case in.Write:
			out.Unknown, ret = true, math.MaxInt64 // it may have been written, at any time after
		default:
			dropped++ // a read not answered changes nothing
			continue
		}
		op := porcupine.Operation{Input: in, Call: e.Start, Output: out, Return: ret, Metadata: fmt.Sprintf("server %d", e.Target)}
		ops = append(ops, op)
	}
	return ops, dropped
}

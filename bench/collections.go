package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Hashes and sets (SPEC §13), group 11: HSET, HGET, HGETALL of 100 fields,
// SADD, SISMEMBER and SMEMBERS of 100 members, by n clients one a round
// trip or in pipelines; and big-del, the DEL of a 1,000,000-member set
// while other clients read.

// collectionScenarios are group 11's scenarios.
func collectionScenarios(s *settings) []*scenario {
	pct := func(label string) []row {
		return []row{{"p50_ms", label + " p50", "ms"}, {"p99_ms", label + " p99", "ms"}, {"p999_ms", label + " p999", "ms"}}
	}
	var out []*scenario
	for _, op := range []string{"hset", "hget", "hgetall", "sadd", "sismember", "smembers"} {
		for _, pipelined := range []bool{false, true} {
			name, title, unit := op, fmt.Sprintf("%s, %d clients, one command a round trip", strings.ToUpper(op), s.clients), "latency"
			if pipelined {
				name, title, unit = op+"-pipelined", fmt.Sprintf("%s, %d clients, pipelines of %d", strings.ToUpper(op), s.clients, s.pipeline), "pipeline"
			}
			if op == "hgetall" || op == "smembers" {
				title += ", of 100"
			}
			rate, lat := row{"ops_per_sec", "commands/s", "ops"}, pct(unit)
			out = append(out, &scenario{Name: name, Group: "15", Family: "collections", Title: title, Run: collectionOps(op, pipelined, s.clients),
				Rows: rows([]row{rate}, lat, cpuRows("command"), []row{errorsRow}), Rate: rate, Latency: lat})
		}
	}
	readLat := []row{{"read_p50_ms", "others' GET p50", "ms"}, {"read_p99_ms", "others' GET p99", "ms"}, {"read_p999_ms", "others' GET p999", "ms"}}
	out = append(out, &scenario{Name: "big-del", Group: "15", Family: "collections",
		Title: fmt.Sprintf("DEL of a 1,000,000-member set while %d clients GET, and 2 s after", s.clients),
		Run:   bigDel(s.clients), Rate: row{"reads_per_sec", "GET/s after the DEL", "ops"}, Latency: readLat,
		Rows: rows([]row{{"del_ms", "DEL latency", "ms"}, {"reads_per_sec", "GET/s after the DEL", "ops"}}, readLat,
			[]row{{"read_before_p99_ms", "others' GET p99 before the DEL", "ms"}, errorsRow})})
	return out
}

// collectionOps is one op of group 11 by n clients: on 1,000 hashes or
// sets of 100 members each, filled first.
func collectionOps(op string, pipelined bool, n int) scenarioFunc {
	return func(ctx context.Context, r *run) (map[string]float64, error) {
		const nkeys, members = 1000, 100
		c := newClient(r.p.addr, n+4, 16<<10)
		defer c.Close()
		if err := r.warm(ctx, c, n); err != nil {
			return nil, err
		}
		hash := strings.HasPrefix(op, "h")
		key := func(i int) string {
			if hash {
				return "h:" + strconv.Itoa(i)
			}
			return "s:" + strconv.Itoa(i)
		}
		var fill failures
		var fillers sync.WaitGroup
		for f := range n {
			fillers.Go(func() {
				for i := f; i < nkeys; i += n {
					var err error
					if hash {
						args := make([]any, 0, 2*members)
						for m := range members {
							args = append(args, "f"+strconv.Itoa(m), "0123456789abcdef")
						}
						err = c.HSet(ctx, key(i), args...).Err()
					} else {
						args := make([]any, members)
						for m := range args {
							args[m] = "m" + strconv.Itoa(m)
						}
						err = c.SAdd(ctx, key(i), args...).Err()
					}
					if err != nil {
						fill.add(err)
						return
					}
				}
			})
		}
		fillers.Wait()
		if fill.first != nil {
			return nil, fmt.Errorf("fill: %w", fill.first)
		}
		return closedLoop(ctx, r, c, n, pipelined, true, func() func(redis.Cmdable) error {
			rng := newRand()
			return func(cmd redis.Cmdable) error {
				k, m := key(rng.IntN(nkeys)), strconv.Itoa(rng.IntN(2*members))
				switch op {
				case "hset":
					return cmd.HSet(ctx, k, "f"+m, "0123456789abcdef").Err()
				case "hget":
					return ignoreNil(cmd.HGet(ctx, k, "f"+m).Err())
				case "hgetall":
					return cmd.HGetAll(ctx, k).Err()
				case "sadd":
					return cmd.SAdd(ctx, k, "m"+m).Err()
				case "sismember":
					return cmd.SIsMember(ctx, k, "m"+m).Err()
				}
				return cmd.SMembers(ctx, k).Err()
			}
		})
	}
}

func ignoreNil(err error) error {
	if err == redis.Nil {
		return nil
	}
	return err
}

// bigDel fills a set of 1,000,000 members, then has n clients GET while
// one DELs the set: the DEL's latency, and the readers' before and in the
// 2 s after, while the members are reclaimed (tenure) or freed (Redis,
// whose DEL frees them in the foreground unless lazyfree says otherwise).
func bigDel(n int) scenarioFunc {
	return func(ctx context.Context, r *run) (map[string]float64, error) {
		const size, chunk = 1_000_000, 1000
		c := newClient(r.p.addr, n+4, 64<<10)
		defer c.Close()
		if err := r.warm(ctx, c, n); err != nil {
			return nil, err
		}
		for i := 0; i < size; i += chunk * 16 {
			p := c.Pipeline()
			for j := i; j < min(size, i+chunk*16); j += chunk {
				args := make([]any, chunk)
				for m := range args {
					args[m] = "member:" + strconv.Itoa(j+m)
				}
				p.SAdd(ctx, "big", args...)
			}
			if _, err := p.Exec(ctx); err != nil {
				return nil, fmt.Errorf("fill: %w", err)
			}
		}
		if err := c.Set(ctx, "plain", "v", 0).Err(); err != nil {
			return nil, err
		}
		const phase = 2 * time.Second
		before, after := make([][]int64, n), make([][]int64, n)
		var delAt atomic.Int64
		var fail failures
		stop := now() + int64(2*phase)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				for ctx.Err() == nil {
					start := now()
					if start >= stop {
						return
					}
					err := c.Get(ctx, "plain").Err()
					end := now()
					if err != nil {
						fail.add(err)
						continue
					}
					switch at := delAt.Load(); {
					case at == 0:
						before[i] = append(before[i], end-start)
					case start >= at:
						after[i] = append(after[i], end-start)
					}
				}
			})
		}
		time.Sleep(phase)
		delStart := now()
		delAt.Store(delStart)
		if err := c.Del(ctx, "big").Err(); err != nil {
			fail.add(err)
		}
		delEnd := now()
		wg.Wait()
		lb, la := summarize(before), summarize(after)
		m := map[string]float64{"del_ms": float64(delEnd-delStart) / 1e6}
		if secs := float64(stop-delStart) / 1e9; secs > 0 {
			m["reads_per_sec"] = float64(la.N) / secs
		}
		la.put(m, "read_")
		mb := map[string]float64{}
		lb.put(mb, "")
		m["read_before_p99_ms"] = mb["p99_ms"]
		return m, fail.verdict(m, la.N)
	}
}

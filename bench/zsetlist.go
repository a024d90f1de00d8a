package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// Sorted sets and lists (SPEC §13), group 12: ZADD, ZSCORE, ZRANGE of 100
// by rank and by score, LPUSH, RPOP and LRANGE 0 99, by n clients one a
// round trip or in pipelines, on 1,000 keys filled first; and a queue: 50
// producers LPUSH to 50 consumers blocked in BRPOP (items/s, and the
// hand-over latency from an LPUSH sent to its item received).

// zsetListScenarios are group 12's scenarios.
func zsetListScenarios(s *settings) []*scenario {
	pct := func(label string) []row {
		return []row{{"p50_ms", label + " p50", "ms"}, {"p99_ms", label + " p99", "ms"}, {"p999_ms", label + " p999", "ms"}}
	}
	var out []*scenario
	for _, op := range []string{"zadd", "zscore", "zrange-rank", "zrange-score", "lpush", "rpop", "lrange"} {
		for _, pipelined := range []bool{false, true} {
			word := strings.ToUpper(strings.SplitN(op, "-", 2)[0])
			switch op {
			case "zrange-rank":
				word = "ZRANGE 0 99"
			case "zrange-score":
				word = "ZRANGE BYSCORE LIMIT 0 100"
			case "lrange":
				word = "LRANGE 0 99"
			}
			name, title, unit := op, fmt.Sprintf("%s, %d clients, one command a round trip", word, s.clients), "latency"
			if pipelined {
				name, title, unit = op+"-pipelined", fmt.Sprintf("%s, %d clients, pipelines of %d", word, s.clients, s.pipeline), "pipeline"
			}
			rate, lat := row{"ops_per_sec", "commands/s", "ops"}, pct(unit)
			out = append(out, &scenario{Name: name, Group: "16", Family: "zsetlist", Title: title, Run: zsetListOps(op, pipelined, s.clients),
				Rows: rows([]row{rate}, lat, cpuRows("command"), []row{errorsRow}), Rate: rate, Latency: lat})
		}
	}
	rate, lat := row{"items_per_sec", "items/s", "ops"}, pct("hand-over")
	out = append(out, &scenario{Name: "brpop-queue", Group: "16", Family: "zsetlist", Title: "a queue: 50 producers LPUSH, 50 consumers BRPOP",
		Run: brpopQueue(50, 50), Rows: rows([]row{rate}, lat, []row{errorsRow}), Rate: rate, Latency: lat})
	return out
}

// zsetListOps is one op of group 12 by n clients: on 1,000 zsets and
// lists of 200 members each, filled first.
func zsetListOps(op string, pipelined bool, n int) scenarioFunc {
	return func(ctx context.Context, r *run) (map[string]float64, error) {
		const nkeys, members = 1000, 200
		c := newClient(r.p.addr, n+4, 16<<10)
		defer c.Close()
		if err := r.warm(ctx, c, n); err != nil {
			return nil, err
		}
		zkey := func(i int) string { return "z:" + strconv.Itoa(i) }
		lkey := func(i int) string { return "l:" + strconv.Itoa(i) }
		var fill failures
		var fillers sync.WaitGroup
		for f := range n {
			fillers.Go(func() {
				for i := f; i < nkeys; i += n {
					zs := make([]redis.Z, members)
					ls := make([]any, members)
					for m := range members {
						zs[m] = redis.Z{Score: float64(m), Member: "m" + strconv.Itoa(m)}
						ls[m] = "0123456789abcdef"
					}
					if err := c.ZAdd(ctx, zkey(i), zs...).Err(); err != nil {
						fill.add(err)
						return
					}
					if err := c.RPush(ctx, lkey(i), ls...).Err(); err != nil {
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
				k, m := rng.IntN(nkeys), rng.IntN(members)
				switch op {
				case "zadd":
					return cmd.ZAdd(ctx, zkey(k), redis.Z{Score: float64(rng.IntN(1000)), Member: "m" + strconv.Itoa(m)}).Err()
				case "zscore":
					return ignoreNil(cmd.ZScore(ctx, zkey(k), "m"+strconv.Itoa(m)).Err())
				case "zrange-rank":
					return cmd.ZRange(ctx, zkey(k), 0, 99).Err()
				case "zrange-score":
					return cmd.ZRangeByScore(ctx, zkey(k), &redis.ZRangeBy{Min: strconv.Itoa(m), Max: "+inf", Count: 100}).Err()
				case "lpush":
					return cmd.LPush(ctx, lkey(k), "0123456789abcdef").Err()
				case "rpop":
					// Popped and pushed back, so the lists keep their size.
					if err := ignoreNil(cmd.RPop(ctx, lkey(k)).Err()); err != nil {
						return err
					}
					return cmd.LPush(ctx, lkey(k), "0123456789abcdef").Err()
				}
				return cmd.LRange(ctx, lkey(k), 0, 99).Err()
			}
		})
	}
}

// brpopQueue is a work queue: producers LPUSH items stamped with the time
// they were sent, consumers BRPOP them (timeout 1 s, so that they end with
// the run); the latency is from the LPUSH sent to the BRPOP's answer.
func brpopQueue(producers, consumers int) scenarioFunc {
	return func(ctx context.Context, r *run) (map[string]float64, error) {
		c := newClient(r.p.addr, producers+consumers+4, 16<<10)
		defer c.Close()
		if err := r.warm(ctx, c, producers); err != nil {
			return nil, err
		}
		if err := c.Del(ctx, "queue").Err(); err != nil {
			return nil, err
		}
		w := newWindow(r.cfg.warmup, r.cfg.duration)
		samples := make([][]int64, consumers)
		var fail failures
		var done atomic.Bool
		var wg sync.WaitGroup
		for i := range consumers {
			wg.Go(func() {
				for !done.Load() && ctx.Err() == nil {
					v, err := c.Do(ctx, "BRPOP", "queue", "1").StringSlice()
					end := now()
					if err == redis.Nil {
						continue
					}
					if err != nil {
						fail.add(err)
						continue
					}
					sent, _ := strconv.ParseInt(v[1], 10, 64)
					if w.holds(sent, end) {
						samples[i] = append(samples[i], end-sent)
					}
				}
			})
		}
		var pw sync.WaitGroup
		for range producers {
			pw.Go(func() {
				for ctx.Err() == nil {
					start := now()
					if start >= w.to {
						return
					}
					if err := c.LPush(ctx, "queue", strconv.FormatInt(start, 10)).Err(); err != nil {
						fail.add(err)
					}
				}
			})
		}
		pw.Wait()
		done.Store(true)
		wg.Wait()
		lat := summarize(samples)
		m := map[string]float64{"items_per_sec": float64(lat.N) / w.seconds()}
		lat.put(m, "")
		return m, fail.verdict(m, lat.N)
	}
}

package main

import (
	"context"
	"fmt"
	"strconv"
	"sync"

	"github.com/redis/go-redis/v9"
)

// casScript is the EVALSHA scenarios' script: a compare-and-set, the
// read-modify-write people put in a script (a GET and, when the value is
// what the caller saw, a SET). The bench passes the value the key holds as
// both arguments, so every call reads and writes: the script's dearest
// path, one write committed as a batch (LOCK-18).
var casScript = redis.NewScript(`if redis.call("get", KEYS[1]) == ARGV[1] then redis.call("set", KEYS[1], ARGV[2]) return 1 end return 0`)

// keyspace returns the GET, SET or EVALSHA (casScript) scenario of n
// clients, one command a round trip or pipelines of r.cfg.pipeline; ops
// are commands, latency is per round trip.
func keyspace(op string, pipelined bool, n int) scenarioFunc {
	return func(ctx context.Context, r *run) (map[string]float64, error) {
		const nkeys = 10_000
		c := newClient(r.p.addr, n+4, 16<<10)
		defer c.Close()
		if err := r.warm(ctx, c, n); err != nil {
			return nil, err
		}
		value := []byte("0123456789abcdef")
		keys := make([]string, nkeys)
		for i := range keys {
			keys[i] = "key:" + strconv.Itoa(i)
		}
		// Filled by all n clients in short pipelines: a cluster's leader
		// commits one client's pipelined SETs one after another, so one
		// client in long pipelines would take long and time out.
		var fill failures
		var fillers sync.WaitGroup
		const fillPipeline = 10
		fillClients := n
		for f := range fillClients {
			fillers.Go(func() {
				pipe := c.Pipeline()
				for i := f; i < len(keys); i += fillClients {
					pipe.Set(ctx, keys[i], value, 0)
					if pipe.Len() == fillPipeline || i+fillClients >= len(keys) {
						if _, err := pipe.Exec(ctx); err != nil {
							fill.add(err)
							return
						}
					}
				}
			})
		}
		fillers.Wait()
		if fill.first != nil {
			return nil, fmt.Errorf("fill: %w", fill.first)
		}
		if op == "evalsha" {
			if err := casScript.Load(ctx, c).Err(); err != nil {
				return nil, fmt.Errorf("SCRIPT LOAD: %w", err)
			}
		}
		return closedLoop(ctx, r, c, n, pipelined, false, func() func(redis.Cmdable) error {
			rng := newRand()
			return func(cmd redis.Cmdable) error {
				k := keys[rng.IntN(len(keys))]
				switch op {
				case "get":
					return cmd.Get(ctx, k).Err()
				case "evalsha":
					c := cmd.EvalSha(ctx, casScript.Hash(), []string{k}, value, value)
					if pipelined {
						return nil // Exec returns the first error
					}
					switch n, err := c.Int64(); {
					case err != nil:
						return err
					case n != 1:
						return fmt.Errorf("compare-and-set script returned %d on %s, want 1", n, k)
					}
					return nil
				}
				return cmd.Set(ctx, k, value, 0).Err()
			}
		})
	}
}

// closedLoop runs n clients on c until the measured window ends, each
// sending one command of its do (or, pipelined, a pipeline of
// r.cfg.pipeline of them) and waiting for the reply before the next: the
// commands/s, their latency and the server's CPU per command. newDo gives
// each client its own do (its own random source). With nilOK a nil reply
// is no failure (a member that is not there); without it, it is one.
func closedLoop(ctx context.Context, r *run, c *redis.Client, n int, pipelined, nilOK bool, newDo func() func(redis.Cmdable) error) (map[string]float64, error) {
	batch := 1
	if pipelined {
		batch = r.cfg.pipeline
	}
	w := newWindow(r.cfg.warmup, r.cfg.duration)
	cpu := r.meter(w)
	samples := make([][]int64, n)
	var fail failures
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			do := newDo()
			for ctx.Err() == nil {
				start := now()
				if start >= w.to {
					return
				}
				var err error
				if pipelined {
					p := c.Pipeline()
					for range batch {
						_ = do(p) // Exec returns the first error
					}
					_, err = p.Exec(ctx)
				} else {
					err = do(c)
				}
				end := now()
				if err != nil && !(nilOK && err == redis.Nil) {
					fail.add(err)
					continue
				}
				if w.holds(start, end) {
					samples[i] = append(samples[i], end-start)
				}
			}
		})
	}
	wg.Wait()
	lat := summarize(samples)
	m := map[string]float64{"ops_per_sec": float64(lat.N*batch) / w.seconds()}
	lat.put(m, "")
	if err := cpu(m, lat.N*batch); err != nil {
		return nil, err
	}
	return m, fail.verdict(m, lat.N)
}

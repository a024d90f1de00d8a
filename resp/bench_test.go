package resp_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/tenure-db/tenure"
	"github.com/tenure-db/tenure/internal/testenv"
	"github.com/tenure-db/tenure/kv"
	"github.com/tenure-db/tenure/resp/resptest"
)

// The benchmarks here run a real server in this process (Pebble on the
// real disk, --fsync everysec) and talk to it over loopback with go-redis,
// so ns/op and allocs/op are the client's and the server's together: a
// regression in either shows. bench/ compares the same paths with Redis;
// the lock paths have theirs in locks_bench_test.go.

const (
	benchKeys     = 10_000
	benchPipeline = 16
)

// benchStore starts a server with benchKeys keys of 16-byte values and
// returns a client of it.
func benchStore(b *testing.B) (*redis.Client, []string) {
	b.Helper()
	srv := resptest.Start(b, tenure.Options{})
	c := redis.NewClient(&redis.Options{Addr: srv.Addr, Protocol: 2, DisableIdentity: true, PipelinePoolSize: -1})
	b.Cleanup(func() { c.Close() })
	ctx := context.Background()
	keys := make([]string, benchKeys)
	pipe := c.Pipeline()
	for i := range keys {
		keys[i] = fmt.Sprintf("key:%05d", i)
		pipe.Set(ctx, keys[i], "0123456789abcdef", 0)
		if pipe.Len() == 500 {
			if _, err := pipe.Exec(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
	if _, err := pipe.Exec(ctx); err != nil {
		b.Fatal(err)
	}
	return c, keys
}

// pipelined runs b.N commands in pipelines of benchPipeline; an op is one
// command.
func pipelined(b *testing.B, queue func(p redis.Pipeliner, key string)) {
	c, keys := benchStore(b)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	defer testenv.ReportCPU(b)()
	for i := 0; i < b.N; {
		p := c.Pipeline()
		for n := 0; n < benchPipeline && i < b.N; n, i = n+1, i+1 {
			queue(p, keys[(i*7919)%len(keys)])
		}
		if _, err := p.Exec(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPipelinedGet(b *testing.B) {
	ctx := context.Background()
	pipelined(b, func(p redis.Pipeliner, key string) { p.Get(ctx, key) })
}

func BenchmarkPipelinedSet(b *testing.B) {
	ctx := context.Background()
	pipelined(b, func(p redis.Pipeliner, key string) { p.Set(ctx, key, "fedcba9876543210", 0) })
}

// BenchmarkDurableSet: 8 clients, one SET a round trip each, with --fsync
// always; an op is one SET. writers/sync is how many SETs an fsync
// answered on average (INFO's wal_sync_writers over wal_syncs): the group
// commit of kv/storage_walgroup.go.
func BenchmarkDurableSet(b *testing.B) {
	const clients = 8
	srv := resptest.Start(b, tenure.Options{Fsync: kv.FsyncAlways})
	c := redis.NewClient(&redis.Options{Addr: srv.Addr, Protocol: 2, DisableIdentity: true, PoolSize: clients})
	b.Cleanup(func() { c.Close() })
	ctx := context.Background()
	syncs := func() (n, writers float64) {
		info := c.Info(ctx, "persistence").Val()
		var s, w int64
		for _, line := range strings.Split(info, "\r\n") {
			fmt.Sscanf(line, "wal_syncs:%d", &s)
			fmt.Sscanf(line, "wal_sync_writers:%d", &w)
		}
		return float64(s), float64(w)
	}
	var next atomic.Int64
	s0, w0 := syncs()
	b.ReportAllocs()
	b.ResetTimer()
	defer testenv.ReportCPU(b)()
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			for i := next.Add(1); i <= int64(b.N); i = next.Add(1) {
				if err := c.Set(ctx, fmt.Sprintf("key:%05d", i%benchKeys), "fedcba9876543210", 0).Err(); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	if s1, w1 := syncs(); s1 > s0 {
		b.ReportMetric((w1-w0)/(s1-s0), "writers/sync")
	}
}

// benchCAS is bench/'s compare-and-set script: a GET, then a SET of the
// same value, so every run writes.
const benchCASSource = `if redis.call("get", KEYS[1]) == ARGV[1] then redis.call("set", KEYS[1], ARGV[2]) return 1 end return 0`

var benchCAS = redis.NewScript(benchCASSource)

// BenchmarkPipelinedEvalSHA: each op one EVALSHA of benchCAS, a
// transaction of its own (kv.Store.Tx) that reads a key and writes it.
func BenchmarkPipelinedEvalSHA(b *testing.B) {
	ctx := context.Background()
	sha := benchCAS.Hash() // taken now: go-redis's Script.Load on a pipeline clears it
	loaded := false
	pipelined(b, func(p redis.Pipeliner, key string) {
		if !loaded {
			p.ScriptLoad(ctx, benchCASSource) // before the first EVALSHA, in its pipeline
			loaded = true
		}
		p.EvalSha(ctx, sha, []string{key}, "0123456789abcdef", "0123456789abcdef")
	})
}

package resp_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/tenure-db/tenure"
	"github.com/tenure-db/tenure/internal/testenv"
	"github.com/tenure-db/tenure/kv"
	"github.com/tenure-db/tenure/resp/resptest"
)

// Pipelined collection writes and reads (resp/table.go's effBatch rows):
// a pipeline of benchPipeline commands is one commit, as SETs are. The
// keys are benchStore's names with a prefix of their type.

func BenchmarkPipelinedHSet(b *testing.B) {
	ctx := context.Background()
	pipelined(b, func(p redis.Pipeliner, key string) { p.HSet(ctx, "h"+key, "f"+key[len(key)-1:], "fedcba9876543210") })
}

func BenchmarkPipelinedZAdd(b *testing.B) {
	ctx := context.Background()
	n := 0
	pipelined(b, func(p redis.Pipeliner, key string) {
		n++
		p.ZAdd(ctx, "z"+key[len(key)-2:], redis.Z{Score: float64(n % 1000), Member: "m" + strconv.Itoa(n%100)})
	})
}

func BenchmarkPipelinedZScore(b *testing.B) {
	ctx := context.Background()
	pipelined(b, func(p redis.Pipeliner, key string) { p.ZMScore(ctx, "z"+key[len(key)-2:], "m1") }) // no redis.Nil for a missing one
}

// An RPUSH, then an LPOP of the same list: the lists stay short.
func BenchmarkPipelinedRPushLPop(b *testing.B) {
	ctx := context.Background()
	n := 0
	pipelined(b, func(p redis.Pipeliner, _ string) {
		key := "l" + strconv.Itoa(n/2%100)
		if n%2 == 0 {
			p.RPush(ctx, key, "fedcba9876543210")
		} else {
			p.LPop(ctx, key)
		}
		n++
	})
}

// With --fsync always a write is answered once on disk: a pipeline's
// writes share one fsync when they share one commit. n counts the
// commands; an op is one command.
func pipelinedFsyncAlways(b *testing.B, queue func(p redis.Pipeliner, n int)) {
	srv := resptest.Start(b, tenure.Options{Fsync: kv.FsyncAlways})
	c := redis.NewClient(&redis.Options{Addr: srv.Addr, Protocol: 2, DisableIdentity: true})
	b.Cleanup(func() { c.Close() })
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	defer testenv.ReportCPU(b)()
	for i := 0; i < b.N; {
		p := c.Pipeline()
		for n := 0; n < benchPipeline && i < b.N; n, i = n+1, i+1 {
			queue(p, i)
		}
		if _, err := p.Exec(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPipelinedHSetFsyncAlways(b *testing.B) {
	ctx := context.Background()
	pipelinedFsyncAlways(b, func(p redis.Pipeliner, n int) {
		p.HSet(ctx, "h"+strconv.Itoa(n*7919%1000), "f"+strconv.Itoa(n%10), "fedcba9876543210")
	})
}

func BenchmarkPipelinedZAddFsyncAlways(b *testing.B) {
	ctx := context.Background()
	pipelinedFsyncAlways(b, func(p redis.Pipeliner, n int) {
		p.ZAdd(ctx, "z"+strconv.Itoa(n*7919%1000), redis.Z{Score: float64(n % 1000), Member: "m" + strconv.Itoa(n%100)})
	})
}

func BenchmarkPipelinedRPushFsyncAlways(b *testing.B) {
	ctx := context.Background()
	pipelinedFsyncAlways(b, func(p redis.Pipeliner, n int) {
		p.RPush(ctx, "l"+strconv.Itoa(n*7919%1000), "fedcba9876543210")
	})
}

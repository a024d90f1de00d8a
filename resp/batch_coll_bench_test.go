package resp_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/redis/go-redis/v9"
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

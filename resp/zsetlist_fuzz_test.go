package resp_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/redis/go-redis/v9"

	"github.com/tenure-db/tenure"
	"github.com/tenure-db/tenure/resp/resptest"
)

// zlCommands are the commands FuzzZSetListCommands sends its arguments to.
var zlCommands = []string{
	"ZADD", "ZINCRBY", "ZREM", "ZCOUNT", "ZLEXCOUNT", "ZRANGE", "ZRANGESTORE", "ZRANGEBYSCORE",
	"ZREVRANGEBYSCORE", "ZRANGEBYLEX", "ZREVRANGEBYLEX", "ZREMRANGEBYRANK", "ZREMRANGEBYSCORE",
	"ZREMRANGEBYLEX", "ZPOPMIN", "ZPOPMAX", "ZMPOP", "BZPOPMIN", "BZMPOP", "ZRANDMEMBER", "ZUNION",
	"ZINTERSTORE", "ZDIFF", "ZINTERCARD", "ZSCAN", "ZRANK", "ZMSCORE",
	"LPUSH", "RPUSH", "LPOP", "RPOP", "LRANGE", "LINDEX", "LSET", "LINSERT", "LREM", "LTRIM", "LPOS",
	"LMOVE", "LMPOP", "BLPOP", "BLMOVE", "BLMPOP", "SORT", "SORT_RO",
}

var zlSeeds = []string{
	"ZADD z NX CH 1 a 2 b\nZRANGE z (1 +inf BYSCORE REV LIMIT 0 1 WITHSCORES",
	"ZADD z INCR inf a\nZINCRBY z -inf a\nZRANGEBYLEX z [a (b",
	"ZMPOP 2 z k MIN COUNT 3\nBZMPOP 0.01 1 z MAX",
	"ZUNION 2 z k WEIGHTS 1 inf AGGREGATE MIN WITHSCORES\nZINTERCARD 1 z LIMIT 0",
	"RPUSH k a b c\nLINSERT k BEFORE b x\nLREM k -1 a\nLPOS k x RANK -1 COUNT 0 MAXLEN 2",
	"LMPOP 1 k LEFT COUNT 9\nBLMOVE k k RIGHT LEFT 0.01\nLTRIM k -1 -100",
	"SORT k BY w_* GET # GET h_*->f LIMIT 0 -1 ALPHA DESC STORE k",
}

// FuzzZSetListCommands sends arbitrary arguments to the sorted-set, list
// and SORT commands, in process (tenure.DB.Do), one request at a time:
// none panics or hangs (a blocking pop is withdrawn when its 50 ms
// context ends), every error reply starts with an uppercase code word,
// and after each input every zset's and list's size is what its members
// count (ZCARD against ZRANGE 0 -1, LLEN against LRANGE 0 -1).
//
// An input is lines of requests; a line's first word picks the command
// when it is one of zlCommands, else the line's length does.
func FuzzZSetListCommands(f *testing.F) {
	s := resptest.Start(f, tenure.Options{})
	for _, seed := range zlSeeds {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, input string) {
		ctx := context.Background()
		if err := s.DB.Do(ctx, "FLUSHALL").Err(); err != nil {
			t.Fatal(err)
		}
		for line := range strings.SplitSeq(input, "\n") {
			words := strings.Split(line, " ")
			name := strings.ToUpper(words[0])
			known := false
			for _, c := range zlCommands {
				known = known || c == name
			}
			args := []any{}
			if known {
				args = append(args, name)
				words = words[1:]
			} else {
				args = append(args, zlCommands[len(line)%len(zlCommands)])
			}
			for _, w := range words {
				args = append(args, w)
			}
			rctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
			begin := time.Now()
			err := s.DB.Do(rctx, args...).Err()
			cancel()
			if d := time.Since(begin); d > 2*time.Second {
				t.Fatalf("%q took %v", args, d)
			}
			if err != nil && err != redis.Nil && !errors.Is(err, context.DeadlineExceeded) {
				if msg := err.Error(); msg == "" || !unicode.IsUpper(rune(msg[0])) || strings.HasPrefix(msg, "ERR internal") || strings.HasPrefix(msg, "ERR store failed") {
					t.Fatalf("%q: error %q", args, msg)
				}
			}
		}
		keys, err := s.DB.Do(ctx, "KEYS", "*").StringSlice()
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			switch typ, _ := s.DB.Do(ctx, "TYPE", k).Text(); typ {
			case "zset":
				n, _ := s.DB.Do(ctx, "ZCARD", k).Int()
				all, _ := s.DB.Do(ctx, "ZRANGE", k, "0", "-1").StringSlice()
				if n != len(all) || n == 0 {
					t.Fatalf("%s: ZCARD %d, ZRANGE has %d", k, n, len(all))
				}
			case "list":
				n, _ := s.DB.Do(ctx, "LLEN", k).Int()
				all, _ := s.DB.Do(ctx, "LRANGE", k, "0", "-1").StringSlice()
				if n != len(all) || n == 0 {
					t.Fatalf("%s: LLEN %d, LRANGE has %d", k, n, len(all))
				}
			}
		}
	})
}

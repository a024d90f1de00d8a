// Command goredis is go-redis v9 with Protocol: 3 against tenure, for make
// compat (compat/go-redis.sh starts the server): it holds a lock, reads
// LOCK.INFO as the map RESP3 makes it, writes with its fence, releases,
// and sees a write with the old fence refused once a newer holder wrote.
// It exits non-zero on the first check that fails.
//
//	go run ./compat/goredis PORT
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strings"

	"github.com/redis/go-redis/v9"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: goredis PORT")
		os.Exit(2)
	}
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + os.Args[1], Protocol: 3})
	defer c.Close()
	fmt.Printf("go-redis %s (Protocol: 3) against tenure on port %s\n", redis.Version(), os.Args[1])
	ctx := context.Background()

	info, err := c.ClientInfo(ctx).Result()
	check("the connection speaks RESP3 (CLIENT INFO resp=3)", err == nil && info.Resp == 3, info, err)

	lease, fence := hold(ctx, c)
	v, err := c.Do(ctx, "LOCK.INFO", "orders", "o-1").Result()
	m, ok := v.(map[any]any)
	check("LOCK.INFO is a map in RESP3", err == nil && ok && m["fence"] == fence && m["waiters"] == int64(0), v, err)
	check("SET ... FENCE with our fence", c.Do(ctx, "SET", "order:1", "shipped", "FENCE", fence).Err() == nil)
	n, err := c.Do(ctx, "LOCK.RELEASE", lease).Int64()
	check("LOCK.RELEASE", err == nil && n == 1, n, err)
	err = c.Do(ctx, "LOCK.INFO", "orders", "o-1").Err()
	check("LOCK.INFO of the free key is null", err == redis.Nil, err)

	lease2, fence2 := hold(ctx, c)
	check("the next holder gets a larger fence (LOCK-02)", fence2 > fence, fence, fence2)
	check("the new holder writes with its fence", c.Do(ctx, "SET", "order:1", "returned", "FENCE", fence2).Err() == nil)
	err = c.Do(ctx, "SET", "order:1", "late", "FENCE", fence).Err()
	check("a late write with the old fence is refused (LOCK-12)", err != nil && strings.HasPrefix(err.Error(), "FENCED "), err)
	got, err := c.Get(ctx, "order:1").Result()
	check("the key keeps the newer write", err == nil && got == "returned", got, err)
	n, err = c.Do(ctx, "LOCK.RELEASE", lease2).Int64()
	check("LOCK.RELEASE by the new holder", err == nil && n == 1, n, err)
	err = c.Do(ctx, "LOCK.HOLD", "orders", "o-1", reqid(), "WAIT", 0).Err()
	check("a free key is granted at once", err == nil, err)
	fmt.Println("go-redis: all checks passed")
}

// hold takes orders/o-1 and returns its lease id and fence.
func hold(ctx context.Context, c *redis.Client) (string, int64) {
	vals, err := c.Do(ctx, "LOCK.HOLD", "orders", "o-1", reqid(), "TTL", 5000).Slice()
	check("LOCK.HOLD grants a lease", err == nil && len(vals) == 3, vals, err)
	lease, ok1 := vals[0].(string)
	fence, ok2 := vals[1].(int64)
	check("the grant is [leaseid fence ttl]", ok1 && ok2 && len(lease) == 32 && fence > 0, vals)
	return lease, fence
}

func reqid() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func check(what string, ok bool, detail ...any) {
	if !ok {
		fmt.Fprintf(os.Stderr, "FAIL: %s %v\n", what, detail)
		os.Exit(1)
	}
	fmt.Println("ok  ", what)
}

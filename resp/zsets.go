package resp

import (
	"math"
	"strconv"

	"github.com/tenure-db/tenure/kv"
)

// Sorted sets (SPEC §13): ZADD, ZRANGE and the rest, as Redis 7.0's
// t_zset.c parses and answers them; kv/zsets.go keeps them.

// errNotFloat answers a score or an increment that is no float (ZADD, ZINCRBY).
const errNotFloat = "value is not a valid float"

// members answers zs: members alone, or with their scores (RESP2: flat;
// RESP3: a pair each, as Redis 7 answers WITHSCORES).
func (c *conn) members(zs []kv.ZMember, withScores bool) {
	if !withScores {
		c.out.Array(len(zs))
		for _, z := range zs {
			c.out.Bulk(z.Member)
		}
		return
	}
	if c.out.resp3 {
		c.out.Array(len(zs))
		for _, z := range zs {
			c.out.Array(2)
			c.out.Bulk(z.Member)
			c.out.Double(z.Score)
		}
		return
	}
	c.out.Array(2 * len(zs))
	for _, z := range zs {
		c.out.Bulk(z.Member)
		c.out.Double(z.Score)
	}
}

// cmdZAdd is ZADD key [NX|XX] [GT|LT] [CH] [INCR] score member [score member …].
func cmdZAdd(c *conn, args [][]byte) {
	var f kv.ZAddFlags
	ch := false
	i := 2
options:
	for ; i < len(args); i++ {
		switch option(args[i]) {
		case "nx":
			f.NX = true
		case "xx":
			f.XX = true
		case "ch":
			ch = true
		case "incr":
			f.Incr = true
		case "gt":
			f.GT = true
		case "lt":
			f.LT = true
		default:
			break options
		}
	}
	rest := args[i:]
	switch {
	case len(rest) == 0 || len(rest)%2 != 0:
		c.syntaxError()
		return
	case f.NX && f.XX:
		c.out.Err("XX and NX options at the same time are not compatible")
		return
	case (f.GT && f.NX) || (f.LT && f.NX) || (f.GT && f.LT):
		c.out.Err("GT, LT, and/or NX options at the same time are not compatible")
		return
	case f.Incr && len(rest) > 2:
		c.out.Err("INCR option supports a single increment-element pair")
		return
	}
	zadd(c, args[1], f, ch, rest)
}

// zadd runs ZADD's pairs (score member …) with flags f.
func zadd(c *conn, key []byte, f kv.ZAddFlags, ch bool, pairs [][]byte) {
	scores := make([]float64, len(pairs)/2)
	members := make([][]byte, len(pairs)/2)
	for j := range scores {
		s, ok := parseScore(pairs[2*j])
		if !ok {
			c.out.Err(errNotFloat)
			return
		}
		scores[j], members[j] = s, pairs[2*j+1]
	}
	res, err := c.store.ZAdd(key, f, scores, members)
	if err != nil {
		c.storeError(err)
		return
	}
	if res.Added > 0 {
		c.ready(key)
	}
	if res.Added+res.Updated > 0 {
		if f.Incr {
			c.notify(notifyZset, "zincr", key)
		} else {
			c.notify(notifyZset, "zadd", key)
		}
	}
	switch {
	case f.Incr && res.Processed > 0:
		c.out.Double(res.Score)
	case f.Incr:
		c.out.Null()
	case ch:
		c.out.Int(res.Added + res.Updated)
	default:
		c.out.Int(res.Added)
	}
}

// cmdZIncrBy is ZINCRBY key increment member.
func cmdZIncrBy(c *conn, args [][]byte) {
	zadd(c, args[1], kv.ZAddFlags{Incr: true}, false, args[2:])
}

func cmdZRem(c *conn, args [][]byte) {
	n, err := c.store.ZRem(args[1], args[2:])
	if err != nil {
		c.storeError(err)
		return
	}
	if n > 0 {
		c.notify(notifyZset, "zrem", args[1])
		c.notifyEmptied(args[1])
	}
	c.out.Int(n)
}

func cmdZCard(c *conn, args [][]byte) {
	n, err := c.store.ZCard(args[1])
	if err != nil {
		c.storeError(err)
		return
	}
	c.out.Int(n)
}

func cmdZCount(c *conn, args [][]byte)    { zcount(c, args, kv.ByScore) }
func cmdZLexCount(c *conn, args [][]byte) { zcount(c, args, kv.ByLex) }

// zcount is ZCOUNT and ZLEXCOUNT key min max.
func zcount(c *conn, args [][]byte, by kv.RangeBy) {
	spec := kv.ZRangeSpec{By: by}
	if msg := parseRangeBy(&spec, args[2], args[3]); msg != "" {
		c.out.Err(msg)
		return
	}
	n, err := c.store.ZCount(args[1], spec)
	if err != nil {
		c.storeError(err)
		return
	}
	c.out.Int(n)
}

func cmdZScore(c *conn, args [][]byte) {
	scores, ok, err := c.store.ZMScore(args[1], args[2:3])
	if err != nil {
		c.storeError(err)
		return
	}
	if !ok[0] {
		c.out.Null()
		return
	}
	c.out.Double(scores[0])
}

func cmdZMScore(c *conn, args [][]byte) {
	scores, ok, err := c.store.ZMScore(args[1], args[2:])
	if err != nil {
		c.storeError(err)
		return
	}
	c.out.Array(len(scores))
	for i, s := range scores {
		if ok[i] {
			c.out.Double(s)
		} else {
			c.out.Null()
		}
	}
}

func cmdZRank(c *conn, args [][]byte)    { zrank(c, args, false) }
func cmdZRevRank(c *conn, args [][]byte) { zrank(c, args, true) }

func zrank(c *conn, args [][]byte, rev bool) {
	rank, ok, err := c.store.ZRank(args[1], args[2], rev)
	if err != nil {
		c.storeError(err)
		return
	}
	if !ok {
		c.out.Null()
		return
	}
	c.out.Int(rank)
}

// zrange answers ZRANGE and its older spellings: args from the key on.
func zrange(c *conn, args [][]byte, by kv.RangeBy, rev, auto bool) {
	req, msg := parseZRange(args[1:], by, rev, auto, false)
	if msg != "" {
		c.out.Err(msg)
		return
	}
	zs, err := c.store.ZRange(args[0], req.spec)
	if err != nil {
		c.storeError(err)
		return
	}
	c.members(zs, req.withScores)
}

func cmdZRange(c *conn, args [][]byte) { zrange(c, args[1:], kv.ByRank, false, true) }
func cmdZRevRange(c *conn, args [][]byte) {
	zrange(c, args[1:], kv.ByRank, true, false)
}
func cmdZRangeByScore(c *conn, args [][]byte) { zrange(c, args[1:], kv.ByScore, false, false) }
func cmdZRevRangeByScore(c *conn, args [][]byte) {
	zrange(c, args[1:], kv.ByScore, true, false)
}
func cmdZRangeByLex(c *conn, args [][]byte)    { zrange(c, args[1:], kv.ByLex, false, false) }
func cmdZRevRangeByLex(c *conn, args [][]byte) { zrange(c, args[1:], kv.ByLex, true, false) }

// cmdZRangeStore is ZRANGESTORE dst src min max [BYSCORE|BYLEX] [REV] [LIMIT offset count].
func cmdZRangeStore(c *conn, args [][]byte) {
	req, msg := parseZRange(args[3:], kv.ByRank, false, true, true)
	if msg != "" {
		c.out.Err(msg)
		return
	}
	existed := c.existsIfNotifying(args[1])
	n, err := c.store.ZRangeStore(args[1], args[2], req.spec)
	if err != nil {
		c.storeError(err)
		return
	}
	switch {
	case n > 0:
		c.ready(args[1])
		c.notify(notifyZset, "zrangestore", args[1])
	case existed:
		c.notify(notifyGeneric, "del", args[1])
	}
	c.out.Int(n)
}

func cmdZRemRangeByRank(c *conn, args [][]byte)  { zremrange(c, args, kv.ByRank) }
func cmdZRemRangeByScore(c *conn, args [][]byte) { zremrange(c, args, kv.ByScore) }
func cmdZRemRangeByLex(c *conn, args [][]byte)   { zremrange(c, args, kv.ByLex) }

// zremrange is ZREMRANGEBYRANK, ZREMRANGEBYSCORE and ZREMRANGEBYLEX key
// start stop (min max).
func zremrange(c *conn, args [][]byte, by kv.RangeBy) {
	key := args[1]
	spec := kv.ZRangeSpec{By: by}
	if msg := parseRangeBy(&spec, args[2], args[3]); msg != "" {
		c.out.Err(msg)
		return
	}
	n, err := c.store.ZRemRange(key, spec)
	if err != nil {
		c.storeError(err)
		return
	}
	if n > 0 {
		c.notify(notifyZset, [...]string{kv.ByRank: "zremrangebyrank", kv.ByScore: "zremrangebyscore", kv.ByLex: "zremrangebylex"}[spec.By], key)
		c.notifyEmptied(key)
	}
	c.out.Int(n)
}

// cmdZRandMember is ZRANDMEMBER key [count [WITHSCORES]].
func cmdZRandMember(c *conn, args [][]byte) {
	if len(args) == 2 {
		zs, err := c.store.ZRandMember(args[1], 1)
		switch {
		case err != nil:
			c.storeError(err)
		case len(zs) == 0:
			c.out.Null()
		default:
			c.out.Bulk(zs[0].Member)
		}
		return
	}
	n, ok := parseInt(args[2])
	switch {
	case !ok:
		c.out.Err(errNotInteger)
		return
	case n == math.MinInt64:
		c.out.Err("value is out of range, value must between -9223372036854775807 and 9223372036854775807")
		return
	}
	withScores := false
	if len(args) > 4 || (len(args) == 4 && option(args[3]) != "withscores") {
		c.syntaxError()
		return
	}
	if len(args) == 4 {
		withScores = true
		if n < -math.MaxInt64/2 || n > math.MaxInt64/2 {
			c.out.Err("value is out of range")
			return
		}
	}
	zs, err := c.store.ZRandMember(args[1], n)
	if err != nil {
		c.storeError(err)
		return
	}
	c.members(zs, withScores)
}

// cmdZScan is ZSCAN key cursor [MATCH pattern] [COUNT count]: members and
// their scores as strings.
func cmdZScan(c *conn, args [][]byte) {
	cursor, ok := parseCursor(args[2])
	if !ok {
		c.out.Err("invalid cursor")
		return
	}
	var pattern []byte
	count := 10
	msg := parseRedisOptions(args[3:],
		opt{name: "match", value: true, set: func(v []byte) string { pattern = v; return "" }},
		opt{name: "count", value: true, set: func(v []byte) (msg string) {
			count, msg = countArg(v)
			return msg
		}},
	)
	if msg != "" {
		c.out.Err(msg)
		return
	}
	next, zs, err := c.store.ZScan(args[1], cursor, pattern, count)
	if err != nil {
		c.storeError(err)
		return
	}
	c.out.Array(2)
	c.out.BulkUint(next)
	c.out.Array(2 * len(zs))
	for _, z := range zs {
		c.out.Bulk(z.Member)
		c.out.Bulk(scoreText(z.Score))
	}
}

// scoreText is a score as Redis writes it in a string: "%.17g", inf as
// "inf".
func scoreText(f float64) []byte {
	switch {
	case math.IsInf(f, 1):
		return []byte("inf")
	case math.IsInf(f, -1):
		return []byte("-inf")
	}
	return strconv.AppendFloat(nil, f, 'g', 17, 64)
}

package resp

import (
	"math"
	"strconv"
	"strings"

	"github.com/tenure-db/tenure/internal/redistext"
	"github.com/tenure-db/tenure/kv"
)

// Sorted sets (SPEC §13): ZADD, ZRANGE and the rest, as Redis 7.0's
// t_zset.c parses and answers them; kv/zsets.go keeps them.

const (
	errNotFloat    = "value is not a valid float"
	errMinMaxFloat = "min or max is not a float"
	errMinMaxLex   = "min or max not valid string range item"
)

// parseScore reads a score as Redis's getDoubleFromObject: a float,
// "inf" and "-inf" included, NaN refused.
func parseScore(b []byte) (float64, bool) { return redistext.ParseFloat(b) }

// parseScoreBound reads one end of a score range: a float, or "(" and a
// float for an exclusive end (Redis's zslParseRange).
func parseScoreBound(b []byte) (f float64, ex, ok bool) {
	if len(b) > 0 && b[0] == '(' {
		ex, b = true, b[1:]
	}
	f, ok = redistext.ParseFloat(b)
	return f, ex, ok
}

// parseScoreRange reads min and max, or Redis's error text.
func parseScoreRange(min, max []byte) (kv.ScoreRange, string) {
	var r kv.ScoreRange
	var ok1, ok2 bool
	r.Min, r.MinEx, ok1 = parseScoreBound(min)
	r.Max, r.MaxEx, ok2 = parseScoreBound(max)
	if !ok1 || !ok2 {
		return r, errMinMaxFloat
	}
	return r, ""
}

// parseLexBound reads one end of a lex range: "-", "+", "[member" or
// "(member" (Redis's zslParseLexRangeItem).
func parseLexBound(b []byte) (kv.LexBound, bool) {
	if len(b) == 0 {
		return kv.LexBound{}, false
	}
	switch b[0] {
	case '+':
		return kv.LexBound{Inf: 1}, len(b) == 1
	case '-':
		return kv.LexBound{Inf: -1}, len(b) == 1
	case '(':
		return kv.LexBound{Value: b[1:], Ex: true}, true
	case '[':
		return kv.LexBound{Value: b[1:]}, true
	}
	return kv.LexBound{}, false
}

func parseLexRange(min, max []byte) (kv.LexRange, string) {
	lo, ok1 := parseLexBound(min)
	hi, ok2 := parseLexBound(max)
	if !ok1 || !ok2 {
		return kv.LexRange{}, errMinMaxLex
	}
	return kv.LexRange{Min: lo, Max: hi}, ""
}

// zrangeRequest is a parsed ZRANGE (or one of its older spellings).
type zrangeRequest struct {
	spec       kv.ZRangeSpec
	withScores bool
}

// parseZRange reads ZRANGE's arguments after the key: min max and the
// options, as Redis's zrangeGenericCommand reads them. by and rev fix the
// range's kind and direction for the older commands (ZRANGEBYSCORE, …),
// whose options may not change them; auto leaves them to the options
// (ZRANGE). store refuses WITHSCORES (ZRANGESTORE).
func parseZRange(args [][]byte, by kv.RangeBy, rev, auto, store bool) (zrangeRequest, string) {
	req := zrangeRequest{spec: kv.ZRangeSpec{By: by, Rev: rev, Limit: -1}}
	byAuto, revAuto := auto, auto
	limited := false
	for j := 2; j < len(args); j++ {
		switch w := option(args[j]); {
		case !store && w == "withscores":
			req.withScores = true
		case w == "limit" && len(args)-j-1 >= 2:
			off, lim, msg := parseIntPair(args[j+1], args[j+2])
			if msg != "" {
				return req, msg
			}
			req.spec.Offset, req.spec.Limit, limited = off, lim, true
			j += 2
		case revAuto && w == "rev":
			req.spec.Rev, revAuto = true, false
		case byAuto && w == "bylex":
			req.spec.By, byAuto = kv.ByLex, false
		case byAuto && w == "byscore":
			req.spec.By, byAuto = kv.ByScore, false
		default:
			return req, errSyntax
		}
	}
	if limited && req.spec.By == kv.ByRank {
		return req, "syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX"
	}
	if req.withScores && req.spec.By == kv.ByLex {
		return req, "syntax error, WITHSCORES not supported in combination with BYLEX"
	}
	if !limited && req.spec.Limit < 0 {
		req.spec.Limit = -1
	}
	lo, hi := args[0], args[1]
	if req.spec.Rev && req.spec.By != kv.ByRank {
		lo, hi = hi, lo // given as max min
	}
	return req, parseRangeBy(&req.spec, lo, hi)
}

// parseRangeBy reads lo and hi as the ends of spec's range, of the kind
// spec.By says: start and stop by rank, min and max by score or by lex;
// it returns Redis's error text, "" when both are read.
func parseRangeBy(spec *kv.ZRangeSpec, lo, hi []byte) (msg string) {
	switch spec.By {
	case kv.ByRank:
		spec.Start, spec.Stop, msg = parseIntPair(lo, hi)
	case kv.ByScore:
		spec.Score, msg = parseScoreRange(lo, hi)
	case kv.ByLex:
		spec.Lex, msg = parseLexRange(lo, hi)
	}
	return msg
}

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

func cmdZPopMin(c *conn, args [][]byte) { zpop(c, args, false) }
func cmdZPopMax(c *conn, args [][]byte) { zpop(c, args, true) }

// zpop is ZPOPMIN and ZPOPMAX key [count]: without count a flat
// [member, score]; with it, in RESP3, a pair each.
func zpop(c *conn, args [][]byte, max bool) {
	if len(args) > 3 {
		c.syntaxError()
		return
	}
	count, msg := popCountArg(args)
	if msg != "" {
		c.out.Err(msg)
		return
	}
	var zs []kv.ZMember
	var err error
	if count == 0 {
		_, err = c.store.ZCard(args[1]) // WRONGTYPE, as Redis checks before the count
	} else {
		n := count
		if n < 0 {
			n = 1
		}
		zs, err = c.store.ZPop(args[1], max, n)
	}
	if err != nil {
		c.storeError(err)
		return
	}
	if len(zs) > 0 {
		c.notify(notifyZset, zpopEvent(max), args[1])
		c.notifyEmptied(args[1])
	}
	if count >= 0 && c.out.resp3 {
		c.members(zs, true)
		return
	}
	c.out.Array(2 * len(zs))
	for _, z := range zs {
		c.out.Bulk(z.Member)
		c.out.Double(z.Score)
	}
}

// zmpopReply answers ZMPOP and BZMPOP: [key, [[member, score] …]].
func (c *conn) zmpopReply(key []byte, zs []kv.ZMember) {
	c.out.Array(2)
	c.out.Bulk(key)
	c.out.Array(len(zs))
	for _, z := range zs {
		c.out.Array(2)
		c.out.Bulk(z.Member)
		c.out.Double(z.Score)
	}
}

// cmdZMPop is ZMPOP numkeys key [key …] MIN|MAX [COUNT count].
func cmdZMPop(c *conn, args [][]byte) {
	keys, isMin, count, msg := mpopArgs(args[1:], "min", "max")
	if msg != "" {
		c.out.Err(msg)
		return
	}
	key, zs, err := c.store.ZMPop(keys, !isMin, count)
	switch {
	case err != nil:
		c.storeError(err)
	case key == nil:
		c.out.NullArray()
	default:
		c.notify(notifyZset, zpopEvent(!isMin), key)
		c.notifyEmptied(key)
		c.zmpopReply(key, zs)
	}
}

// cmdBZPopMin is BZPOPMIN key [key …] timeout: [key, member, score].
func cmdBZPopMin(c *conn, args [][]byte) { bzpop(c, args, false) }
func cmdBZPopMax(c *conn, args [][]byte) { bzpop(c, args, true) }

func bzpop(c *conn, args [][]byte, max bool) {
	timeout, msg := timeoutArg(args[len(args)-1])
	if msg != "" {
		c.out.Err(msg)
		return
	}
	keys := args[1 : len(args)-1]
	c.block(keys, timeout, func() bool {
		return c.attemptHere(args, func() bool {
			key, zs, err := c.store.ZMPop(keys, max, 1)
			return c.popped(err, key != nil, func() {
				c.notify(notifyZset, zpopEvent(max), key)
				c.notifyEmptied(key)
				c.out.Array(3)
				c.out.Bulk(key)
				c.out.Bulk(zs[0].Member)
				c.out.Double(zs[0].Score)
			})
		})
	}, c.out.NullArray)
}

// cmdBZMPop is BZMPOP timeout numkeys key [key …] MIN|MAX [COUNT count].
func cmdBZMPop(c *conn, args [][]byte) {
	timeout, keys, isMin, count, msg := blockingMPopArgs(args, "min", "max")
	if msg != "" {
		c.out.Err(msg)
		return
	}
	c.block(keys, timeout, func() bool {
		return c.attemptHere(args, func() bool {
			key, zs, err := c.store.ZMPop(keys, !isMin, count)
			return c.popped(err, key != nil, func() {
				c.notify(notifyZset, zpopEvent(!isMin), key)
				c.notifyEmptied(key)
				c.zmpopReply(key, zs)
			})
		})
	}, c.out.NullArray)
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

// zcombineArgs reads ZUNION's, ZINTER's, ZDIFF's and ZINTERCARD's
// numkeys key … and options, from numkeys on: WEIGHTS and AGGREGATE
// (not for ZDIFF or ZINTERCARD), WITHSCORES (not for a STORE form),
// LIMIT (ZINTERCARD alone).
func zcombineArgs(name string, args [][]byte, op kv.ZSetOp, store, card bool) (spec kv.ZCombineSpec, withScores bool, limit int64, msg string) {
	n, ok := parseInt(args[0])
	if !ok {
		return spec, false, 0, errNotInteger
	}
	if n < 1 {
		return spec, false, 0, "at least 1 input key is needed for '" + name + "' command"
	}
	if n > int64(len(args)-1) {
		return spec, false, 0, errSyntax
	}
	spec = kv.ZCombineSpec{Op: op, Keys: args[1 : 1+n]}
	rest := args[1+n:]
	for len(rest) > 0 {
		w := option(rest[0])
		switch {
		case op != kv.ZDiff && !card && w == "weights" && int64(len(rest)) >= n+1:
			spec.Weights = make([]float64, n)
			for i := range n {
				f, ok := parseScore(rest[1+i])
				if !ok {
					return spec, false, 0, "weight value is not a float"
				}
				spec.Weights[i] = f
			}
			rest = rest[1+n:]
		case op != kv.ZDiff && !card && w == "aggregate" && len(rest) >= 2:
			switch option(rest[1]) {
			case "sum":
				spec.Agg = kv.AggSum
			case "min":
				spec.Agg = kv.AggMin
			case "max":
				spec.Agg = kv.AggMax
			default:
				return spec, false, 0, errSyntax
			}
			rest = rest[2:]
		case !store && !card && w == "withscores":
			withScores = true
			rest = rest[1:]
		case card && w == "limit" && len(rest) >= 2:
			l, ok := parseInt(rest[1])
			if !ok || l < 0 {
				return spec, false, 0, "LIMIT can't be negative"
			}
			limit = l
			rest = rest[2:]
		default:
			return spec, false, 0, errSyntax
		}
	}
	return spec, withScores, limit, ""
}

func cmdZUnion(c *conn, args [][]byte) { zcombine(c, args, kv.ZUnion) }
func cmdZInter(c *conn, args [][]byte) { zcombine(c, args, kv.ZInter) }
func cmdZDiff(c *conn, args [][]byte)  { zcombine(c, args, kv.ZDiff) }

func zcombine(c *conn, args [][]byte, op kv.ZSetOp) {
	spec, withScores, _, msg := zcombineArgs(strings.ToLower(string(args[0])), args[1:], op, false, false)
	if msg != "" {
		c.out.Err(msg)
		return
	}
	zs, err := c.store.ZCombine(spec)
	if err != nil {
		c.storeError(err)
		return
	}
	c.members(zs, withScores)
}

func cmdZUnionStore(c *conn, args [][]byte) { zcombineStore(c, args, kv.ZUnion) }
func cmdZInterStore(c *conn, args [][]byte) { zcombineStore(c, args, kv.ZInter) }
func cmdZDiffStore(c *conn, args [][]byte)  { zcombineStore(c, args, kv.ZDiff) }

func zcombineStore(c *conn, args [][]byte, op kv.ZSetOp) {
	spec, _, _, msg := zcombineArgs(strings.ToLower(string(args[0])), args[2:], op, true, false)
	if msg != "" {
		c.out.Err(msg)
		return
	}
	existed := c.existsIfNotifying(args[1])
	n, err := c.store.ZCombineStore(args[1], spec)
	if err != nil {
		c.storeError(err)
		return
	}
	switch {
	case n > 0:
		c.ready(args[1])
		c.notify(notifyZset, strings.ToLower(string(args[0])), args[1])
	case existed:
		c.notify(notifyGeneric, "del", args[1])
	}
	c.out.Int(n)
}

// cmdZInterCard is ZINTERCARD numkeys key [key …] [LIMIT limit].
func cmdZInterCard(c *conn, args [][]byte) {
	spec, _, limit, msg := zcombineArgs("zintercard", args[1:], kv.ZInter, false, true)
	if msg != "" {
		c.out.Err(msg)
		return
	}
	n, err := c.store.ZInterCard(spec.Keys, limit)
	if err != nil {
		c.storeError(err)
		return
	}
	c.out.Int(n)
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

func zpopEvent(max bool) string {
	if max {
		return "zpopmax"
	}
	return "zpopmin"
}

package resp

import (
	"strings"

	"github.com/tenure-db/tenure/kv"
)

// Sorted sets combined: ZUNION, ZINTER, ZDIFF, their STORE forms and
// ZINTERCARD (WEIGHTS, AGGREGATE, WITHSCORES).

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

package resp

import (
	"math"
	"strings"

	"github.com/tenure-db/tenure/internal/redistext"
)

// Hash commands (SPEC §13): HSET, HSETNX, HGET, HMGET, HMSET, HGETALL,
// HKEYS, HVALS, HLEN, HEXISTS, HDEL, HINCRBY, HINCRBYFLOAT, HSTRLEN,
// HRANDFIELD, HSCAN, with Redis 7's replies and errors.

func cmdHSet(c *conn, args [][]byte) {
	if len(args)%2 != 0 {
		c.wrongArity(strings.ToLower(string(args[0])))
		return
	}
	n, err := c.store.HSet(args[1], args[2:])
	if err != nil {
		c.storeError(err)
		return
	}
	c.notify(notifyHash, "hset", args[1])
	if option(args[0]) == "hmset" {
		c.out.OK()
		return
	}
	c.out.Int(n)
}

func cmdHSetNX(c *conn, args [][]byte) {
	ok, err := c.store.HSetNX(args[1], args[2], args[3])
	if err != nil {
		c.storeError(err)
		return
	}
	if ok {
		c.notify(notifyHash, "hset", args[1])
	}
	c.out.Bool(ok)
}

func cmdHGet(c *conn, args [][]byte) {
	v, ok, err := c.store.HGet(args[1], args[2])
	if err != nil {
		c.storeError(err)
		return
	}
	c.out.BulkOrNull(v, ok)
}

func cmdHMGet(c *conn, args [][]byte) {
	vs, err := c.store.HMGet(args[1], args[2:])
	if err != nil {
		c.storeError(err)
		return
	}
	c.out.Array(len(vs))
	for _, v := range vs {
		c.out.BulkOrNull(v, v != nil)
	}
}

// cmdHGetAll is HGETALL: a map in RESP3, its pairs flat in RESP2.
func cmdHGetAll(c *conn, args [][]byte) {
	out, err := c.store.HGetAll(args[1], true, true)
	if err != nil {
		c.storeError(err)
		return
	}
	c.out.Map(len(out) / 2)
	for _, b := range out {
		c.out.Bulk(b)
	}
}

func cmdHKeys(c *conn, args [][]byte) { hashList(c, args[1], true) }
func cmdHVals(c *conn, args [][]byte) { hashList(c, args[1], false) }

func hashList(c *conn, key []byte, fields bool) {
	out, err := c.store.HGetAll(key, fields, !fields)
	if err != nil {
		c.storeError(err)
		return
	}
	c.out.Array(len(out))
	for _, b := range out {
		c.out.Bulk(b)
	}
}

func cmdHLen(c *conn, args [][]byte) {
	n, err := c.store.HLen(args[1])
	if err != nil {
		c.storeError(err)
		return
	}
	c.out.Int(n)
}

func cmdHExists(c *conn, args [][]byte) {
	ok, err := c.store.HExists(args[1], args[2])
	if err != nil {
		c.storeError(err)
		return
	}
	c.out.Bool(ok)
}

func cmdHDel(c *conn, args [][]byte) {
	n, err := c.store.HDel(args[1], args[2:])
	if err != nil {
		c.storeError(err)
		return
	}
	if n > 0 {
		c.notify(notifyHash, "hdel", args[1])
		c.notifyEmptied(args[1])
	}
	c.out.Int(n)
}

func cmdHIncrBy(c *conn, args [][]byte) {
	delta, ok := parseInt(args[3])
	if !ok {
		c.out.Err(errNotInteger)
		return
	}
	n, err := c.store.HIncrBy(args[1], args[2], delta)
	if err != nil {
		c.storeError(err)
		return
	}
	c.notify(notifyHash, "hincrby", args[1])
	c.out.Int(n)
}

func cmdHIncrByFloat(c *conn, args [][]byte) {
	delta, ok := redistext.ParseFloat(args[3])
	if !ok {
		c.out.Err("value is not a valid float")
		return
	}
	if math.IsNaN(delta) || math.IsInf(delta, 0) {
		c.out.Err("value is NaN or Infinity")
		return
	}
	v, err := c.store.HIncrByFloat(args[1], args[2], delta)
	if err != nil {
		c.storeError(err)
		return
	}
	c.notify(notifyHash, "hincrbyfloat", args[1])
	c.out.Bulk(v)
}

func cmdHStrLen(c *conn, args [][]byte) {
	n, err := c.store.HStrLen(args[1], args[2])
	if err != nil {
		c.storeError(err)
		return
	}
	c.out.Int(n)
}

// cmdHRandField is HRANDFIELD key [count [WITHVALUES]]: with WITHVALUES,
// RESP3 has a pair (an array of two) per field, RESP2 the pairs flat.
func cmdHRandField(c *conn, args [][]byte) {
	if len(args) == 2 {
		randomMember(c, args[1], kvTypeHash)
		return
	}
	count, msg := randomCount(args[2])
	if msg != "" {
		c.out.Err(msg)
		return
	}
	withValues := false
	if len(args) > 4 || (len(args) == 4 && option(args[3]) != "withvalues") {
		c.syntaxError()
		return
	}
	if len(args) == 4 {
		withValues = true
		if count < -math.MaxInt64/2 || count > math.MaxInt64/2 {
			c.out.Err("value is out of range")
			return
		}
	}
	out, err := c.store.HRandField(args[1], count, withValues)
	if err != nil {
		c.storeError(err)
		return
	}
	if !withValues {
		c.out.Array(len(out))
		for _, b := range out {
			c.out.Bulk(b)
		}
		return
	}
	if c.out.Proto() >= 3 {
		c.out.Array(len(out) / 2)
		for i := 0; i+1 < len(out); i += 2 {
			c.out.Array(2)
			c.out.Bulk(out[i])
			c.out.Bulk(out[i+1])
		}
		return
	}
	c.out.Array(len(out))
	for _, b := range out {
		c.out.Bulk(b)
	}
}

// randomCount is the count of HRANDFIELD and SRANDMEMBER, as Redis reads
// it: -LONG_MAX to LONG_MAX.
func randomCount(b []byte) (int64, string) {
	n, ok := parseInt(b)
	if !ok {
		return 0, errNotInteger
	}
	if n == math.MinInt64 {
		return 0, "value is out of range, value must between -9223372036854775807 and 9223372036854775807"
	}
	return n, ""
}

// cmdHScan is HSCAN key cursor [MATCH pattern] [COUNT n] [NOVALUES].
func cmdHScan(c *conn, args [][]byte) { memberScan(c, args, kvTypeHash) }

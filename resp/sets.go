package resp

import (
	"bytes"

	"github.com/tenure-db/tenure/kv"
)

// Set commands (SPEC §13): SADD, SREM, SMEMBERS, SISMEMBER, SMISMEMBER,
// SCARD, SPOP, SRANDMEMBER, SMOVE, SINTER, SINTERCARD, SINTERSTORE,
// SUNION, SUNIONSTORE, SDIFF, SDIFFSTORE, SSCAN; and what HSCAN and
// HRANDFIELD share with them.

const (
	kvTypeHash = kv.TypeHash
	kvTypeSet  = kv.TypeSet
)

func cmdSAdd(c *conn, args [][]byte) {
	n, err := c.store.SAdd(args[1], args[2:])
	if err != nil {
		c.storeError(err)
		return
	}
	if n > 0 {
		c.notify(notifySet, "sadd", args[1])
	}
	c.out.Int(n)
}

func cmdSRem(c *conn, args [][]byte) {
	n, err := c.store.SRem(args[1], args[2:])
	if err != nil {
		c.storeError(err)
		return
	}
	if n > 0 {
		c.notify(notifySet, "srem", args[1])
		c.notifyEmptied(args[1])
	}
	c.out.Int(n)
}

// cmdSMembers is SMEMBERS: a set in RESP3.
func cmdSMembers(c *conn, args [][]byte) {
	ms, err := c.store.SMembers(args[1])
	if err != nil {
		c.storeError(err)
		return
	}
	c.replySet(ms)
}

// replySet answers members as a set: RESP3's set, RESP2's array.
func (c *conn) replySet(ms [][]byte) {
	c.out.Set(len(ms))
	for _, m := range ms {
		c.out.Bulk(m)
	}
}

func cmdSIsMember(c *conn, args [][]byte) {
	ok, err := c.store.SIsMember(args[1], args[2])
	if err != nil {
		c.storeError(err)
		return
	}
	c.out.Bool(ok)
}

func cmdSMIsMember(c *conn, args [][]byte) {
	out, err := c.store.SMIsMember(args[1], args[2:])
	if err != nil {
		c.storeError(err)
		return
	}
	c.out.Array(len(out))
	for _, ok := range out {
		c.out.Bool(ok)
	}
}

func cmdSCard(c *conn, args [][]byte) {
	n, err := c.store.SCard(args[1])
	if err != nil {
		c.storeError(err)
		return
	}
	c.out.Int(n)
}

// cmdSPop is SPOP key [count]: a member (null for a missing key), or with
// a count a set of them (an empty set for a missing key).
func cmdSPop(c *conn, args [][]byte) {
	if len(args) > 3 {
		c.syntaxError()
		return
	}
	count, msg := popCountArg(args)
	if msg != "" {
		c.out.Err(msg)
		return
	}
	if count < 0 {
		count = 1 // none given: one member, answered alone
	}
	out, err := c.store.SPop(args[1], count)
	if err != nil {
		c.storeError(err)
		return
	}
	if len(out) > 0 {
		c.notify(notifySet, "spop", args[1])
		c.notifyEmptied(args[1])
	}
	if len(args) == 3 {
		c.replySet(out)
		return
	}
	if len(out) == 0 {
		c.out.Null()
		return
	}
	c.out.Bulk(out[0])
}

// cmdSRandMember is SRANDMEMBER key [count].
func cmdSRandMember(c *conn, args [][]byte) {
	switch {
	case len(args) > 3:
		c.syntaxError()
		return
	case len(args) == 2:
		randomMember(c, args[1], kvTypeSet)
		return
	}
	count, msg := randomCount(args[2])
	if msg != "" {
		c.out.Err(msg)
		return
	}
	out, err := c.store.SRandMember(args[1], count)
	if err != nil {
		c.storeError(err)
		return
	}
	c.out.Array(len(out))
	for _, m := range out {
		c.out.Bulk(m)
	}
}

// randomMember is SRANDMEMBER key and HRANDFIELD key: a member, or null.
func randomMember(c *conn, key []byte, t kv.Type) {
	m, ok, err := c.store.RandomMember(key, t)
	if err != nil {
		c.storeError(err)
		return
	}
	c.out.BulkOrNull(m, ok)
}

func cmdSMove(c *conn, args [][]byte) {
	ok, err := c.store.SMove(args[1], args[2], args[3])
	if err != nil {
		c.storeError(err)
		return
	}
	if ok && !bytes.Equal(args[1], args[2]) {
		c.notify(notifySet, "srem", args[1])
		c.notifyEmptied(args[1])
		c.notify(notifySet, "sadd", args[2])
	}
	c.out.Bool(ok)
}

func cmdSInter(c *conn, args [][]byte) { setAlgebra(c, kv.SetInter, args[1:]) }
func cmdSUnion(c *conn, args [][]byte) { setAlgebra(c, kv.SetUnion, args[1:]) }
func cmdSDiff(c *conn, args [][]byte)  { setAlgebra(c, kv.SetDiff, args[1:]) }

func setAlgebra(c *conn, op kv.SetOp, keys [][]byte) {
	out, err := c.store.SetAlgebra(op, keys, 0)
	if err != nil {
		c.storeError(err)
		return
	}
	c.replySet(out)
}

func cmdSInterStore(c *conn, args [][]byte) { setAlgebraStore(c, kv.SetInter, args, "sinterstore") }
func cmdSUnionStore(c *conn, args [][]byte) { setAlgebraStore(c, kv.SetUnion, args, "sunionstore") }
func cmdSDiffStore(c *conn, args [][]byte)  { setAlgebraStore(c, kv.SetDiff, args, "sdiffstore") }

// setAlgebraStore is SINTERSTORE, SUNIONSTORE and SDIFFSTORE; event is
// the notification of a result stored, as Redis's ("del" when an empty
// result deleted dst).
func setAlgebraStore(c *conn, op kv.SetOp, args [][]byte, event string) {
	existed := c.existsIfNotifying(args[1])
	n, err := c.store.SetAlgebraStore(op, args[1], args[2:])
	if err != nil {
		c.storeError(err)
		return
	}
	switch {
	case n > 0:
		c.notify(notifySet, event, args[1])
	case existed:
		c.notify(notifyGeneric, "del", args[1])
	}
	c.out.Int(n)
}

// existsIfNotifying says whether key exists, when a "del" would be told:
// a STORE form tells "del" of its destination when an empty result
// deleted what was there (Redis: SINTERSTORE, ZUNIONSTORE, ZRANGESTORE,
// SORT … STORE, …).
func (c *conn) existsIfNotifying(key []byte) bool {
	if !c.srv.notifying(notifyGeneric) {
		return false
	}
	n, err := c.store.Exists([][]byte{key})
	return err == nil && n > 0
}

// notifyEmptied tells "del" of key when the write before emptied it, and
// so deleted it, as Redis does after the command's own event: HDEL, SREM,
// SPOP, SMOVE's source; LPOP, RPOP, LMPOP, BLPOP, BRPOP, BLMPOP, LMOVE's
// and BLMOVE's source, LTRIM, LREM; ZREM, ZREMRANGEBY*, ZPOPMIN/MAX, ZMPOP
// and their blocking forms.
func (c *conn) notifyEmptied(key []byte) {
	if !c.srv.notifying(notifyGeneric) {
		return
	}
	if n, err := c.store.Exists([][]byte{key}); err == nil && n == 0 {
		c.notify(notifyGeneric, "del", key)
	}
}

// cmdSInterCard is SINTERCARD numkeys key [key ...] [LIMIT limit].
func cmdSInterCard(c *conn, args [][]byte) {
	numkeys, ok := parseInt(args[1])
	if !ok || numkeys < 1 {
		c.out.Err("numkeys should be greater than 0")
		return
	}
	if numkeys > int64(len(args)-2) {
		c.out.Err("Number of keys can't be greater than number of args")
		return
	}
	var limit int64
	for j := 2 + int(numkeys); j < len(args); j++ {
		if option(args[j]) != "limit" || j == len(args)-1 {
			c.syntaxError()
			return
		}
		j++
		n, ok := parseInt(args[j])
		if !ok || n < 0 {
			c.out.Err("LIMIT can't be negative")
			return
		}
		limit = n
	}
	out, err := c.store.SetAlgebra(kv.SetInter, args[2:2+numkeys], limit)
	if err != nil {
		c.storeError(err)
		return
	}
	c.out.Int(int64(len(out)))
}

func cmdSScan(c *conn, args [][]byte) { memberScan(c, args, kvTypeSet) }

// memberScan is HSCAN and SSCAN key cursor [MATCH pattern] [COUNT n]
// (HSCAN: [NOVALUES]). The cursor is a position in the collection's hash
// order, so a member present for the whole scan is returned at least once.
func memberScan(c *conn, args [][]byte, t kv.Type) {
	cursor, ok := parseCursor(args[2])
	if !ok {
		c.out.Err("invalid cursor")
		return
	}
	var (
		pattern  []byte
		count    = 10
		noValues bool
	)
	opts := []opt{
		{name: "match", value: true, set: func(v []byte) string { pattern = v; return "" }},
		{name: "count", value: true, set: func(v []byte) (msg string) {
			count, msg = countArg(v)
			return msg
		}},
	}
	if t == kvTypeHash {
		opts = append(opts, opt{name: "novalues", set: func([]byte) string { noValues = true; return "" }})
	}
	if msg := parseRedisOptions(args[3:], opts...); msg != "" {
		c.out.Err(msg)
		return
	}
	var (
		next uint64
		out  [][]byte
		err  error
	)
	if t == kvTypeHash {
		next, out, err = c.store.HScan(args[1], cursor, pattern, count, noValues)
	} else {
		next, out, err = c.store.SScan(args[1], cursor, pattern, count)
	}
	if err != nil {
		c.storeError(err)
		return
	}
	c.out.Array(2)
	c.out.BulkUint(next)
	c.out.Array(len(out))
	for _, m := range out {
		c.out.Bulk(m)
	}
}

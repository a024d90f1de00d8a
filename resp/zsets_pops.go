package resp

import "github.com/tenure-db/tenure/kv"

// A sorted set's pops: ZPOPMIN, ZPOPMAX, ZMPOP and the blocking BZPOPMIN,
// BZPOPMAX and BZMPOP.

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
	c.blockingPop(args, func(keys [][]byte) bool {
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

func zpopEvent(max bool) string {
	if max {
		return "zpopmax"
	}
	return "zpopmin"
}

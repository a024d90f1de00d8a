package resp

import (
	"errors"

	"github.com/tenure-db/tenure/kv"
)

// Lists (SPEC §13): LPUSH, LRANGE, LMOVE and the rest, and the blocking
// pops BLPOP, BRPOP, BLMOVE, BRPOPLPUSH and BLMPOP, as Redis 7.0's
// t_list.c parses and answers them; kv/lists.go keeps them.

func cmdLPush(c *conn, args [][]byte)  { push(c, args, true, false) }
func cmdRPush(c *conn, args [][]byte)  { push(c, args, false, false) }
func cmdLPushX(c *conn, args [][]byte) { push(c, args, true, true) }
func cmdRPushX(c *conn, args [][]byte) { push(c, args, false, true) }

func push(c *conn, args [][]byte, left, onlyIfExists bool) {
	n, err := c.store.Push(args[1], left, onlyIfExists, args[2:])
	if err != nil {
		c.storeError(err)
		return
	}
	if n > 0 {
		c.ready(args[1])
		c.notify(notifyList, pushEvent(left), args[1])
	}
	c.out.Int(n)
}

func pushEvent(left bool) string {
	if left {
		return "lpush"
	}
	return "rpush"
}

func popEvent(left bool) string {
	if left {
		return "lpop"
	}
	return "rpop"
}

func cmdLPop(c *conn, args [][]byte) { pop(c, args, true) }
func cmdRPop(c *conn, args [][]byte) { pop(c, args, false) }

// pop is LPOP and RPOP key [count]: a bulk string without count, an
// array with it (a null array for a missing key).
func pop(c *conn, args [][]byte, left bool) {
	if len(args) > 3 {
		c.wrongArity(option(args[0]))
		return
	}
	count, msg := popCountArg(args)
	if msg != "" {
		c.out.Err(msg)
		return
	}
	var elems [][]byte
	var err error
	if count == 0 {
		var n int64
		if n, err = c.store.LLen(args[1]); n > 0 {
			elems = [][]byte{} // an empty array for a list, a null for none
		}
	} else {
		elems, err = c.store.Pop(args[1], left, max(count, 1))
		if len(elems) > 0 {
			c.notify(notifyList, popEvent(left), args[1])
			c.notifyEmptied(args[1])
		}
	}
	switch {
	case err != nil:
		c.storeError(err)
	case elems == nil && count < 0:
		c.out.Null()
	case elems == nil:
		c.out.NullArray()
	case count < 0:
		c.out.Bulk(elems[0])
	case count == 0:
		c.out.Array(0)
	default:
		c.out.Array(len(elems))
		for _, e := range elems {
			c.out.Bulk(e)
		}
	}
}

func cmdLLen(c *conn, args [][]byte) {
	n, err := c.store.LLen(args[1])
	if err != nil {
		c.storeError(err)
		return
	}
	c.out.Int(n)
}

func cmdLIndex(c *conn, args [][]byte) {
	i, ok := parseInt(args[2])
	if !ok {
		c.out.Err(errNotInteger)
		return
	}
	v, found, err := c.store.LIndex(args[1], i)
	if err != nil {
		c.storeError(err)
		return
	}
	c.out.BulkOrNull(v, found)
}

func cmdLRange(c *conn, args [][]byte) {
	a, b, msg := parseIntPair(args[2], args[3])
	if msg != "" {
		c.out.Err(msg)
		return
	}
	elems, err := c.store.LRange(args[1], a, b)
	if err != nil {
		c.storeError(err)
		return
	}
	c.out.Array(len(elems))
	for _, e := range elems {
		c.out.Bulk(e)
	}
}

func cmdLSet(c *conn, args [][]byte) {
	i, ok := parseInt(args[2])
	if !ok {
		c.out.Err(errNotInteger)
		return
	}
	if err := c.store.LSet(args[1], i, args[3]); err != nil {
		c.storeError(err)
		return
	}
	c.notify(notifyList, "lset", args[1])
	c.out.OK()
}

func cmdLTrim(c *conn, args [][]byte) {
	a, b, msg := parseIntPair(args[2], args[3])
	if msg != "" {
		c.out.Err(msg)
		return
	}
	if err := c.store.LTrim(args[1], a, b); err != nil {
		c.storeError(err)
		return
	}
	c.notify(notifyList, "ltrim", args[1])
	c.notifyEmptied(args[1])
	c.out.OK()
}

// cmdLInsert is LINSERT key BEFORE|AFTER pivot element.
func cmdLInsert(c *conn, args [][]byte) {
	var before bool
	switch option(args[2]) {
	case "before":
		before = true
	case "after":
	default:
		c.syntaxError()
		return
	}
	n, err := c.store.LInsert(args[1], before, args[3], args[4])
	if err != nil {
		c.storeError(err)
		return
	}
	if n > 0 {
		c.notify(notifyList, "linsert", args[1])
	}
	c.out.Int(n)
}

func cmdLRem(c *conn, args [][]byte) {
	n, ok := parseInt(args[2])
	if !ok {
		c.out.Err(errNotInteger)
		return
	}
	removed, err := c.store.LRem(args[1], n, args[3])
	if err != nil {
		c.storeError(err)
		return
	}
	if removed > 0 {
		c.notify(notifyList, "lrem", args[1])
		c.notifyEmptied(args[1])
	}
	c.out.Int(removed)
}

// cmdLPos is LPOS key element [RANK rank] [COUNT num-matches] [MAXLEN len].
func cmdLPos(c *conn, args [][]byte) {
	o := kv.LPosOptions{Rank: 1, Count: -1}
	for j := 3; j < len(args); j++ {
		more := j+1 < len(args)
		switch w := option(args[j]); {
		case w == "rank" && more:
			j++
			n, ok := parseInt(args[j])
			if !ok {
				c.out.Err(errNotInteger)
				return
			}
			if n == 0 {
				c.out.Err("RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list")
				return
			}
			o.Rank = n
		case w == "count" && more:
			j++
			n, ok := parseInt(args[j])
			if !ok || n < 0 {
				c.out.Err("COUNT can't be negative")
				return
			}
			o.Count = n
		case w == "maxlen" && more:
			j++
			n, ok := parseInt(args[j])
			if !ok || n < 0 {
				c.out.Err("MAXLEN can't be negative")
				return
			}
			o.MaxLen = n
		default:
			c.syntaxError()
			return
		}
	}
	if o.Rank == -o.Rank { // math.MinInt64: Redis negates it as is
		o.Rank = 1<<63 - 1
	}
	at, err := c.store.LPos(args[1], args[2], o)
	switch {
	case err != nil:
		c.storeError(err)
	case o.Count >= 0:
		c.out.Array(len(at))
		for _, i := range at {
			c.out.Int(i)
		}
	case len(at) == 0:
		c.out.Null()
	default:
		c.out.Int(at[0])
	}
}

// whereArg reads LEFT or RIGHT.
func whereArg(b []byte) (left, ok bool) {
	switch option(b) {
	case "left":
		return true, true
	case "right":
		return false, true
	}
	return false, false
}

// lmove moves an element and answers it; it reports whether src had one.
func (c *conn) lmove(src, dst []byte, fromLeft, toLeft bool) (answered bool) {
	v, ok, err := c.store.LMove(src, dst, fromLeft, toLeft)
	if err != nil {
		if c.inLine && errors.Is(err, kv.ErrWrongType) {
			// Met while blocked: a source of another type leaves the
			// client blocked, a destination's is its answer (Redis).
			if t, _ := c.store.Type(src); t != "list" {
				return false
			}
		}
		c.storeError(err)
		return true
	}
	if !ok {
		return false
	}
	c.ready(dst)
	// Redis tells of the push first, then of the pop, then "del" of a
	// source emptied (t_list.c's lmoveGenericCommand).
	c.notify(notifyList, pushEvent(toLeft), dst)
	c.notify(notifyList, popEvent(fromLeft), src)
	c.notifyEmptied(src)
	c.out.Bulk(v)
	return true
}

// cmdLMove is LMOVE source destination LEFT|RIGHT LEFT|RIGHT.
func cmdLMove(c *conn, args [][]byte) {
	from, ok1 := whereArg(args[3])
	to, ok2 := whereArg(args[4])
	if !ok1 || !ok2 {
		c.syntaxError()
		return
	}
	if !c.lmove(args[1], args[2], from, to) {
		c.out.Null()
	}
}

// cmdRPopLPush is RPOPLPUSH source destination.
func cmdRPopLPush(c *conn, args [][]byte) {
	if !c.lmove(args[1], args[2], false, true) {
		c.out.Null()
	}
}

// cmdLMPop is LMPOP numkeys key [key …] LEFT|RIGHT [COUNT count].
func cmdLMPop(c *conn, args [][]byte) {
	keys, left, count, msg := mpopArgs(args[1:], "left", "right")
	if msg != "" {
		c.out.Err(msg)
		return
	}
	key, elems, err := c.store.MPop(keys, left, count)
	switch {
	case err != nil:
		c.storeError(err)
	case key == nil:
		c.out.NullArray()
	default:
		c.notify(notifyList, popEvent(left), key)
		c.notifyEmptied(key)
		c.lmpopReply(key, elems)
	}
}

func (c *conn) lmpopReply(key []byte, elems [][]byte) {
	c.out.Array(2)
	c.out.Bulk(key)
	c.out.Array(len(elems))
	for _, e := range elems {
		c.out.Bulk(e)
	}
}

func cmdBLPop(c *conn, args [][]byte) { bpop(c, args, true) }
func cmdBRPop(c *conn, args [][]byte) { bpop(c, args, false) }

// bpop is BLPOP and BRPOP key [key …] timeout: [key, element].
func bpop(c *conn, args [][]byte, left bool) {
	c.blockingPop(args, func(keys [][]byte) bool {
		key, elems, err := c.store.MPop(keys, left, 1)
		return c.popped(err, key != nil, func() {
			c.notify(notifyList, popEvent(left), key)
			c.notifyEmptied(key)
			c.out.Array(2)
			c.out.Bulk(key)
			c.out.Bulk(elems[0])
		})
	})
}

// cmdBLMPop is BLMPOP timeout numkeys key [key …] LEFT|RIGHT [COUNT count].
func cmdBLMPop(c *conn, args [][]byte) {
	timeout, keys, left, count, msg := blockingMPopArgs(args, "left", "right")
	if msg != "" {
		c.out.Err(msg)
		return
	}
	c.block(keys, timeout, func() bool {
		return c.attemptHere(args, func() bool {
			key, elems, err := c.store.MPop(keys, left, count)
			return c.popped(err, key != nil, func() {
				c.notify(notifyList, popEvent(left), key)
				c.notifyEmptied(key)
				c.lmpopReply(key, elems)
			})
		})
	}, c.out.NullArray)
}

// cmdBLMove is BLMOVE source destination LEFT|RIGHT LEFT|RIGHT timeout.
func cmdBLMove(c *conn, args [][]byte) {
	from, ok1 := whereArg(args[3])
	to, ok2 := whereArg(args[4])
	if !ok1 || !ok2 {
		c.syntaxError()
		return
	}
	blmove(c, args, args[5], from, to)
}

// cmdBRPopLPush is BRPOPLPUSH source destination timeout.
func cmdBRPopLPush(c *conn, args [][]byte) { blmove(c, args, args[3], false, true) }

func blmove(c *conn, args [][]byte, timeoutArgument []byte, from, to bool) {
	timeout, msg := timeoutArg(timeoutArgument)
	if msg != "" {
		c.out.Err(msg)
		return
	}
	c.block(args[1:2], timeout, func() bool {
		return c.attemptHere(args, func() bool {
			if c.lmove(args[1], args[2], from, to) {
				return true
			}
			if c.applyingEntry() {
				c.out.Null()
				return true
			}
			return false
		})
	}, func() {
		if c.canBlock() {
			c.out.NullArray() // a timeout, as Redis answers a blocked list client
		} else {
			c.out.Null() // inside MULTI or a script: BLMOVE answers as LMOVE
		}
	})
}

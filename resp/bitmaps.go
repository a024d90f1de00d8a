package resp

import (
	"github.com/tenure-db/tenure/kv"
)

// The bit commands: SETBIT, GETBIT, BITCOUNT, BITPOS, BITOP.

const errBitOffset = "bit offset is not an integer or out of range"

// bitOffset reads SETBIT's and GETBIT's offset as Redis does: a
// non-negative integer whose byte lies within proto-max-bulk-len, so 2^32
// bits at Redis's default of 512 MB.
func (c *conn) bitOffset(b []byte) (uint64, bool) {
	n, ok := parseInt(b)
	if !ok || n < 0 || n>>3 >= c.store.MaxValueLen() {
		c.out.Err(errBitOffset)
		return 0, false
	}
	return uint64(n), true
}

func cmdSetBit(c *conn, args [][]byte) {
	off, ok := c.bitOffset(args[2])
	if !ok {
		return
	}
	on, ok := parseInt(args[3])
	if !ok || on&^1 != 0 {
		c.out.Err("bit is not an integer or out of range")
		return
	}
	old, err := c.store.SetBit(args[1], off, on == 1)
	if err != nil {
		c.storeError(err)
		return
	}
	c.notify(notifyString, "setbit", args[1])
	c.out.Int(int64(old))
}

func cmdGetBit(c *conn, args [][]byte) {
	off, ok := c.bitOffset(args[2])
	if !ok {
		return
	}
	bit, err := c.store.GetBit(args[1], off)
	if err != nil {
		c.storeError(err)
		return
	}
	c.out.Int(int64(bit))
}

// bitRange reads [start end [BYTE|BIT]] from args (BITPOS: [start [end
// [BYTE|BIT]]], endOptional), or returns Redis's error text.
func bitRange(args [][]byte, endOptional bool) (kv.BitRange, string) {
	var r kv.BitRange
	switch {
	case len(args) == 0:
		return r, ""
	case len(args) > 3, len(args) == 1 && !endOptional:
		return r, errSyntax
	}
	var ok bool
	if r.Start, ok = parseInt(args[0]); !ok {
		return r, errNotInteger
	}
	r.HasStart = true
	if len(args) == 1 {
		return r, ""
	}
	if r.End, ok = parseInt(args[1]); !ok {
		return r, errNotInteger
	}
	r.HasEnd = true
	if len(args) == 3 {
		switch option(args[2]) {
		case "bit":
			r.Bit = true
		case "byte":
		default:
			return r, errSyntax
		}
	}
	return r, ""
}

// errUnlessMissing answers a bad argument of BITCOUNT or BITPOS as Redis
// 7.0 does, which looks the key up first: a missing key is answered
// missing (the integer given), an existing one gets the error.
func (c *conn) errUnlessMissing(key []byte, missing int64, msg string) {
	n, err := c.store.Exists([][]byte{key})
	switch {
	case err != nil:
		c.storeError(err)
	case n == 0:
		c.out.Int(missing)
	default:
		c.out.Err(msg)
	}
}

// cmdBitCount is BITCOUNT key [start end [BYTE|BIT]].
func cmdBitCount(c *conn, args [][]byte) {
	r, msg := bitRange(args[2:], false)
	if msg != "" {
		c.errUnlessMissing(args[1], 0, msg)
		return
	}
	n, err := c.store.BitCount(args[1], r)
	if err != nil {
		c.storeError(err)
		return
	}
	c.out.Int(n)
}

// cmdBitPos is BITPOS key bit [start [end [BYTE|BIT]]]. The bit is checked
// before the key is looked up, the range after.
func cmdBitPos(c *conn, args [][]byte) {
	bit, ok := parseInt(args[2])
	if !ok {
		c.out.Err(errNotInteger)
		return
	}
	if bit != 0 && bit != 1 {
		c.out.Err("The bit argument must be 1 or 0.")
		return
	}
	r, msg := bitRange(args[3:], true)
	if msg != "" {
		c.errUnlessMissing(args[1], -bit, msg)
		return
	}
	pos, err := c.store.BitPos(args[1], int(bit), r)
	if err != nil {
		c.storeError(err)
		return
	}
	c.out.Int(pos)
}

// cmdBitOp is BITOP AND|OR|XOR|NOT destkey key [key ...].
func cmdBitOp(c *conn, args [][]byte) {
	var op kv.BitOp
	switch option(args[1]) {
	case "and":
		op = kv.BitAnd
	case "or":
		op = kv.BitOr
	case "xor":
		op = kv.BitXor
	case "not":
		op = kv.BitNot
		if len(args) != 4 {
			c.out.Err("BITOP NOT must be called with a single source key.")
			return
		}
	default:
		c.syntaxError()
		return
	}
	n, err := c.store.BitOp(op, args[2], args[3:])
	if err != nil {
		c.storeError(err)
		return
	}
	if n > 0 {
		c.notify(notifyString, "set", args[2])
	}
	c.out.Int(n)
}

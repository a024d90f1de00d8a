package resp

import (
	"math"

	"github.com/tenure-db/tenure/kv"
)

// The bit commands: SETBIT, GETBIT, BITCOUNT, BITPOS, BITOP, BITFIELD,
// BITFIELD_RO.

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

// cmdBitfield is BITFIELD key [GET type offset] [SET type offset value]
// [INCRBY type offset increment] [OVERFLOW WRAP|SAT|FAIL] …, parsed
// whole, with Redis's errors, before anything runs.
func cmdBitfield(c *conn, args [][]byte) { bitfield(c, args, false) }

// cmdBitfieldRO is BITFIELD_RO key [GET type offset] …: GET alone.
func cmdBitfieldRO(c *conn, args [][]byte) { bitfield(c, args, true) }

func bitfield(c *conn, args [][]byte, readOnly bool) {
	var ops []kv.BitfieldOp
	ow := kv.OverflowWrap
	writes := false
	for j := 2; j < len(args); j++ {
		rem := len(args) - j - 1
		var op kv.BitfieldOp
		switch sub := option(args[j]); {
		case sub == "get" && rem >= 2:
			op.Kind = kv.BitfieldGet
		case sub == "set" && rem >= 3:
			op.Kind = kv.BitfieldSet
		case sub == "incrby" && rem >= 3:
			op.Kind = kv.BitfieldIncrBy
		case sub == "overflow" && rem >= 1:
			j++
			switch option(args[j]) {
			case "wrap":
				ow = kv.OverflowWrap
			case "sat":
				ow = kv.OverflowSat
			case "fail":
				ow = kv.OverflowFail
			default:
				c.out.Err("Invalid OVERFLOW type specified")
				return
			}
			continue
		default:
			c.syntaxError()
			return
		}
		var ok bool
		if op.Signed, op.Bits, ok = bitfieldType(args[j+1]); !ok {
			c.out.Err("Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.")
			return
		}
		if op.Offset, ok = c.bitfieldOffset(args[j+2], op.Bits); !ok {
			c.out.Err(errBitOffset)
			return
		}
		if op.Kind != kv.BitfieldGet {
			writes = true
			if op.Value, ok = parseInt(args[j+3]); !ok {
				c.out.Err(errNotInteger)
				return
			}
			j++
		}
		op.Overflow = ow
		ops = append(ops, op)
		j += 2
	}
	if writes && readOnly {
		c.out.Err("BITFIELD_RO only supports the GET subcommand")
		return
	}
	res, changed, err := c.store.Bitfield(args[1], ops)
	if err != nil {
		c.storeError(err)
		return
	}
	if changed {
		c.notify(notifyString, "setbit", args[1])
	}
	c.out.Array(len(res))
	for _, r := range res {
		if r.Nil {
			c.out.Null()
		} else {
			c.out.Int(r.Value)
		}
	}
}

// bitfieldType reads i1…i64 or u1…u63.
func bitfieldType(b []byte) (signed bool, bits uint, ok bool) {
	b = []byte(cString(b, len(b)))
	if len(b) < 2 || (b[0] != 'i' && b[0] != 'u') {
		return false, 0, false
	}
	n, ok := parseInt(b[1:])
	signed = b[0] == 'i'
	if !ok || n < 1 || (signed && n > 64) || (!signed && n > 63) {
		return false, 0, false
	}
	return signed, uint(n), true
}

// bitfieldOffset reads a bit offset, or #n: n fields of bits bits.
func (c *conn) bitfieldOffset(b []byte, bits uint) (uint64, bool) {
	hash := len(b) > 0 && b[0] == '#'
	if hash {
		b = b[1:]
	}
	n, ok := parseInt(b)
	if !ok {
		return 0, false
	}
	if hash {
		if n > math.MaxInt64/int64(bits) || n < math.MinInt64/int64(bits) {
			return 0, false
		}
		n *= int64(bits)
	}
	if n < 0 || n>>3 >= c.store.MaxValueLen() {
		return 0, false
	}
	return uint64(n), true
}

package kv

import "math"

// BITFIELD and BITFIELD_RO: integers of 1 to 64 bits at any bit offset of
// a string, read, written and incremented, with Redis 7's overflow rules.
// Bit 0 is the most significant bit of the first byte, as for SETBIT.

// BitfieldKind is what one BITFIELD operation does.
type BitfieldKind uint8

const (
	BitfieldGet BitfieldKind = iota
	BitfieldSet
	BitfieldIncrBy
)

// BitfieldOverflow is BITFIELD's OVERFLOW mode.
type BitfieldOverflow uint8

const (
	OverflowWrap BitfieldOverflow = iota // modulo 2^bits (two's complement for signed)
	OverflowSat                          // clamp to the type's least or greatest value
	OverflowFail                         // write nothing, answer nil
)

// BitfieldOp is one GET, SET or INCRBY of BITFIELD.
type BitfieldOp struct {
	Kind     BitfieldKind
	Signed   bool   // i<bits>; else u<bits>
	Bits     uint   // 1..64 signed, 1..63 unsigned (the caller checks)
	Offset   uint64 // in bits
	Value    int64  // SET's value, INCRBY's increment
	Overflow BitfieldOverflow
}

// BitfieldResult is one operation's reply: Value, or nil (Nil) when an
// OverflowFail operation overflowed.
type BitfieldResult struct {
	Value int64
	Nil   bool
}

// Bitfield is BITFIELD: the operations run in order on key's string, and
// one result each. Only GETs: a read, a missing key reads as zeros. With a
// SET or INCRBY the string is made, or grown with zero bytes, to hold the
// farthest field written, before any runs (as Redis does, even when every
// write then fails by OVERFLOW FAIL). The TTL and fence stay. changed
// says the string was written (made, grown, or a field changed).
func (s *Store) Bitfield(key []byte, ops []BitfieldOp) (out []BitfieldResult, changed bool, err error) {
	out = make([]BitfieldResult, len(ops))
	var end uint64 // bytes the writes need
	for _, op := range ops {
		if op.Kind != BitfieldGet {
			end = max(end, (op.Offset+uint64(op.Bits)-1)>>3+1)
		}
	}
	if end == 0 {
		_, err := s.view(key, TypeString, func(rec record) {
			for i, op := range ops {
				out[i].Value = getField(rec.value, op)
			}
		})
		if err != nil {
			return nil, false, wrap("bitfield", err)
		}
		return out, false, nil
	}
	if end > uint64(s.MaxValueLen()) {
		return nil, false, ErrTooLarge
	}
	err = s.update(key, true, func(c *change, it *item) error {
		if err := it.cur.is(TypeString); err != nil {
			return err
		}
		r := it.cur.rec
		if !it.cur.live {
			r = record{}
		}
		changed = !it.cur.live || end > uint64(len(r.value))
		if end > uint64(len(r.value)) {
			grown := make([]byte, end)
			copy(grown, r.value)
			r.value = grown
		} else {
			r.value = clone(r.value)
		}
		for i, op := range ops {
			if op.Kind == BitfieldGet {
				out[i].Value = getField(r.value, op)
				continue
			}
			old := getField(r.value, op)
			next, ret, ok := applyField(old, op)
			if !ok {
				out[i].Nil = true
				continue
			}
			out[i].Value = ret
			if next != old {
				changed = true
			}
			setField(r.value, op.Offset, op.Bits, uint64(next))
		}
		if !changed {
			return nil
		}
		r.raw = true
		c.put(it, r)
		return nil
	})
	if err != nil {
		return nil, false, wrap("bitfield", err)
	}
	return out, changed, nil
}

// getField reads op's field of v, bits past the end reading as 0.
func getField(v []byte, op BitfieldOp) int64 {
	var u uint64
	for i := range uint64(op.Bits) {
		at := op.Offset + i
		u <<= 1
		if b := at >> 3; b < uint64(len(v)) && v[b]&(0x80>>(at&7)) != 0 {
			u |= 1
		}
	}
	if op.Signed && op.Bits < 64 && u&(1<<(op.Bits-1)) != 0 {
		u |= math.MaxUint64 << op.Bits // sign-extend
	}
	return int64(u)
}

// setField writes the low bits of u at offset of v, which holds them.
func setField(v []byte, offset uint64, bits uint, u uint64) {
	for i := range uint64(bits) {
		at := offset + i
		mask := byte(0x80) >> (at & 7)
		if u&(1<<(uint64(bits)-1-i)) != 0 {
			v[at>>3] |= mask
		} else {
			v[at>>3] &^= mask
		}
	}
}

// applyField is op (SET or INCRBY) on the field's value old: the value to
// store, the one to answer (SET: old; INCRBY: the new one), and ok false
// when it overflowed under OverflowFail.
func applyField(old int64, op BitfieldOp) (next, ret int64, ok bool) {
	base, incr := old, op.Value
	if op.Kind == BitfieldSet {
		base, incr = op.Value, 0
	}
	var over bool
	if op.Signed {
		next, over = signedField(base, incr, op.Bits, op.Overflow)
	} else {
		var u uint64
		u, over = unsignedField(uint64(base), incr, op.Bits, op.Overflow)
		next = int64(u)
	}
	if over && op.Overflow == OverflowFail {
		return 0, 0, false
	}
	if op.Kind == BitfieldSet {
		return next, old, true
	}
	return next, next, true
}

// unsignedField is value+incr in a u<bits> field: the result under ow,
// and whether it overflowed.
func unsignedField(value uint64, incr int64, bits uint, ow BitfieldOverflow) (uint64, bool) {
	top := uint64(1)<<bits - 1 // bits <= 63
	wrapped := (value + uint64(incr)) & top
	switch {
	case value > top || (incr > 0 && uint64(incr) > top-value):
		if ow == OverflowSat {
			return top, true
		}
		return wrapped, true
	case incr < 0 && uint64(-incr) > value: // -MinInt64 wraps to itself, > any value as uint64
		if ow == OverflowSat {
			return 0, true
		}
		return wrapped, true
	}
	return value + uint64(incr), false
}

// signedField is value+incr in an i<bits> field: the result under ow, and
// whether it overflowed.
func signedField(value, incr int64, bits uint, ow BitfieldOverflow) (int64, bool) {
	hi := int64(math.MaxInt64)
	if bits < 64 {
		hi = 1<<(bits-1) - 1
	}
	lo := -hi - 1
	sum := value + incr // wraps in two's complement, as Go defines it
	// The room left above and below, computed as Redis computes it, in
	// wrapping arithmetic: for a value far out of range (SET i8 of
	// -2^63) the room wraps too, and Redis then says the value overflowed
	// upwards (OVERFLOW SAT stores the greatest value); so does tenure.
	above, below := int64(uint64(hi)-uint64(value)), lo-value
	up := value > hi || (bits != 64 && incr > above) || (value >= 0 && incr > 0 && incr > above)
	down := value < lo || (bits != 64 && incr < below) || (value < 0 && incr < 0 && incr < below)
	if !up && !down {
		return sum, false
	}
	if ow == OverflowSat {
		if up {
			return hi, true
		}
		return lo, true
	}
	u := uint64(sum)
	if bits < 64 {
		mask := uint64(math.MaxUint64) << bits
		if u&(1<<(bits-1)) != 0 {
			u |= mask
		} else {
			u &^= mask
		}
	}
	return int64(u), true
}
